{#- RocketMQ's default for one consumer_groups.csv column, as a typed SQL literal. The defaults
    are written once, in var('consumer_group_defaults') of dbt_project.yml, which the Python
    simulation reads too. -#}
{% macro consumer_group_default(column) -%}
    {%- set value = var('consumer_group_defaults')[column] -%}
    {%- set numeric_types = {
        'max_reconsume_times': 'int',
        'suspend_current_queue_time_millis': 'bigint',
        'retry_queue_nums': 'int',
        'delay_level_when_next_consume': 'int',
        'consume_timeout_minutes': 'int',
    } -%}
    {%- if column in numeric_types -%}
        cast({{ value | int }} as {{ numeric_types[column] }})
    {%- else -%}
        '{{ value }}'
    {%- endif -%}
{%- endmacro %}
