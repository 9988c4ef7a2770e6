{{ config(post_hook="{{ drop_moved_partitions() }}") }}
-- depends_on: {{ ref('consume_attempts') }}  (read by the post-hook)
-- The compensation work list: every message a consumer group sent to its dead-letter queue.
with

lifecycles as (
    {{ rows_in_refresh_scope(ref('message_lifecycles'), ref('int_run__refresh_partitions')) }}
        and in_scope.final_state = 'DLQ'
),

dlq_decisions as (
    {{ rows_in_refresh_scope(ref('retry_decisions'), ref('int_run__refresh_partitions')) }}
        and in_scope.decision = 'DLQ'
),

final as (
    select
        lifecycles.consumer_group,
        dlq_decisions.target_topic as dlq_topic,
        lifecycles.msg_id,
        lifecycles.origin_msg_id,
        lifecycles.topic,
        lifecycles.keys,
        lifecycles.tags,
        -- The count the DLQ copy stores (next_reconsume_times: r + 1, or r from an orderly 4.9.x client).
        dlq_decisions.next_reconsume_times as reconsume_times,
        lifecycles.deliveries,
        dlq_decisions.failed_at as last_failed_at,
        dlq_decisions.entered_dlq_at,
        dlq_decisions.dlq_reason as reason,
        'PREDICTED' as evidence,
        lifecycles.lifecycle_date,
        lifecycles.lifecycle_hour
    from lifecycles
    inner join dlq_decisions
        on
            lifecycles.consumer_group = dlq_decisions.consumer_group
            and lifecycles.msg_id = dlq_decisions.msg_id
            and lifecycles.dlq_at = dlq_decisions.entered_dlq_at
)

select * from final
