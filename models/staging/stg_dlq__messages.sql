-- The dead-letter copies the `dlq/` exports hold, one row per stored copy: exports that overlap
-- (a topic read twice, a file landed twice) hold the same copy, known by its offset id, and it
-- counts once. The properties a copy carries are named here (spec §7); a copy's stored
-- `reconsumeTimes` field is its count (the RECONSUME_TIME property is never stored, §1.5).
-- `lifecycle_msg_id` ties a copy to its lifecycle in every path: the UNIQ_KEY, which the broker
-- and the client copy on every hop (§3.7); ORIGIN_MESSAGE_ID is an offset id on the broker path
-- and missing from an orderly 4.9.x copy (§3.5). The group and RETRY_TOPIC are unwrapped of an
-- instance's namespace, as the trace names them (macros/rules/namespace.sql; a pop retry topic on
-- both sides of its separator); `dlq_topic` stays the broker's name, where the copy is.
{{ config(materialized='table') }}
-- A table, rebuilt whole on every run (copies are few): four models read it, and as a view
-- each would parse the staged lines again.
with

lines as (
    select * from {{ ref('stg_landing__dlq_lines') }}
    where line_error is null
),

ranked as (
    select
        *,
        row_number() over (
            partition by offset_msg_id order by load_id, source_file, line_number
        ) as copy_number,
        count(*) over (partition by offset_msg_id) as copies_landed
    from lines
),

final as (
    select
        {{ without_namespace("substring(dlq_topic, length('%DLQ%') + 1)") }} as consumer_group,
        {{ namespace_of('dlq_topic') }} as `namespace`,
        dlq_topic,
        msg_id,
        coalesce(message_properties['UNIQ_KEY'], msg_id) as lifecycle_msg_id,
        offset_msg_id,
        queue_id,
        reconsume_times,
        message_properties['UNIQ_KEY'] as uniq_key,
        message_properties['ORIGIN_MESSAGE_ID'] as origin_msg_id,
        {{ trace_side_topic(
            "message_properties['RETRY_TOPIC']", "substring(dlq_topic, length('%DLQ%') + 1)"
        ) }} as retry_topic,
        message_properties['KEYS'] as `keys`,
        message_properties['TAGS'] as tags,
        message_properties['DELAY'] as delay_property,
        message_properties['REAL_TOPIC'] as real_topic,
        message_properties,
        copies_landed,
        born_at,
        stored_at,
        store_host,
        load_id,
        source_file,
        line_number
    from ranked
    where copy_number = 1
)

select * from final
