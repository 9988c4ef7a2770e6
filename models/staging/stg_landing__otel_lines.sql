{{ config(
    materialized='incremental',
    incremental_strategy='append',
    post_hook="{{ record_unreadable_files(
        source('landing', 'otel_file_list'), source('landing', 'otel_files')
    ) }}",
) }}

{#- One row per line of every `otel/` landing file, parsed or not: OTLP/JSON traces as the
    Collector's file exporter writes them, one export batch per line (design.md, 5.x inputs). A
    line that parses keeps its resource spans for stg_otel__process_spans; the others carry
    `line_error` and their raw text. A file is read once, as for the trace. -#}
{%- set load_id = next_load_id() %}
{%- set file_list = source('landing', 'otel_file_list') %}
{%- set new_files = unread_landing_files(file_list) if is_incremental() else none %}

with

physical_lines as (
    {{ landing_lines(source('landing', 'otel_files'), new_files) }}
),

parsed as (
    select
        source_file,
        line_number,
        line_text,
        line_read_error,
        from_json(
            line_text,
            '{{ otlp_line_schema() | replace("\n", " ") }}',
            map('columnNameOfCorruptRecord', '_corrupt_record')
        ) as otlp
    from physical_lines
),

-- A bare ResourceSpans line is one resource's spans.
unwrapped as (
    select
        parsed.source_file,
        parsed.line_number,
        parsed.line_text,
        parsed.line_read_error,
        parsed.otlp,
        coalesce(
            otlp.resourcespans,
            if(
                otlp.scopespans is not null,
                array(named_struct('resource', otlp.resource, 'scopeSpans', otlp.scopespans)),
                null
            )
        ) as resource_spans
    from parsed
),

checked as (
    select
        unwrapped.source_file,
        unwrapped.line_number,
        unwrapped.line_text,
        unwrapped.resource_spans,
        case
            when unwrapped.line_read_error is not null then unwrapped.line_read_error
            when unwrapped.otlp is null or otlp.`_corrupt_record` is not null then 'not a valid JSON object'
            when unwrapped.resource_spans is null
                then 'not OTLP/JSON traces: neither resourceSpans nor a bare ResourceSpans'
        end as line_error
    from unwrapped
),

final as (
    select
        cast({{ load_id }} as bigint) as load_id,
        source_file,
        line_number,
        case when line_error is null then resource_spans end as resource_spans,
        case
            when line_error is null
                then
                    aggregate(
                        resource_spans,
                        0,
                        (total, resource) -> total + if(
                            resource.scopespans is null,
                            0,
                            aggregate(
                                resource.scopespans,
                                0,
                                (scope_total, scope)
                                -> scope_total + if(scope.spans is null, 0, size(scope.spans))
                            )
                        )
                    )
        end as span_count,
        line_error,
        case when line_error is not null then line_text end as raw_text
    from checked
)

select * from final
