{{ config(post_hook="{{ drop_moved_partitions() }}") }}
-- depends_on: {{ ref('int_run__refresh_partitions') }}  (read by the post-hook)
-- One row per delivery after the first: why it came (the redelivery_cause macro, docs/rules.md),
-- told from the delivery before it, what the rules did with that one, and the gaps between them.
with

attempts as (
    {{ rows_in_refresh_scope(ref('consume_attempts'), ref('int_run__refresh_partitions')) }}
),

decisions as (
    {{ rows_in_refresh_scope(ref('retry_decisions'), ref('int_run__refresh_partitions')) }}
),

consumer_groups as (
    select * from {{ ref('int_consumer_group_settings') }}
),

delay_levels as (
    select * from {{ ref('int_delay_levels') }}
),

dlq_copies as (
    select * from {{ ref('stg_dlq__messages') }}
),

highest_levels as (
    select
        broker_cluster,
        max(level) as max_delay_level
    from delay_levels
    group by broker_cluster
),

-- The consumer instance, where the delivery names it (a 4.8.0 SubBefore's clientHost), and
-- whether it had the message before: a broadcasting group's copy to another instance is no
-- redelivery. A copy carries the stored count, the lifecycle's first; an orderly instance's
-- local retry counts up in memory (§3.5). (Running sets over the same window: no new sort.)
sequenced as (
    select
        *,
        coalesce(
            array_contains(
                collect_set(coalesce(consumer_instance, client_host)) over earlier_deliveries,
                coalesce(consumer_instance, client_host)
            ),
            false
        ) as instance_had_it,
        first_value(reconsume_times) over by_delivery as first_reconsume_times,
        lag(delivery_number) over by_delivery as previous_delivery_number,
        lag(reconsume_times) over by_delivery as previous_reconsume_times,
        lag(consume_started_at) over by_delivery as previous_started_at,
        lag(consume_ended_at) over by_delivery as previous_ended_at,
        lag(is_success) over by_delivery as previous_is_success
    from attempts
    window
        by_delivery as (partition by consumer_group, msg_id order by delivery_number),
        earlier_deliveries as (
            partition by consumer_group, msg_id order by delivery_number
            rows between unbounded preceding and 1 preceding
        )
),

redelivered as (
    select
        sequenced.consumer_group,
        sequenced.msg_id,
        sequenced.delivery_number,
        sequenced.reconsume_times,
        sequenced.consume_started_at,
        sequenced.previous_delivery_number,
        sequenced.previous_reconsume_times,
        sequenced.previous_started_at,
        sequenced.previous_ended_at,
        sequenced.instance_had_it,
        sequenced.reconsume_times = sequenced.first_reconsume_times as carries_first_count,
        case
            when sequenced.previous_is_success is null then 'IN_FLIGHT'
            when sequenced.previous_is_success then 'SUCCESS'
            else 'FAILED'
        end as previous_outcome,
        unix_millis(sequenced.consume_started_at) - unix_millis(sequenced.previous_ended_at)
            as gap_ms,
        unix_millis(sequenced.consume_started_at) - unix_millis(sequenced.previous_started_at)
            as start_gap_ms,
        unix_millis(sequenced.previous_ended_at) - unix_millis(sequenced.previous_started_at)
            as previous_took_ms,
        sequenced.lifecycle_date,
        sequenced.lifecycle_hour
    from sequenced
    where sequenced.previous_delivery_number is not null
),

with_rules as (
    select
        redelivered.*,
        previous_decision.decision as previous_decision,
        case
            when previous_decision.decision in ('RETRY', 'LOCAL_RETRY')
                then previous_decision.delay_ms
        end as expected_delay_ms,
        consumer_groups.consume_mode,
        consumer_groups.message_model = 'BROADCASTING'
        and not redelivered.instance_had_it
        and redelivered.carries_first_count as broadcast_to_new_instance,
        {{ is_grpc_client_line('consumer_groups.client_line') }} as is_grpc,
        consumer_groups.delay_cluster,
        -- as a bigint: an int of minutes times 60,000 would wrap past 35,791 minutes
        cast(consumer_groups.consume_timeout_minutes as bigint) * 60000 as consume_timeout_ms,
        {{ escalated_delay_level(
            'redelivered.previous_reconsume_times', '0', 'highest_levels.max_delay_level'
        ) }} as fallback_delay_level,
        -- the expiry cleaner's send-back asks for level 3 (§3.6), clamped as any level
        least(3, highest_levels.max_delay_level) as timeout_delay_level
    from redelivered
    left join decisions as previous_decision
        on
            redelivered.consumer_group = previous_decision.consumer_group
            and redelivered.msg_id = previous_decision.msg_id
            and redelivered.previous_delivery_number = previous_decision.delivery_number
    inner join consumer_groups
        on redelivered.consumer_group = consumer_groups.consumer_group
    inner join highest_levels
        on consumer_groups.delay_cluster = highest_levels.broker_cluster
),

-- The level of the group's cluster whose delay is closest to the gap (redeliveries are few).
nearest_levels as (
    select
        with_rules.consumer_group,
        with_rules.msg_id,
        with_rules.delivery_number,
        min_by(
            delay_levels.delay_ms, abs(with_rules.gap_ms - delay_levels.delay_ms)
        ) as nearest_level_delay_ms
    from with_rules
    inner join delay_levels
        on with_rules.delay_cluster = delay_levels.broker_cluster
    group by with_rules.consumer_group, with_rules.msg_id, with_rules.delivery_number
),

-- A copy stored in the group's DLQ between the previous delivery and this one: the message
-- came back after it was dead-lettered.
dead_lettered_between as (
    select distinct
        with_rules.consumer_group,
        with_rules.msg_id,
        with_rules.delivery_number
    from with_rules
    inner join dlq_copies
        on
            with_rules.consumer_group = dlq_copies.consumer_group
            and with_rules.msg_id = dlq_copies.lifecycle_msg_id
            and with_rules.previous_started_at <= dlq_copies.stored_at
            and with_rules.consume_started_at > dlq_copies.stored_at
),

classified as (
    select
        with_rules.*,
        fallback_levels.delay_ms as fallback_delay_ms,
        timeout_levels.delay_ms as timeout_delay_ms,
        nearest_levels.nearest_level_delay_ms,
        (
            with_rules.previous_decision = 'DLQ'
            or dead_lettered_between.msg_id is not null
        ) as previous_dead_lettered
    from with_rules
    left join delay_levels as fallback_levels
        on
            with_rules.delay_cluster = fallback_levels.broker_cluster
            and with_rules.fallback_delay_level = fallback_levels.level
    left join delay_levels as timeout_levels
        on
            with_rules.delay_cluster = timeout_levels.broker_cluster
            and with_rules.timeout_delay_level = timeout_levels.level
    left join nearest_levels
        on
            with_rules.consumer_group = nearest_levels.consumer_group
            and with_rules.msg_id = nearest_levels.msg_id
            and with_rules.delivery_number = nearest_levels.delivery_number
    left join dead_lettered_between
        on
            with_rules.consumer_group = dead_lettered_between.consumer_group
            and with_rules.msg_id = dead_lettered_between.msg_id
            and with_rules.delivery_number = dead_lettered_between.delivery_number
),

final as (
    select
        consumer_group,
        msg_id,
        delivery_number,
        reconsume_times,
        consume_started_at,
        previous_delivery_number,
        previous_reconsume_times,
        previous_outcome,
        previous_decision,
        gap_ms,
        start_gap_ms,
        expected_delay_ms,
        {{ redelivery_cause(
            'previous_outcome', 'coalesce(previous_dead_lettered, false)',
            'previous_reconsume_times', 'reconsume_times', 'gap_ms', 'start_gap_ms',
            'previous_took_ms', 'consume_timeout_ms', 'expected_delay_ms', 'fallback_delay_ms',
            'timeout_delay_ms', 'nearest_level_delay_ms', 'consume_mode', 'not is_grpc',
            'broadcast_to_new_instance'
        ) }} as redelivery_cause,
        lifecycle_date,
        lifecycle_hour
    from classified
)

select {{ one_file_per_partition() }} * from final
