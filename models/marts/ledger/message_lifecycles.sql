{{ config(post_hook="{{ drop_moved_partitions() }}") }}
-- depends_on: {{ ref('int_run__refresh_partitions') }}  (read by the post-hook)
-- One row per (consumer group, message): how many deliveries, and where the message is now,
-- judged against the data watermark.
with

attempts as (
    {{ rows_in_refresh_scope(ref('consume_attempts'), ref('int_run__refresh_partitions')) }}
),

decisions as (
    {{ rows_in_refresh_scope(ref('retry_decisions'), ref('int_run__refresh_partitions')) }}
),

published as (
    select * from {{ ref('int_run__published_messages') }}
),

watermark as (
    select * from {{ ref('int_trace_watermark') }}
),

delivery_summary as (
    select
        consumer_group,
        msg_id,
        count(*) as deliveries,
        max(delivery_number) as last_delivery_number,
        max_by(keys, delivery_number) as consumer_keys,
        min(consume_started_at) as first_consume_at,
        max(consume_started_at) as last_consume_at,
        min(case when is_success then consume_ended_at end) as consumed_at,
        max(reconsume_times) as max_reconsume_times,
        min(lifecycle_date) as lifecycle_date,
        min(lifecycle_hour) as lifecycle_hour
    from attempts
    group by consumer_group, msg_id
),

last_deliveries as (
    select
        delivery_summary.*,
        last_attempt.is_success as last_is_success,
        last_decision.decision as last_decision,
        last_decision.entered_dlq_at,
        last_decision.expected_redelivery_at as last_expected_redelivery_at
    from delivery_summary
    inner join attempts as last_attempt
        on
            delivery_summary.consumer_group = last_attempt.consumer_group
            and delivery_summary.msg_id = last_attempt.msg_id
            and delivery_summary.last_delivery_number = last_attempt.delivery_number
    left join decisions as last_decision
        on
            last_attempt.consumer_group = last_decision.consumer_group
            and last_attempt.msg_id = last_decision.msg_id
            and last_attempt.delivery_number = last_decision.delivery_number
),

judged as (
    select
        last_deliveries.*,
        case
            when last_deliveries.consumed_at is not null then 'CONSUMED'
            when last_deliveries.last_is_success is null then 'IN_FLIGHT'
            when last_deliveries.last_decision = 'DLQ' then 'DLQ'
            when last_deliveries.last_decision = 'DROP' then 'DROPPED'
            when {{ retry_is_awaited(
                'last_deliveries.last_expected_redelivery_at', 'watermark.watermark_at'
            ) }}
                then 'WAITING_RETRY'
            else 'RETRY_OVERDUE'
        end as final_state
    from last_deliveries
    cross join watermark
),

final as (
    select
        judged.consumer_group,
        judged.msg_id,
        published.origin_msg_id,
        published.topic,
        coalesce(published.keys, judged.consumer_keys) as `keys`,
        published.tags,
        judged.deliveries,
        judged.max_reconsume_times,
        judged.final_state,
        published.published_at,
        judged.first_consume_at,
        judged.last_consume_at,
        judged.consumed_at,
        case when judged.final_state = 'DLQ' then judged.entered_dlq_at end as dlq_at,
        case
            when judged.final_state in ('WAITING_RETRY', 'RETRY_OVERDUE')
                then judged.last_expected_redelivery_at
        end as next_delivery_expected_at,
        unix_millis(judged.consumed_at) - unix_millis(judged.first_consume_at)
            as time_to_success_ms,
        judged.lifecycle_date,
        judged.lifecycle_hour
    from judged
    left join published
        on judged.msg_id = published.msg_id
)

select * from final
