-- Every line of every landing file, in each feed (trace/, dlq/, otel/, consume_events/,
-- broker_logs/), is either parsed (or skipped, a broker log's other lines) or
-- quarantined, exactly once: the lines counted in the files themselves equal the lines staged,
-- file by file, and each file's quarantined lines are in landing_quarantine. The files compared
-- line by line are those landed, changed or staged again since the test last passed
-- (macros/testing/checked_files.sql); the quarantine is compared for every file.
{{ config(meta={'reads_changes': true}) }}
{%- set staging_tables = [
    ref('stg_landing__trace_lines'),
    ref('stg_landing__dlq_lines'),
    ref('stg_landing__otel_lines'),
    ref('stg_landing__consume_event_lines'),
    ref('stg_landing__broker_log_lines'),
] %}
{%- do see_landing_files() %}
{%- set files = landing_files_to_check(
    'landing_lines_accounted_for', staging_tables, landing_files_seen_relation()
) %}

with

landing_files as (
    select
        trace_files._metadata.file_path as source_file,  -- noqa: RF01
        split(trace_files.value, '\n') as lines
    from {{ source('landing', 'trace_files') }} as trace_files
    where {{ in_files(files, 'trace_files._metadata.file_path') }}

    union all

    select
        dlq_files._metadata.file_path as source_file,  -- noqa: RF01
        split(dlq_files.value, '\n') as lines
    from {{ source('landing', 'dlq_files') }} as dlq_files
    where {{ in_files(files, 'dlq_files._metadata.file_path') }}

    union all

    select
        otel_files._metadata.file_path as source_file,  -- noqa: RF01
        split(otel_files.value, '\n') as lines
    from {{ source('landing', 'otel_files') }} as otel_files
    where {{ in_files(files, 'otel_files._metadata.file_path') }}

    union all

    select
        consume_events_files._metadata.file_path as source_file,  -- noqa: RF01
        split(consume_events_files.value, '\n') as lines
    from {{ source('landing', 'consume_events_files') }} as consume_events_files
    where {{ in_files(files, 'consume_events_files._metadata.file_path') }}

    union all

    select
        broker_logs_files._metadata.file_path as source_file,  -- noqa: RF01
        split(broker_logs_files.value, '\n') as lines
    from {{ source('landing', 'broker_logs_files') }} as broker_logs_files
    where {{ in_files(files, 'broker_logs_files._metadata.file_path') }}
),

lines_in_files as (
    select
        source_file,
        -- A final newline ends the last line rather than starting another.
        size(lines) - if(element_at(lines, -1) = '', 1, 0) as landed_lines
    from landing_files
),

all_staged_lines as (
    select
        source_file,
        line_number,
        line_error
    from {{ ref('stg_landing__trace_lines') }}

    union all

    select
        source_file,
        line_number,
        line_error
    from {{ ref('stg_landing__dlq_lines') }}

    union all

    select
        source_file,
        line_number,
        line_error
    from {{ ref('stg_landing__otel_lines') }}

    union all

    select
        source_file,
        line_number,
        line_error
    from {{ ref('stg_landing__consume_event_lines') }}

    union all

    select
        source_file,
        line_number,
        line_error
    from {{ ref('stg_landing__broker_log_lines') }}
),

staged_lines as (
    select * from all_staged_lines
    where {{ in_files(files, 'source_file') }}
),

staged as (
    select
        source_file,
        count_if(line_error is null) as parsed_lines,
        count_if(line_error is not null) as quarantined_lines,
        count(distinct line_number) as distinct_lines
    from staged_lines
    where line_number > 0  -- line 0 stands for a whole file that could not be read
    group by source_file
),

-- every file's quarantined lines, compared with the quarantine whatever the files compared
staged_errors as (
    select
        source_file,
        count(*) as quarantined_lines
    from all_staged_lines
    where line_error is not null and line_number > 0
    group by source_file
),

quarantined as (
    select
        file as source_file,
        count(distinct line) as quarantined_lines
    from {{ ref('landing_quarantine') }}
    where record_index is null and line > 0
    group by file
),

lines_not_staged as (
    select
        coalesce(lines_in_files.source_file, staged.source_file) as source_file,
        lines_in_files.landed_lines,
        staged.parsed_lines,
        staged.quarantined_lines
    from lines_in_files
    full outer join staged
        on lines_in_files.source_file = staged.source_file
    where
        coalesce(lines_in_files.landed_lines, 0)
        <> coalesce(staged.parsed_lines + staged.quarantined_lines, 0)
        or staged.distinct_lines <> staged.parsed_lines + staged.quarantined_lines
),

quarantine_differs as (
    select
        coalesce(staged_errors.source_file, quarantined.source_file) as source_file,
        coalesce(staged_errors.quarantined_lines, 0) as quarantined_lines,
        coalesce(quarantined.quarantined_lines, 0) as lines_in_quarantine
    from staged_errors
    full outer join quarantined
        on staged_errors.source_file = quarantined.source_file
    where
        coalesce(staged_errors.quarantined_lines, 0)
        <> coalesce(quarantined.quarantined_lines, 0)
),

final as (
    select
        coalesce(lines_not_staged.source_file, quarantine_differs.source_file) as source_file,
        lines_not_staged.landed_lines,
        lines_not_staged.parsed_lines,
        coalesce(lines_not_staged.quarantined_lines, quarantine_differs.quarantined_lines)
            as quarantined_lines,
        quarantine_differs.lines_in_quarantine
    from lines_not_staged
    full outer join quarantine_differs
        on lines_not_staged.source_file = quarantine_differs.source_file
)

select * from final
