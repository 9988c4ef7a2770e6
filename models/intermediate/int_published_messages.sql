-- What the producer's Pub trace says about each message of this run's scope: topic, tags, keys
-- and the offset id of the stored original, which is the origin of every retry (§1.2, §6).
with

scope as (
    select distinct msg_id from {{ ref('int_lifecycle_scope') }}
),

pubs as (
    select * from {{ ref('stg_trace__pub') }}
),

scoped_pubs as (
    select pubs.*
    from pubs
    left semi join scope
        on pubs.msg_id = scope.msg_id
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
        offset_msg_id as origin_msg_id,
        producer_group,
        topic,
        tags,
        keys,
        published_at
    from ranked
    where send_number = 1
)

select * from final
