-- Every observed lifecycle replayed under every what-if scenario (docs/whatif.md), `observed`
-- (the observed settings) included. Replay model ATTEMPT_INDEX: a message that failed its
-- first k deliveries and then succeeded fails its first k tries under any settings; one never
-- seen to succeed (dead-lettered, dropped or still open) fails every try. Each failed try is
-- decided by the rule macros with the scenario's settings; tries due after the watermark have
-- not happened. The prediction is the observed lifecycle moved by the difference between the
-- scenario's replay and the observed settings' replay, so what the rules do not explain
-- (duplicates, send-back fallbacks, ...) stays as observed.
with

lifecycles as (
    select * from {{ ref('message_lifecycles') }}
),

attempts as (
    select * from {{ ref('consume_attempts') }}
),

decisions as (
    select * from {{ ref('retry_decisions') }}
),

settings as (
    select * from {{ ref('int_whatif_scenario_settings') }}
),

delay_levels as (
    select * from {{ ref('int_whatif_delay_levels') }}
),

watermark as (
    select watermark_at from {{ ref('int_trace_watermark') }}
),

highest_levels as (
    select
        scenario,
        broker_cluster,
        level as max_delay_level
    from delay_levels
    where is_max_level
),

-- What a try costs besides the rules' delay, the same in every scenario: the group's median
-- failed-delivery time and median lag of a redelivery behind its schedule.
group_overheads as (
    select
        attempts.consumer_group,
        cast(coalesce(percentile(attempts.cost_ms, 0.5), 0) as bigint) as failed_try_ms
    from attempts
    where not attempts.is_success
    group by attempts.consumer_group
),

group_lags as (
    select
        consumer_group,
        cast(coalesce(percentile(greatest(redelivery_lag_ms, 0), 0.5), 0) as bigint) as redelivery_lag_ms
    from decisions
    where redelivery_lag_ms is not null
    group by consumer_group
),

-- A SimpleConsumer's retry interval is its invisible duration, as observed per delivery.
failed_attempts as (
    select
        consumer_group,
        msg_id,
        reconsume_times,
        min(consume_ended_at) as consume_ended_at,
        min(visible_again_at) as visible_again_at
    from attempts
    where not is_success
    group by consumer_group, msg_id, reconsume_times
),

-- The try that consumed the message, counted from the lifecycle's first delivery.
observed_tries as (
    select
        lifecycles.consumer_group,
        lifecycles.msg_id,
        lifecycles.first_reconsume_times,
        lifecycles.first_consume_at,
        lifecycles.final_state,
        lifecycles.deliveries,
        lifecycles.time_to_success_ms,
        unix_millis(lifecycles.dlq_at) - unix_millis(lifecycles.first_consume_at) as time_to_dlq_ms,
        min(
            case
                when attempts.is_success and attempts.consume_ended_at = lifecycles.consumed_at
                    then attempts.reconsume_times
            end
        ) - lifecycles.first_reconsume_times as succeeding_try
    from lifecycles
    inner join attempts
        on
            lifecycles.consumer_group = attempts.consumer_group
            and lifecycles.msg_id = attempts.msg_id
    group by
        lifecycles.consumer_group,
        lifecycles.msg_id,
        lifecycles.first_reconsume_times,
        lifecycles.first_consume_at,
        lifecycles.final_state,
        lifecycles.deliveries,
        lifecycles.time_to_success_ms,
        lifecycles.dlq_at
),

-- How many tries a scenario can give before its cut-off, so the replay explodes no further:
-- a 4.x group's max (unlimited for orderly -1: bounded here), a 5.x group's attempts.
bounded as (
    select
        settings.scenario,
        settings.replay_model,
        observed_tries.*,
        least(
            coalesce(observed_tries.succeeding_try, {{ var('whatif_max_tries') }}),
            greatest(
                case
                    when {{ is_grpc_client_line('settings.client_line') }}
                        then settings.max_delivery_attempts - 1 - observed_tries.first_reconsume_times
                    else coalesce(
                            settings.effective_max_reconsume_times - observed_tries.first_reconsume_times,
                            {{ var('whatif_max_tries') }}
                        )
                end,
                0
            )
        ) as last_try
    from observed_tries
    inner join settings
        on observed_tries.consumer_group = settings.consumer_group
),

tries as (
    select
        bounded.*,
        try.try_index,
        bounded.first_reconsume_times + try.try_index as reconsume_times,
        bounded.succeeding_try is null or try.try_index < bounded.succeeding_try as fails
    from bounded
        lateral view explode(sequence(0, bounded.last_try)) try as try_index
),

