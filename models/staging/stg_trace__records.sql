{{ config(
    materialized='incremental',
    incremental_strategy='append',
    partition_by=['record_partition'],
    options={'parquet.block.size': '2097152'},
) }}

{#- One row per trace record (spec §5): bodies split on U+0002 into records and each record on
    U+0001 into fields. The trace topic is at-least-once, so a trace message that landed before
    (same trace msgId) is skipped. Records that break the layouts of §5.3 carry a
    `record_error` and surface in `landing_quarantine`. Partitioned by record kind, so each typed
    staging view reads only its own kind. -#}
{%- set loaded_before = max_load_id(this) %}
{%- set earliest_new_trace = earliest_time(
    ref('stg_landing__trace_lines'), 'trace_stored_at', 'line_error is null and load_id > ' ~ loaded_before
) if is_incremental() else none %}

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

-- Copies of one trace message carry the same body: rank the copies on their keys alone, so the
-- bodies are never shuffled.
line_copies as (
    select
        trace_msg_id,
        source_file,
        line_number,
        row_number() over (
            partition by trace_msg_id order by trace_stored_at, source_file, line_number
        ) as copy_number
    from new_lines
),

{% if is_incremental() %}
    -- A copy is stored at the same time as the original, or moments later when the trace
    -- producer re-sent it: only the loads since shortly before the new lines can hold one.
    loaded_messages as (
        select distinct loaded.trace_msg_id
        from {{ this }} as loaded
        left semi join line_copies
            on loaded.trace_msg_id = line_copies.trace_msg_id
        where loaded.trace_stored_at >= {{ hours_before(earliest_new_trace, var('trace_clock_skew_hours')) }}
    ),
{% endif %}

skipped_lines as (
    select
        source_file,
        line_number
    from line_copies
    where copy_number > 1
    {% if is_incremental() %}
        union all

        select
            line_copies.source_file,
            line_copies.line_number
        from line_copies
        left semi join loaded_messages
            on line_copies.trace_msg_id = loaded_messages.trace_msg_id
        where line_copies.copy_number = 1
    {% endif %}
),

unseen_messages as (
    select /*+ broadcast(skipped_lines) */  -- noqa: RF02
        new_lines.load_id,
        new_lines.source_file,
        new_lines.line_number,
        new_lines.trace_msg_id,
        new_lines.trace_stored_at,
        new_lines.body
    from new_lines
    left anti join skipped_lines
        on
            new_lines.source_file = skipped_lines.source_file
            and new_lines.line_number = skipped_lines.line_number
),

-- Java's String.split drops trailing empty strings; the decoder relies on that (§5.3). A
-- CLOUD-channel SubAfter without its terminator (§5.3) gets it back first.
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
            split(
                trim(trailing '\u0002' from {{ cloud_sub_after_terminated('unseen_messages.body') }}),
                '\u0002'
            )
        ) record as record_index, record_text
),

fielded as (
    select
        *,
        split(trim(trailing '\u0001' from record_text), '\u0001') as fields
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
        case when record_error is not null then record_text end as raw_text,
        case when record_error is null then record_kind else 'rejected' end as record_partition
    from checked
)

-- Sorted by time within each kind, in row groups of about 2 MB, so that the reads bounded by
-- `trace_stored_at` (the incremental runs' lookbacks) skip the row groups outside the bound. A
-- full build's tasks each hold records of every day: unsorted, each file was one row group
-- spanning the whole history, and every bounded read scanned it all. The writer sorts by kind
-- anyway; the time is its second key.
select * from final
sort by record_partition, trace_stored_at
