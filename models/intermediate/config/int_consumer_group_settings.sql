-- Effective settings of every consumer group the rules judge: the seed's row, or RocketMQ's
-- defaults for a group seen in the trace but missing from the seed (flagged by
-- `settings_source`), with the settings as the broker and client apply them.
with

configured as (
    select * from {{ ref('stg_config__consumer_groups') }}
),

delay_clusters as (
    select
        broker_cluster,
        broker_version
    from {{ ref('stg_config__broker_delay_levels') }}
),

default_cluster as (
    select broker_version from delay_clusters
    where broker_cluster = '*'
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

all_groups as (
    select
        *,
        'seed' as settings_source
    from configured

    union all

    select
        consumer_group,
        {{ consumer_group_default('message_model') }} as message_model,
        {{ consumer_group_default('consume_mode') }} as consume_mode,
        {{ consumer_group_default('max_reconsume_times') }} as max_reconsume_times,
        {{ consumer_group_default('suspend_current_queue_time_millis') }}
            as suspend_current_queue_time_millis,
        {{ consumer_group_default('retry_queue_nums') }} as retry_queue_nums,
        {{ consumer_group_default('delay_level_when_next_consume') }}
            as delay_level_when_next_consume,
        {{ consumer_group_default('broker_cluster') }} as broker_cluster,
        {{ consumer_group_default('client_line') }} as client_line,
        {{ consumer_group_default('consume_timeout_minutes') }} as consume_timeout_minutes,
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
        -- Broker-side behaviour follows the cluster's version (its row, else the `*` row's).
        coalesce(
            delay_clusters.broker_version,
            default_cluster.broker_version,
            '{{ var("default_broker_version") }}'
        ) as broker_version,
        all_groups.client_line,
        -- The expiry cleaner sends back a message held longer than this (spec §3.6).
        all_groups.consume_timeout_minutes,
        all_groups.group_retry_policy,
        all_groups.settings_source,
        all_groups.settings_source = 'default' as is_default_settings
    from all_groups
    left join delay_clusters
        on all_groups.broker_cluster = delay_clusters.broker_cluster
    cross join default_cluster
)

select * from final
