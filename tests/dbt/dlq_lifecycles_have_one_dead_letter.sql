-- Every lifecycle whose final state is DLQ has exactly one dlq_messages row, and every
-- predicted dead letter belongs to such a lifecycle: the work list and the lifecycles agree.
with

dlq_lifecycles as (
    select
        consumer_group,
        msg_id
    from {{ ref('message_lifecycles') }}
    where final_state = 'DLQ'
),

dead_letters as (
    select
        consumer_group,
        msg_id,
        count(*) as rows_in_work_list,
        count_if(evidence in ('PREDICTED', 'BOTH')) as predicted_rows
    from {{ ref('dlq_messages') }}
    group by consumer_group, msg_id
),

final as (
    select
        coalesce(dlq_lifecycles.consumer_group, dead_letters.consumer_group) as consumer_group,
        coalesce(dlq_lifecycles.msg_id, dead_letters.msg_id) as msg_id,
        dlq_lifecycles.msg_id is not null as lifecycle_in_dlq,
        coalesce(dead_letters.rows_in_work_list, 0) as rows_in_work_list
    from dlq_lifecycles
    full outer join dead_letters
        on
            dlq_lifecycles.consumer_group = dead_letters.consumer_group
            and dlq_lifecycles.msg_id = dead_letters.msg_id
    where
        (dlq_lifecycles.msg_id is not null and coalesce(dead_letters.rows_in_work_list, 0) <> 1)
        or (dlq_lifecycles.msg_id is null and dead_letters.predicted_rows > 0)
)

select * from final