decided as (
    select
        tries.*,
        case
            when tries.fails
                then {{ failure_decision('tries.reconsume_times', settings='settings.') }}
        end as decision,
        {{ failure_policy_delay_ms('tries.reconsume_times', settings='settings.') }} as policy_delay_ms,
        settings.delay_cluster,
        settings.client_line,
        settings.consume_mode,
        settings.consumer_kind,
        settings.broker_version,
        settings.delay_level_when_next_consume,
        settings.effective_suspend_millis,
        settings.fifo_retry_interval_ms,
        highest_levels.max_delay_level
    from tries
    inner join settings
        on
            tries.scenario = settings.scenario
            and tries.consumer_group = settings.consumer_group
    inner join highest_levels
        on
            settings.scenario = highest_levels.scenario
            and settings.delay_cluster = highest_levels.broker_cluster
),

-- The rules' level and delay for each failed try, and for a SimpleConsumer the interval the
-- observed delivery at that count had (none for a try it never had).
timed as (
    select
        decided.*,
        {{ failure_delay_ms(
            'decided.decision', 'observed_attempt.consume_ended_at',
            'observed_attempt.visible_again_at', 'decided.policy_delay_ms',
            'delay_levels.delay_ms', settings='decided.'
        ) }} as delay_ms
    from decided
    left join delay_levels
        on
            decided.scenario = delay_levels.scenario
            and decided.delay_cluster = delay_levels.broker_cluster
            and {{ failure_delay_level(
                'decided.decision', 'decided.reconsume_times', 'decided.max_delay_level',
                settings='decided.'
            ) }} = delay_levels.level
    left join failed_attempts as observed_attempt
        on
            decided.consumer_group = observed_attempt.consumer_group
            and decided.msg_id = observed_attempt.msg_id
            and decided.reconsume_times = observed_attempt.reconsume_times
),

-- When each try starts, counted from the first delivery: every earlier try's cost, delay and
-- lag. The first try that ends the lifecycle (a success, DLQ or drop) is its last.
placed as (
    select
        timed.*,
        coalesce(
            sum(
                group_overheads.failed_try_ms + coalesce(timed.delay_ms, 0)
                + coalesce(group_lags.redelivery_lag_ms, 0)
            ) over earlier_tries,
            0
        ) as starts_after_ms,
        group_overheads.failed_try_ms,
        min(
            case when not timed.fails or timed.decision in ('DLQ', 'DROP') then timed.try_index end
        ) over lifecycle as ending_try
    from timed
    left join group_overheads
        on timed.consumer_group = group_overheads.consumer_group
    left join group_lags
        on timed.consumer_group = group_lags.consumer_group
    window
        lifecycle as (partition by timed.scenario, timed.consumer_group, timed.msg_id),
        earlier_tries as (
            partition by timed.scenario, timed.consumer_group, timed.msg_id
            order by timed.try_index
            rows between unbounded preceding and 1 preceding
        )
),

replayed as (
    select
        placed.scenario,
        placed.replay_model,
        placed.consumer_group,
        placed.msg_id,
        placed.final_state,
        placed.deliveries,
        placed.time_to_success_ms,
        placed.time_to_dlq_ms,
        placed.first_consume_at,
        count_if(
            placed.try_index <= coalesce(placed.ending_try, placed.last_try)
            and {{ add_millis('placed.first_consume_at', 'placed.starts_after_ms') }}
            <= watermark.watermark_at
        ) as replay_deliveries,
        max(
            case
                when placed.try_index = placed.ending_try
                    and {{ add_millis('placed.first_consume_at', 'placed.starts_after_ms') }}
                    <= watermark.watermark_at
                    then case
                            when not placed.fails then 'CONSUMED'
                            when placed.decision = 'DLQ' then 'DLQ'
                            else 'DROPPED'
                        end
            end
        ) as replay_ending,
        max(case when placed.try_index = placed.ending_try and not placed.fails then
                placed.starts_after_ms + placed.failed_try_ms
        end) as replay_time_to_success_ms,
        max(case when placed.try_index = placed.ending_try and placed.decision = 'DLQ' then
                placed.starts_after_ms + placed.failed_try_ms + coalesce(placed.delay_ms, 0)
        end) as replay_time_to_dlq_ms
    from placed
    cross join watermark
    group by
        placed.scenario,
        placed.replay_model,
        placed.consumer_group,
        placed.msg_id,
        placed.final_state,
        placed.deliveries,
        placed.time_to_success_ms,
        placed.time_to_dlq_ms,
        placed.first_consume_at
),

with_baseline as (
    select
        replayed.*,
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
        baseline_state = case
            when final_state in ('CONSUMED', 'DLQ', 'DROPPED') then final_state
            else 'OPEN'
        end as replay_explains_observation,
        first_consume_at
    from with_baseline
)

select * from final
