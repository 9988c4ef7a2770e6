{{ config(materialized='table') }}
-- The delay-level table of each broker cluster, parsed from `message_delay_level` exactly as
-- ScheduleMessageService.parseDelayLevel does (spec §2.3). The one place the delay table lives.
-- A table: a view cannot call the session's Python UDF.
with

configured as (
    select * from {{ ref('stg_config__broker_delay_levels') }}
),

parsed as (
    select
        broker_cluster,
        message_delay_level,
        parse_delay_levels(message_delay_level) as levels
    from configured
),

exploded as (
    select
        parsed.broker_cluster,
        parsed.message_delay_level,
        delay.level,
        delay.token,
        delay.delay_ms
    from parsed
        lateral view inline(parsed.levels) delay as level, token, delay_ms
),

final as (
    select
        broker_cluster,
        level,
        token,
        delay_ms,
        {{ schedule_queue_id('level') }} as schedule_queue_id,
        level = max(level) over (partition by broker_cluster) as is_max_level,
        message_delay_level
    from exploded
)

select * from final
