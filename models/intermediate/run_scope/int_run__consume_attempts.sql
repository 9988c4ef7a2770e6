-- Deliveries of the lifecycles in this run's scope, one row per delivery, duplicates removed:
-- from the trace, SubBefore joined to SubAfter on request id and message id (§5.2); from the
-- 5.x gRPC inputs, as int_run__grpc_attempts reads them.
with

consumer_groups as (
    select * from {{ ref('int_consumer_group_settings') }}
),

scoped_sub_before as (
    {{ records_in_refresh_scope(
        ref('stg_trace__sub_before'),
        ref('int_run__lifecycle_scope'),
        ref('int_run__refresh_partitions'),
        ['consumer_group', 'msg_id'],
        var('trace_clock_skew_hours')
    ) }}
),

-- A trace message can be re-sent with different neighbours; keep one copy of each record.
ranked_sub_before as (
    select
        *,
        row_number() over (
            partition by consumer_group, msg_id, request_id
            order by
                consume_started_at asc, trace_stored_at asc, source_file asc, line_number asc,
                record_index asc
        ) as copy_number
    from scoped_sub_before
),

unique_sub_before as (
    select * from ranked_sub_before
    where copy_number = 1
),

scoped_sub_after as (
    {{ records_in_refresh_scope(
        ref('stg_trace__sub_after'),
        ref('int_run__lifecycle_scope'),
        ref('int_run__refresh_partitions'),
        ['msg_id'],
        var('trace_clock_skew_hours')
    ) }}
),

ranked_sub_after as (
    select
        *,
        row_number() over (
            partition by request_id, msg_id
            order by
                field_count desc, trace_stored_at asc, source_file asc, line_number asc,
                record_index asc
        ) as copy_number
    from scoped_sub_after
),

unique_sub_after as (
    select * from ranked_sub_after
    where copy_number = 1
),

-- The 7-field SubAfter of older clients has no end time, and its costTime is the request's time
-- divided by the number of messages it delivered (§5.2), so its end is the start plus costTime
-- times that number: counted over every SubBefore of the request, in the scope or not.
unsized_requests as (
    select distinct request_id from unique_sub_after
    where field_count < 9
),

request_sizes as (
    select
        request_mates.request_id,
        count(distinct request_mates.consumer_group, request_mates.msg_id) as request_size
    from {{ ref('stg_trace__sub_before') }} as request_mates
    left semi join unsized_requests
        on request_mates.request_id = unsized_requests.request_id
    {{ scope_lookback_where(
        'request_mates.trace_stored_at',
        ref('int_run__refresh_partitions'),
        var('trace_clock_skew_hours')
    ) }}
    group by request_mates.request_id
),

paired as (
    select
        unique_sub_before.consumer_group,
        unique_sub_before.msg_id,
        unique_sub_before.request_id,
        unique_sub_before.reconsume_times,
        coalesce(unique_sub_before.keys, unique_sub_after.keys) as `keys`,
        unique_sub_before.client_host,
        unique_sub_before.consume_started_at,
        unique_sub_after.request_id is not null as has_result,
        unique_sub_after.cost_ms,
        unique_sub_after.is_success as traced_success,
        unique_sub_after.context_code,
        coalesce(
            unique_sub_after.consume_ended_at,
            {{ add_millis(
                'unique_sub_before.consume_started_at',
                'unique_sub_after.cost_ms * request_sizes.request_size'
            ) }}
        ) as result_ended_at
    from unique_sub_before
    left join unique_sub_after
        on
            unique_sub_before.request_id = unique_sub_after.request_id
            and unique_sub_before.msg_id = unique_sub_after.msg_id
    left join request_sizes
        on unique_sub_after.request_id = request_sizes.request_id
),

labelled as (
    select
        *,
        -- contextCode is the ConsumeReturnType ordinal (§4).
        case context_code
            when 0 then 'SUCCESS'
            when 1 then 'TIME_OUT'
            when 2 then 'EXCEPTION'
            when 3 then 'RETURNNULL'
            when 4 then 'FAILED'
        end as return_type
    from paired
),

