-- A failed delivery that the rules send back (RETRY through the schedule topic, LOCAL_RETRY on
-- an orderly client) comes back with reconsumeTimes + 1 (spec §1.2 step 10, §3.5). The next
-- delivery in consume_attempts must be the observed redelivery, and carry that count unless
-- retry_decisions records why not: DUPLICATE_DELIVERY for the same or an earlier count (a
-- stored copy delivered again), UNEXPLAINED for a count that jumped ahead.
with

redelivered as (
    select
        consumer_group,
        msg_id,
        delivery_number,
        reconsume_times,
        observed_redelivery_at,
        observed_reconsume_times,
        redelivery_cause
    from {{ ref('retry_decisions') }}
    where decision in ('RETRY', 'LOCAL_RETRY')
),

attempts as (
    select
        consumer_group,
        msg_id,
        delivery_number,
        reconsume_times,
        consume_started_at
    from {{ ref('consume_attempts') }}
),

final as (
    select
        redelivered.*,
        next_attempt.reconsume_times as next_attempt_reconsume_times,
        next_attempt.consume_started_at as next_attempt_started_at
    from redelivered
    left join attempts as next_attempt
        on
            redelivered.consumer_group = next_attempt.consumer_group
            and redelivered.msg_id = next_attempt.msg_id
            and redelivered.delivery_number + 1 = next_attempt.delivery_number
    where
        redelivered.observed_redelivery_at is distinct from next_attempt.consume_started_at
        or redelivered.observed_reconsume_times is distinct from next_attempt.reconsume_times
        or redelivered.redelivery_cause is distinct from case
            when next_attempt.reconsume_times = redelivered.reconsume_times + 1 then 'SCHEDULED'
            when next_attempt.reconsume_times <= redelivered.reconsume_times then 'DUPLICATE_DELIVERY'
            when next_attempt.reconsume_times > redelivered.reconsume_times + 1 then 'UNEXPLAINED'
        end
)

select * from final
