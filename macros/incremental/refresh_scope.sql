-- noqa: disable=LT02,LT05
{#- (The noqa above: sqlfluff lays out these macros' Jinja branches as if they were one query.) -#}
{#- How models read only the lifecycles in this run's refresh scope. The scope's partitions are
    computed once per run, into int_run__refresh_partitions; models pass that relation (and the
    scope, int_run__lifecycle_scope) through ref(), so dbt still sees the dependencies. On a first
    or full-refresh build the scope is everything and no filter is applied. In a dbt unit test
    (in_unit_test) the fixtures are the scope: they are read as plain subqueries. -#}

{% macro refresh_scope_is_everything() %}
    {%- if in_unit_test() -%}
        {{ return(false) }}
    {%- endif -%}
    {{ return(previous_fact_relation('message_lifecycles') is none) }}
{% endmacro %}

{#- The partitions named in `partitions` (a relation of `lifecycle_date`, `lifecycle_hour` rows)
    as (date, comma-separated hours) pairs, read now so they can be written as literals. The
    run's scope is read some 25 times a run: its post-hook keeps the pairs for the run
    (remember_refresh_partitions), and they are read back without a Spark job. -#}
{% macro partitions_by_date(partitions) %}
    {%- set remembered = remembered_for_run(remembered_partitions_key(), partitions) -%}
    {%- if remembered is not none -%}
        {{ return(remembered) }}
    {%- endif -%}
    {{ return(run_query(partitions_by_date_query(partitions)).rows) }}
{% endmacro %}

{% macro partitions_by_date_query(partitions) -%}
    select cast(lifecycle_date as string), concat_ws(', ', sort_array(collect_set(lifecycle_hour)))
    from {{ partitions }}
    where lifecycle_date is not null
    group by 1
    order by 1
{%- endmacro %}

{#- The session property that holds this run's scope (partitions_by_date). -#}
{% macro remembered_partitions_key() -%}
    retrylake.refresh_partitions
{%- endmacro %}

{#- Post-hook of int_run__refresh_partitions, which no later node of the run writes: its pairs,
    as partitions_by_date reads them, kept for the run (remember_for_run). -#}
{% macro remember_refresh_partitions() %}
    {%- if execute and not in_unit_test() -%}
        {%- set pairs = run_query(partitions_by_date_query(this)).rows | map('list') | list -%}
        {%- do remember_for_run(remembered_partitions_key(), this, pairs) -%}
    {%- endif -%}
    select 1
{% endmacro %}

{#- A filter on the partition columns of a fact mart (`lifecycle_date`, `lifecycle_hour`, with
    the table alias `prefix`): the partitions listed in `partitions`, or with grain 'day' their
    whole days, on `date_column`. The list is read first and written as literals, so Spark
    prunes while planning. -#}
{% macro in_refresh_partitions(partitions, prefix='', grain='hour', date_column='lifecycle_date') -%}
    {%- set date_column = prefix ~ date_column -%}
    {%- set hour_column = prefix ~ 'lifecycle_hour' -%}
    {%- if not execute or in_unit_test() -%}
        {%- if grain == 'day' -%}
            {{ date_column }} in (select lifecycle_date from {{ partitions }})
        {%- else -%}
            ({{ date_column }}, {{ hour_column }}) in (select lifecycle_date, lifecycle_hour from {{ partitions }})
        {%- endif -%}
    {%- else -%}
        {%- set by_date = partitions_by_date(partitions) -%}
        {%- if by_date | length == 0 -%}
            false
        {%- elif grain == 'day' -%}
            {{ date_column }} in ({% for row in by_date %}date'{{ row[0] }}'{{ ", " if not loop.last }}{% endfor %})
        {%- else -%}
            ({% for row in by_date -%}
                ({{ date_column }} = date'{{ row[0] }}' and {{ hour_column }} in ({{ row[1] }}))
                {{- " or " if not loop.last }}
            {%- endfor %})
        {%- endif -%}
    {%- endif -%}
{%- endmacro %}

{#- The rows of a fact mart (`relation`) that belong to lifecycles in the scope: its partitions
    in the scope, which this run has just rewritten. With grain 'day', their whole days; with
    `everything`, all of them (see fact_mart_lacks_columns). -#}
{% macro rows_in_refresh_scope(relation, partitions, grain='hour', everything=false) -%}
    select in_scope.*
    from {{ relation }} as in_scope
    where
    {%- if not execute or everything or refresh_scope_is_everything() %} true
    {%- else %} {{ in_refresh_partitions(partitions, 'in_scope.', grain) }}
    {%- endif %}
{%- endmacro %}

{#- The trace records (a typed staging view, `relation`) of lifecycles in the scope, matched on
    `keys`. A lifecycle's records are stored in or after its first delivery's hour, less the
    clock skew; `lookback_hours` widens that for records written earlier (a Pub). `stored_at`
    names the record's time column (a 5.x delivery's start, for spans and events). -#}
{% macro records_in_refresh_scope(relation, scope, partitions, keys, lookback_hours,
                                   stored_at='trace_stored_at') -%}
    select in_scope.*
    from {{ relation }} as in_scope
    {%- if execute and not refresh_scope_is_everything() %}
        left semi join {{ scope }} as scope
            on {% for key in keys %}in_scope.{{ key }} = scope.{{ key }}{{ " and " if not loop.last }}{% endfor %}
        {{ scope_lookback_where('in_scope.' ~ stored_at, partitions, lookback_hours) }}
    {%- endif %}
{%- endmacro %}

{#- `where <stored_at> >= <bound>`: the records of the scope's lifecycles are stored in or after
    the scope's earliest partition hour, less `lookback_hours`. Empty on a full build and in unit
    tests, which read everything. -#}
{% macro scope_lookback_where(stored_at, partitions, lookback_hours) -%}
    {%- if execute and not in_unit_test() and not refresh_scope_is_everything() -%}
        {%- set earliest = earliest_time(partitions, first_delivery_hour('lifecycle_date', 'lifecycle_hour'), 'true') -%}
        where {{ stored_at }} >= {{ hours_before(earliest, lookback_hours) }}
    {%- endif -%}
{%- endmacro %}

{#- The start of a lifecycle's partition hour, as a timestamp. -#}
{% macro first_delivery_hour(date_column, hour_column) -%}
    timestamp_seconds(unix_seconds(timestamp({{ date_column }})) + 3600 * {{ hour_column }})
{%- endmacro %}

{#- The scope tables' columns and no rows: a first or full-refresh build recomputes everything. -#}
{% macro no_lifecycles() -%}
    select
        cast(null as string) as consumer_group,
        cast(null as string) as msg_id,
        cast(null as date) as lifecycle_date,
        cast(null as int) as lifecycle_hour
    where false
{%- endmacro %}

{#- A hint for a partitioned mart's final select: the rows of one partition go to one task, so
    each partition is written as one file, not one per task. Readers of the whole history (the
    dead letters, schedule_fit, the touched lifecycles) open every file: 720 hour partitions of
    a 30-day history were 2,866 files of consume_attempts with 4 tasks. -#}
{% macro one_file_per_partition() -%}
    {#- A dbt unit test compiles the model without its configuration: nothing to hint. -#}
    {%- set columns = config.get('partition_by') -%}
    {%- if columns is string -%}{%- set columns = [columns] -%}{%- endif -%}
    {%- if columns -%}
        /*+ REPARTITION({{ columns | join(', ') }}) */
    {%- endif -%}
{%- endmacro %}

{#- Whether the table of this incremental model lacks a column its YAML documents: a lakehouse
    built before the column was added. Its run then reads and rewrites every partition, so that
    no partition outside the scope keeps the column empty. -#}
{% macro fact_mart_lacks_columns() %}
    {%- if not execute or in_unit_test() or not is_incremental() -%}
        {{ return(false) }}
    {%- endif -%}
    {%- set existing = adapter.get_columns_in_relation(this) | map(attribute='name') | map('lower') | list -%}
    {%- for name in model.columns if name | lower not in existing -%}
        {{ return(true) }}
    {%- endfor -%}
    {{ return(false) }}
{% endmacro %}
