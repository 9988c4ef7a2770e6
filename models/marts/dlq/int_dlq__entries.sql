-- Every dead-letter entry of every consumer group, as the rules predict it from the deliveries
-- (retry_decisions) and as the dlq/ exports (the copies in `%DLQ%<group>`) or a 5.x broker's
-- DLQ log show it, matched per (group, message) in time order; a dead letter seen on one side
-- only gets a reconciliation reason, each a documented rule (docs/rules.md). `dlq_messages`
-- adds how each was recovered. A table: Spark recomputes a CTE for every reference, and the
-- recovery reads these entries three times. It reads the fact marts, so it sits in the marts
-- layer; the intermediate schema keeps it out of the analysts' one.
{{ config(materialized='table', schema='intermediate') }}
with

-- The lifecycles and decisions of the (group, message) pairs with a dead letter on either side,
-- kept by day by their fact marts: few next to all lifecycles, so this reads them instead of
-- every hour of the ledger.
lifecycles_with_dead_letters as (
    select * from {{ ref('int_dlq__lifecycles') }}
),

decisions_with_dead_letters as (
    select * from {{ ref('int_dlq__decisions') }}
),

-- Only for each group's highest traced count, kept per day there.
daily_stats as (
    select * from {{ ref('group_retry_stats_daily') }}
),

copies as (
    select * from {{ ref('stg_dlq__messages') }}
),

broker_forwards as (
    select * from {{ ref('stg_broker_log__dlq_forwards') }}
),

consumer_groups as (
    select * from {{ ref('int_consumer_group_settings') }}
),

-- A DLQ decision the client overturned (is_overturned, int_dlq__decisions) never reached the DLQ.
predicted as (
    select
        decisions.consumer_group,
        decisions.msg_id,
        decisions.target_topic as dlq_topic,
        decisions.next_reconsume_times as predicted_reconsume_times,
        decisions.failed_at as last_failed_at,
        decisions.entered_dlq_at as predicted_entered_dlq_at,
        decisions.dlq_reason,
        decisions.prediction_basis,
        row_number() over (
            partition by decisions.consumer_group, decisions.msg_id
            order by decisions.entered_dlq_at, decisions.delivery_number
        ) as entry_number
    from decisions_with_dead_letters as decisions
    where decisions.decision = 'DLQ' and not decisions.is_overturned
),

-- A 5.x broker's DLQ log line is the same evidence as an exported copy, without its count and
-- properties; where both tell one entry (stored within 5 s), the copy is kept.
logged_only as (
    select
        broker_forwards.consumer_group,
        broker_forwards.msg_id,
        broker_forwards.`namespace`,
        broker_forwards.dlq_topic,
        broker_forwards.original_topic,
        broker_forwards.stored_at
    from broker_forwards
    left anti join copies
        on
            broker_forwards.consumer_group = copies.consumer_group
            and broker_forwards.msg_id = copies.lifecycle_msg_id
            and abs(unix_millis(broker_forwards.stored_at) - unix_millis(copies.stored_at)) <= 5000
),

observed_entries as (
    select
        consumer_group,
        lifecycle_msg_id as msg_id,
        `namespace`,
        dlq_topic,
        offset_msg_id,
        stored_at,
        reconsume_times,
        retry_topic,
        origin_msg_id,
        delay_property,
        `keys`,
        tags,
        copies_landed,
        'DLQ_EXPORT' as observed_in
    from copies

    union all

    select
        consumer_group,
        msg_id,
        `namespace`,
        dlq_topic,
        cast(null as string) as offset_msg_id,
        stored_at,
        cast(null as int) as reconsume_times,
        original_topic as retry_topic,
        cast(null as string) as origin_msg_id,
        cast(null as string) as delay_property,
        cast(null as string) as `keys`,
        cast(null as string) as tags,
        cast(null as bigint) as copies_landed,
        'BROKER_LOG' as observed_in
    from logged_only
),

observed as (
    select
        *,
        row_number() over (
            partition by consumer_group, msg_id order by stored_at, offset_msg_id
        ) as entry_number
    from observed_entries
),

-- What the 5.x brokers' logs cover: a forward after their latest DLQ line was not yet logged.
broker_log_window as (
    select max(stored_at) as log_last_stored_at
    from broker_forwards
),

