-- What the client and broker do with each failed delivery of this run's scope (spec §11),
-- through the rule macros in macros/rules/retry_rules.sql.
with

attempts as (
    {{ rows_in_refresh_scope(ref('consume_attempts'), ref('int_lifecycle_scope')) }}
),

consumer_groups as (
    select * from {{ ref('consumer_group_settings') }}
),

delay_levels as (
    select * from {{ ref('delay_levels') }}
),

highest_levels as (
    select
        broker_cluster,
        max(level) as max_delay_level
    from delay_levels
    group by broker_cluster
),

-- The next delivery of the same message to the same group is the observed redelivery.
sequenced as (
    select
        *,
        lead(consume_started_at) over (
            partition by consumer_group, msg_id order by delivery_number
        ) as next_consume_started_at
    from attempts
),

failed_deliveries as (
    select
        consumer_group,
        msg_id,
        request_id,
        delivery_number,
        reconsume_times,
        consume_ended_at as failed_at,
        next_consume_started_at,
        lifecycle_date,
        lifecycle_hour
    from sequenced
    where not is_success
),

with_settings as (
    select
        failed_deliveries.*,
        consumer_groups.message_model,
        consumer_groups.consume_mode,
        consumer_groups.effective_max_reconsume_times,
        consumer_groups.retry_queue_nums,
        consumer_groups.delay_level_when_next_consume,
        consumer_groups.effective_suspend_millis,
        consumer_groups.client_line,
        consumer_groups.delay_cluster,
        highest_levels.max_delay_level
    from failed_deliveries
    inner join consumer_groups
        on failed_deliveries.consumer_group = consumer_groups.consumer_group
    inner join highest_levels
        on consumer_groups.delay_cluster = highest_levels.broker_cluster
),

decided as (
    select
        *,
        {{ retry_decision(
            'message_model', 'consume_mode', 'retry_queue_nums', 'reconsume_times',
            'effective_max_reconsume_times', 'delay_level_when_next_consume'
        ) }} as decision,
        {{ escalated_delay_level(
            'reconsume_times', 'delay_level_when_next_consume', 'max_delay_level'
        ) }} as escalated_level
    from with_settings
),

-- RETRY goes through the schedule topic at the escalated level; so does an orderly message
-- on its way to the DLQ with a 4.9.x broker.
scheduled as (
    select
        *,
        case
            when decision = 'RETRY' then escalated_level
            when decision = 'DLQ' and {{ orderly_dlq_is_delayed('consume_mode', 'client_line') }}
                then least(3 + reconsume_times, max_delay_level)
        end as delay_level
    from decided
),

timed as (
    select
        scheduled.*,
        case
            when scheduled.decision = 'LOCAL_RETRY' then scheduled.effective_suspend_millis
            else delay_levels.delay_ms
        end as delay_ms
    from scheduled
    left join delay_levels
        on
            scheduled.delay_cluster = delay_levels.broker_cluster
            and scheduled.delay_level = delay_levels.level
),

final as (
    select
        consumer_group,
        msg_id,
        request_id,
        delivery_number,
        reconsume_times,
        failed_at,
        decision,
        case when decision = 'DLQ' then {{ dlq_reason('delay_level_when_next_consume', 'consume_mode') }} end
            as dlq_reason,
        delay_level,
        delay_ms,
        delay_level - 1 as schedule_queue_id,
        case
            when decision = 'RETRY' then concat('%RETRY%', consumer_group)
            when decision = 'DLQ' then concat('%DLQ%', consumer_group)
        end as target_topic,
        case when decision <> 'DROP' then reconsume_times + 1 end as next_reconsume_times,
        case
            when decision in ('RETRY', 'LOCAL_RETRY') then {{ add_millis('failed_at', 'delay_ms') }}
        end as expected_redelivery_at,
        case
            when decision = 'DLQ' then {{ add_millis('failed_at', 'coalesce(delay_ms, 0)') }}
        end as entered_dlq_at,
        case
            when decision in ('RETRY', 'LOCAL_RETRY') then next_consume_started_at
        end as observed_redelivery_at,
        case
            when decision in ('RETRY', 'LOCAL_RETRY')
                then unix_millis(next_consume_started_at) - unix_millis(failed_at) - delay_ms
        end as redelivery_lag_ms,
        lifecycle_date,
        lifecycle_hour
    from timed
)

select * from final
