{#- Whether a seed has a column that later releases added (a seed written before them still
    builds; the staging model takes RocketMQ's default instead). True while parsing. -#}
{% macro seed_has_column(seed, column) -%}
    {%- if not execute -%}
        {{ return(true) }}
    {%- endif -%}
    {{ return(column in (adapter.get_columns_in_relation(seed) | map(attribute='name') | list)) }}
{%- endmacro %}