trace_deliveries as (
    select
        consumer_group,
        msg_id,
        request_id,
        reconsume_times,
        `keys`,
        cast(null as string) as topic,
        client_host,
        client_host as consumer_instance,
        return_type,
        traced_success as reported_success,
        cost_ms,
        consume_started_at,
        case when has_result then result_ended_at end as consume_ended_at,
        cast(null as timestamp) as visible_again_at,
        'TRACE' as attempt_source,
        true as attempt_number_observed
    from labelled
),

grpc_deliveries as (
    select
        consumer_group,
        msg_id,
        request_id,
        reconsume_times,
        `keys`,
        topic,
        cast(null as string) as client_host,
        consumer_instance,
        return_type,
        is_success as reported_success,
        cost_ms,
        consume_started_at,
        consume_ended_at,
        visible_again_at,
        attempt_source,
        attempt_number_observed
    from {{ ref('int_run__grpc_attempts') }}
),

deliveries as (
    select * from trace_deliveries
    union all
    select * from grpc_deliveries
),

-- A 5.x message's attempt numbers order its deliveries, not its consumer hosts' clocks, which
-- differ (docs/rocketmq5-inputs.md): a later attempt logged a second before an earlier one on
-- another host still comes after it. An attempt no higher than the one before it in time, and a
-- minute or more after it, starts a new run of attempts: the message was re-sent after its DLQ
-- entry (or delivered again at that attempt). The trace's deliveries keep their order in time.
attempt_runs as (
    select
        *,
        sum(
            case
                when
                    attempt_source <> 'TRACE'
                    and reconsume_times <= previous_reconsume_times
                    and unix_millis(consume_started_at) - unix_millis(previous_started_at) >= 60000
                    then 1
                else 0
            end
        ) over (
            partition by consumer_group, msg_id
            order by consume_started_at, reconsume_times, request_id
            rows between unbounded preceding and current row
        ) as attempt_run
    from (
        select
            *,
            lag(reconsume_times) over in_time as previous_reconsume_times,
            lag(consume_started_at) over in_time as previous_started_at
        from deliveries
        window in_time as (
            partition by consumer_group, msg_id
            order by consume_started_at, reconsume_times, request_id
        )
    ) as timed
),

sequenced as (
    select
        *,
        row_number() over delivery_order as delivery_number,
        min(consume_started_at) over lifecycle as first_consume_at
    from attempt_runs
    window
        lifecycle as (partition by consumer_group, msg_id),
        delivery_order as (
            partition by consumer_group, msg_id
            order by
                attempt_run,
                case when attempt_source <> 'TRACE' then reconsume_times end,
                consume_started_at,
                reconsume_times,
                request_id
        )
),

final as (
    select
        sequenced.consumer_group,
        sequenced.msg_id,
        sequenced.request_id,
        sequenced.delivery_number,
        sequenced.reconsume_times,
        sequenced.keys,
        sequenced.topic,
        sequenced.client_host,
        sequenced.return_type,
        -- a trace delivery's success as the group's consume mode acks it; a 5.x one's as given
        case
            when sequenced.attempt_source = 'TRACE'
                then {{ delivery_is_acked(
                    'sequenced.reported_success', 'sequenced.return_type', 'consumer_groups.consume_mode'
                ) }}
            else sequenced.reported_success
        end as is_success,
        sequenced.cost_ms,
        sequenced.consume_started_at,
        sequenced.consume_ended_at,
        sequenced.visible_again_at,
        coalesce(consumer_groups.client_line, {{ consumer_group_default('client_line') }})
            as client_line,
        sequenced.attempt_source,
        sequenced.attempt_number_observed,
        sequenced.consumer_instance,
        to_date(sequenced.first_consume_at) as lifecycle_date,
        hour(sequenced.first_consume_at) as lifecycle_hour
    from sequenced
    left join consumer_groups
        on sequenced.consumer_group = consumer_groups.consumer_group
)

select * from final
