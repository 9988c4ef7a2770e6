{{ config(
    materialized='incremental',
    incremental_strategy='append',
    post_hook="{{ record_unreadable_files(
        source('landing', 'dlq_file_list'), source('landing', 'dlq_files')
    ) }}",
) }}
-- depends_on: {{ ref('broker_delay_levels') }}  (the start order, not a read: docs/performance.md,
-- "The feeds' start order"; the trace and otel feeds, whose staging chains are longer, go first)

{#- One row per line of every `dlq/` landing file, parsed or not: the messages an export read
    from `%DLQ%<group>` topics (design.md). A file is read once, as for the trace. Properties come
    as a JSON object or as the stored string (`name U+0001 value U+0002 ...`, spec §7), parsed
    with the broker's own rules by the `parse_message_properties` UDF: DLQ copies are few, so the
    Python UDF costs little here. A table, since a view cannot call a session UDF. -#}
{%- set load_id = next_load_id() %}
{%- set file_list = source('landing', 'dlq_file_list') %}
{%- set new_files = unread_landing_files(file_list) if is_incremental() else none %}

with

physical_lines as (
    {{ landing_lines(source('landing', 'dlq_files'), new_files) }}
),

parsed as (
    select
        source_file,
        line_number,
        line_text,
        line_read_error,
        from_json(
            line_text,
            'msgId string, offsetMsgId string, topic string, queueId string, reconsumeTimes string,'
            || ' bornTimestamp string, storeTimestamp string, storeHost string,'
            || ' properties map<string, string>, propertiesString string, _corrupt_record string',
            map('columnNameOfCorruptRecord', '_corrupt_record')
        ) as dlq_message
    from physical_lines
),

checked as (
    select
        parsed.source_file,
        parsed.line_number,
        parsed.line_text,
        parsed.dlq_message,
        case
            when parsed.line_read_error is not null then parsed.line_read_error
            when parsed.dlq_message is null or dlq_message.`_corrupt_record` is not null
                then 'not a valid JSON object'
            when coalesce(dlq_message.`msgId`, '') = '' then 'missing msgId'
            when coalesce(dlq_message.`offsetMsgId`, '') = '' then 'missing offsetMsgId'
            when not coalesce(startswith(dlq_message.`topic`, '%DLQ%'), false)
                then 'topic is not a dead-letter topic: ' || coalesce(left(dlq_message.`topic`, 80), 'null')
            when not coalesce(dlq_message.`reconsumeTimes` rlike '^[0-9]+$', false)
                then 'reconsumeTimes missing or not a number'
            when not {{ number_text_fits('dlq_message.`reconsumeTimes`', 'int') }}
                then 'reconsumeTimes is out of range: ' || left(dlq_message.`reconsumeTimes`, 40)
            when not coalesce(dlq_message.`storeTimestamp` rlike '^[0-9]+$', false)
                then 'storeTimestamp missing or not a number'
            when not {{ number_text_fits('dlq_message.`storeTimestamp`', 'millis') }}
                then 'storeTimestamp is out of range: ' || left(dlq_message.`storeTimestamp`, 40)
            when not coalesce(dlq_message.`bornTimestamp` rlike '^[0-9]+$', true)
                then 'bornTimestamp is not a number'
            when dlq_message.`bornTimestamp` is not null
                and not {{ number_text_fits('dlq_message.`bornTimestamp`', 'millis') }}
                then 'bornTimestamp is out of range: ' || left(dlq_message.`bornTimestamp`, 40)
            when dlq_message.`properties` is null and dlq_message.`propertiesString` is null
                then 'neither properties nor propertiesString'
        end as line_error
    from parsed
),

-- Only the lines that can be used keep their fields; the others keep their raw text.
kept as (
    select
        checked.source_file,
        checked.line_number,
        checked.line_error,
        case when checked.line_error is null then checked.dlq_message end as message,
        case when checked.line_error is not null then checked.line_text end as raw_text
    from checked
),

final as (
    select
        cast({{ load_id }} as bigint) as load_id,
        kept.source_file,
        kept.line_number,
        kept.message.`msgId` as msg_id,
        kept.message.`offsetMsgId` as offset_msg_id,
        kept.message.`topic` as dlq_topic,
        cast(kept.message.`queueId` as int) as queue_id,
        cast(kept.message.`reconsumeTimes` as int) as reconsume_times,
        timestamp_millis(cast(kept.message.`bornTimestamp` as bigint)) as born_at,
        timestamp_millis(cast(kept.message.`storeTimestamp` as bigint)) as stored_at,
        kept.message.`storeHost` as store_host,
        coalesce(
            kept.message.`properties`,
            parse_message_properties(kept.message.`propertiesString`)
        ) as message_properties,
        kept.line_error,
        kept.raw_text
    from kept
)

select * from final