-- What the copies say about each remoting group's real maxReconsumeTimes: a copy written by the
-- count cut-off stores the failed delivery's count + 1 (broker path, §1.2) or its own count
-- (orderly 4.9.x client, §3.5), so that count is the max the consumer ran with. Client-fallback
-- copies (§3.4) reach the DLQ one attempt early on 4.9.x and are left out. The most common count
-- is the implied max. A 5.x gRPC group's copies count otherwise (r + 2, or 1 from a FIFO client,
-- §8.3) and its cut-off is retryMaxTimes, not maxReconsumeTimes: it implies no max here.
cut_off_copies as (
    select
        copies.consumer_group,
        {{ failed_reconsume_times(
            'copies.reconsume_times', 'consumer_groups.consume_mode', 'consumer_groups.client_line'
        ) }} as failed_reconsume_times
    from copies
    inner join consumer_groups
        on copies.consumer_group = consumer_groups.consumer_group
    where
        not {{ is_client_fallback_copy('consumer_groups.consume_mode', 'copies.delay_property') }}
        and not {{ is_grpc_client_line('consumer_groups.client_line') }}
),

implied_max_candidates as (
    select
        consumer_group,
        failed_reconsume_times,
        count(*) as copies,
        sum(count(*)) over (partition by consumer_group) as cut_off_copies,
        row_number() over (
            partition by consumer_group order by count(*) desc, failed_reconsume_times desc
        ) as candidate_rank
    from cut_off_copies
    group by consumer_group, failed_reconsume_times
),

traced_highest_counts as (
    select
        consumer_group,
        max(max_reconsume_times) as highest_traced_reconsume_times
    from daily_stats
    group by consumer_group
),

-- Drift: the implied max is not the seed's effective max, on three copies or more, for a group
-- whose rules cut off by count (orderly; concurrent clustering that retries and does not ask for
-- the DLQ at once), and no traced delivery counts more than it (a delivery at a higher count
-- means a failure at the implied max was retried: those copies were asked for by the listener).
implied_max as (
    select
        implied_max_candidates.consumer_group,
        implied_max_candidates.failed_reconsume_times as implied_max_reconsume_times,
        coalesce(
            implied_max_candidates.cut_off_copies >= 3
            and (
                consumer_groups.consume_mode = 'ORDERLY'
                or (
                    consumer_groups.message_model = 'CLUSTERING'
                    and consumer_groups.retry_queue_nums > 0
                    and consumer_groups.delay_level_when_next_consume >= 0
                )
            )
            and implied_max_candidates.failed_reconsume_times
            <> coalesce(consumer_groups.effective_max_reconsume_times, -1)
            and coalesce(
                traced_highest_counts.highest_traced_reconsume_times
                <= implied_max_candidates.failed_reconsume_times,
                true
            ),
            false
        ) as max_reconsume_drift
    from implied_max_candidates
    inner join consumer_groups
        on implied_max_candidates.consumer_group = consumer_groups.consumer_group
    left join traced_highest_counts
        on implied_max_candidates.consumer_group = traced_highest_counts.consumer_group
    where implied_max_candidates.candidate_rank = 1
),

matched as (
    select
        coalesce(predicted.consumer_group, observed.consumer_group) as consumer_group,
        coalesce(predicted.msg_id, observed.msg_id) as msg_id,
        coalesce(predicted.entry_number, observed.entry_number) as dlq_entry_number,
        -- the broker's name where a copy or log line shows it, with the namespace
        coalesce(observed.dlq_topic, predicted.dlq_topic) as dlq_topic,
        observed.`namespace` as observed_namespace,
        predicted.predicted_reconsume_times,
        predicted.last_failed_at,
        predicted.predicted_entered_dlq_at,
        predicted.dlq_reason,
        predicted.prediction_basis,
        observed.observed_in,
        observed.offset_msg_id as observed_offset_msg_id,
        observed.stored_at as observed_stored_at,
        observed.reconsume_times as observed_reconsume_times,
        observed.retry_topic as observed_retry_topic,
        observed.origin_msg_id as observed_origin_msg_id,
        observed.delay_property as observed_delay_property,
        observed.`keys` as observed_keys,
        observed.tags as observed_tags,
        observed.copies_landed as observed_copies_landed,
        case
            when predicted.msg_id is not null and observed.msg_id is not null then 'BOTH'
            when predicted.msg_id is not null then 'PREDICTED'
            else 'OBSERVED'
        end as evidence
    from predicted
    full outer join observed
        on
            predicted.consumer_group = observed.consumer_group
            and predicted.msg_id = observed.msg_id
            and predicted.entry_number = observed.entry_number
),

