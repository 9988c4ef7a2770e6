-- "Now" for every state that moves with time: the latest time any landed record tells (a trace
-- message's store time; a 5.x delivery's end; a broker DLQ line's store time), never the wall
-- clock, so a rebuild gives the same answer.
{{ config(materialized='table') }}
-- A table, not a view: as a view, each reader would scan every staged line again.
with

trace_lines as (
    select max(trace_stored_at) as latest_at from {{ ref('stg_landing__trace_lines') }}
    where line_error is null
),

process_spans as (
    select max(consume_ended_at) as latest_at from {{ ref('stg_otel__process_spans') }}
    where span_error is null
),

consume_events as (
    select max(consume_ended_at) as latest_at from {{ ref('stg_landing__consume_event_lines') }}
    where line_error is null
),

broker_dlq_lines as (
    select max(stored_at) as latest_at from {{ ref('stg_landing__broker_log_lines') }}
    where line_kind = 'DLQ' and line_error is null
),

final as (
    select
        greatest(
            trace_lines.latest_at,
            process_spans.latest_at,
            consume_events.latest_at,
            broker_dlq_lines.latest_at
        ) as watermark_at
    from trace_lines
    cross join process_spans
    cross join consume_events
    cross join broker_dlq_lines
)

select * from final
