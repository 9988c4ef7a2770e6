{{ config(alias='consumer_groups') }}

-- Effective settings of every consumer group: the seed's row, or RocketMQ's defaults for a group
-- seen in the trace but missing from the seed (flagged by `settings_source`).
with

configured as (
    select * from {{ ref('consumer_groups') }}
),

delay_clusters as (
    select distinct broker_cluster from {{ ref('broker_delay_levels') }}
),

traced_groups as (
    select distinct consumer_group from {{ ref('stg_trace__consumer_groups') }}
),

unconfigured as (
    select traced_groups.consumer_group
    from traced_groups
    left anti join configured
        on traced_groups.consumer_group = configured.consumer_group
),

-- DefaultMQPushConsumer and SubscriptionGroupConfig defaults (spec §3.1).
all_groups as (
    select
        consumer_group,
        coalesce(message_model, 'CLUSTERING') as message_model,
        coalesce(consume_mode, 'CONCURRENTLY') as consume_mode,
        coalesce(max_reconsume_times, -1) as max_reconsume_times,
        coalesce(suspend_current_queue_time_millis, 1000) as suspend_current_queue_time_millis,
        coalesce(retry_queue_nums, 1) as retry_queue_nums,
        coalesce(delay_level_when_next_consume, 0) as delay_level_when_next_consume,
        coalesce(broker_cluster, '*') as broker_cluster,
        coalesce(client_line, 'remoting-4.9') as client_line,
        group_retry_policy,
        'seed' as settings_source
    from configured

    union all

    select
        consumer_group,
        'CLUSTERING' as message_model,
        'CONCURRENTLY' as consume_mode,
        -1 as max_reconsume_times,
        cast(1000 as bigint) as suspend_current_queue_time_millis,
        1 as retry_queue_nums,
        0 as delay_level_when_next_consume,
        '*' as broker_cluster,
        'remoting-4.9' as client_line,
        cast(null as string) as group_retry_policy,
        'default' as settings_source
    from unconfigured
),

final as (
    select
        all_groups.consumer_group,
        all_groups.message_model,
        all_groups.consume_mode,
        all_groups.max_reconsume_times,
        {{ effective_max_reconsume_times('all_groups.max_reconsume_times', 'all_groups.consume_mode') }}
            as effective_max_reconsume_times,
        all_groups.suspend_current_queue_time_millis,
        {{ orderly_suspend_millis('all_groups.suspend_current_queue_time_millis') }}
            as effective_suspend_millis,
        all_groups.retry_queue_nums,
        all_groups.delay_level_when_next_consume,
        all_groups.broker_cluster,
        -- A cluster without its own row in broker_delay_levels uses the default row `*`.
        coalesce(delay_clusters.broker_cluster, '*') as delay_cluster,
        all_groups.client_line,
        all_groups.group_retry_policy,
        all_groups.settings_source,
        all_groups.settings_source = 'default' as is_default_settings
    from all_groups
    left join delay_clusters
        on all_groups.broker_cluster = delay_clusters.broker_cluster
)

select * from final
