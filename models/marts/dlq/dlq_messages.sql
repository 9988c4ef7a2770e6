-- The compensation work list: every message a consumer group sent to its dead-letter queue,
-- predicted, observed or both (int_dlq__entries), and whether it was recovered: re-sent, or
-- consumed by a group that reads the DLQ. Dead letters are few next to deliveries: the table
-- is rebuilt whole on every run, so an entry stays put when an operator recovers the message
-- later. It reads the fact marts kept by day, not every hour of message_lifecycles.
with

entries as (
    select * from {{ ref('int_dlq__entries') }}
),

-- The lifecycles begun on a stored copy (a first delivery with a count) are kept there.
lifecycles_begun_on_a_copy as (
    select * from {{ ref('int_dlq__lifecycles') }}
    where first_reconsume_times > 0
),

daily_stats as (
    select * from {{ ref('group_retry_stats_daily') }}
),

-- A group that consumes `%DLQ%<group>` receives the stored copies: its first delivery of a
-- message carries the copy's count (> 0), after the message entered that DLQ. A group whose
-- lifecycles are at least half such deliveries is that group's recovery consumer.
recovery_deliveries as (
    select
        recovering.consumer_group as recovery_consumer_group,
        entries.consumer_group,
        entries.msg_id,
        recovering.consumed_at
    from lifecycles_begun_on_a_copy as recovering
    inner join entries
        on
            recovering.msg_id = entries.msg_id
            and recovering.consumer_group <> entries.consumer_group
            and recovering.first_consume_at
            >= coalesce(entries.observed_stored_at, entries.predicted_entered_dlq_at)
),

-- Each day's cohort holds the lifecycles first delivered that day: together, all of them.
group_sizes as (
    select
        consumer_group,
        sum(messages) as lifecycles
    from daily_stats
    group by consumer_group
),

recovery_candidates as (
    select
        recovery_deliveries.recovery_consumer_group,
        recovery_deliveries.consumer_group,
        count(distinct recovery_deliveries.msg_id) as recovered_messages,
        max(group_sizes.lifecycles) as lifecycles
    from recovery_deliveries
    inner join group_sizes
        on recovery_deliveries.recovery_consumer_group = group_sizes.consumer_group
    group by recovery_deliveries.recovery_consumer_group, recovery_deliveries.consumer_group
),

recovery_consumers as (
    select
        recovery_consumer_group,
        consumer_group
    from (
        select
            *,
            row_number() over (
                partition by recovery_consumer_group
                order by recovered_messages desc, consumer_group asc
            ) as candidate_rank
        from recovery_candidates
        where 2 * recovered_messages >= lifecycles
    )
    where candidate_rank = 1
),

recovered_by_consumer as (
    select
        recovery_deliveries.consumer_group,
        recovery_deliveries.msg_id,
        min(recovery_deliveries.recovery_consumer_group) as recovery_consumer_group,
        min(recovery_deliveries.consumed_at) as consumed_at
    from recovery_deliveries
    inner join recovery_consumers
        on
            recovery_deliveries.recovery_consumer_group
            = recovery_consumers.recovery_consumer_group
            and recovery_deliveries.consumer_group = recovery_consumers.consumer_group
    group by recovery_deliveries.consumer_group, recovery_deliveries.msg_id
),

recovery_consumer_of_group as (
    select
        consumer_group,
        min(recovery_consumer_group) as recovery_consumer_group
    from recovery_consumers
    group by consumer_group
),

final as (
    select
        entries.consumer_group,
        entries.`namespace`,
        entries.dlq_topic,
        entries.msg_id,
        entries.dlq_entry_number,
        entries.origin_msg_id,
        entries.origin_kind,
        entries.published_offset_msg_id,
        entries.topic,
        entries.`keys`,
        entries.tags,
        entries.reconsume_times,
        entries.deliveries,
        entries.last_failed_at,
        entries.entered_dlq_at,
        entries.reason,
        entries.evidence,
        entries.prediction_basis,
        entries.observed_in,
        entries.reconciliation_reason,
        entries.predicted_reconsume_times,
        entries.predicted_entered_dlq_at,
        entries.observed_offset_msg_id,
        entries.observed_stored_at,
        entries.observed_reconsume_times,
        entries.observed_retry_topic,
        entries.observed_origin_msg_id,
        entries.observed_copies_landed,
        entries.implied_max_reconsume_times,
        entries.max_reconsume_drift,
        case
            when
                recovered_by_consumer.consumed_at is null
                or entries.resent_recovered_at <= recovered_by_consumer.consumed_at
                then entries.resent_recovered_at
            else recovered_by_consumer.consumed_at
        end as recovered_at,
        case
            when
                entries.resent_recovered_at is not null
                and (
                    recovered_by_consumer.consumed_at is null
                    or entries.resent_recovered_at <= recovered_by_consumer.consumed_at
                )
                then 'RESEND'
            when recovered_by_consumer.consumed_at is not null then 'RECOVERY_CONSUMER'
        end as recovered_by,
        recovery_consumer_of_group.recovery_consumer_group,
        entries.dlq_date,
        entries.lifecycle_date,
        entries.lifecycle_hour
    from entries
    left join recovered_by_consumer
        on
            entries.consumer_group = recovered_by_consumer.consumer_group
            and entries.msg_id = recovered_by_consumer.msg_id
    left join recovery_consumer_of_group
        on entries.consumer_group = recovery_consumer_of_group.consumer_group
)

select * from final
