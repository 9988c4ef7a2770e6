-- The consumer-group settings users edit (seeds/consumer_groups.csv), with RocketMQ's default
-- for every cell left empty. The only model that reads the seed. A seed written before
-- `consume_timeout_minutes` existed gets the default for it.
{%- set seed = ref('consumer_groups') %}
with

seeded as (
    select * from {{ seed }}
),

final as (
    select
        consumer_group,
        coalesce(message_model, {{ consumer_group_default('message_model') }}) as message_model,
        coalesce(consume_mode, {{ consumer_group_default('consume_mode') }}) as consume_mode,
        coalesce(
            max_reconsume_times, {{ consumer_group_default('max_reconsume_times') }}
        ) as max_reconsume_times,
        coalesce(
            suspend_current_queue_time_millis,
            {{ consumer_group_default('suspend_current_queue_time_millis') }}
        ) as suspend_current_queue_time_millis,
        coalesce(
            retry_queue_nums, {{ consumer_group_default('retry_queue_nums') }}
        ) as retry_queue_nums,
        coalesce(
            delay_level_when_next_consume,
            {{ consumer_group_default('delay_level_when_next_consume') }}
        ) as delay_level_when_next_consume,
        coalesce(broker_cluster, {{ consumer_group_default('broker_cluster') }}) as broker_cluster,
        coalesce(client_line, {{ consumer_group_default('client_line') }}) as client_line,
        {%- if seed_has_column(seed, 'consume_timeout_minutes') %}
            coalesce(
                consume_timeout_minutes, {{ consumer_group_default('consume_timeout_minutes') }}
            ) as consume_timeout_minutes,
        {%- else %}
            {{ consumer_group_default('consume_timeout_minutes') }} as consume_timeout_minutes,
        {%- endif %}
        group_retry_policy
    from seeded
)

select * from final
