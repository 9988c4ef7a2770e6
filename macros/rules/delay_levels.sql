{#- The delay-level table of each row of `relation` (a CTE or table with `key_columns` and
    message_delay_level), parsed exactly as ScheduleMessageService.parseDelayLevel does (spec
    §2.3) by the session's Python UDF parse_delay_levels: one row per level with its token,
    delay, schedule queue and whether it is the row's highest level (the clamp's top). A token
    of zero or less (`0s`, `-1s`: parsed without error) is delivered at once: its deliver time,
    the store time plus the delay (computeDeliverTimestamp, §2.3), is already due when the
    schedule's timer looks, so its delay is 0. The one
    place a delay string becomes levels: the broker clusters' table and a what-if scenario's
    ladders both come through it. A view cannot call the UDF, so callers are tables. -#}
{% macro delay_level_rows(relation, key_columns) -%}
    {%- set keys = key_columns | join(', ') -%}
    select
        parsed.{{ key_columns | join(', parsed.') }},
        delay.level,
        delay.token,
        greatest(delay.delay_ms, 0) as delay_ms,
        {{ schedule_queue_id('delay.level') }} as schedule_queue_id,
        delay.level = max(delay.level) over (partition by {{ keys }}) as is_max_level,
        parsed.message_delay_level
    from (
        select
            {{ keys }},
            message_delay_level,
            parse_delay_levels(message_delay_level) as levels
        from {{ relation }}
    ) as parsed
        lateral view inline(parsed.levels) delay as level, token, delay_ms
{%- endmacro %}

{#- Each broker cluster's levels as one row, from `relation` (int_delay_levels or a CTE over it):
    the highest level (the clamp's top) and each level's delay in a map. A model then joins the
    table once however many levels it looks up: Spark reads a CTE again at each use. -#}
{% macro levels_by_cluster(relation) -%}
    select
        broker_cluster,
        max(level) as max_delay_level,
        map_from_entries(collect_list(struct(level, delay_ms))) as delay_ms_by_level
    from {{ relation }}
    group by broker_cluster
{%- endmacro %}
