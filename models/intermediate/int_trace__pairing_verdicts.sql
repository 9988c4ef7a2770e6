{{ config(materialized='incremental', incremental_strategy='append') }}

{#- Which SubBefore and SubAfter records could not be paired into a consume request: a SubBefore
    that reuses a request id for another delivery of its message, and a SubAfter whose SubBefore
    never landed. Whether a record is unpaired depends only on the records with its (message,
    request id), so a run judges again only the keys that its new records name, over the records
    of those keys stored since the earliest new one less `trace_clock_skew_hours` (the bound of
    docs/incremental.md), and appends the verdicts that changed: an unpaired record (reason),
    or a record unpaired before and paired now (no reason). landing_quarantine reads the latest
    verdict of each record. Each run also appends one marker row (no record) that says which
    trace loads it has judged, so the next run starts after them even when nothing changed.
    A full build judges every key and writes the unpaired records only. -#}
{%- set judged = run_query(
    "select coalesce(max(verdict_run), 0), coalesce(max(through_load_id), 0) from " ~ this
).rows[0] if execute and is_incremental() else [0, 0] %}
{%- set verdict_run = judged[0] | int + 1 %}
{%- set judged_through = judged[1] | int %}
{#- The records of a key are stored within the clock skew of each other: a SubAfter after its
    SubBefore, a reused request id moments after its first use. -#}
{%- set earliest_new_record = earliest_time(
    ref('stg_trace__records'), 'trace_stored_at',
    "record_partition in ('SubBefore', 'SubAfter') and load_id > " ~ judged_through
) if is_incremental() else none %}
{%- set records_since = hours_before(earliest_new_record, var('trace_clock_skew_hours')) %}

with

sub_before as (
    select
        consumer_group,
        msg_id,
        request_id,
        consume_started_at,
        load_id,
        trace_stored_at,
        source_file,
        line_number,
        record_index
    from {{ ref('stg_trace__sub_before') }}
),

sub_after as (
    select
        msg_id,
        request_id,
        load_id,
        trace_stored_at,
        source_file,
        line_number,
        record_index
    from {{ ref('stg_trace__sub_after') }}
),

loads as (
    select coalesce(max(load_id), {{ judged_through }}) as through_load_id
    from {{ ref('stg_trace__records') }}
),

{% if is_incremental() %}
    -- The (message, request id) keys of the records loaded since the last judged load.
    new_keys as (
        select
            msg_id,
            request_id
        from sub_before
        where load_id > {{ judged_through }}
        union
        select
            msg_id,
            request_id
        from sub_after
        where load_id > {{ judged_through }}
    ),

    sub_before_to_judge as (
        select /*+ broadcast(new_keys) */ sub_before.*  -- noqa: RF02
        from sub_before
        left semi join new_keys
            on sub_before.msg_id = new_keys.msg_id and sub_before.request_id = new_keys.request_id
        where sub_before.trace_stored_at >= {{ records_since }}
    ),

    sub_after_to_judge as (
        select /*+ broadcast(new_keys) */ sub_after.*  -- noqa: RF02
        from sub_after
        left semi join new_keys
            on sub_after.msg_id = new_keys.msg_id and sub_after.request_id = new_keys.request_id
        where sub_after.trace_stored_at >= {{ records_since }}
    ),
{% else %}
    sub_before_to_judge as (
        select * from sub_before
    ),

    sub_after_to_judge as (
        select * from sub_after
    ),
{% endif %}

-- The SubBefores and SubAfters to judge, in one pass by (message, request id): Spark computes a
-- CTE again for every reference, and an anti join of the SubAfters against the SubBefores, beside
-- the check of reused request ids, would read the SubBefores twice.
records_to_judge as (
    select
        true as is_sub_before,
        consumer_group,
        msg_id,
        request_id,
        consume_started_at,
        trace_stored_at,
        source_file,
        line_number,
        record_index
    from sub_before_to_judge
    union all
    select
        false as is_sub_before,
        cast(null as string) as consumer_group,
        msg_id,
        request_id,
        cast(null as timestamp) as consume_started_at,
        trace_stored_at,
        source_file,
        line_number,
        record_index
    from sub_after_to_judge
),

-- Whether a SubBefore with the record's (message, request id) is among them; a null key pairs
-- with nothing.
with_sub_before as (
    select
        *,
        msg_id is not null and request_id is not null
        and max(is_sub_before) over (partition by msg_id, request_id) as has_sub_before
    from records_to_judge
),

-- A request id names one consume request; a later SubBefore reusing it for the same message is
-- not paired (its SubAfter could not be told apart). Ranked among SubBefores only: a SubAfter has
-- no group.
ranked as (
    select
        *,
        dense_rank() over (
            partition by is_sub_before, consumer_group, msg_id, request_id
            order by consume_started_at asc
        ) as use_number
    from with_sub_before
),

-- One select for both kinds, as each reference to `ranked` would read the records again. (A
-- record is one row, by its file, line and index.)
unpaired as (
    select
        msg_id,
        request_id,
        trace_stored_at,
        source_file,
        line_number,
        record_index,
        case
            when is_sub_before
                then 'request id ' || request_id || ' reused for another delivery of ' || msg_id
            else 'SubAfter without its SubBefore (request ' || request_id || ')'
        end as reason
    from ranked
    where
        (is_sub_before and use_number > 1)
        or (not is_sub_before and not has_sub_before)
),

{% if is_incremental() %}
    -- The records judged again whose latest verdict was unpaired.
    previous_verdicts as (
        select
            previous.*,
            row_number() over (
                partition by previous.source_file, previous.line_number, previous.record_index
                order by previous.verdict_run desc
            ) as recency
        from {{ this }} as previous
        left semi join new_keys
            on previous.msg_id = new_keys.msg_id and previous.request_id = new_keys.request_id
        where previous.trace_stored_at >= {{ records_since }}
    ),

    previously_unpaired as (
        select *
        from previous_verdicts
        where recency = 1 and reason is not null
    ),

    -- A verdict that changed: unpaired now for another reason or for the first time (the new
    -- reason), or paired now (no reason). One join: each side is computed again per reference.
    changed as (
        select
            coalesce(unpaired.msg_id, previously_unpaired.msg_id) as msg_id,
            coalesce(unpaired.request_id, previously_unpaired.request_id) as request_id,
            coalesce(unpaired.trace_stored_at, previously_unpaired.trace_stored_at)
                as trace_stored_at,
            coalesce(unpaired.source_file, previously_unpaired.source_file) as source_file,
            coalesce(unpaired.line_number, previously_unpaired.line_number) as line_number,
            coalesce(unpaired.record_index, previously_unpaired.record_index) as record_index,
            unpaired.reason
        from unpaired
        full outer join previously_unpaired
            on
                unpaired.source_file = previously_unpaired.source_file
                and unpaired.line_number = previously_unpaired.line_number
                and unpaired.record_index = previously_unpaired.record_index
        where unpaired.reason is distinct from previously_unpaired.reason
    ),
{% else %}
    changed as (
        select * from unpaired
    ),
{% endif %}

verdicts as (
    select * from changed
    union all
    -- the marker: this run judged every load up to through_load_id
    select
        cast(null as string) as msg_id,
        cast(null as string) as request_id,
        cast(null as timestamp) as trace_stored_at,
        cast(null as string) as source_file,
        cast(null as int) as line_number,
        cast(null as int) as record_index,
        cast(null as string) as reason
),

final as (
    select
        verdicts.msg_id,
        verdicts.request_id,
        verdicts.trace_stored_at,
        verdicts.source_file,
        verdicts.line_number,
        verdicts.record_index,
        verdicts.reason,
        {{ verdict_run }} as verdict_run,
        loads.through_load_id
    from verdicts
    cross join loads
)

select * from final
