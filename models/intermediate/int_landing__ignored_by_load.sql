{{ config(materialized='incremental', incremental_strategy='append') }}

{#- The landed records that are read and deliberately not used (landing_ignored), counted per
    load, file and reason as each load is staged. A file's counts are fixed once it is staged:
    it is read once, and a record landed again counts in the later copy's file (by load, file
    and line), which is always in the same or a later load. So a run counts only the loads
    staged since the last counted one, looking up the earlier loads' copies by key, and appends;
    one marker row per feed and run (no file) says up to which load it counted. A full build
    counts every load. The otel feed needs the process spans of the same loads: a run whose
    selection does not name stg_otel__process_spans (a --select, or a dbt retry, which gives no
    selection) leaves that feed's new loads to a later run. -#}
{%- set counted = {} %}
{%- do put_max_load_ids_by_source(this, counted) %}
{%- set otel_counted = counted.get('otel', 0) %}
{%- set events_counted = counted.get('consume_events', 0) %}
{%- set broker_counted = counted.get('broker_logs', 0) %}
{%- set spans_current = selection_names('stg_otel__process_spans') %}

with

otel_lines as (
    select * from {{ ref('stg_landing__otel_lines') }}
    where load_id > {{ otel_counted }} and {{ 'true' if spans_current else 'false' }}
),

process_spans as (
    select * from {{ ref('stg_otel__process_spans') }}
    where load_id > {{ otel_counted }} and {{ 'true' if spans_current else 'false' }}
),

event_lines as (
    select * from {{ ref('stg_landing__consume_event_lines') }}
    where load_id > {{ events_counted }}
),

broker_log_lines as (
    select * from {{ ref('stg_landing__broker_log_lines') }}
    where load_id > {{ broker_counted }}
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
        otel_lines.load_id,
        otel_lines.source_file as file,
        'span of another system, or not a process span' as reason,
        sum(otel_lines.span_count - coalesce(spans_per_line.process_spans, 0)) as records
    from otel_lines
    left join spans_per_line
        on
            otel_lines.source_file = spans_per_line.source_file
            and otel_lines.line_number = spans_per_line.line_number
    where otel_lines.line_error is null
    group by otel_lines.load_id, otel_lines.source_file
),

-- The records whose key another copy has (macros/landing/landed_again.sql), by feed.
new_spans as (
    select
        trace_id,
        span_id,
        load_id,
        source_file,
        line_number
    from process_spans
    where span_error is null
),

new_events as (
    select
        consumer_group,
        msg_id,
        delivery_attempt,
        consume_started_at,
        consumer_instance,
        load_id,
        source_file,
        line_number
    from event_lines
    where line_error is null
),

new_dlq_lines as (
    select
        consumer_group,
        msg_id,
        stored_at,
        load_id,
        source_file,
        line_number
    from broker_log_lines
    where line_kind = 'DLQ' and line_error is null
),

repeated_spans as (
    {{ landed_again(
        'otel', 'process span exported again (same trace and span id)',
        'new_spans', ref('stg_otel__process_spans'), 'earlier.span_error is null',
        ['trace_id', 'span_id'], otel_counted) }}
),

repeated_events as (
    {{ landed_again(
        'consume_events', 'listener event landed again',
        'new_events', ref('stg_landing__consume_event_lines'), 'earlier.line_error is null',
        ['consumer_group', 'msg_id', 'delivery_attempt', 'consume_started_at', 'consumer_instance'],
        events_counted) }}
),

repeated_dlq_lines as (
    {{ landed_again(
        'broker_logs', 'DLQ log line landed again',
        'new_dlq_lines', ref('stg_landing__broker_log_lines'),
        "earlier.line_kind = 'DLQ' and earlier.line_error is null",
        ['consumer_group', 'msg_id', 'stored_at'], broker_counted) }}
),

skipped_log_lines as (
    select
        'broker_logs' as source,
        load_id,
        source_file as file,
        case line_kind
            when 'OTHER' then 'not a DLQ log line'
            else 'a DLQ forward that failed (result=null): no dead letter'
        end as reason,
        count(*) as records
    from broker_log_lines
    where line_kind <> 'DLQ'
    group by load_id, source_file, line_kind
),

-- Up to which load each feed is counted, whether or not its new loads set anything aside.
markers as (
    select
        'otel' as source,
        greatest({{ otel_counted }}, coalesce(max(load_id), 0)) as load_id
    from otel_lines
    union all
    select
        'consume_events' as source,
        greatest({{ events_counted }}, coalesce(max(load_id), 0)) as load_id
    from event_lines
    union all
    select
        'broker_logs' as source,
        greatest({{ broker_counted }}, coalesce(max(load_id), 0)) as load_id
    from broker_log_lines
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
    union all
    select
        source,
        load_id,
        cast(null as string) as file,
        cast(null as string) as reason,
        cast(null as bigint) as records
    from markers
)

select * from final