with_context as (
    select
        matched.*,
        lifecycles.msg_id is not null as is_traced,
        lifecycles.origin_msg_id as published_origin_msg_id,
        lifecycles.origin_kind,
        lifecycles.published_offset_msg_id,
        lifecycles.topic as published_topic,
        lifecycles.`keys` as published_keys,
        lifecycles.tags as published_tags,
        lifecycles.deliveries,
        lifecycles.max_reconsume_times,
        lifecycles.last_reconsume_times,
        lifecycles.last_return_type,
        lifecycles.last_consume_at,
        lifecycles.recovered_at as resent_recovered_at,
        lifecycles.lifecycle_date,
        lifecycles.lifecycle_hour,
        consumer_groups.consume_mode,
        consumer_groups.consume_timeout_minutes,
        consumer_groups.effective_max_reconsume_times,
        consumer_groups.broker_version,
        {{ is_grpc_client_line('consumer_groups.client_line') }} as is_grpc,
        {{ failed_reconsume_times(
            'matched.observed_reconsume_times',
            'consumer_groups.consume_mode',
            'consumer_groups.client_line'
        ) }} as observed_failed_reconsume_times,
        coalesce(implied_max.max_reconsume_drift, false) as max_reconsume_drift,
        implied_max.implied_max_reconsume_times,
        -- Per group, over the matched entries, which hold every observed one once (a join
        -- would read the copies again): the namespace its dead letters were seen in
        -- (macros/rules/namespace.sql), for the entries predicted only, and what its export
        -- covers (a copy stored after its last one was not yet exported).
        coalesce(
            matched.observed_namespace,
            case
                when matched.consumer_group is not null
                    then max(matched.observed_namespace) over by_group
            end
        ) as `namespace`,
        case
            when matched.consumer_group is not null
                then max(
                        case when matched.observed_in = 'DLQ_EXPORT' then matched.observed_stored_at end
                    ) over by_group
        end as export_last_stored_at,
        broker_log_window.log_last_stored_at
    from matched
    left join lifecycles_with_dead_letters as lifecycles
        on
            matched.consumer_group = lifecycles.consumer_group
            and matched.msg_id = lifecycles.msg_id
    left join consumer_groups
        on matched.consumer_group = consumer_groups.consumer_group
    left join implied_max
        on matched.consumer_group = implied_max.consumer_group
    cross join broker_log_window
    window by_group as (partition by matched.consumer_group)
),

