-- Every line of every landing file, in each feed (trace/, dlq/, otel/, consume_events/,
-- broker_logs/), is either parsed (or skipped, a broker log's other lines) or
-- quarantined, exactly once: the lines counted in the files themselves equal the lines staged,
-- file by file.
with

landing_files as (
    select
        trace_files._metadata.file_path as source_file,  -- noqa: RF01
        split(trace_files.value, '\n') as lines
    from {{ source('landing', 'trace_files') }} as trace_files

    union all

    select
        dlq_files._metadata.file_path as source_file,  -- noqa: RF01
        split(dlq_files.value, '\n') as lines
    from {{ source('landing', 'dlq_files') }} as dlq_files

    union all

    select
        otel_files._metadata.file_path as source_file,  -- noqa: RF01
        split(otel_files.value, '\n') as lines
    from {{ source('landing', 'otel_files') }} as otel_files

    union all

    select
        consume_events_files._metadata.file_path as source_file,  -- noqa: RF01
        split(consume_events_files.value, '\n') as lines
    from {{ source('landing', 'consume_events_files') }} as consume_events_files

    union all

    select
        broker_logs_files._metadata.file_path as source_file,  -- noqa: RF01
        split(broker_logs_files.value, '\n') as lines
    from {{ source('landing', 'broker_logs_files') }} as broker_logs_files
),

lines_in_files as (
    select
        source_file,
        -- A final newline ends the last line rather than starting another.
        size(lines) - if(element_at(lines, -1) = '', 1, 0) as landed_lines
    from landing_files
),

staged_lines as (
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

quarantined as (
    select
        file as source_file,
        count(distinct line) as quarantined_lines
    from {{ ref('landing_quarantine') }}
    where record_index is null and line > 0
    group by file
),

final as (
    select
        lines_in_files.source_file,
        lines_in_files.landed_lines,
        staged.parsed_lines,
        staged.quarantined_lines,
        quarantined.quarantined_lines as lines_in_quarantine
    from lines_in_files
    full outer join staged
        on lines_in_files.source_file = staged.source_file
    left join quarantined
        on lines_in_files.source_file = quarantined.source_file
    where
        coalesce(lines_in_files.landed_lines, 0)
        <> coalesce(staged.parsed_lines + staged.quarantined_lines, 0)
        or staged.distinct_lines <> staged.parsed_lines + staged.quarantined_lines
        or coalesce(quarantined.quarantined_lines, 0) <> staged.quarantined_lines
)

select * from final
