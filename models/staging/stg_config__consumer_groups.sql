-- The consumer-group settings users edit (seeds/consumer_groups.csv), with RocketMQ's default
-- for every cell left empty. The only model that reads the seed. A seed written before
-- `consume_timeout_minutes` or the 5.x columns existed gets the defaults for them. The 5.x
-- columns are typed in int_consumer_group_settings.
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
        -- a cloud-5 FIFO group's fixed retry interval has another default (seed 002)
        coalesce(
            suspend_current_queue_time_millis,
            if(
                client_line = 'cloud-5',
                cast({{ var('cloud_fifo_retry_interval_millis') }} as bigint),
                {{ consumer_group_default('suspend_current_queue_time_millis') }}
            )
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
        nullif(group_retry_policy, '') as group_retry_policy,
        {%- if seed_has_column(seed, 'retry_max_times') %}
            coalesce(
                cast(retry_max_times as string),
                cast({{ consumer_group_default('retry_max_times') }} as string)
            ) as retry_max_times,
        {%- else %}
            cast({{ consumer_group_default('retry_max_times') }} as string) as retry_max_times,
        {%- endif %}
        {%- if seed_has_column(seed, 'consumer_kind') %}
            coalesce(
                cast(consumer_kind as string),
                cast({{ consumer_group_default('consumer_kind') }} as string)
            ) as consumer_kind,
        {%- else %}
            cast({{ consumer_group_default('consumer_kind') }} as string) as consumer_kind,
        {%- endif %}
        {%- if seed_has_column(seed, 'dead_letter_enabled') %}
            coalesce(
                cast(dead_letter_enabled as string),
                cast({{ consumer_group_default('dead_letter_enabled') }} as string)
            ) as dead_letter_enabled
        {%- else %}
            cast({{ consumer_group_default('dead_letter_enabled') }} as string) as dead_letter_enabled
        {%- endif %}
    from seeded
)

select * from final
