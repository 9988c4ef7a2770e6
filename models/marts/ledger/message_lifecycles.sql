{{ config(post_hook="{{ drop_moved_partitions() }}") }}
-- depends_on: {{ ref('int_run__refresh_partitions') }}  (read by the post-hook)
-- One row per (consumer group, message): how many deliveries, and where the message is now,
-- judged against the data watermark. A dead-letter copy seen in the dlq/ exports is evidence
-- too: it puts a message in the DLQ that the rules expected to be retried (the listener asked
-- for the DLQ, or the configured max is not the real one). A dead letter that is later consumed
-- (re-sent by an operator) keeps its DLQ entry and is CONSUMED, with `recovered_at`. A
-- broadcasting group's message is CONSUMED when one instance consumed it, though another
-- dropped it (`dropped_deliveries`).
with

attempts as (
    {{ rows_in_refresh_scope(ref('consume_attempts'), ref('int_run__refresh_partitions')) }}
),

decisions as (
    {{ rows_in_refresh_scope(ref('retry_decisions'), ref('int_run__refresh_partitions')) }}
),

redeliveries as (
    {{ rows_in_refresh_scope(ref('redeliveries'), ref('int_run__refresh_partitions')) }}
),

-- What the redeliveries tell of each lifecycle, in one pass over them (Spark reads a CTE again
-- at each use):
-- - a delivery traced as a success whose message came back at r + 1 after level 3 + r was acked
--   only up to ackIndex (§3.3): it did not consume this message;
-- - each instance of a broadcasting group gets its copy (§3.3): deliveries, not retries;
-- - a DLQ decision the client overturned (its fallback sent the message back itself, §3.4) is
--   no DLQ entry.
redelivery_facts as (
    select
        consumer_group,
        msg_id,
        collect_set(
            case when redelivery_cause = 'PARTIAL_BATCH_ACK' then previous_delivery_number end
        ) as partially_acked_deliveries,
        count_if(redelivery_cause = 'BROADCAST_COPY') as broadcast_copies,
        collect_set(
            case
                when {{ overturns_dlq_decision('previous_decision', 'redelivery_cause') }}
                    then previous_delivery_number
            end
        ) as overturned_deliveries
    from redeliveries
    group by consumer_group, msg_id
),

-- What the decisions tell of each lifecycle, in one pass: the failures dropped with no retry
-- (by a broadcasting client, or by the broker for a group without a retry queue, §3.3, §1.2),
-- the DLQ decisions, and the latest decision, which is the last delivery's when their
-- numbers agree. (group, message, delivery) is a decision's key: each max_by takes one row.
decision_facts as (
    select
        consumer_group,
        msg_id,
        count_if(decision = 'DROP') as dropped_deliveries,
        collect_list(
            case
                when decision = 'DLQ'
                    then named_struct(
                            'delivery_number', delivery_number, 'entered_dlq_at', entered_dlq_at
                        )
            end
        ) as dlq_decisions,
        max(delivery_number) as latest_decided_delivery,
        max_by(decision, delivery_number) as latest_decision,
        max_by(entered_dlq_at, delivery_number) as latest_entered_dlq_at,
        max_by(expected_redelivery_at, delivery_number) as latest_expected_redelivery_at
    from decisions
    group by consumer_group, msg_id
),

published as (
    select * from {{ ref('int_run__published_messages') }}
),

watermark as (
    select * from {{ ref('int_trace_watermark') }}
),

dlq_copies as (
    select * from {{ ref('stg_dlq__messages') }}
),

broker_dlq_forwards as (
    select * from {{ ref('stg_broker_log__dlq_forwards') }}
),

