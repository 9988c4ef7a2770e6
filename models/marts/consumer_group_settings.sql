{{ config(alias='consumer_groups') }}
-- Table `consumer_groups`: the effective settings of every consumer group (int_consumer_group_settings).
-- The model has its own name because the seed it starts from is called consumer_groups too.
with

settings as (
    select * from {{ ref('int_consumer_group_settings') }}
),

reconciliation as (
    select * from {{ ref('dlq_reconciliation') }}
),

-- A group that consumes another group's `%DLQ%` topic recovers its dead letters.
recovery_consumers as (
    select
        recovery_consumer_group as consumer_group,
        min(consumer_group) as recovers_dlq_of
    from reconciliation
    where recovery_consumer_group is not null
    group by recovery_consumer_group
),

final as (
    select
        settings.consumer_group,
        settings.message_model,
        settings.consume_mode,
        settings.max_reconsume_times,
        settings.effective_max_reconsume_times,
        settings.suspend_current_queue_time_millis,
        settings.effective_suspend_millis,
        settings.retry_queue_nums,
        settings.delay_level_when_next_consume,
        settings.broker_cluster,
        settings.delay_cluster,
        settings.broker_version,
        settings.client_line,
        settings.consume_timeout_minutes,
        settings.group_retry_policy,
        settings.settings_source,
        settings.is_default_settings,
        recovery_consumers.recovers_dlq_of
    from settings
    left join recovery_consumers
        on settings.consumer_group = recovery_consumers.consumer_group
)

select * from final
