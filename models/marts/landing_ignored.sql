-- The landed records that are read and deliberately not used, counted per file and reason, so
-- that every landing line is accounted for: the spans of other systems (and receive spans) in
-- the otel/ batches, the broker log lines that are not dead letters, and the records landed twice
-- (a span batch exported again, a listener event or DLQ line shipped twice), which count once.
-- Rebuilt on every run.
with

otel_lines as (
    select * from {{ ref('stg_landing__otel_lines') }}
    where line_error is null
),

process_spans as (
    select * from {{ ref('stg_otel__process_spans') }}
),

event_lines as (
    select * from {{ ref('stg_landing__consume_event_lines') }}
    where line_error is null
),

broker_log_lines as (
    select * from {{ ref('stg_landing__broker_log_lines') }}
),

spans_per_line as (
    select
        source_file,
        line_number,
        count(*) as process_spans
    from process_spans
    group by source_file, line_number
),

other_spans as (
    select
        'otel' as source,
        otel_lines.source_file as file,
        'span of another system, or not a process span' as reason,
        sum(otel_lines.span_count - coalesce(spans_per_line.process_spans, 0)) as records
    from otel_lines
    left join spans_per_line
        on
            otel_lines.source_file = spans_per_line.source_file
            and otel_lines.line_number = spans_per_line.line_number
    group by otel_lines.source_file
),

ranked_spans as (
    select
        source_file,
        row_number() over (
            partition by trace_id, span_id order by load_id, source_file, line_number
        ) as copy_number
    from process_spans
    where span_error is null
),

repeated_spans as (
    select
        'otel' as source,
        source_file as file,
        'process span exported again (same trace and span id)' as reason,
        count(*) as records
    from ranked_spans
    where copy_number > 1
    group by source_file
),

ranked_events as (
    select
        source_file,
        row_number() over (
            partition by
                consumer_group, msg_id, delivery_attempt, consume_started_at, consumer_instance
            order by load_id, source_file, line_number
        ) as copy_number
    from event_lines
),

repeated_events as (
    select
        'consume_events' as source,
        source_file as file,
        'listener event landed again' as reason,
        count(*) as records
    from ranked_events
    where copy_number > 1
    group by source_file
),

skipped_log_lines as (
    select
        'broker_logs' as source,
        source_file as file,
        case line_kind
            when 'OTHER' then 'not a DLQ log line'
            else 'a DLQ forward that failed (result=null): no dead letter'
        end as reason,
        count(*) as records
    from broker_log_lines
    where line_kind <> 'DLQ'
    group by source_file, line_kind
),

ranked_dlq_lines as (
    select
        source_file,
        row_number() over (
            partition by consumer_group, msg_id, stored_at order by load_id, source_file, line_number
        ) as copy_number
    from broker_log_lines
    where line_kind = 'DLQ' and line_error is null
),

repeated_dlq_lines as (
    select
        'broker_logs' as source,
        source_file as file,
        'DLQ log line landed again' as reason,
        count(*) as records
    from ranked_dlq_lines
    where copy_number > 1
    group by source_file
),

final as (
    select * from other_spans
    where records > 0
    union all
    select * from repeated_spans
    union all
    select * from repeated_events
    union all
    select * from skipped_log_lines
    union all
    select * from repeated_dlq_lines
)

select * from final
