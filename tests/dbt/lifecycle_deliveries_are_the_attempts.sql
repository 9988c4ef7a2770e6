-- A lifecycle's `deliveries` is the number of its rows in consume_attempts, and every attempt
-- belongs to a lifecycle in the same (lifecycle_date, lifecycle_hour) partition. Compared
-- partition by partition, so only the partitions changed since the test last passed are read
-- (macros/testing/checked_files.sql).
{{ config(meta={'reads_changes': true}) }}
{%- set partition_columns = ['lifecycle_date', 'lifecycle_hour'] %}
{%- set changed = partitions_changed_since_pass(
    'lifecycle_deliveries_are_the_attempts',
    [ref('consume_attempts'), ref('message_lifecycles')],
    partition_columns
) %}

with

attempts as (
    select
        consumer_group,
        msg_id,
        lifecycle_date,
        lifecycle_hour,
        count(*) as attempts
    from {{ ref('consume_attempts') }}
    where {{ in_partitions(changed, partition_columns) }}
    group by consumer_group, msg_id, lifecycle_date, lifecycle_hour
),

lifecycles as (
    select
        consumer_group,
        msg_id,
        lifecycle_date,
        lifecycle_hour,
        deliveries
    from {{ ref('message_lifecycles') }}
    where {{ in_partitions(changed, partition_columns) }}
),

final as (
    select
        coalesce(lifecycles.consumer_group, attempts.consumer_group) as consumer_group,
        coalesce(lifecycles.msg_id, attempts.msg_id) as msg_id,
        coalesce(lifecycles.lifecycle_date, attempts.lifecycle_date) as lifecycle_date,
        coalesce(lifecycles.lifecycle_hour, attempts.lifecycle_hour) as lifecycle_hour,
        lifecycles.deliveries,
        attempts.attempts
    from lifecycles
    full outer join attempts
        on
            lifecycles.consumer_group = attempts.consumer_group
            and lifecycles.msg_id = attempts.msg_id
            and lifecycles.lifecycle_date = attempts.lifecycle_date
            and lifecycles.lifecycle_hour = attempts.lifecycle_hour
    where lifecycles.deliveries is distinct from attempts.attempts
)

select * from final
