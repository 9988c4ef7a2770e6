{{ config(post_hook="{{ drop_moved_partitions() }}") }}
-- depends_on: {{ ref('consume_attempts') }}, {{ ref('int_lifecycle_scope') }}  (read by the post-hook)
-- One row per (consumer group, message): deliveries and where the message is now.
with

lifecycles as (
    select * from {{ ref('int_message_lifecycles') }}
),

final as (
    select
        consumer_group,
        msg_id,
        origin_msg_id,
        topic,
        keys,
        tags,
        deliveries,
        max_reconsume_times,
        final_state,
        published_at,
        first_consume_at,
        last_consume_at,
        consumed_at,
        dlq_at,
        next_delivery_expected_at,
        time_to_success_ms,
        lifecycle_date,
        lifecycle_hour
    from lifecycles
)

select * from final
