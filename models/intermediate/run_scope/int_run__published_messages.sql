-- What the producer's Pub trace says about each message of this run's scope: topic, tags, keys
-- and the offset id of the stored original, which is the origin of every retry (§1.2, §6). The
-- Pub of a delayed message names its copy in the schedule topic, and that of a transactional
-- message the half message (§2.2, §2.4): consumers receive another copy, whose offset id the
-- Pub cannot know, so their origin is left unknown (a DLQ copy's ORIGIN_MESSAGE_ID tells it).
with

-- A message is published at most the broker's retention before its first delivery.
scoped_pubs as (
    {{ records_in_refresh_scope(
        ref('stg_trace__pub'),
        ref('int_run__lifecycle_scope'),
        ref('int_run__refresh_partitions'),
        ['msg_id'],
        var('trace_clock_skew_hours') + var('message_retention_hours')
    ) }}
),

-- A producer may re-send after a timeout; the first successful send is the stored original.
ranked as (
    select
        *,
        row_number() over (
            partition by msg_id
            order by
                is_success desc, published_at asc, offset_msg_id asc, trace_msg_id asc,
                record_index asc
        ) as send_number
    from scoped_pubs
),

final as (
    select
        msg_id,
        case when {{ origin_kind('message_type') }} = 'NORMAL' then offset_msg_id end
            as origin_msg_id,
        {{ origin_kind('message_type') }} as origin_kind,
        offset_msg_id as published_offset_msg_id,
        producer_group,
        topic,
        tags,
        keys,
        published_at
    from ranked
    where send_number = 1
)

select * from final