-- The traced failure an observed-only copy came from: a failed delivery at the count the copy
-- implies, ended before the copy was stored (a minute's allowance for the clocks), the latest.
-- One pass over with_context: Spark computes a CTE again for every reference.
deciding_candidates as (
    select
        with_context.*,
        decisions.decision as deciding_decision,
        row_number() over (
            partition by with_context.consumer_group, with_context.msg_id, with_context.dlq_entry_number
            order by decisions.failed_at desc, decisions.decision asc
        ) as candidate_rank
    from with_context
    left join decisions_with_dead_letters as decisions
        on
            with_context.evidence = 'OBSERVED'
            and with_context.consumer_group = decisions.consumer_group
            and with_context.msg_id = decisions.msg_id
            and with_context.observed_failed_reconsume_times = decisions.reconsume_times
            and decisions.failed_at <= {{ add_millis('with_context.observed_stored_at', 60000) }}
),

with_deciding_failures as (
    select * from deciding_candidates
    where candidate_rank = 1
),

-- Why a dead letter is seen on one side only; the first rule that holds (docs/rules.md).
reconciled as (
    select
        *,
        case
            when evidence = 'BOTH' then null
            -- a 5.x group's dead letters are seen in the brokers' DLQ log (or an export)
            when
                is_grpc and evidence = 'PREDICTED'
                and coalesce(log_last_stored_at, export_last_stored_at) is null
                then 'GROUP_NOT_EXPORTED'
            when
                is_grpc and evidence = 'PREDICTED'
                and predicted_entered_dlq_at > greatest(log_last_stored_at, export_last_stored_at)
                then 'AFTER_EXPORT_WINDOW'
            when is_grpc and evidence = 'PREDICTED' then 'LOG_LINE_MISSING'
            when is_grpc and not is_traced then 'NOT_IN_TRACE'
            when is_grpc then 'LAST_DELIVERY_NOT_IN_TRACE'
            when evidence = 'PREDICTED' and export_last_stored_at is null
                then 'GROUP_NOT_EXPORTED'
            when evidence = 'PREDICTED' and predicted_entered_dlq_at > export_last_stored_at
                then 'AFTER_EXPORT_WINDOW'
            when evidence = 'PREDICTED' then 'UNEXPLAINED'
            when not is_traced then 'NOT_IN_TRACE'
            when
                observed_failed_reconsume_times > max_reconsume_times
                or (
                    observed_failed_reconsume_times = last_reconsume_times
                    and last_return_type is null
                    and observed_stored_at >= last_consume_at
                    and observed_stored_at
                    < {{ add_millis('last_consume_at', 'cast(consume_timeout_minutes as bigint) * 60000') }}
                )
                then 'LAST_DELIVERY_NOT_IN_TRACE'
            when
                {{ is_client_fallback_copy('consume_mode', 'observed_delay_property') }}
                and {{ fallback_reaches_dlq(
                    'observed_reconsume_times', 'effective_max_reconsume_times', 'broker_version'
                ) }}
                then 'CLIENT_FALLBACK'
            when
                observed_failed_reconsume_times = last_reconsume_times
                and coalesce(last_return_type = 'TIME_OUT', true)
                then 'CONSUME_TIMEOUT'
            when
                max_reconsume_drift
                and observed_failed_reconsume_times = implied_max_reconsume_times
                then 'MAX_RECONSUME_DRIFT'
            when deciding_decision = 'RETRY' then 'LISTENER_REQUESTED_DLQ'
            else 'UNEXPLAINED'
        end as reconciliation_reason
    from with_deciding_failures
),

final as (
    select
        reconciled.consumer_group,
        reconciled.`namespace`,
        case
            when reconciled.observed_in is null
                then {{ with_namespace("reconciled.`namespace`", "reconciled.dlq_topic") }}
            else reconciled.dlq_topic
        end as dlq_topic,
        reconciled.msg_id,
        reconciled.dlq_entry_number,
        -- The Pub's offset id for a normal message; else the broker-path copy's
        -- ORIGIN_MESSAGE_ID (an offset id; on client paths it is the msgId, §3.4, §3.5; a
        -- gRPC copy's names the last pop-retry copy, §8.3, so lineage runs through msg_id).
        coalesce(
            reconciled.published_origin_msg_id,
            case
                when reconciled.is_grpc then null
                when reconciled.observed_origin_msg_id <> reconciled.msg_id
                    then reconciled.observed_origin_msg_id
            end
        ) as origin_msg_id,
        coalesce(reconciled.origin_kind, 'UNKNOWN') as origin_kind,
        reconciled.published_offset_msg_id,
        -- a 5.x copy's RETRY_TOPIC or logged originalTopic can be the pop retry topic (§8.3)
        coalesce(
            reconciled.published_topic,
            {{ topic_of_pop_retry_topic('reconciled.observed_retry_topic', 'reconciled.consumer_group') }}
        ) as topic,
        coalesce(reconciled.published_keys, reconciled.observed_keys) as `keys`,
        coalesce(reconciled.published_tags, reconciled.observed_tags) as tags,
        coalesce(reconciled.observed_reconsume_times, reconciled.predicted_reconsume_times)
            as reconsume_times,
        reconciled.deliveries,
        reconciled.last_failed_at,
        coalesce(reconciled.predicted_entered_dlq_at, reconciled.observed_stored_at)
            as entered_dlq_at,
        case
            when reconciled.dlq_reason is not null then reconciled.dlq_reason
            when reconciled.reconciliation_reason = 'LISTENER_REQUESTED_DLQ'
                then 'CLIENT_REQUESTED'
            when
                reconciled.reconciliation_reason
                in ('NOT_IN_TRACE', 'LAST_DELIVERY_NOT_IN_TRACE', 'UNEXPLAINED')
                then 'UNKNOWN'
            else 'MAX_RECONSUME_EXCEEDED'
        end as reason,
        reconciled.evidence,
        case when reconciled.evidence <> 'OBSERVED' then reconciled.prediction_basis end
            as prediction_basis,
        reconciled.observed_in,
        reconciled.reconciliation_reason,
        reconciled.predicted_reconsume_times,
        reconciled.predicted_entered_dlq_at,
        reconciled.observed_offset_msg_id,
        reconciled.observed_stored_at,
        reconciled.observed_reconsume_times,
        reconciled.observed_retry_topic,
        reconciled.observed_origin_msg_id,
        reconciled.observed_copies_landed,
        reconciled.implied_max_reconsume_times,
        reconciled.max_reconsume_drift,
        reconciled.resent_recovered_at,
        to_date(coalesce(reconciled.predicted_entered_dlq_at, reconciled.observed_stored_at))
            as dlq_date,
        reconciled.lifecycle_date,
        reconciled.lifecycle_hour
    from reconciled
)

select * from final
