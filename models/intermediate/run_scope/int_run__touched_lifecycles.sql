{#- The (group, message) lifecycles that something in this run changes, with the
    (lifecycle_date, lifecycle_hour) partitions they were and will be in:
    - lifecycles with records loaded since the last complete run, or whose Pub arrived;
    - lifecycles with 5.x deliveries (spans, listener events) loaded since then;
    - lifecycles whose dead-letter copy arrived in a dlq/ export, or whose broker DLQ log line
      landed, since then;
    - lifecycles waiting for a retry that the watermark has now passed (RETRY_OVERDUE).
    Each lookup into the history is bounded by how far back the new records can reach (see
    macros/incremental/lookback.sql). Empty on a first or full-refresh build, which recomputes
    everything. -#}
{{ config(materialized='table', schema='meta') }}
{%- set previous_lifecycles = previous_fact_relation('message_lifecycles') %}
{%- set incremental_run = previous_lifecycles is not none %}
{#- (`execute` is off where sqlfluff renders this model: no query then.) -#}
{%- set processed_by_feed = processed_load_ids() if incremental_run and execute else {} %}
{%- set processed = processed_by_feed.get('trace', 0) %}
{%- set processed_dlq = processed_by_feed.get('dlq', 0) %}
{%- set processed_otel = processed_by_feed.get('otel', 0) %}
{%- set processed_events = processed_by_feed.get('consume_events', 0) %}
{%- set processed_broker_logs = processed_by_feed.get('broker_logs', 0) %}
{%- set sub_before = ref('stg_trace__sub_before') %}
{%- set sub_after = ref('stg_trace__sub_after') %}
{%- set pubs = ref('stg_trace__pub') %}
{%- set records = ref('stg_trace__records') %}
{%- set dlq_copies = ref('stg_dlq__messages') %}
{%- set process_spans = ref('stg_otel__process_spans') %}
{%- set consume_events = ref('stg_landing__consume_event_lines') %}
{%- set broker_log_lines = ref('stg_landing__broker_log_lines') %}
{%- set trace_watermark = ref('int_trace_watermark') %}

{% if not incremental_run %}

    {{ no_lifecycles() }}

{% else %}

    {%- set new_records = 'load_id > ' ~ processed %}
    {%- set earliest_new_start, earliest_new_result, earliest_new_pub, new_record_count = query_values([
        earliest_time_query(sub_before, 'trace_stored_at', new_records),
        earliest_time_query(sub_after, 'trace_stored_at', new_records),
        earliest_time_query(pubs, 'published_at', new_records),
        count_rows_query(records, new_records),
    ]) if execute else [none, none, none, 0] %}
    {#- The new records, and so the touched lifecycles, are few next to the history unless a run
        catches up a large backlog: broadcast them, so the history is scanned but not shuffled. -#}
    {%- set few_new = (new_record_count | int) < var('broadcast_max_new_records') | int %}

    with

    previous_lifecycles as (
        select
            consumer_group,
            msg_id,
            lifecycle_date,
            lifecycle_hour,
            final_state,
            next_delivery_expected_at
        from {{ previous_lifecycles }}
    ),

    watermark as (
        select watermark_at from {{ trace_watermark }}
    ),

    new_sub_before as (
        select
            consumer_group,
            msg_id,
            request_id,
            consume_started_at
        from {{ sub_before }}
        where load_id > {{ processed }}
    ),

    new_sub_after as (
        select
            request_id,
            msg_id
        from {{ sub_after }}
        where load_id > {{ processed }}
    ),

    new_pubs as (
        select distinct msg_id
        from {{ pubs }}
        where load_id > {{ processed }}
    ),

    -- Dead-letter copies are few: the whole of them is read.
    new_dlq_copies as (
        select distinct
            consumer_group,
            lifecycle_msg_id as msg_id
        from {{ dlq_copies }}
        where load_id > {{ processed_dlq }}
    ),

    -- 5.x deliveries: a lifecycle's spans and events are few, and read whole.
    new_grpc_deliveries as (
        select
            consumer_group,
            msg_id,
            consume_started_at
        from {{ process_spans }}
        where load_id > {{ processed_otel }} and span_error is null

        union all

        select
            consumer_group,
            msg_id,
            consume_started_at
        from {{ consume_events }}
        where load_id > {{ processed_events }} and line_error is null
    ),

    -- The logged consumerId is unwrapped of its namespace, as stg_broker_log__dlq_forwards does.
    new_broker_dlq_lines as (
        select distinct
            {{ without_namespace('consumer_group') }} as consumer_group,
            msg_id
        from {{ broker_log_lines }}
        where load_id > {{ processed_broker_logs }} and line_kind = 'DLQ' and line_error is null
    ),

    -- A consume request's SubBefore is stored before its SubAfter.
    recent_sub_before as (
        select
            consumer_group,
            msg_id,
            request_id
        from {{ sub_before }}
        where trace_stored_at >= {{ hours_before(earliest_new_result, var('trace_clock_skew_hours')) }}
    ),

    -- A new SubBefore can join a consume request whose other messages landed before: the
    -- request's size, by which a 7-field result's end is reckoned, changes for all of them.
    request_mates as (
        select {{ '/*+ broadcast(new_sub_before) */' if few_new }}
            mates.consumer_group,
            mates.msg_id
        from {{ sub_before }} as mates
        left semi join new_sub_before
            on
                mates.consumer_group = new_sub_before.consumer_group
                and mates.request_id = new_sub_before.request_id
        where mates.trace_stored_at >= {{ hours_before(earliest_new_start, var('trace_clock_skew_hours')) }}
    ),

    -- The lifecycles the new records name by (group, message).
    named_by_new_records as (
        select
            consumer_group,
            msg_id
        from new_sub_before

        union

        select
            consumer_group,
            msg_id
        from request_mates

        union

        select {{ '/*+ broadcast(new_sub_after) */' if few_new }}
            recent_sub_before.consumer_group,
            recent_sub_before.msg_id
        from new_sub_after
        inner join recent_sub_before
            on
                new_sub_after.request_id = recent_sub_before.request_id
                and new_sub_after.msg_id = recent_sub_before.msg_id

        union

        select
            consumer_group,
            msg_id
        from new_dlq_copies

        union

        select
            consumer_group,
            msg_id
        from new_broker_dlq_lines

        union

        select
            consumer_group,
            msg_id
        from new_grpc_deliveries
    ),

    -- One pass over the previous lifecycles (each reference to it would be another scan): those
    -- the new records name; those whose Pub arrived, as a message is consumed after it is
    -- published; and those waiting for a retry that the watermark has now passed (only those:
    -- with no new data, no lifecycle moves).
    touched_previous as (
        select {{ '/*+ broadcast(named_by_new_records, new_pubs) */' if few_new }}
            previous_lifecycles.consumer_group,
            previous_lifecycles.msg_id,
            previous_lifecycles.lifecycle_date,
            previous_lifecycles.lifecycle_hour
        from previous_lifecycles
        cross join watermark
        left join named_by_new_records
            on
                previous_lifecycles.consumer_group = named_by_new_records.consumer_group
                and previous_lifecycles.msg_id = named_by_new_records.msg_id
        left join new_pubs
            on
                previous_lifecycles.msg_id = new_pubs.msg_id
                and previous_lifecycles.lifecycle_date
                >= to_date({{ hours_before(earliest_new_pub, var('trace_clock_skew_hours')) }})
        where
            named_by_new_records.msg_id is not null
            or new_pubs.msg_id is not null
            or (
                previous_lifecycles.final_state = 'WAITING_RETRY'
                and not {{ retry_is_awaited(
                    'previous_lifecycles.next_delivery_expected_at', 'watermark.watermark_at'
                ) }}
            )
    ),

    final as (
        select * from touched_previous

        union

        select
            consumer_group,
            msg_id,
            to_date(consume_started_at) as lifecycle_date,
            hour(consume_started_at) as lifecycle_hour
        from new_sub_before

        union

        select
            consumer_group,
            msg_id,
            to_date(consume_started_at) as lifecycle_date,
            hour(consume_started_at) as lifecycle_hour
        from new_grpc_deliveries
    )

    select * from final

{% endif %}
