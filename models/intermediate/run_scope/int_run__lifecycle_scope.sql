{#- The (group, message) lifecycles this run recomputes. The fact marts are partitioned by
    `lifecycle_date` and `lifecycle_hour` (the UTC date and hour of the first delivery), and a run
    rewrites whole partitions, so the scope is every lifecycle in a partition that a touched
    lifecycle (int_run__touched_lifecycles) was or will be in, or that a run since the last
    complete one rewrote (unsettled_partitions_relation). Its (date, hour) pairs are the
    partitions the fact marts rewrite and read back. Empty on a first or full-refresh build,
    which recomputes everything. int_run__refresh_partitions lists its partitions once. -#}
{{ config(materialized='table', schema='meta') }}
{%- set previous_lifecycles = previous_fact_relation('message_lifecycles') %}
{%- set touched_lifecycles = ref('int_run__touched_lifecycles') %}

{% if previous_lifecycles is none %}

    {{ no_lifecycles() }}

{% else %}

    with

    touched as (
        select * from {{ touched_lifecycles }}
    ),

    partition_mates as (
        select
            consumer_group,
            msg_id,
            lifecycle_date,
            lifecycle_hour
        from {{ previous_lifecycles }}
        where {{ in_refresh_partitions(with_unsettled_partitions(touched_lifecycles)) }}
    ),

    final as (
        select * from partition_mates
        union
        select * from touched
    )

    select * from final

{% endif %}
