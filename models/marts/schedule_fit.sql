-- How well each group's observed redelivery gaps fit each candidate retry schedule: the one its
-- settings configure, and the schedules a deployment really runs on when a seed row is wrong:
-- the broker's level table from 3 + r (remoting), the open-source gRPC client's ladder from 1 s,
-- the documented ladder from 10 s (cloud-5) and the default exponential policy. A gap is from the
-- end of a failed delivery to the start of the next, at the next count; it fits a schedule when
-- it comes at its delay, as `redelivery_fits` allows. The best fit is named once a group has
-- enough redeliveries (var `schedule_fit_min_redeliveries`). Rebuilt on every run, from the
-- gaps counted per day and residual (int_schedule_fit__residuals).
with

residuals as (
    select * from {{ ref('int_schedule_fit__residuals') }}
),

-- The medians are exact: the percentiles read each residual's count as its frequency.
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
