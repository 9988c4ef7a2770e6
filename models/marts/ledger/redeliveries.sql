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

cluster_levels as (
    {{ levels_by_cluster('delay_levels') }}
),

-- When each message's dead-letter copies were stored, one row per (group, message).
dlq_copy_times as (
    select
        consumer_group,
        lifecycle_msg_id as msg_id,
        collect_list(stored_at) as stored_ats
    from dlq_copies
    group by consumer_group, lifecycle_msg_id
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
            'redelivered.previous_reconsume_times', '0', 'cluster_levels.max_delay_level'
        ) }} as fallback_delay_level,
        -- the expiry cleaner's send-back asks for level 3 (§3.6), clamped as any level
        least(3, cluster_levels.max_delay_level) as timeout_delay_level,
        cluster_levels.delay_ms_by_level,
        -- a copy stored in the group's DLQ between the previous delivery and this one: the
        -- message came back after it was dead-lettered
        coalesce(
            exists(
                dlq_copy_times.stored_ats,
                stored_at -> redelivered.previous_started_at <= stored_at
                and redelivered.consume_started_at > stored_at
            ),
            false
        ) as dead_lettered_between
    from redelivered
    left join decisions as previous_decision
        on
            redelivered.consumer_group = previous_decision.consumer_group
            and redelivered.msg_id = previous_decision.msg_id
            and redelivered.previous_delivery_number = previous_decision.delivery_number
    inner join consumer_groups
        on redelivered.consumer_group = consumer_groups.consumer_group
    inner join cluster_levels
        on consumer_groups.delay_cluster = cluster_levels.broker_cluster
    left join dlq_copy_times
        on
            redelivered.consumer_group = dlq_copy_times.consumer_group
            and redelivered.msg_id = dlq_copy_times.msg_id
),

classified as (
    select
        with_rules.*,
        try_element_at(with_rules.delay_ms_by_level, with_rules.fallback_delay_level)
            as fallback_delay_ms,
        try_element_at(with_rules.delay_ms_by_level, with_rules.timeout_delay_level)
            as timeout_delay_ms,
        -- the delay of the cluster's level closest to the gap (the shorter one on a tie)
        case
            when with_rules.gap_ms is not null
                then aggregate(
                        map_values(with_rules.delay_ms_by_level),
                        cast(null as bigint),
                        (nearest, delay_ms) -> case
                            when
                                nearest is null
                                or abs(with_rules.gap_ms - delay_ms) < abs(with_rules.gap_ms - nearest)
                                or (
                                    abs(with_rules.gap_ms - delay_ms) = abs(with_rules.gap_ms - nearest)
                                    and delay_ms < nearest
                                )
                                then delay_ms
                            else nearest
                        end
                    )
        end as nearest_level_delay_ms,
        with_rules.previous_decision = 'DLQ'
        or with_rules.dead_lettered_between as previous_dead_lettered
    from with_rules
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
