-- Every landing line (of every feed) or record (a trace record, an OpenTelemetry span) that could
-- not be used, with the reason.
-- Together with the parsed lines it accounts for every line that landed. Rebuilt on every run:
-- records that wait for a partner (a SubAfter whose SubBefore has not landed yet) leave it as
-- soon as the partner arrives (int_trace__pairing_verdicts judges only the keys new records
-- name). A table, so that readers of the parquet files (retrylake query) see it like every
-- other mart.
with

lines as (
    select * from {{ ref('stg_landing__trace_lines') }}
),

records as (
    select * from {{ ref('stg_trace__records') }}
),

dlq_lines as (
    select * from {{ ref('stg_landing__dlq_lines') }}
),

rejected_lines as (
    select
        'trace' as source,
        source_file as file,
        line_number as line,
        cast(null as int) as record_index,
        raw_text,
        line_error as reason
    from lines
    where line_error is not null
),

rejected_dlq_lines as (
    select
        'dlq' as source,
        source_file as file,
        line_number as line,
        cast(null as int) as record_index,
        raw_text,
        line_error as reason
    from dlq_lines
    where line_error is not null
),

-- The 5.x inputs' lines, and process spans that lack what a delivery needs.
grpc_lines as (
    select
        'otel' as source,
        source_file,
        line_number,
        raw_text,
        line_error
    from {{ ref('stg_landing__otel_lines') }}
    union all
    select
        'consume_events' as source,
        source_file,
        line_number,
        raw_text,
        line_error
    from {{ ref('stg_landing__consume_event_lines') }}
    union all
    select
        'broker_logs' as source,
        source_file,
        line_number,
        raw_text,
        line_error
    from {{ ref('stg_landing__broker_log_lines') }}
),

rejected_grpc_lines as (
    select
        source,
        source_file as file,
        line_number as line,
        cast(null as int) as record_index,
        raw_text,
        line_error as reason
    from grpc_lines
    where line_error is not null
),

-- A line's process spans that lack what a delivery needs, as one row per line.
rejected_spans as (
    select
        'otel' as source,
        source_file as file,
        line_number as line,
        -1 as record_index,
        cast(null as string) as raw_text,
        count(*) || ' process span(s) unusable, first: ' || min_by(
            span_error || ' (trace ' || coalesce(trace_id, 'null') || ', span '
            || coalesce(span_id, 'null') || ')',
            span_error
        ) as reason
    from {{ ref('stg_otel__process_spans') }}
    where span_error is not null
    group by source_file, line_number
),

rejected_records as (
    select
        'trace' as source,
        source_file as file,
        line_number as line,
        record_index,
        raw_text,
        record_error as reason
    from records
    where record_error is not null
),

-- SubBefore and SubAfter records that could not be paired, by their latest verdict (see
-- int_trace__pairing_verdicts): a record paired since has a later verdict without a reason.
pairing_verdicts as (
    select
        *,
        row_number() over (
            partition by source_file, line_number, record_index order by verdict_run desc
        ) as recency
    from {{ ref('int_trace__pairing_verdicts') }}
    where source_file is not null
),

unpaired_records as (
    select
        'trace' as source,
        source_file as file,
        line_number as line,
        record_index,
        cast(null as string) as raw_text,
        reason
    from pairing_verdicts
    where recency = 1 and reason is not null
),

final as (
    select * from rejected_lines
    union all
    select * from rejected_dlq_lines
    union all
    select * from rejected_grpc_lines
    union all
    select * from rejected_spans
    union all
    select * from rejected_records
    union all
    select * from unpaired_records
)

select * from final
