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
        'retry_max_times': 'int',
    } -%}
    {%- if column in numeric_types -%}
        cast({{ value | int }} as {{ numeric_types[column] }})
    {%- elif column == 'dead_letter_enabled' -%}
        {{ 'true' if value else 'false' }}
    {%- else -%}
        '{{ value }}'
    {%- endif -%}
{%- endmacro %}

{#- The group retry policy a 5.x group without one gets (spec §8.1), from dbt_project.yml:
    CustomizedRetryPolicy's `next` list as an SQL array of ms, and ExponentialRetryPolicy's
    defaults by field (initial, max, multiplier). -#}
{% macro customized_retry_policy_default() -%}
    array({{ var('customized_retry_policy_default_millis') | join(', ') }})
{%- endmacro %}

{% macro exponential_retry_policy_default(field) -%}
    cast({{ var('exponential_retry_policy_default')[field] | int }} as bigint)
{%- endmacro %}

{#- One number of the outage-window definition (var outage_window in dbt_project.yml), which
    the what-if's WALL_CLOCK replay and the report's flow-control section share. -#}
{% macro outage_window(field) -%}
    {{ var('outage_window')[field] }}
{%- endmacro %}
