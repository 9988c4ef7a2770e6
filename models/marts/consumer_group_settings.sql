{{ config(alias='consumer_groups') }}
-- Table `consumer_groups`: the effective settings of every consumer group (int_consumer_group_settings).
-- The model has its own name because the seed it starts from is called consumer_groups too.
with

settings as (
    select * from {{ ref('int_consumer_group_settings') }}
),

final as (
    select
        consumer_group,
        message_model,
        consume_mode,
        max_reconsume_times,
        effective_max_reconsume_times,
        suspend_current_queue_time_millis,
        effective_suspend_millis,
        retry_queue_nums,
        delay_level_when_next_consume,
        broker_cluster,
        delay_cluster,
        client_line,
        group_retry_policy,
        settings_source,
        is_default_settings
    from settings
)

select * from final
