{{ config(
    materialized='incremental',
    incremental_strategy='append',
    post_hook="{{ record_unreadable_files(
        source('landing', 'broker_logs_file_list'), source('landing', 'broker_logs_files')
    ) }}",
) }}
-- depends_on: {{ ref('broker_delay_levels') }}  (the start order, not a read: docs/performance.md,
-- "The feeds' start order"; the trace and otel feeds, whose staging chains are longer, go first)

{#- One row per line of every `broker_logs/` landing file: a broker's log, of which only the
    lines of the DLQ logger matter, `send msg to DLQ <dlqTopic>, owner=..., originalTopic=...,
    consumerId=<group>, msgUniqKey=<UNIQ_KEY>, storeTimestamp=<ms>` (observability note §3.2),
    the only per-message record of a 5.x dead letter. Every other line is skipped and counted
    (`line_kind` OTHER, or FAILED_DLQ_SEND for a forward whose put failed); a DLQ line that does
    not parse carries `line_error`. The local-time prefix (GMT+8, seconds) is ignored for the
    storeTimestamp field. A file is read once. -#}
{%- set load_id = next_load_id() %}
{%- set file_list = source('landing', 'broker_logs_file_list') %}
{%- set new_files = unread_landing_files(file_list) if is_incremental() else none %}
{%- set dlq_line = 'send msg to DLQ (\\\\S+), owner=(\\\\S*), originalTopic=(\\\\S+), '
    ~ 'consumerId=(\\\\S+), msgUniqKey=(\\\\S+), storeTimestamp=([0-9]+)' %}

with

physical_lines as (
    {{ landing_lines(source('landing', 'broker_logs_files'), new_files) }}
),

classified as (
    select
        source_file,
        line_number,
        line_text,
        line_read_error,
        case
            when instr(line_text, 'failed to send msg to DLQ') > 0 then 'FAILED_DLQ_SEND'
            when instr(line_text, 'send msg to DLQ') > 0 then 'DLQ'
            else 'OTHER'
        end as line_kind
    from physical_lines
),

checked as (
    select
        *,
        case
            when line_kind <> 'DLQ' then null
            when line_read_error is not null then line_read_error
            when not line_text rlike '{{ dlq_line }}'
                then 'DLQ log line not in the form of RocketMQ 5.x'
            when not startswith(regexp_extract(line_text, '{{ dlq_line }}', 1), '%DLQ%')
                then 'DLQ log line names no %DLQ% topic'
            when not {{ number_text_fits("regexp_extract(line_text, '" ~ dlq_line ~ "', 6)", 'millis') }}
                then 'DLQ log line storeTimestamp is out of range'
        end as line_error
    from classified
),

final as (
    select
        cast({{ load_id }} as bigint) as load_id,
        source_file,
        line_number,
        line_kind,
        case when line_kind = 'DLQ' and line_error is null then
                regexp_extract(line_text, '{{ dlq_line }}', 1)
        end as dlq_topic,
        case when line_kind = 'DLQ' and line_error is null then
                regexp_extract(line_text, '{{ dlq_line }}', 3)
        end as original_topic,
        case when line_kind = 'DLQ' and line_error is null then
                regexp_extract(line_text, '{{ dlq_line }}', 4)
        end as consumer_group,
        case when line_kind = 'DLQ' and line_error is null then
                regexp_extract(line_text, '{{ dlq_line }}', 5)
        end as msg_id,
        case when line_kind = 'DLQ' and line_error is null then
                timestamp_millis(cast(regexp_extract(line_text, '{{ dlq_line }}', 6) as bigint))
        end as stored_at,
        line_error,
        case when line_error is not null then line_text end as raw_text
    from checked
)

select * from final
