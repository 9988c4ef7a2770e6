-- A failed delivery that the rules send back (RETRY through the schedule topic, LOCAL_RETRY on
-- an orderly client) comes back with reconsumeTimes + 1 (spec §1.2 step 10, §3.5). The next
-- delivery in consume_attempts must be the observed redelivery, and carry that count unless
-- redeliveries records why not: DUPLICATE_DELIVERY for the same or an earlier count (a stored
-- copy delivered again), BROADCAST_COPY for another instance's copy (an orderly broadcasting
-- group), RESENT after a DLQ entry, UNEXPLAINED for a count that jumped ahead.
-- A lifecycle's rows share its partition, so the rows are matched within a partition and only
-- the partitions changed since the test last passed are read (macros/testing/checked_files.sql).
{{ config(meta={'reads_changes': true}) }}
{%- set partition_columns = ['lifecycle_date', 'lifecycle_hour'] %}
{%- set changed = partitions_changed_since_pass(
    'redeliveries_carry_the_next_count',
    [ref('retry_decisions'), ref('redeliveries'), ref('consume_attempts')],
    partition_columns
) %}

with

redelivered as (
    select
        consumer_group,
        msg_id,
        delivery_number,
        reconsume_times,
        observed_redelivery_at,
        observed_reconsume_times,
        lifecycle_date,
        lifecycle_hour
    from {{ ref('retry_decisions') }}
    where
        decision in ('RETRY', 'LOCAL_RETRY')
        and {{ in_partitions(changed, partition_columns) }}
),

causes as (
    select
        consumer_group,
        msg_id,
        delivery_number,
        redelivery_cause,
        lifecycle_date,
        lifecycle_hour
    from {{ ref('redeliveries') }}
    where {{ in_partitions(changed, partition_columns) }}
),

attempts as (
    select
        consumer_group,
        msg_id,
        delivery_number,
        reconsume_times,
        consume_started_at,
        lifecycle_date,
        lifecycle_hour
    from {{ ref('consume_attempts') }}
    where {{ in_partitions(changed, partition_columns) }}
),

final as (
    select
        redelivered.*,
        next_attempt.reconsume_times as next_attempt_reconsume_times,
        next_attempt.consume_started_at as next_attempt_started_at,
        causes.redelivery_cause
    from redelivered
    left join attempts as next_attempt
        on
            redelivered.consumer_group = next_attempt.consumer_group
            and redelivered.msg_id = next_attempt.msg_id
            and redelivered.delivery_number + 1 = next_attempt.delivery_number
            and redelivered.lifecycle_date = next_attempt.lifecycle_date
            and redelivered.lifecycle_hour = next_attempt.lifecycle_hour
    left join causes
        on
            next_attempt.consumer_group = causes.consumer_group
            and next_attempt.msg_id = causes.msg_id
            and next_attempt.delivery_number = causes.delivery_number
            and next_attempt.lifecycle_date = causes.lifecycle_date
            and next_attempt.lifecycle_hour = causes.lifecycle_hour
    where
        redelivered.observed_redelivery_at is distinct from next_attempt.consume_started_at
        or redelivered.observed_reconsume_times is distinct from next_attempt.reconsume_times
        or (
            next_attempt.reconsume_times is not null
            and next_attempt.reconsume_times <> redelivered.reconsume_times + 1
            and causes.redelivery_cause not in (
                'DUPLICATE_DELIVERY', 'BROADCAST_COPY', 'RESENT', 'UNEXPLAINED'
            )
        )
)

select * from final
