{{ config(pre_hook="{{ drop_refresh_days('stat_date') }}") }}
-- Retry health per consumer group and day. A day is the cohort of messages first delivered to
-- the group that UTC day, so its rates and percentiles describe whole lifecycles.
{%- set every_day = fact_mart_lacks_columns() %}
with

lifecycles as (
    {{ rows_in_refresh_scope(
        ref('message_lifecycles'), ref('int_run__refresh_partitions'), grain='day', everything=every_day
    ) }}
),

attempts as (
    {{ rows_in_refresh_scope(
        ref('consume_attempts'), ref('int_run__refresh_partitions'), grain='day', everything=every_day
    ) }}
),

redeliveries as (
    {{ rows_in_refresh_scope(
        ref('redeliveries'), ref('int_run__refresh_partitions'), grain='day', everything=every_day
    ) }}
),

redelivery_causes as (
    select
        consumer_group,
        lifecycle_date,
        count_if(redelivery_cause = 'SCHEDULED') as scheduled_redeliveries,
        count_if(redelivery_cause = 'LISTENER_LEVEL') as listener_level_redeliveries,
        count_if(redelivery_cause = 'CONSUME_TIMEOUT') as consume_timeout_redeliveries,
        count_if(redelivery_cause = 'CLIENT_FALLBACK') as client_fallback_redeliveries,
        count_if(redelivery_cause = 'LOCAL_RECONSUME') as local_reconsume_redeliveries,
        count_if(redelivery_cause = 'PARTIAL_BATCH_ACK') as partial_batch_ack_redeliveries,
        count_if(redelivery_cause = 'DUPLICATE_DELIVERY') as duplicate_deliveries,
        count_if(redelivery_cause = 'BROADCAST_COPY') as broadcast_copies,
        count_if(redelivery_cause = 'RESENT') as resent_redeliveries,
        count_if(redelivery_cause = 'UNEXPLAINED') as unexplained_redeliveries
    from redeliveries
    group by consumer_group, lifecycle_date
),

first_deliveries as (
    select
        consumer_group,
        lifecycle_date,
        count_if(not is_success) as first_try_failures
    from attempts
    where delivery_number = 1
    group by consumer_group, lifecycle_date
),

-- A broadcasting group's copies to its other instances are deliveries, not retries (none in a
-- row without the column).
lifecycles_with_copies as (
    select
        *,
        coalesce(broadcast_copies, 0) as copies_to_other_instances
    from lifecycles
),

cohorts as (
    select
        consumer_group,
        lifecycle_date,
        count(*) as messages,
        sum(deliveries) as deliveries,
        sum(deliveries - 1 - copies_to_other_instances) as retries,
        count_if(deliveries - copies_to_other_instances > 1) as retried_messages,
        count_if(final_state = 'CONSUMED') as consumed,
        -- A dead letter stays counted on its day when an operator recovers it later.
        count_if(dlq_at is not null) as dlq,
        count_if(recovered_at is not null) as recovered,
        count_if(final_state = 'DROPPED') as dropped,
        count_if(final_state = 'CONSUMED' and dropped_deliveries > 0) as partly_dropped,
        count_if(successful_deliveries > 1 + copies_to_other_instances) as consumed_more_than_once,
        count_if(final_state in ('WAITING_RETRY', 'RETRY_OVERDUE', 'IN_FLIGHT')) as still_open,
        max(max_reconsume_times) as max_reconsume_times,
        percentile(deliveries, 0.5) as p50_deliveries,
        percentile(deliveries, 0.95) as p95_deliveries,
        percentile(time_to_success_ms, 0.5) as p50_time_to_success_ms,
        percentile(time_to_success_ms, 0.95) as p95_time_to_success_ms
    from lifecycles_with_copies
    group by consumer_group, lifecycle_date
),

final as (
    select
        cohorts.consumer_group,
        cohorts.messages,
        cohorts.deliveries,
        coalesce(first_deliveries.first_try_failures, 0) as first_try_failures,
        cohorts.retries,
        cohorts.retried_messages,
        cohorts.consumed,
        cohorts.dlq,
        cohorts.recovered,
        cohorts.dropped,
        cohorts.consumed_more_than_once,
        cohorts.still_open,
        cohorts.retried_messages / cohorts.messages as retry_rate,
        cohorts.dlq / cohorts.messages as dlq_rate,
        coalesce(first_deliveries.first_try_failures, 0) / cohorts.messages
            as first_try_failure_rate,
        cohorts.p50_deliveries,
        cohorts.p95_deliveries,
        cohorts.p50_time_to_success_ms,
        cohorts.p95_time_to_success_ms,
        {% for cause in [
            'scheduled_redeliveries', 'listener_level_redeliveries',
            'consume_timeout_redeliveries', 'client_fallback_redeliveries',
            'local_reconsume_redeliveries', 'partial_batch_ack_redeliveries',
            'duplicate_deliveries', 'resent_redeliveries', 'unexplained_redeliveries',
            'broadcast_copies'
        ] -%}
            coalesce(redelivery_causes.{{ cause }}, 0) as {{ cause }},
        {% endfor -%}
        cohorts.max_reconsume_times,
        cohorts.partly_dropped,
        cohorts.lifecycle_date as stat_date
    from cohorts
    left join first_deliveries
        on
            cohorts.consumer_group = first_deliveries.consumer_group
            and cohorts.lifecycle_date = first_deliveries.lifecycle_date
    left join redelivery_causes
        on
            cohorts.consumer_group = redelivery_causes.consumer_group
            and cohorts.lifecycle_date = redelivery_causes.lifecycle_date
)

select {{ one_file_per_partition() }} * from final
