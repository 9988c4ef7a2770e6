-- A lifecycle's `deliveries` is the number of its rows in consume_attempts, and every attempt
-- belongs to a lifecycle.
with

attempts as (
    select
        consumer_group,
        msg_id,
        count(*) as attempts
    from {{ ref('consume_attempts') }}
    group by consumer_group, msg_id
),

lifecycles as (
    select
        consumer_group,
        msg_id,
        deliveries
    from {{ ref('message_lifecycles') }}
),

final as (
    select
        coalesce(lifecycles.consumer_group, attempts.consumer_group) as consumer_group,
        coalesce(lifecycles.msg_id, attempts.msg_id) as msg_id,
        lifecycles.deliveries,
        attempts.attempts
    from lifecycles
    full outer join attempts
        on
            lifecycles.consumer_group = attempts.consumer_group
            and lifecycles.msg_id = attempts.msg_id
    where lifecycles.deliveries is distinct from attempts.attempts
)

select * from final
