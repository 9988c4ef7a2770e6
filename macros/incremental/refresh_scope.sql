{#- How models read only the lifecycles in this run's refresh scope (int_lifecycle_scope). Models
    pass relations through ref(), so dbt still sees the dependencies. On a first or full-refresh
    build the scope is everything and no filter is applied. -#}

{% macro refresh_scope_is_everything() %}
    {{ return(previous_fact_relation('message_lifecycles') is none) }}
{% endmacro %}

{#- A filter on a `lifecycle_date` column: the dates in `relation`. They are read first and
    written as literals, so Spark prunes the fact marts' partitions while planning. A unit test's
    fixture is a CTE, not a table: it gets the equivalent subquery. -#}
{% macro in_refresh_dates(column, relation) -%}
    {%- if '__dbt__cte__' in (relation | string) or not execute -%}
        {{ column }} in (select lifecycle_date from {{ relation }})
    {%- else -%}
        {%- set dates = run_query("select distinct cast(lifecycle_date as string) from " ~ relation
            ~ " where lifecycle_date is not null order by 1").columns[0].values() -%}
        {%- if dates | length == 0 -%}
            false
        {%- else -%}
            {{ column }} in ({% for date in dates %}date'{{ date }}'{{ ", " if not loop.last }}{% endfor %})
        {%- endif -%}
    {%- endif -%}
{%- endmacro %}

{#- The rows of a fact mart (`relation`) that belong to lifecycles in the scope: its partitions
    on the scope's dates, which this run has just rewritten. -#}
{% macro rows_in_refresh_scope(relation, scope) -%}
    select in_scope.*
    from {{ relation }} as in_scope
    where
    {%- if not execute or refresh_scope_is_everything() %} true
    {%- else %} {{ in_refresh_dates('in_scope.lifecycle_date', scope) }}
    {%- endif %}
{%- endmacro %}

{#- The trace records (a typed staging view, `relation`) of lifecycles in the scope, matched on
    `keys`. A lifecycle's records are stored on or after its lifecycle date, less the clock skew;
    `lookback_hours` widens that for records written earlier (a Pub). -#}
{% macro records_in_refresh_scope(relation, scope, keys, lookback_hours) -%}
    select in_scope.*
    from {{ relation }} as in_scope
    {%- if execute and not refresh_scope_is_everything() %}
        {%- set earliest = earliest_time(scope, 'lifecycle_date', 'true') %}
        left semi join {{ scope }} as scope
            on {% for key in keys %}in_scope.{{ key }} = scope.{{ key }}{{ " and " if not loop.last }}{% endfor %}
        {%- if '__dbt__cte__' not in (scope | string) %}
        where in_scope.trace_stored_at >= {{ hours_before(earliest, lookback_hours) }}
        {%- endif %}
    {%- endif %}
{%- endmacro %}
