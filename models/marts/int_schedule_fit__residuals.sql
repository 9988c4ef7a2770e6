-- The gaps of each day's retry redeliveries (schedule_fit's sample), counted per candidate
-- schedule and residual: the part of schedule_fit's work that reads the ledger. A fact mart
-- kept by day in the intermediate schema: a run rewrites the days of its scope, so
-- schedule_fit neither reads every hour of redeliveries nor counts every gap again. A gap is
-- from the end of a failed delivery to the start of the next, at the next count; the
-- candidates are the schedule its settings configure and the schedules a deployment really
-- runs on when a seed row is wrong (see schedule_fit).
with

redeliveries as (
    {{ rows_in_refresh_scope(ref('redeliveries'), ref('int_run__refresh_partitions'), grain='day') }}
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
        redeliveries.lifecycle_date,
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
        gaps.lifecycle_date,
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

-- Counted per distinct residual: schedule_fit reads the counts as frequencies, so its medians
-- stay exact over far fewer rows than gaps.
final as (
    select
        consumer_group,
        client_line,
        schedule,
        gap_ms - delay_ms as residual_ms,
        abs(gap_ms - delay_ms) / greatest(delay_ms, 1000) as relative_residual,
        count(*) as redeliveries,
        count_if({{ redelivery_fits('gap_ms', 'delay_ms') }}) as fitting_redeliveries,
        lifecycle_date
    from candidates
    where delay_ms is not null
    group by consumer_group, client_line, schedule, residual_ms, relative_residual, lifecycle_date
)

select {{ one_file_per_partition() }} * from final
