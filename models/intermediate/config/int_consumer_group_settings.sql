-- Effective settings of every consumer group the rules judge: the seed's row, or RocketMQ's
-- defaults for a group seen in the trace but missing from the seed (flagged by
-- `settings_source`), with the settings as the broker and client apply them.
{{ config(materialized='table') }}
-- A table, not a view: seven models read it.
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
    select distinct
        consumer_group,
        {{ consumer_group_default('client_line') }} as client_line,
        cast(null as string) as consumer_kind,
        cast(null as string) as consume_mode
    from {{ ref('stg_trace__consumer_groups') }}
),

-- A group seen only in the 5.x inputs is a gRPC consumer: the open-source line by default, of
-- the kind most of its deliveries show (a process span is a push consumer's, a listener event
-- names its kind), FIFO (ORDERLY) when any names a message group (observability §5.2).
grpc_groups as (
    select
        consumer_group,
        'grpc-5' as client_line,
        if(sum(simple_deliveries) > sum(push_deliveries), 'SIMPLE', 'PUSH') as consumer_kind,
        if(sum(message_group_deliveries) > 0, 'ORDERLY', null) as consume_mode
    from {{ ref('stg_grpc__consumer_groups') }}
    group by consumer_group
),

seen_groups as (
    select * from traced_groups
    union all
    select grpc_groups.* from grpc_groups
    left anti join traced_groups
        on grpc_groups.consumer_group = traced_groups.consumer_group
),

-- A group the seed lacks takes RocketMQ's defaults, but for what its deliveries show.
unconfigured as (
    select
        seen_groups.consumer_group,
        seen_groups.client_line,
        seen_groups.consumer_kind,
        seen_groups.consume_mode
    from seen_groups
    left anti join configured
        on seen_groups.consumer_group = configured.consumer_group
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
        coalesce(consume_mode, {{ consumer_group_default('consume_mode') }}) as consume_mode,
        {{ consumer_group_default('max_reconsume_times') }} as max_reconsume_times,
        {{ consumer_group_default('suspend_current_queue_time_millis') }}
            as suspend_current_queue_time_millis,
        {{ consumer_group_default('retry_queue_nums') }} as retry_queue_nums,
        {{ consumer_group_default('delay_level_when_next_consume') }}
            as delay_level_when_next_consume,
        {{ consumer_group_default('broker_cluster') }} as broker_cluster,
        client_line,
        {{ consumer_group_default('consume_timeout_minutes') }} as consume_timeout_minutes,
        cast(null as string) as group_retry_policy,
        cast({{ consumer_group_default('retry_max_times') }} as string) as retry_max_times,
        coalesce(consumer_kind, {{ consumer_group_default('consumer_kind') }}) as consumer_kind,
        cast({{ consumer_group_default('dead_letter_enabled') }} as string) as dead_letter_enabled,
        'default' as settings_source
    from unconfigured
),

-- The group retry policy (spec §8.1) in its parts.
with_policies as (
    select
        *,
        {{ retry_policy_columns('group_retry_policy') }}
    from all_groups
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
        all_groups.retry_policy_type,
        all_groups.retry_policy_delays_ms,
        all_groups.retry_policy_initial_ms,
        all_groups.retry_policy_max_ms,
        all_groups.retry_policy_multiplier,
        cast(all_groups.retry_max_times as int) as retry_max_times,
        {{ max_delivery_attempts('cast(all_groups.retry_max_times as int)') }} as max_delivery_attempts,
        all_groups.consumer_kind,
        cast(all_groups.dead_letter_enabled as boolean) as dead_letter_enabled,
        -- a cloud-5 FIFO group retries at this fixed interval (seed 002), unclamped
        all_groups.suspend_current_queue_time_millis as fifo_retry_interval_ms,
        all_groups.settings_source,
        all_groups.settings_source = 'default' as is_default_settings
    from with_policies as all_groups
    left join delay_clusters
        on all_groups.broker_cluster = delay_clusters.broker_cluster
    cross join default_cluster
)

select * from final
