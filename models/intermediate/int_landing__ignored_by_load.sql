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
{%- if execute and is_incremental() and not in_unit_test() %}
    {%- for feed, load_id in run_query(
        "select source, max(load_id) from " ~ this ~ " group by source").rows %}
        {%- do counted.update({feed: load_id | int}) %}
    {%- endfor %}
{%- endif %}
{%- set otel_counted = counted.get('otel', 0) %}
{%- set events_counted = counted.get('consume_events', 0) %}
{%- set broker_counted = counted.get('broker_logs', 0) %}
{%- set spans_current = selection_names('stg_otel__process_spans') %}
{#- A feed's new keys are looked up among the loads counted before, if any: broadcast, so the
    history is scanned but not shuffled, unless a run catches up a large backlog. -#}
{%- set max_broadcast = var('broadcast_max_new_records') | int %}
{%- set spans_spread = spans_current and otel_counted > 0 and (count_rows(
    ref('stg_otel__process_spans'), 'load_id > ' ~ otel_counted) | int) >= max_broadcast %}
{%- set events_spread = events_counted > 0 and (count_rows(
    ref('stg_landing__consume_event_lines'), 'load_id > ' ~ events_counted) | int) >= max_broadcast %}
{%- set dlq_lines_spread = broker_counted > 0 and (count_rows(
    ref('stg_landing__broker_log_lines'), 'load_id > ' ~ broker_counted) | int) >= max_broadcast %}

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

-- A record is landed again when an earlier copy has its key: in a load counted before (looked
-- up for the new keys only), or earlier in these loads by load, file and line.
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

spans_seen_before as (
    select {{ '/*+ broadcast(new_spans) */' if not spans_spread }} distinct  -- noqa: RF02
        earlier.trace_id,
        earlier.span_id,
        true as seen_before
    from {{ ref('stg_otel__process_spans') }} as earlier
    left semi join new_spans
        on
            earlier.trace_id <=> new_spans.trace_id
            and earlier.span_id <=> new_spans.span_id
    where
        earlier.span_error is null
        and {{ 'earlier.load_id <= ' ~ otel_counted if otel_counted > 0 else 'false' }}
),

events_seen_before as (
    select {{ '/*+ broadcast(new_events) */' if not events_spread }} distinct  -- noqa: RF02
        earlier.consumer_group,
        earlier.msg_id,
        earlier.delivery_attempt,
        earlier.consume_started_at,
        earlier.consumer_instance,
        true as seen_before
    from {{ ref('stg_landing__consume_event_lines') }} as earlier
    left semi join new_events
        on
            earlier.consumer_group <=> new_events.consumer_group
            and earlier.msg_id <=> new_events.msg_id
            and earlier.delivery_attempt <=> new_events.delivery_attempt
            and earlier.consume_started_at <=> new_events.consume_started_at
            and earlier.consumer_instance <=> new_events.consumer_instance
    where
        earlier.line_error is null
        and {{ 'earlier.load_id <= ' ~ events_counted if events_counted > 0 else 'false' }}
),

dlq_lines_seen_before as (
    select {{ '/*+ broadcast(new_dlq_lines) */' if not dlq_lines_spread }} distinct  -- noqa: RF02
        earlier.consumer_group,
        earlier.msg_id,
        earlier.stored_at,
        true as seen_before
    from {{ ref('stg_landing__broker_log_lines') }} as earlier
    left semi join new_dlq_lines
        on
            earlier.consumer_group <=> new_dlq_lines.consumer_group
            and earlier.msg_id <=> new_dlq_lines.msg_id
            and earlier.stored_at <=> new_dlq_lines.stored_at
    where
        earlier.line_kind = 'DLQ'
        and earlier.line_error is null
        and {{ 'earlier.load_id <= ' ~ broker_counted if broker_counted > 0 else 'false' }}
),

ranked_spans as (
    select
        new_spans.load_id,
        new_spans.source_file,
        coalesce(spans_seen_before.seen_before, false) as seen_before,
        row_number() over (
            partition by new_spans.trace_id, new_spans.span_id
            order by new_spans.load_id, new_spans.source_file, new_spans.line_number
        ) as copy_number
    from new_spans
    left join spans_seen_before
        on
            new_spans.trace_id <=> spans_seen_before.trace_id
            and new_spans.span_id <=> spans_seen_before.span_id
),

repeated_spans as (
    select
        'otel' as source,
        load_id,
        source_file as file,
        'process span exported again (same trace and span id)' as reason,
        count(*) as records
    from ranked_spans
    where copy_number > 1 or seen_before
    group by load_id, source_file
),

ranked_events as (
    select
        new_events.load_id,
        new_events.source_file,
        coalesce(events_seen_before.seen_before, false) as seen_before,
        row_number() over (
            partition by
                new_events.consumer_group,
                new_events.msg_id,
                new_events.delivery_attempt,
                new_events.consume_started_at,
                new_events.consumer_instance
            order by new_events.load_id, new_events.source_file, new_events.line_number
        ) as copy_number
    from new_events
    left join events_seen_before
        on
            new_events.consumer_group <=> events_seen_before.consumer_group
            and new_events.msg_id <=> events_seen_before.msg_id
            and new_events.delivery_attempt <=> events_seen_before.delivery_attempt
            and new_events.consume_started_at <=> events_seen_before.consume_started_at
            and new_events.consumer_instance <=> events_seen_before.consumer_instance
),

repeated_events as (
    select
        'consume_events' as source,
        load_id,
        source_file as file,
        'listener event landed again' as reason,
        count(*) as records
    from ranked_events
    where copy_number > 1 or seen_before
    group by load_id, source_file
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

ranked_dlq_lines as (
    select
        new_dlq_lines.load_id,
        new_dlq_lines.source_file,
        coalesce(dlq_lines_seen_before.seen_before, false) as seen_before,
        row_number() over (
            partition by new_dlq_lines.consumer_group, new_dlq_lines.msg_id, new_dlq_lines.stored_at
            order by new_dlq_lines.load_id, new_dlq_lines.source_file, new_dlq_lines.line_number
        ) as copy_number
    from new_dlq_lines
    left join dlq_lines_seen_before
        on
            new_dlq_lines.consumer_group <=> dlq_lines_seen_before.consumer_group
            and new_dlq_lines.msg_id <=> dlq_lines_seen_before.msg_id
            and new_dlq_lines.stored_at <=> dlq_lines_seen_before.stored_at
),

repeated_dlq_lines as (
    select
        'broker_logs' as source,
        load_id,
        source_file as file,
        'DLQ log line landed again' as reason,
        count(*) as records
    from ranked_dlq_lines
    where copy_number > 1 or seen_before
    group by load_id, source_file
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
