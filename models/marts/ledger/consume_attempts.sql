{{ config(post_hook="{{ drop_moved_partitions() }}") }}
-- depends_on: {{ ref('int_run__refresh_partitions') }}  (read by the post-hook)
-- One row per delivery of a message to a consumer group: from the trace (4.x and 5.x remoting
-- clients) or the 5.x gRPC inputs (`attempt_source`).
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
        client_line,
        attempt_source,
        attempt_number_observed,
        consumer_instance,
        topic,
        visible_again_at,
        lifecycle_date,
        lifecycle_hour
    from attempts
)

select {{ one_file_per_partition() }} * from final