-- The dead letters seen per lifecycle: the earliest, and what the last delivery's judgement
-- needs (each copy's stored count and time, the latest DLQ log line), so that the lifecycles are
-- joined with them once.
observed_dead_letters as (
    select
        consumer_group,
        msg_id,
        min(stored_at) as first_stored_at,
        collect_list(
            case
                when is_copy
                    then named_struct('reconsume_times', reconsume_times, 'stored_at', stored_at)
            end
        ) as copies,
        max(case when not is_copy then stored_at end) as last_forward_at
    from (
        select
            consumer_group,
            lifecycle_msg_id as msg_id,
            reconsume_times,
            stored_at,
            true as is_copy
        from dlq_copies
        union all
        select
            consumer_group,
            msg_id,
            cast(null as int) as reconsume_times,
            stored_at,
            false as is_copy
        from broker_dlq_forwards
    ) as observed
    group by consumer_group, msg_id
),

delivery_summary as (
    select
        consumer_group,
        msg_id,
        count(*) as deliveries,
        max(delivery_number) as last_delivery_number,
        min_by(reconsume_times, delivery_number) as first_reconsume_times,
        max_by(keys, delivery_number) as consumer_keys,
        max_by(topic, delivery_number) as consumer_topic,
        max_by(client_line, delivery_number) as client_line,
        min(consume_started_at) as first_consume_at,
        max(consume_started_at) as last_consume_at,
        max(reconsume_times) as max_reconsume_times,
        min(lifecycle_date) as lifecycle_date,
        min(lifecycle_hour) as lifecycle_hour,
        -- (group, message, delivery) is an attempt's key: the last delivery is one attempt
        max_by(is_success, delivery_number) as last_is_success,
        max_by(reconsume_times, delivery_number) as last_reconsume_times,
        max_by(return_type, delivery_number) as last_return_type,
        -- the successes: which of them consumed the message (below), and a recovery after the
        -- DLQ entry (judged further below)
        collect_list(
            case
                when is_success
                    then named_struct(
                            'delivery_number', delivery_number,
                            'started_at', consume_started_at,
                            'ended_at', consume_ended_at
                        )
            end
        ) as successes
    from attempts
    group by consumer_group, msg_id
),

-- A success consumed the message unless it was only partially acked; a DLQ decision counts
-- unless it was overturned.
with_facts as (
    select
        delivery_summary.*,
        filter(
            delivery_summary.successes,
            success -> not coalesce(
                array_contains(
                    redelivery_facts.partially_acked_deliveries, success.delivery_number
                ),
                false
            )
        ) as consumptions,
        coalesce(redelivery_facts.broadcast_copies, 0) as broadcast_copies,
        coalesce(decision_facts.dropped_deliveries, 0) as dropped_deliveries,
        case
            when decision_facts.latest_decided_delivery = delivery_summary.last_delivery_number
                then decision_facts.latest_decision
        end as last_decision,
        case
            when decision_facts.latest_decided_delivery = delivery_summary.last_delivery_number
                then decision_facts.latest_entered_dlq_at
        end as entered_dlq_at,
        case
            when decision_facts.latest_decided_delivery = delivery_summary.last_delivery_number
                then decision_facts.latest_expected_redelivery_at
        end as last_expected_redelivery_at,
        array_min(transform(
            filter(
                decision_facts.dlq_decisions,
                dlq_decision -> not coalesce(
                    array_contains(
                        redelivery_facts.overturned_deliveries, dlq_decision.delivery_number
                    ),
                    false
                )
            ),
            dlq_decision -> dlq_decision.entered_dlq_at
        )) as first_predicted_dlq_at
    from delivery_summary
    left join redelivery_facts
        on
            delivery_summary.consumer_group = redelivery_facts.consumer_group
            and delivery_summary.msg_id = redelivery_facts.msg_id
    left join decision_facts
        on
            delivery_summary.consumer_group = decision_facts.consumer_group
            and delivery_summary.msg_id = decision_facts.msg_id
),

last_deliveries as (
    select
        *,
        size(consumptions) as successful_deliveries,
        array_min(transform(consumptions, consumption -> consumption.ended_at)) as consumed_at
    from with_facts
),

-- A dead-letter copy came from the last traced delivery when its stored count is that
-- delivery's r + 1 (the broker's send-back) or r (an orderly 4.9.x client's copy), or from a later
-- delivery the trace never saw when it counts more and was stored after the last traced start.
-- An older entry (before an operator re-sent the message, whose count starts again at 0) does
-- not count. A 5.x gRPC group's copy counts r + 2, or 1 from a FIFO client (§8.3), whatever
-- count the last delivery had, so there, as for a 5.x broker's DLQ log line, which names no
-- count, one stored after the last delivery started (an older one's message was re-sent).
with_dead_letters as (
    select
        last_deliveries.*,
        coalesce(
            last_deliveries.first_predicted_dlq_at, observed_dead_letters.first_stored_at
        ) as first_dlq_at,
        coalesce(
            exists(
                observed_dead_letters.copies,
                copy -> (
                    not {{ is_grpc_client_line('last_deliveries.client_line') }}
                    and copy.reconsume_times in (
                        last_deliveries.last_reconsume_times,
                        last_deliveries.last_reconsume_times + 1
                    )
                )
                or (
                    (
                        copy.reconsume_times > last_deliveries.last_reconsume_times + 1
                        or {{ is_grpc_client_line('last_deliveries.client_line') }}
                    )
                    and copy.stored_at >= last_deliveries.last_consume_at
                )
            ),
            false
        )
        or coalesce(observed_dead_letters.last_forward_at >= last_deliveries.last_consume_at, false)
            as last_delivery_is_dead_lettered
    from last_deliveries
    left join observed_dead_letters
        on
            last_deliveries.consumer_group = observed_dead_letters.consumer_group
            and last_deliveries.msg_id = observed_dead_letters.msg_id
),

-- A dead letter later consumed (re-sent by an operator) is recovered when the first of its
-- successes that started at or after the DLQ entry ended.
judged as (
    select
        with_dead_letters.*,
        array_min(transform(
            filter(
                with_dead_letters.successes,
                success -> success.started_at >= with_dead_letters.first_dlq_at
            ),
            success -> success.ended_at
        )) as recovered_at,
        case
            when with_dead_letters.consumed_at is not null then 'CONSUMED'
            when with_dead_letters.last_decision = 'DLQ' then 'DLQ'
            when with_dead_letters.last_delivery_is_dead_lettered then 'DLQ'
            when with_dead_letters.last_is_success is null then 'IN_FLIGHT'
            when with_dead_letters.last_decision = 'DROP' then 'DROPPED'
            when {{ retry_is_awaited(
                'with_dead_letters.last_expected_redelivery_at', 'watermark.watermark_at'
            ) }}
                then 'WAITING_RETRY'
            else 'RETRY_OVERDUE'
        end as final_state
    from with_dead_letters
    cross join watermark
),

final as (
    select
        judged.consumer_group,
        judged.msg_id,
        published.origin_msg_id,
        coalesce(published.origin_kind, 'UNKNOWN') as origin_kind,
        published.published_offset_msg_id,
        coalesce(published.topic, judged.consumer_topic) as topic,
        coalesce(published.keys, judged.consumer_keys) as `keys`,
        published.tags,
        judged.deliveries,
        judged.successful_deliveries,
        judged.broadcast_copies,
        judged.dropped_deliveries,
        judged.first_reconsume_times,
        judged.max_reconsume_times,
        judged.last_reconsume_times,
        judged.last_return_type,
        judged.final_state,
        published.published_at,
        judged.first_consume_at,
        judged.last_consume_at,
        judged.consumed_at,
        judged.first_dlq_at as dlq_at,
        judged.recovered_at,
        case
            when judged.final_state in ('WAITING_RETRY', 'RETRY_OVERDUE')
                then judged.last_expected_redelivery_at
        end as next_delivery_expected_at,
        unix_millis(judged.consumed_at) - unix_millis(judged.first_consume_at)
            as time_to_success_ms,
        judged.client_line,
        judged.lifecycle_date,
        judged.lifecycle_hour
    from judged
    left join published
        on judged.msg_id = published.msg_id
)

select {{ one_file_per_partition() }} * from final
