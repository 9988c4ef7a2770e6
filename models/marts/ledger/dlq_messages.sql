-- The compensation work list: every message a consumer group sent to its dead-letter queue.
with

scope as (
    select * from {{ ref('int_lifecycle_scope') }}
),

lifecycles as (
    select message_lifecycles.*
    from {{ ref('message_lifecycles') }} as message_lifecycles
    left semi join scope
        on
            message_lifecycles.consumer_group = scope.consumer_group
            and message_lifecycles.msg_id = scope.msg_id
    where message_lifecycles.final_state = 'DLQ'
),

dlq_decisions as (
    select retry_decisions.*
    from {{ ref('retry_decisions') }} as retry_decisions
    left semi join scope
        on
            retry_decisions.consumer_group = scope.consumer_group
            and retry_decisions.msg_id = scope.msg_id
    where retry_decisions.decision = 'DLQ'
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
        -- The DLQ copy stores the failed delivery's count plus one (spec §1.2 step 10).
        dlq_decisions.next_reconsume_times as reconsume_times,
        lifecycles.deliveries,
        dlq_decisions.failed_at as last_failed_at,
        dlq_decisions.entered_dlq_at,
        dlq_decisions.dlq_reason as reason,
        'PREDICTED' as evidence,
        lifecycles.lifecycle_date
    from lifecycles
    inner join dlq_decisions
        on
            lifecycles.consumer_group = dlq_decisions.consumer_group
            and lifecycles.msg_id = dlq_decisions.msg_id
            and lifecycles.dlq_at = dlq_decisions.entered_dlq_at
)

select * from final
