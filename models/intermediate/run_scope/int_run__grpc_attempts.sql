-- Deliveries of 5.x gRPC consumers in this run's scope, from the listener events and the
-- OpenTelemetry process spans, one row per delivery. The events are exact: where a lifecycle has
-- them, its spans (which tell the same calls) are not used. A span batch exported twice counts
-- once, by trace and span id. The attempt number comes from the event, or the span attribute a
-- decorator added; else it is inferred from the order of the deliveries, and flagged.
with

scoped_events as (
    {{ records_in_refresh_scope(
        ref('stg_landing__consume_event_lines'),
        ref('int_run__lifecycle_scope'),
        ref('int_run__refresh_partitions'),
        ['consumer_group', 'msg_id'],
        var('trace_clock_skew_hours'),
        stored_at='consume_started_at'
    ) }}
),

scoped_spans as (
    {{ records_in_refresh_scope(
        ref('stg_otel__process_spans'),
        ref('int_run__lifecycle_scope'),
        ref('int_run__refresh_partitions'),
        ['consumer_group', 'msg_id'],
        var('trace_clock_skew_hours'),
        stored_at='consume_started_at'
    ) }}
),

ranked_events as (
    select
        *,
        row_number() over (
            partition by
                consumer_group, msg_id, delivery_attempt, consume_started_at, consumer_instance
            order by load_id, source_file, line_number
        ) as copy_number
    from scoped_events
    where line_error is null
),

events as (
    select
        consumer_group,
        msg_id,
        'event-' || substr(sha2(concat_ws(
            '|', consumer_instance, msg_id, delivery_attempt, unix_millis(consume_started_at)
        ), 256), 1, 24) as request_id,
        delivery_attempt as observed_attempt,
        cast(null as string) as `keys`,
        topic,
        consumer_instance,
        consumer_kind,
        return_type,
        consume_started_at,
        consume_ended_at,
        -- a SimpleConsumer's message is visible again when its invisible duration runs out,
        -- counted from the receive or the last changeInvisibleDuration (seed 002)
        timestamp_millis(
            unix_millis(coalesce(invisible_changed_at, received_at, consume_started_at))
            + invisible_duration_ms
        ) as visible_again_at,
        'CONSUME_EVENT' as attempt_source
    from ranked_events
    where copy_number = 1
),

ranked_spans as (
    select
        *,
        row_number() over (
            partition by trace_id, span_id order by load_id, source_file, line_number
        ) as copy_number
    from scoped_spans
    where span_error is null
),

spans as (
    select
        consumer_group,
        msg_id,
        span_id as request_id,
        delivery_attempt as observed_attempt,
        `keys`,
        topic,
        consumer_instance,
        'PUSH' as consumer_kind,
        return_type,
        consume_started_at,
        consume_ended_at,
        cast(null as timestamp) as visible_again_at,
        'OTEL_SPAN' as attempt_source
    from ranked_spans
    where copy_number = 1
),

-- Whether each lifecycle has events, as a window over both kinds: a join would read the events
-- again. A span with no group or message id names no lifecycle, so it is kept.
sourced as (
    select
        *,
        max(attempt_source = 'CONSUME_EVENT') over (partition by consumer_group, msg_id)
            as lifecycle_has_events
    from (
        select * from events
        union all
        select * from spans
    ) as events_and_spans
),

deliveries as (
    select * from sourced
    where
        attempt_source = 'CONSUME_EVENT'
        or not lifecycle_has_events
        or consumer_group is null
        or msg_id is null
),

numbered as (
    select
        *,
        row_number() over (
            partition by consumer_group, msg_id
            order by consume_started_at, consume_ended_at, request_id
        ) as inferred_attempt
    from deliveries
),

final as (
    select
        consumer_group,
        msg_id,
        request_id,
        -- the proxy sets deliveryAttempt = reconsumeTimes + 1 (spec §8.2)
        coalesce(observed_attempt, inferred_attempt) - 1 as reconsume_times,
        `keys`,
        topic,
        consumer_instance,
        consumer_kind,
        return_type,
        return_type = 'SUCCESS' as is_success,
        unix_millis(consume_ended_at) - unix_millis(consume_started_at) as cost_ms,
        consume_started_at,
        consume_ended_at,
        visible_again_at,
        attempt_source,
        observed_attempt is not null as attempt_number_observed
    from numbered
)

select * from final
