{{ config(materialized='table', schema='intermediate') }}
-- Every try of every observed lifecycle replayed under every what-if scenario, `observed`
-- included (docs/whatif.md), up to the scenario's cut-off. Each try's delay is what the rule
-- macros give a failure at its count under the scenario's settings; every try before the
-- lifecycle's last failed. A try the scenario delivers as it was observed (every earlier
-- try had the observed settings' delay) starts when it was observed and keeps its observed
-- outcome; later tries start the delays after it. Whether another try fails comes from the
-- group's replay model:
-- - ATTEMPT_INDEX: the message fails the tries it failed before it was consumed (all, if it
--   never was);
-- - WALL_CLOCK: a try inside one of the group's outage windows fails; outside them, the
--   message fails as many tries as it failed outside windows before it was consumed (every
--   try, if it failed outside a window and was never consumed).
-- A try whose delivery was in flight at the watermark ends the replay there, in flight.
-- A table: the lifecycles and the hourly schedule traffic both read it.
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

windows as (
    select * from {{ ref('whatif_failure_windows') }}
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
        consumer_group,
        cast(coalesce(percentile(cost_ms, 0.5), 0) as bigint) as failed_try_ms
    from attempts
    where not is_success
    group by consumer_group
),

group_lags as (
    select
        consumer_group,
        cast(coalesce(percentile(greatest(redelivery_lag_ms, 0), 0.5), 0) as bigint)
            as redelivery_lag_ms
    from decisions
    where redelivery_lag_ms is not null
    group by consumer_group
),

-- A SimpleConsumer's retry interval is its invisible duration, as observed per delivery.
failed_attempts as (
    select
        attempts.consumer_group,
        attempts.msg_id,
        attempts.reconsume_times,
        min(attempts.consume_ended_at) as consume_ended_at,
        min(attempts.visible_again_at) as visible_again_at,
        -- a failure inside one of the group's outage windows, for WALL_CLOCK
        bool_or(windows.window_start is not null) as in_outage
    from attempts
    left join windows
        on
            attempts.consumer_group = windows.consumer_group
            and attempts.consume_started_at >= windows.window_start
            and attempts.consume_started_at < windows.window_end
    where not attempts.is_success
    group by attempts.consumer_group, attempts.msg_id, attempts.reconsume_times
),

-- When each observed try began, to anchor the replay's tries that are delivered as observed.
observed_starts as (
    select
        consumer_group,
        msg_id,
        reconsume_times,
        min(consume_started_at) as observed_started_at
    from attempts
    group by consumer_group, msg_id, reconsume_times
),

-- The try that consumed the message, counted from the lifecycle's first delivery, and how
-- many tries failed before it (or at all) outside outage windows.
observed_tries as (
    select
        lifecycles.consumer_group,
        lifecycles.msg_id,
        lifecycles.first_reconsume_times,
        lifecycles.first_consume_at,
        lifecycles.dlq_at,
        -- a consumption counts only before a DLQ entry (a re-sent dead letter comes again)
        min(
            case
                when
                    attempts.is_success and attempts.consume_ended_at = lifecycles.consumed_at
                    and coalesce(lifecycles.consumed_at < lifecycles.dlq_at, true)
                    then attempts.reconsume_times
            end
        ) - lifecycles.first_reconsume_times as succeeding_try,
        -- the try whose failure sent it to the DLQ: the last that started before the entry
        max(
            case
                when attempts.consume_started_at <= lifecycles.dlq_at
                    then attempts.reconsume_times
            end
        ) - lifecycles.first_reconsume_times as dead_letter_try,
        -- the try still in flight at the watermark: its outcome is not known
        case
            when lifecycles.final_state = 'IN_FLIGHT'
                then max(attempts.reconsume_times) - lifecycles.first_reconsume_times
        end as in_flight_try
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
        lifecycles.dlq_at,
        lifecycles.consumed_at,
        lifecycles.final_state
),

-- The reconsumeTimes whose failure the scenario sends to the DLQ (or drops): a 4.x group's max
-- (none for an orderly -1), a 5.x group's last attempt.
cut_offs as (
    select
        scenario,
        consumer_group,
        if(
            {{ is_grpc_client_line('client_line') }},
            max_delivery_attempts - 1,
            effective_max_reconsume_times
        ) as cut_off_reconsume_times
    from settings
),

