{{ config(materialized='incremental', incremental_strategy='append') }}

{#- One row per trace record (spec §5): bodies split on U+0002 into records and each record on
    U+0001 into fields. The trace topic is at-least-once, so a trace message that landed before
    (same trace msgId) is skipped. Records that break the layouts of §5.3 carry a
    `record_error` and surface in `landing_quarantine`. -#}
{%- set loaded_before = max_load_id(this) %}

with

new_lines as (
    select
        load_id,
        source_file,
        line_number,
        trace_msg_id,
        trace_stored_at,
        body
    from {{ ref('stg_landing__trace_lines') }}
    where line_error is null and load_id > {{ loaded_before }}
),

-- Keep one copy of a trace message that landed twice; the copies carry the same body.
first_copies as (
    select
        *,
        row_number() over (
            partition by trace_msg_id order by trace_stored_at, source_file, line_number
        ) as copy_number
    from new_lines
),

unseen_messages as (
    select
        first_copies.load_id,
        first_copies.source_file,
        first_copies.line_number,
        first_copies.trace_msg_id,
        first_copies.trace_stored_at,
        first_copies.body
    from first_copies
    {% if is_incremental() %}
        left anti join {{ this }} as loaded
            on first_copies.trace_msg_id = loaded.trace_msg_id
    {% endif %}
    where first_copies.copy_number = 1
),

-- Java's String.split drops trailing empty strings; the decoder relies on that (§5.3).
split_records as (
    select
        unseen_messages.load_id,
        unseen_messages.source_file,
        unseen_messages.line_number,
        unseen_messages.trace_msg_id,
        unseen_messages.trace_stored_at,
        record.record_index,
        record.record_text
    from unseen_messages
        lateral view posexplode(
            split(regexp_replace(unseen_messages.body, '\u0002+$', ''), '\u0002')
        ) record as record_index, record_text
),

fielded as (
    select
        *,
        split(regexp_replace(record_text, '\u0001+$', ''), '\u0001') as fields
    from split_records
),

typed as (
    select
        *,
        fields[0] as record_kind,
        size(fields) as field_count
    from fielded
),

checked as (
    select
        *,
        {{ trace_record_error('record_kind', 'field_count', 'fields') }} as record_error
    from typed
),

final as (
    select
        load_id,
        source_file,
        line_number,
        trace_msg_id,
        trace_stored_at,
        record_index,
        record_kind,
        field_count,
        case when record_error is null then fields end as fields,
        record_error,
        case when record_error is not null then record_text end as raw_text
    from checked
)

select * from final
