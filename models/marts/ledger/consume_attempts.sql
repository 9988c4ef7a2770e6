{{ config(post_hook="{{ drop_moved_partitions() }}") }}
-- depends_on: {{ ref('int_run__refresh_partitions') }}  (read by the post-hook)
-- One row per delivery of a message to a consumer group.
with

attempts as (
    select * from {{ ref('int_run__consume_attempts') }}
),

final as (
    select
        consumer_group,
        msg_id,
        request_id,
        delivery_number,
        reconsume_times,
        keys,
        client_host,
        consume_started_at,
        consume_ended_at,
        cost_ms,
        return_type,
        is_success,
        lifecycle_date,
        lifecycle_hour
    from attempts
)

select * from final
