-- The work list and the lifecycles agree: every lifecycle in the DLQ has an entry in
-- dlq_messages, and every entry of a traced lifecycle shows in that lifecycle's dlq_at, which a
-- later recovery does not clear. An entry with no lifecycle (an untraced message) is not
-- checked here, so the lifecycles lead the join, and the entries, few, are broadcast to them
-- rather than both sides shuffled.
with

lifecycles as (
    select
        consumer_group,
        msg_id,
        final_state,
        dlq_at
    from {{ ref('message_lifecycles') }}
),

dead_letters as (
    select
        consumer_group,
        msg_id,
        count(*) as entries
    from {{ ref('dlq_messages') }}
    group by consumer_group, msg_id
),

final as (
    select
        lifecycles.consumer_group,
        lifecycles.msg_id,
        lifecycles.final_state,
        lifecycles.dlq_at,
        coalesce(dead_letters.entries, 0) as entries
    from lifecycles
    left join dead_letters
        on
            lifecycles.consumer_group = dead_letters.consumer_group
            and lifecycles.msg_id = dead_letters.msg_id
    where
        (lifecycles.final_state = 'DLQ' and dead_letters.msg_id is null)
        or (dead_letters.msg_id is not null and lifecycles.dlq_at is null)
)

select * from final
