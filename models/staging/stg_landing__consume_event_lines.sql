{{ config(
    materialized='incremental',
    incremental_strategy='append',
    post_hook="{{ record_unreadable_files(
        source('landing', 'consume_events_file_list'), source('landing', 'consume_events_files')
    ) }}",
) }}
-- depends_on: {{ ref('broker_delay_levels') }}  (the start order, not a read: docs/performance.md,
-- "The feeds' start order"; the trace and otel feeds, whose staging chains are longer, go first)

{#- One row per line of every `consume_events/` landing file, parsed or not: one call of a 5.x
    listener, written by the decorator users add (design.md, 5.x inputs), typed. The only exact
    source of the delivery attempt, and the only record of SimpleConsumer outcomes. Lines that
    cannot be used carry `line_error` and their raw text. A file is read once. -#}
{%- set load_id = next_load_id() %}
{%- set file_list = source('landing', 'consume_events_file_list') %}
{%- set new_files = unread_landing_files(file_list) if is_incremental() else none %}

with

physical_lines as (
    {{ landing_lines(source('landing', 'consume_events_files'), new_files) }}
),

parsed as (
    select
        source_file,
        line_number,
        line_text,
        line_read_error,
        from_json(
            line_text,
            'ts_start string, ts_end string, consumer_group string, topic string, msg_id string,'
            || ' delivery_attempt string, result string, error_class string, client_id string,'
            || ' message_group string, consumer_kind string, invisible_duration_ms string,'
            || ' received_at string, invisible_changed_at string, _corrupt_record string',
            map('columnNameOfCorruptRecord', '_corrupt_record')
        ) as event
    from physical_lines
),

checked as (
    select
        parsed.source_file,
        parsed.line_number,
        parsed.line_text,
        parsed.event,
        case
            when parsed.line_read_error is not null then parsed.line_read_error
            when parsed.event is null or event.`_corrupt_record` is not null then 'not a valid JSON object'
            when coalesce(event.consumer_group, '') = '' then 'missing consumer_group'
            when coalesce(event.msg_id, '') = '' then 'missing msg_id'
            when not coalesce(event.ts_start rlike '^[0-9]{1,15}$', false)
                then 'ts_start missing or not epoch milliseconds'
            when not coalesce(event.ts_end rlike '^[0-9]{1,15}$', false)
                then 'ts_end missing or not epoch milliseconds'
            when cast(event.ts_end as bigint) < cast(event.ts_start as bigint)
                then 'ts_end is before ts_start'
            when not coalesce(event.delivery_attempt rlike '^[1-9][0-9]{0,8}$', false)
                then 'delivery_attempt missing or not a positive number'
            when not coalesce(event.result in ('SUCCESS', 'FAILURE', 'EXCEPTION'), false)
                then 'result is not SUCCESS, FAILURE or EXCEPTION: ' || coalesce(event.result, 'null')
            when not coalesce(event.consumer_kind in ('PUSH', 'SIMPLE'), true)
                then 'consumer_kind is not PUSH or SIMPLE: ' || event.consumer_kind
            when not coalesce(event.invisible_duration_ms rlike '^[0-9]{1,12}$', true)
                then 'invisible_duration_ms is not a number'
            when not coalesce(event.received_at rlike '^[0-9]{1,15}$', true)
                then 'received_at is not epoch milliseconds'
            when not coalesce(event.invisible_changed_at rlike '^[0-9]{1,15}$', true)
                then 'invisible_changed_at is not epoch milliseconds'
        end as line_error
    from parsed
),

final as (
    select
        cast({{ load_id }} as bigint) as load_id,
        checked.source_file,
        checked.line_number,
        case when checked.line_error is null then event.consumer_group end as consumer_group,
        case when checked.line_error is null then event.topic end as topic,
        case when checked.line_error is null then event.msg_id end as msg_id,
        case when checked.line_error is null then cast(event.delivery_attempt as int) end
            as delivery_attempt,
        case when checked.line_error is null then timestamp_millis(cast(event.ts_start as bigint)) end
            as consume_started_at,
        case when checked.line_error is null then timestamp_millis(cast(event.ts_end as bigint)) end
            as consume_ended_at,
        case
            when checked.line_error is not null then null
            when event.result = 'FAILURE' then 'FAILED'
            else event.result
        end as return_type,
        case when checked.line_error is null then event.error_class end as error_class,
        case when checked.line_error is null then event.client_id end as consumer_instance,
        case when checked.line_error is null then event.message_group end as message_group,
        case when checked.line_error is null then event.consumer_kind end as consumer_kind,
        case when checked.line_error is null then cast(event.invisible_duration_ms as bigint) end
            as invisible_duration_ms,
        case when checked.line_error is null then timestamp_millis(cast(event.received_at as bigint)) end
            as received_at,
        case
            when checked.line_error is null then timestamp_millis(cast(event.invisible_changed_at as bigint))
        end as invisible_changed_at,
        checked.line_error,
        case when checked.line_error is not null then checked.line_text end as raw_text
    from checked
)

select * from final
