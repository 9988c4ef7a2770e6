-- The lifecycles with a dead letter, predicted (a DLQ decision) or observed (a dlq/ copy or a
-- 5.x broker's DLQ log line), and those begun on a stored copy (a first delivery with a count,
-- as a DLQ's recovery consumer receives them): a few percent of all lifecycles, kept by day so
-- that int_dlq__entries and dlq_messages read them instead of every hour of message_lifecycles.
-- A fact mart: each run rewrites the days of its scope, which holds every lifecycle whose
-- decisions changed or whose dead-letter copy or log line arrived. The pre-hook empties those
-- days first, so a day left without such a lifecycle is not kept.
{%- set every_day = fact_mart_lacks_columns() %}
with

lifecycles as (
    {{ rows_in_refresh_scope(
        ref('message_lifecycles'), ref('int_run__refresh_partitions'), grain='day', everything=every_day
    ) }}
),

decisions as (
    {{ rows_in_refresh_scope(
        ref('retry_decisions'), ref('int_run__refresh_partitions'), grain='day', everything=every_day
    ) }}
),

copies as (
    select * from {{ ref('stg_dlq__messages') }}
),

broker_forwards as (
    select * from {{ ref('stg_broker_log__dlq_forwards') }}
),

-- (A lifecycle's decisions share its partition, so the scope's DLQ decisions are its own.)
dead_letter_pairs as (
    select
        consumer_group,
        msg_id
    from decisions
    where decision = 'DLQ'

    union

    select
        consumer_group,
        lifecycle_msg_id as msg_id
    from copies

    union

    select
        consumer_group,
        msg_id
    from broker_forwards
),

final as (
    select
        lifecycles.consumer_group,
        lifecycles.msg_id,
        lifecycles.origin_msg_id,
        lifecycles.origin_kind,
        lifecycles.published_offset_msg_id,
        lifecycles.topic,
        lifecycles.`keys`,
        lifecycles.tags,
        lifecycles.deliveries,
        lifecycles.max_reconsume_times,
        lifecycles.last_reconsume_times,
        lifecycles.last_return_type,
        lifecycles.last_consume_at,
        lifecycles.recovered_at,
        lifecycles.first_reconsume_times,
        lifecycles.first_consume_at,
        lifecycles.consumed_at,
        dead_letter_pairs.msg_id is not null as has_dead_letter,
        lifecycles.lifecycle_hour,
        lifecycles.lifecycle_date
    from lifecycles
    left join dead_letter_pairs
        on
            lifecycles.consumer_group = dead_letter_pairs.consumer_group
            and lifecycles.msg_id = dead_letter_pairs.msg_id
    where dead_letter_pairs.msg_id is not null or lifecycles.first_reconsume_times > 0
)

select {{ one_file_per_partition() }} * from final
