{{ config(post_hook="{{ drop_moved_partitions() }}") }}
-- depends_on: {{ ref('consume_attempts') }}, {{ ref('int_lifecycle_scope') }}  (read by the post-hook)
-- One row per failed delivery: what the client and broker did with it, and whether the
-- redelivery came when the rules say it should.
with

decisions as (
    select * from {{ ref('int_retry_decisions') }}
),

published as (
    select * from {{ ref('int_published_messages') }}
),

final as (
    select
        decisions.consumer_group,
        decisions.msg_id,
        published.origin_msg_id,
        decisions.request_id,
        decisions.delivery_number,
        decisions.reconsume_times,
        decisions.failed_at,
        decisions.decision,
        decisions.dlq_reason,
        decisions.delay_level,
        decisions.delay_ms,
        decisions.schedule_queue_id,
        decisions.target_topic,
        decisions.next_reconsume_times,
        decisions.expected_redelivery_at,
        decisions.observed_redelivery_at,
        decisions.redelivery_lag_ms,
        decisions.entered_dlq_at,
        decisions.lifecycle_date,
        decisions.lifecycle_hour
    from decisions
    left join published
        on decisions.msg_id = published.msg_id
)

select * from final