own_failures as (
    select
        observed_tries.consumer_group,
        observed_tries.msg_id,
        count_if(
            not failed_attempts.in_outage
            and (
                observed_tries.succeeding_try is null
                or failed_attempts.reconsume_times - observed_tries.first_reconsume_times
                < observed_tries.succeeding_try
            )
            and coalesce(
                failed_attempts.reconsume_times - observed_tries.first_reconsume_times
                <= observed_tries.dead_letter_try,
                true
            )
        ) as failures_outside_outages
    from observed_tries
    inner join failed_attempts
        on
            observed_tries.consumer_group = failed_attempts.consumer_group
            and observed_tries.msg_id = failed_attempts.msg_id
    group by observed_tries.consumer_group, observed_tries.msg_id
),

group_windows as (
    select distinct consumer_group from windows
),

-- The group's replay model in the scenario (an empty cell: WALL_CLOCK for a group with an
-- outage window, else ATTEMPT_INDEX), and how many tries the scenario's cut-off allows (var
-- whatif_max_tries where there is none). A dead letter the observed settings' rules do not
-- explain (the listener asked for the DLQ, delayLevelWhenNextConsume -1) ends at the same try
-- under any settings that do not end it sooner. ATTEMPT_INDEX needs no try after the one that
-- consumed the message or was in flight.
bounded as (
    select
        settings.scenario,
        coalesce(
            settings.replay_model,
            if(group_windows.consumer_group is null, 'ATTEMPT_INDEX', 'WALL_CLOCK')
        ) as replay_model,
        observed_tries.*,
        coalesce(own_failures.failures_outside_outages, 0) as failures_outside_outages,
        coalesce(
            greatest(cut_offs.cut_off_reconsume_times - observed_tries.first_reconsume_times, 0),
            {{ var('whatif_max_tries') }}
        ) as cut_off_try,
        case
            when
                observed_tries.dead_letter_try
                < coalesce(
                    observed_cut_offs.cut_off_reconsume_times - observed_tries.first_reconsume_times,
                    {{ var('whatif_max_tries') }}
                )
                then observed_tries.dead_letter_try
        end as requested_dead_letter_try
    from observed_tries
    inner join settings
        on observed_tries.consumer_group = settings.consumer_group
    inner join cut_offs
        on
            settings.scenario = cut_offs.scenario
            and settings.consumer_group = cut_offs.consumer_group
    inner join cut_offs as observed_cut_offs
        on
            observed_cut_offs.scenario = 'observed'
            and settings.consumer_group = observed_cut_offs.consumer_group
    left join own_failures
        on
            observed_tries.consumer_group = own_failures.consumer_group
            and observed_tries.msg_id = own_failures.msg_id
    left join group_windows
        on observed_tries.consumer_group = group_windows.consumer_group
),

tries as (
    select
        bounded.*,
        try.try_index,
        bounded.first_reconsume_times + try.try_index as reconsume_times
    from bounded
        lateral view explode(sequence(
            0,
            if(
                bounded.replay_model = 'ATTEMPT_INDEX',
                least(
                    coalesce(bounded.succeeding_try, bounded.in_flight_try, bounded.cut_off_try),
                    bounded.cut_off_try
                ),
                bounded.cut_off_try
            )
        )) try as try_index
),

