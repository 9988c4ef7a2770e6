{{ config(post_hook="{{ drop_moved_partitions() }}") }}
-- depends_on: {{ ref('int_run__refresh_partitions') }}  (read by the post-hook)
-- One row per failed delivery: what the client and broker did with it under the group's
-- settings (spec §11 for the remoting lines, §8 and seed 002 for the gRPC lines, through the rule
-- macros of macros/rules/), and whether the redelivery came when and as the rules say.
with

attempts as (
    {{ rows_in_refresh_scope(ref('consume_attempts'), ref('int_run__refresh_partitions')) }}
),

consumer_groups as (
    select * from {{ ref('int_consumer_group_settings') }}
),

delay_levels as (
    select * from {{ ref('int_delay_levels') }}
),

published as (
    select * from {{ ref('int_run__published_messages') }}
),

cluster_levels as (
    {{ levels_by_cluster('delay_levels') }}
),

-- The next delivery of the same message to the same group is the observed redelivery.
sequenced as (
    select
        *,
        lead(consume_started_at) over next_delivery as next_consume_started_at,
        lead(reconsume_times) over next_delivery as next_delivery_reconsume_times
    from attempts
    window next_delivery as (partition by consumer_group, msg_id order by delivery_number)
),

failed_deliveries as (
    select
        consumer_group,
        msg_id,
        request_id,
        delivery_number,
        reconsume_times,
        topic,
        visible_again_at,
        attempt_number_observed,
        consume_ended_at as failed_at,
        next_consume_started_at,
        next_delivery_reconsume_times,
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
        consumer_groups.broker_version,
        consumer_groups.delay_cluster,
        consumer_groups.consumer_kind,
        consumer_groups.max_delivery_attempts,
        consumer_groups.dead_letter_enabled,
        consumer_groups.fifo_retry_interval_ms,
        {{ failure_policy_delay_ms('failed_deliveries.reconsume_times', settings='consumer_groups.') }}
            as policy_delay_ms,
        cluster_levels.max_delay_level,
        cluster_levels.delay_ms_by_level
    from failed_deliveries
    inner join consumer_groups
        on failed_deliveries.consumer_group = consumer_groups.consumer_group
    inner join cluster_levels
        on consumer_groups.delay_cluster = cluster_levels.broker_cluster
),

decided as (
    select
        *,
        {{ is_grpc_client_line('client_line') }} as is_grpc,
        {{ failure_decision('reconsume_times') }} as decision
    from with_settings
),

scheduled as (
    select
        *,
        {{ failure_delay_level('decision', 'reconsume_times', 'max_delay_level') }} as delay_level,
        {{ failure_next_reconsume_times('decision', 'reconsume_times') }} as next_reconsume_times
    from decided
),

timed as (
    select
        scheduled.*,
        {{ failure_delay_ms(
            'scheduled.decision', 'scheduled.failed_at', 'scheduled.visible_again_at',
            'scheduled.policy_delay_ms',
            'try_element_at(scheduled.delay_ms_by_level, scheduled.delay_level)',
            settings='scheduled.'
        ) }} as delay_ms,
        scheduled.decision in ('RETRY', 'LOCAL_RETRY') as is_redelivered
    from scheduled
),

final as (
    select
        timed.consumer_group,
        timed.msg_id,
        published.origin_msg_id,
        timed.request_id,
        timed.delivery_number,
        timed.reconsume_times,
        timed.failed_at,
        timed.decision,
        case
            when timed.decision = 'DLQ'
                then {{ dlq_reason('timed.delay_level_when_next_consume', 'timed.consume_mode') }}
        end as dlq_reason,
        timed.delay_level,
        timed.delay_ms,
        {{ schedule_queue_id('timed.delay_level') }} as schedule_queue_id,
        case
            when timed.is_grpc and timed.decision = 'RETRY'
                then {{ pop_retry_topic('timed.consumer_group', 'timed.topic') }}
            else {{ target_topic('timed.decision', 'timed.consumer_group') }}
        end as target_topic,
        timed.next_reconsume_times,
        case
            when timed.is_redelivered then {{ add_millis('timed.failed_at', 'timed.delay_ms') }}
        end as expected_redelivery_at,
        case when timed.is_redelivered then timed.next_consume_started_at end
            as observed_redelivery_at,
        case
            when timed.is_redelivered
                then
                    unix_millis(timed.next_consume_started_at)
                    - unix_millis(timed.failed_at)
                    - timed.delay_ms
        end as redelivery_lag_ms,
        case when timed.is_redelivered then timed.next_delivery_reconsume_times end
            as observed_reconsume_times,
        {{ dlq_entry_at('timed.decision', 'timed.failed_at', 'timed.delay_ms') }} as entered_dlq_at,
        -- a prediction from an inferred attempt number is not certain (the agent records none)
        case when timed.attempt_number_observed then 'EXACT' else 'INFERRED_ATTEMPTS' end
            as prediction_basis,
        timed.client_line,
        timed.lifecycle_date,
        timed.lifecycle_hour
    from timed
    left join published
        on timed.msg_id = published.msg_id
)

select {{ one_file_per_partition() }} * from final
