-- Per what-if scenario, remoting group and hour: the retries the broker puts through
-- SCHEDULE_TOPIC_XXXX (a send-back at a delay level, spec §2.1), observed and replayed. A 5.x
-- gRPC group's retries wait in the pop service's timer instead, and are not counted.
with

tries as (
    select * from {{ ref('int_whatif__tries') }}
),

decisions as (
    select * from {{ ref('retry_decisions') }}
),

scenarios as (
    select distinct scenario from tries
),

observed as (
    select
        consumer_group,
        date_trunc('HOUR', failed_at) as hour_start,
        count(*) as observed_schedule_puts
    from decisions
    where delay_level is not null
    group by consumer_group, date_trunc('HOUR', failed_at)
),

-- A failed try's send-back, at its end, through the schedule topic when it has a level.
replayed as (
    select
        scenario,
        consumer_group,
        date_trunc('HOUR', {{ add_millis('starts_at', 'failed_try_ms') }}) as hour_start,
        count(*) as replayed_schedule_puts
    from tries
    where happened and delay_level is not null
    group by
        scenario,
        consumer_group,
        date_trunc('HOUR', {{ add_millis('starts_at', 'failed_try_ms') }})
),

baseline as (
    select * from replayed
    where scenario = 'observed'
),

hours as (
    select
        scenarios.scenario,
        observed.consumer_group,
        observed.hour_start
    from scenarios
    cross join observed

    union

    select
        scenario,
        consumer_group,
        hour_start
    from replayed
),

final as (
    select
        hours.scenario,
        hours.consumer_group,
        hours.hour_start,
        coalesce(observed.observed_schedule_puts, 0) as observed_schedule_puts,
        coalesce(baseline.replayed_schedule_puts, 0) as observed_settings_replayed_puts,
        coalesce(replayed.replayed_schedule_puts, 0) as replayed_schedule_puts,
        -- the observed puts moved by the scenario's difference, never below none
        greatest(
            coalesce(observed.observed_schedule_puts, 0)
            + coalesce(replayed.replayed_schedule_puts, 0)
            - coalesce(baseline.replayed_schedule_puts, 0),
            0
        ) as predicted_schedule_puts
    from hours
    left join observed
        on
            hours.consumer_group = observed.consumer_group
            and hours.hour_start = observed.hour_start
    left join replayed
        on
            hours.scenario = replayed.scenario
            and hours.consumer_group = replayed.consumer_group
            and hours.hour_start = replayed.hour_start
    left join baseline
        on
            hours.consumer_group = baseline.consumer_group
            and hours.hour_start = baseline.hour_start
)

select * from final
