-- Every observed lifecycle replayed under every what-if scenario (docs/whatif.md), `observed`
-- (the observed settings) included, from its replayed tries (int_whatif__tries). The
-- prediction is the observed lifecycle moved by the difference between the scenario's replay
-- and the observed settings' replay, so what the rules do not decide (duplicate deliveries,
-- a client's fallback send, an operator's re-send) stays as observed.
with

lifecycles as (
    select * from {{ ref('message_lifecycles') }}
),

tries as (
    select * from {{ ref('int_whatif__tries') }}
),

happened as (
    select * from tries
    where happened
),

replayed as (
    select
        happened.scenario,
        happened.replay_model,
        happened.consumer_group,
        happened.msg_id,
        count(*) as replay_deliveries,
        max(
            case
                -- a try in flight at the watermark leaves the lifecycle open
                when happened.is_last_try and happened.is_in_flight then null
                when happened.is_last_try and not happened.fails then 'CONSUMED'
                when happened.is_last_try and happened.decision = 'DLQ' then 'DLQ'
                when happened.is_last_try then 'DROPPED'
            end
        ) as replay_ending,
        max(
            case
                when happened.is_last_try and not happened.fails and not happened.is_in_flight
                    then
                        unix_millis(happened.starts_at) - unix_millis(lifecycles.first_consume_at)
                        + happened.failed_try_ms
            end
        ) as replay_time_to_success_ms,
        max(
            case
                when happened.is_last_try and happened.decision = 'DLQ'
                    then
                        unix_millis(happened.starts_at) - unix_millis(lifecycles.first_consume_at)
                        + happened.failed_try_ms + coalesce(happened.delay_ms, 0)
            end
        ) as replay_time_to_dlq_ms,
        lifecycles.final_state,
        lifecycles.dlq_at is not null as entered_dlq,
        lifecycles.deliveries,
        lifecycles.time_to_success_ms,
        unix_millis(lifecycles.dlq_at) - unix_millis(lifecycles.first_consume_at) as time_to_dlq_ms,
        lifecycles.first_consume_at
    from happened
    inner join lifecycles
        on
            happened.consumer_group = lifecycles.consumer_group
            and happened.msg_id = lifecycles.msg_id
    group by
        happened.scenario,
        happened.replay_model,
        happened.consumer_group,
        happened.msg_id,
        lifecycles.final_state,
        lifecycles.dlq_at is not null,
        lifecycles.deliveries,
        lifecycles.time_to_success_ms,
        lifecycles.dlq_at,
        lifecycles.first_consume_at
),

with_baseline as (
    select
        replayed.*,
        -- how the observed lifecycle ended, as a replay tells it: a dead letter that was re-sent
        -- or recovered later still entered the DLQ
        case
            when replayed.entered_dlq then 'DLQ'
            when replayed.final_state in ('CONSUMED', 'DROPPED') then replayed.final_state
            else 'OPEN'
        end as observed_ending,
        coalesce(replayed.replay_ending, 'OPEN') as replay_state,
        coalesce(baseline.replay_ending, 'OPEN') as baseline_state,
        baseline.replay_deliveries as baseline_deliveries,
        baseline.replay_time_to_success_ms as baseline_time_to_success_ms,
        baseline.replay_time_to_dlq_ms as baseline_time_to_dlq_ms
    from replayed
    inner join replayed as baseline
        on
            baseline.scenario = 'observed'
            and replayed.consumer_group = baseline.consumer_group
            and replayed.msg_id = baseline.msg_id
),

final as (
    select
        scenario,
        replay_model,
        consumer_group,
        msg_id,
        final_state as observed_state,
        if(replay_state = baseline_state, final_state, replay_state) as predicted_state,
        entered_dlq as observed_entered_dlq,
        if(replay_state = baseline_state, entered_dlq, replay_state = 'DLQ')
            as predicted_entered_dlq,
        deliveries as observed_deliveries,
        deliveries + replay_deliveries - baseline_deliveries as predicted_deliveries,
        time_to_success_ms as observed_time_to_success_ms,
        case
            when replay_state = 'CONSUMED' and final_state = 'CONSUMED'
                then time_to_success_ms + replay_time_to_success_ms - baseline_time_to_success_ms
            when replay_state = 'CONSUMED' then replay_time_to_success_ms
        end as predicted_time_to_success_ms,
        time_to_dlq_ms as observed_time_to_dlq_ms,
        case
            when replay_state = 'DLQ' and final_state = 'DLQ' and baseline_state = 'DLQ'
                then time_to_dlq_ms + replay_time_to_dlq_ms - baseline_time_to_dlq_ms
            when replay_state = 'DLQ' then replay_time_to_dlq_ms
        end as predicted_time_to_dlq_ms,
        replay_state,
        replay_deliveries,
        baseline_state as observed_settings_replay_state,
        baseline_deliveries as observed_settings_replay_deliveries,
        -- whether the rules under the observed settings tell the lifecycle as it was observed
        baseline_state = observed_ending as replay_explains_observation,
        first_consume_at
    from with_baseline
)

select * from final
