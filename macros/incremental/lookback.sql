{#- Incremental runs read history only as far back as the new data can reach, so that their cost
    does not grow with the history. These macros turn a bound found at run time into a literal,
    which Spark pushes into the scan (partition pruning, parquet row-group statistics). -#}

{#- The earliest `column` (a timestamp or date) of `relation`'s rows matching `condition`, as an
    ISO string, or none when there are none. -#}
{% macro earliest_time(relation, column, condition) %}
    {%- if not execute or in_unit_test() -%}
        {{ return(none) }}
    {%- endif -%}
    {{ return(run_query(earliest_time_query(relation, column, condition)).columns[0].values()[0]) }}
{% endmacro %}

{% macro earliest_time_query(relation, column, condition) -%}
    select cast(min({{ column }}) as string) from {{ relation }} where {{ condition }}
{%- endmacro %}

{#- How many of `relation`'s rows match `condition` (0 when not executing). -#}
{% macro count_rows(relation, condition) %}
    {%- if not execute or in_unit_test() -%}
        {{ return(0) }}
    {%- endif -%}
    {{ return(run_query(count_rows_query(relation, condition)).columns[0].values()[0]) }}
{% endmacro %}

{% macro count_rows_query(relation, condition) -%}
    select count(*) from {{ relation }} where {{ condition }}
{%- endmacro %}

{#- The values of several one-value `queries` (earliest_time_query, count_rows_query), read in one
    statement: a model that needs several bounds waits for one query rather than one each. -#}
{% macro query_values(queries) %}
    {%- set result = run_query("select (" ~ queries | join("), (") ~ ")") -%}
    {{ return(result.rows[0] | list) }}
{% endmacro %}

{#- `hours` before the instant `earliest` (an ISO string or date), as a timestamp literal. With no
    instant (nothing new), the bound lies in the future and the read is empty. -#}
{% macro hours_before(earliest, hours) -%}
    {%- if earliest is none -%}
        timestamp'9999-12-31 00:00:00'
    {%- else -%}
        timestamp'{{ earliest }}' - interval {{ hours | int }} hours
    {%- endif -%}
{%- endmacro %}
