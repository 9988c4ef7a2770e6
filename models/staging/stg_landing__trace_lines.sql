{{ config(
    materialized='incremental',
    incremental_strategy='append',
    post_hook="{{ record_unreadable_files(
        source('landing', 'trace_file_list'), source('landing', 'trace_files')
    ) }}",
) }}

{#- One row per line of every landing file, parsed or not. Files are immutable once landed
    (write to a hidden or temporary name, then rename): a file already ingested is not read
    again. The files to read are named in the scan's filter, which Spark applies while listing,
    so an incremental run reads only the new files, however large the landing zone grows. A file
    the text reader skips (truncated or corrupt) is recorded by the post-hook. -#}
{%- set load_id = next_load_id() %}
{%- set file_list = source('landing', 'trace_file_list') %}
{%- set new_files = unread_landing_files(file_list) if is_incremental() else none %}

with

physical_lines as (
    {{ landing_lines(source('landing', 'trace_files'), new_files) }}
),

parsed as (
    select
        source_file,
        line_number,
        line_text,
        line_read_error,
        from_json(
            line_text,
            'msgId string, storeTimestamp string, storeHost string, keys string,'
            || ' body string, bodyBase64 string, _corrupt_record string',
            map('columnNameOfCorruptRecord', '_corrupt_record')
        ) as trace_message
    from physical_lines
),

-- A body sent as bytes is decoded as UTF-8 (spec §5.5). A client before 5.3.1 encoded it in the
-- JVM's platform charset (GBK, say): its ASCII fields (ids, counts, times, flags) read the same,
-- and only non-ASCII keys or tags have bytes that are not UTF-8. Those become U+FFFD and the
-- records are kept, rather than the whole trace message's deliveries lost.
decoded as (
    select
        parsed.source_file,
        parsed.line_number,
        parsed.line_text,
        parsed.line_read_error,
        parsed.trace_message,
        try_to_binary(trace_message.`bodyBase64`, 'base64') as body_bytes
    from parsed
),

decoded_text as (
    select
        decoded.*,
        if(
            is_valid_utf8(cast(decoded.body_bytes as string)),
            cast(decoded.body_bytes as string),
            make_valid_utf8(cast(decoded.body_bytes as string))
        ) as body_bytes_text
    from decoded
),

checked as (
    select
        decoded_text.source_file,
        decoded_text.line_number,
        decoded_text.line_text,
        trace_message.`msgId` as trace_msg_id,
        cast(trace_message.`storeTimestamp` as bigint) as store_ts_ms,
        trace_message.`storeHost` as store_host,
        trace_message.`keys` as trace_keys,
        coalesce(trace_message.`body`, decoded_text.body_bytes_text) as body,
        case
            when decoded_text.line_read_error is not null then decoded_text.line_read_error
            when decoded_text.trace_message is null or trace_message.`_corrupt_record` is not null
                then 'not a valid JSON object'
            when trace_message.`msgId` is null or trace_message.`msgId` = '' then 'missing msgId'
            when not coalesce(trace_message.`storeTimestamp` rlike '^[0-9]+$', false)
                then 'storeTimestamp missing or not a number'
            when not {{ number_text_fits('trace_message.`storeTimestamp`', 'millis') }}
                then 'storeTimestamp is out of range: ' || left(trace_message.`storeTimestamp`, 40)
            when trace_message.`body` is null and trace_message.`bodyBase64` is null
                then 'neither body nor bodyBase64'
            when trace_message.`body` is null and decoded_text.body_bytes is null
                then 'bodyBase64 is not valid base64'
        end as line_error
    from decoded_text
),

final as (
    select
        cast({{ load_id }} as bigint) as load_id,
        source_file,
        line_number,
        case when line_error is null then trace_msg_id end as trace_msg_id,
        case when line_error is null then timestamp_millis(store_ts_ms) end as trace_stored_at,
        case when line_error is null then store_host end as store_host,
        case when line_error is null then trace_keys end as trace_keys,
        case when line_error is null then body end as body,
        line_error,
        -- Raw text is kept only where someone must look at it: the quarantined lines.
        case when line_error is not null then line_text end as raw_text
    from checked
)

select * from final
