-- The delay-level table of every broker cluster, as the rules use it (int_delay_levels).
with

delay_levels as (
    select * from {{ ref('int_delay_levels') }}
),

final as (
    select
        broker_cluster,
        level,
        token,
        delay_ms,
        schedule_queue_id,
        is_max_level,
        message_delay_level
    from delay_levels
)

select * from final
