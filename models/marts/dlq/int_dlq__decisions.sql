-- The decisions of the lifecycles with a dead letter (int_dlq__lifecycles' has_dead_letter), by
-- day, each with whether the client overturned it: a DLQ decision the message came back from,
-- sent by the client itself after its send-back failed (the fallback ignores the level, §3.4),
-- never reached the DLQ. A fact mart, rewritten for the days of each run's scope, like
-- int_dlq__lifecycles.
with

decisions as (
    {{ rows_in_refresh_scope(ref('retry_decisions'), ref('int_run__refresh_partitions'), grain='day') }}
),

redeliveries as (
    {{ rows_in_refresh_scope(ref('redeliveries'), ref('int_run__refresh_partitions'), grain='day') }}
),

dead_letter_lifecycles as (
    {{ rows_in_refresh_scope(ref('int_dlq__lifecycles'), ref('int_run__refresh_partitions'), grain='day') }}
),

overturned_decisions as (
    select distinct
        consumer_group,
        msg_id,
        previous_delivery_number as delivery_number
    from redeliveries
    where {{ overturns_dlq_decision('previous_decision', 'redelivery_cause') }}
),

final as (
    select
        decisions.consumer_group,
        decisions.msg_id,
        decisions.delivery_number,
        decisions.reconsume_times,
        decisions.decision,
        decisions.target_topic,
        decisions.next_reconsume_times,
        decisions.failed_at,
        decisions.entered_dlq_at,
        decisions.dlq_reason,
        decisions.prediction_basis,
        overturned_decisions.msg_id is not null as is_overturned,
        decisions.lifecycle_date
    from decisions
    left semi join dead_letter_lifecycles
        on
            decisions.consumer_group = dead_letter_lifecycles.consumer_group
            and decisions.msg_id = dead_letter_lifecycles.msg_id
            and dead_letter_lifecycles.has_dead_letter
    left join overturned_decisions
        on
            decisions.consumer_group = overturned_decisions.consumer_group
            and decisions.msg_id = overturned_decisions.msg_id
            and decisions.delivery_number = overturned_decisions.delivery_number
)

select {{ one_file_per_partition() }} * from final
