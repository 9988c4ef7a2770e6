-- How well each group's observed redelivery gaps fit each candidate retry schedule: the one its
-- settings configure, and the schedules a deployment really runs on when a seed row is wrong:
-- the broker's level table from 3 + r (remoting), the open-source gRPC client's ladder from 1 s,
-- the documented ladder from 10 s (cloud-5) and the default exponential policy. A gap is from the
-- end of a failed delivery to the start of the next, at the next count; it fits a schedule when
-- it comes at its delay, as `redelivery_fits` allows. The best fit is named once a group has
-- enough redeliveries (var `schedule_fit_min_redeliveries`). Rebuilt on every run.
with

redeliveries as (
    select * from {{ ref('redeliveries') }}
),

consumer_groups as (
    select * from {{ ref('int_consumer_group_settings') }}
),

delay_levels as (
    select * from {{ ref('int_delay_levels') }}
),

highest_levels as (
    select
        broker_cluster,
        level as max_delay_level
    from delay_levels
    where is_max_level
),

-- A retry's redelivery: the previous delivery failed, the rules redeliver it, and the count
-- went up by one.
gaps as (
    select
        redeliveries.consumer_group,
        redeliveries.previous_reconsume_times + 1 as failed_attempt,
        redeliveries.gap_ms,
        redeliveries.expected_delay_ms as configured_delay_ms,
        consumer_groups.client_line,
        consumer_groups.delay_cluster,
        highest_levels.max_delay_level
    from redeliveries
    inner join consumer_groups
        on redeliveries.consumer_group = consumer_groups.consumer_group
    inner join highest_levels
        on consumer_groups.delay_cluster = highest_levels.broker_cluster
    where
        redeliveries.previous_outcome = 'FAILED'
        and redeliveries.previous_decision in ('RETRY', 'LOCAL_RETRY')
        and redeliveries.reconsume_times = redeliveries.previous_reconsume_times + 1
),

candidates as (
    select
        gaps.consumer_group,
        gaps.client_line,
        gaps.gap_ms,
        candidate.schedule,  -- noqa: RF01
        candidate.delay_ms  -- noqa: RF01
    from gaps
    left join delay_levels as broker_levels
        on
            gaps.delay_cluster = broker_levels.broker_cluster
            and broker_levels.level = {{ escalated_delay_level(
                'gaps.failed_attempt - 1', '0', 'gaps.max_delay_level'
            ) }}
        lateral view inline(array(
            named_struct('schedule', 'CONFIGURED', 'delay_ms', gaps.configured_delay_ms),
            named_struct('schedule', 'BROKER_LEVELS', 'delay_ms', broker_levels.delay_ms),
            named_struct('schedule', 'GRPC_LADDER', 'delay_ms', {{ grpc_retry_delay_ms(
                "'grpc-5'", 'gaps.failed_attempt', "'CUSTOMIZED'",
                customized_retry_policy_default(), '0', '0', '0'
            ) }}),
            named_struct('schedule', 'DOCUMENTED_LADDER', 'delay_ms', {{ grpc_retry_delay_ms(
                "'cloud-5'", 'gaps.failed_attempt', "'CUSTOMIZED'",
                customized_retry_policy_default(), '0', '0', '0'
            ) }}),
            named_struct('schedule', 'EXPONENTIAL', 'delay_ms', {{ grpc_retry_delay_ms(
                "'grpc-5'", 'gaps.failed_attempt', "'EXPONENTIAL'", 'array(0L)',
                exponential_retry_policy_default('initial'),
                exponential_retry_policy_default('max'),
                exponential_retry_policy_default('multiplier')
            ) }})
        )) candidate as schedule, delay_ms
),

-- The medians are exact: each group's gaps are counted per distinct residual first, and the
-- percentiles read those counts as frequencies. Far fewer values than gaps, so far less work
-- than a percentile over every gap.
residuals as (
    select
        consumer_group,
        client_line,
        schedule,
        gap_ms - delay_ms as residual_ms,
        abs(gap_ms - delay_ms) / greatest(delay_ms, 1000) as relative_residual,
        count(*) as redeliveries,
        count_if({{ redelivery_fits('gap_ms', 'delay_ms') }}) as fitting_redeliveries
    from candidates
    where delay_ms is not null
    group by consumer_group, client_line, schedule, residual_ms, relative_residual
),

fits as (
    select
        consumer_group,
        client_line,
        schedule,
        sum(redeliveries) as sample_size,
        sum(fitting_redeliveries) as fitting_redeliveries,
        cast(percentile(residual_ms, 0.5, redeliveries) as bigint) as median_residual_ms,
        percentile(relative_residual, 0.5, redeliveries) as median_relative_residual
    from residuals
    group by consumer_group, client_line, schedule
),

ranked as (
    select
        *,
        fitting_redeliveries / sample_size as fit_share,
        -- On a tie the configured schedule wins (it is what the rules apply), then one of the
        -- group's own protocol: on the default table, levels from 3 + r are the documented
        -- ladder's delays, which a gRPC consumer runs by its policy, not by levels.
        row_number() over (
            partition by consumer_group
            order by
                fitting_redeliveries / sample_size desc,
                median_relative_residual asc,
                schedule = 'CONFIGURED' desc,
                (schedule = 'BROKER_LEVELS') = {{ is_grpc_client_line('client_line') }} asc,
                schedule asc
        ) as fit_rank,
        max(sample_size) over (partition by consumer_group) as group_redeliveries
    from fits
),

best as (
    select
        consumer_group,
        schedule as best_fit_schedule
    from ranked
    where fit_rank = 1 and group_redeliveries >= {{ var('schedule_fit_min_redeliveries') }}
),

final as (
    select
        ranked.consumer_group,
        ranked.client_line,
        ranked.schedule as candidate_schedule,
        ranked.sample_size,
        ranked.fitting_redeliveries,
        ranked.fit_share,
        ranked.median_residual_ms,
        ranked.median_relative_residual,
        ranked.fit_rank,
        best.best_fit_schedule,
        best.best_fit_schedule is not null and ranked.schedule = best.best_fit_schedule
            as is_best_fit,
        -- false names a group whose settings are not the schedule it runs on
        best.best_fit_schedule = 'CONFIGURED' as configured_is_best_fit
    from ranked
    left join best
        on ranked.consumer_group = best.consumer_group
)

select * from final