-- What the rules do with each try if it fails, under the scenario's settings.
decided as (
    select
        tries.*,
        case
            when tries.try_index = tries.requested_dead_letter_try then 'DLQ'
            else {{ failure_decision('tries.reconsume_times', settings='settings.') }}
        end as decision_if_failed,
        {{ failure_policy_delay_ms('tries.reconsume_times', settings='settings.') }}
            as policy_delay_ms,
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

leveled as (
    select
        *,
        {{ failure_delay_level(
            'decision_if_failed', 'reconsume_times', 'max_delay_level', settings=''
        ) }} as delay_level
    from decided
),

timed as (
    select
        leveled.*,
        {{ failure_delay_ms(
            'leveled.decision_if_failed', 'observed_attempt.consume_ended_at',
            'observed_attempt.visible_again_at', 'leveled.policy_delay_ms',
            'delay_levels.delay_ms', settings='leveled.'
        ) }} as delay_ms
    from leveled
    left join delay_levels
        on
            leveled.scenario = delay_levels.scenario
            and leveled.delay_cluster = delay_levels.broker_cluster
            and leveled.delay_level = delay_levels.level
    left join failed_attempts as observed_attempt
        on
            leveled.consumer_group = observed_attempt.consumer_group
            and leveled.msg_id = observed_attempt.msg_id
            and leveled.reconsume_times = observed_attempt.reconsume_times
),

-- Whether the try is delivered as it was observed: observed, and every earlier try had the
-- delay (and decision) the observed settings give it.
compared_with_observed as (
    select
        timed.*,
        observed_starts.observed_started_at,
        coalesce(
            timed.decision_if_failed = baseline.decision_if_failed
            and timed.delay_ms <=> baseline.delay_ms,
            false
        ) as same_step_as_observed
    from timed
    left join timed as baseline
        on
            baseline.scenario = 'observed'
            and timed.consumer_group = baseline.consumer_group
            and timed.msg_id = baseline.msg_id
            and timed.try_index = baseline.try_index
    left join observed_starts
        on
            timed.consumer_group = observed_starts.consumer_group
            and timed.msg_id = observed_starts.msg_id
            and timed.reconsume_times = observed_starts.reconsume_times
),

-- Each try's step to the next: its cost, the delay and the redelivery's lag; summed over the
-- earlier tries, and whether one of them was not as observed.
stepped as (
    select
        compared_with_observed.*,
        -- a group with no failure on record (only in-flight deliveries) takes none
        coalesce(group_overheads.failed_try_ms, 0) as failed_try_ms,
        coalesce(sum(
            coalesce(group_overheads.failed_try_ms, 0)
            + coalesce(compared_with_observed.delay_ms, 0)
            + coalesce(group_lags.redelivery_lag_ms, 0)
        ) over earlier_tries, 0) as steps_before_ms,
        coalesce(bool_or(not compared_with_observed.same_step_as_observed) over earlier_tries, false)
            as diverged
    from compared_with_observed
    left join group_overheads
        on compared_with_observed.consumer_group = group_overheads.consumer_group
    left join group_lags
        on compared_with_observed.consumer_group = group_lags.consumer_group
    window earlier_tries as (
        partition by
            compared_with_observed.scenario,
            compared_with_observed.consumer_group,
            compared_with_observed.msg_id
        order by compared_with_observed.try_index
        rows between unbounded preceding and 1 preceding
    )
),

anchored as (
    select
        *,
        not diverged and observed_started_at is not null as as_observed
    from stepped
),

-- A try as observed starts when it was observed; a later one the steps after the last such.
placed as (
    select
        *,
        {{ add_millis(
            "coalesce(last(case when as_observed then observed_started_at end, true)"
            ~ " over tries_so_far, first_consume_at)",
            "steps_before_ms - coalesce(last(case when as_observed then steps_before_ms end, true)"
            ~ " over tries_so_far, 0)"
        ) }} as starts_at
    from anchored
    window tries_so_far as (
        partition by scenario, consumer_group, msg_id
        order by try_index
        rows between unbounded preceding and current row
    )
),

windowed as (
    select
        placed.*,
        windows.window_start is not null as in_outage
    from placed
    left join windows
        on
            placed.consumer_group = windows.consumer_group
            and placed.starts_at >= windows.window_start
            and placed.starts_at < windows.window_end
),

outcomes as (
    select
        *,
        case
            when try_index = in_flight_try then false
            when replay_model = 'ATTEMPT_INDEX' or as_observed
                then succeeding_try is null or try_index < succeeding_try
            when in_outage then true
            when succeeding_try is null then failures_outside_outages > 0
            else coalesce(
                    count_if(not in_outage) over earlier_tries, 0
                ) < failures_outside_outages
        end as fails
    from windowed
    window earlier_tries as (
        partition by scenario, consumer_group, msg_id
        order by try_index
        rows between unbounded preceding and 1 preceding
    )
),

-- the lifecycle's last try: the first that is consumed, dead-lettered or dropped
ended as (
    select
        *,
        min(
            case when not fails or decision_if_failed in ('DLQ', 'DROP') then try_index end
        ) over (partition by scenario, consumer_group, msg_id) as last_try_index
    from outcomes
),

final as (
    select
        ended.scenario,
        ended.replay_model,
        ended.consumer_group,
        ended.msg_id,
        ended.try_index,
        ended.reconsume_times,
        ended.starts_at,
        ended.in_outage,
        ended.fails,
        case when ended.fails then ended.decision_if_failed end as decision,
        case when ended.fails then ended.delay_level end as delay_level,
        case when ended.fails then ended.delay_ms end as delay_ms,
        ended.failed_try_ms,
        ended.try_index = ended.last_try_index as is_last_try,
        coalesce(ended.try_index = ended.in_flight_try, false) as is_in_flight,
        ended.as_observed,
        -- a try after the lifecycle's last, or due after the watermark, did not happen
        coalesce(ended.try_index <= ended.last_try_index, true)
        and ended.starts_at <= watermark.watermark_at as happened
    from ended
    cross join watermark
)

select * from final
