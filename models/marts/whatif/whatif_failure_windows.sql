-- Each consumer group's outage windows: sustained stretches in which it failed most deliveries
-- whatever the message (flow control while a dependency was down), by the definition in
-- var('outage_window'). The WALL_CLOCK replay fails whatever a scenario delivers inside one.
with

attempts as (
    select * from {{ ref('consume_attempts') }}
),

bucketed as (
    select
        consumer_group,
        msg_id,
        is_success,
        timestamp_seconds(
            floor(unix_seconds(consume_started_at) / ({{ outage_window('bucket_minutes') }} * 60))
            * {{ outage_window('bucket_minutes') }} * 60
        ) as bucket_start
    from attempts
),

buckets as (
    select
        consumer_group,
        bucket_start,
        count(*) as deliveries,
        count_if(not is_success) as failures
    from bucketed
    group by consumer_group, bucket_start
),

-- Consecutive failing buckets share a run key: bucket number minus rank.
runs as (
    select
        consumer_group,
        bucket_start,
        unix_seconds(bucket_start) div ({{ outage_window('bucket_minutes') }} * 60)
        - row_number() over (partition by consumer_group order by bucket_start) as run_key
    from buckets
    where
        failures >= {{ outage_window('min_failures_per_bucket') }}
        and failures >= {{ outage_window('min_failure_rate') }} * deliveries
),

stretches as (
    select
        consumer_group,
        min(bucket_start) as window_start,
        timestamp_seconds(unix_seconds(max(bucket_start)) + {{ outage_window('bucket_minutes') }} * 60)
            as window_end,
        count(*) as bucket_count
    from runs
    group by consumer_group, run_key
    having count(*) >= {{ outage_window('min_buckets') }}
),

breadth as (
    select
        stretches.consumer_group,
        stretches.window_start,
        stretches.window_end,
        count(distinct bucketed.msg_id) as delivered_messages,
        count(distinct case when not bucketed.is_success then bucketed.msg_id end)
            as failed_messages
    from stretches
    inner join bucketed
        on
            stretches.consumer_group = bucketed.consumer_group
            and stretches.window_start <= bucketed.bucket_start
            and stretches.window_end > bucketed.bucket_start
    group by stretches.consumer_group, stretches.window_start, stretches.window_end
),

final as (
    select
        consumer_group,
        window_start,
        window_end,
        delivered_messages,
        failed_messages,
        failed_messages / delivered_messages as failing_share
    from breadth
    where failed_messages >= {{ outage_window('min_failing_share') }} * delivered_messages
)

select * from final
