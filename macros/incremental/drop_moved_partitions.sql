{#- A lifecycle's partition (`lifecycle_date`, `lifecycle_hour`) only moves earlier, when a late
    record shows an earlier first delivery. Dynamic partition overwrite rewrites the partitions
    that receive rows, so a partition whose lifecycles all moved away receives none and keeps
    their old rows. After a fact mart is written, this post-hook finds such partitions (rows of
    lifecycles in this run's scope dated later than the lifecycle's first delivery in
    consume_attempts) and drops them. It needs no memory of the previous run, so a crash before
    it runs is mended by the next. -#}
{% macro drop_moved_partitions() %}
    {%- if execute and is_incremental() -%}
        {%- set attempts = this if model.name == 'consume_attempts' else ref('consume_attempts') -%}
        {%- set partitions = ref('int_run__refresh_partitions') -%}
        {#- A moved lifecycle's old and new partitions are both in the scope. -#}
        {%- set stale_query -%}
            with current_partitions as (
                select
                    attempts.consumer_group,
                    attempts.msg_id,
                    min({{ first_delivery_hour('attempts.lifecycle_date', 'attempts.lifecycle_hour') }})
                        as first_delivery_hour
                from {{ attempts }} as attempts
                where {{ in_refresh_partitions(partitions, 'attempts.') }}
                group by attempts.consumer_group, attempts.msg_id
            )

            select distinct
                cast(written.lifecycle_date as string) as lifecycle_date,
                written.lifecycle_hour
            from {{ this }} as written
            inner join current_partitions
                on
                    written.consumer_group = current_partitions.consumer_group
                    and written.msg_id = current_partitions.msg_id
            where
                {{ in_refresh_partitions(partitions, 'written.') }}
                and {{ first_delivery_hour('written.lifecycle_date', 'written.lifecycle_hour') }}
                > current_partitions.first_delivery_hour
        {%- endset -%}
        {%- for stale in run_query(stale_query).rows -%}
            {%- do run_query("alter table " ~ this ~ " drop if exists partition (lifecycle_date = '"
                ~ stale[0] ~ "', lifecycle_hour = " ~ stale[1] ~ ")") -%}
        {%- endfor -%}
    {%- endif -%}
    select 1
{% endmacro %}

{#- Pre-hook of the fact marts partitioned by day (group_retry_stats_daily on `stat_date`, the
    dead-letter ones on `lifecycle_date`): empty the scope's days before they are written again,
    so that a day left with no row (its lifecycles, or its dead letters, moved to an earlier day)
    does not keep its old ones. A crash between the two leaves the run state where it was, and
    the next run rewrites the same days; readers see the published snapshot meanwhile. -#}
{% macro drop_refresh_days(date_column='lifecycle_date') %}
    {%- if execute and is_incremental() and not refresh_scope_is_everything() -%}
        {%- set days = partitions_by_date(ref('int_run__refresh_partitions')) -%}
        {%- if days | length > 0 -%}
            {%- set specs = [] -%}
            {%- for day in days -%}
                {%- do specs.append("partition (" ~ date_column ~ " = '" ~ day[0] ~ "')") -%}
            {%- endfor -%}
            {%- do run_query("alter table " ~ this ~ " drop if exists " ~ specs | join(", ")) -%}
        {%- endif -%}
    {%- endif -%}
    select 1
{% endmacro %}
