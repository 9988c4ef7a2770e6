-- The dead letters the 5.x brokers logged, one row per forward: a log shipped twice, or two
-- brokers' logs that overlap, hold the same line, and it counts once. The only per-message record
-- of a 5.x dead letter (observability note §3.2): OBSERVED evidence, like a dlq/ export's copy.
-- The consumerId and originalTopic are unwrapped of an instance's namespace, as the trace and
-- the OpenTelemetry spans name them (macros/rules/namespace.sql; a pop retry topic on both sides
-- of its separator); `dlq_topic` stays the broker's.
with

lines as (
    select * from {{ ref('stg_landing__broker_log_lines') }}
    where line_kind = 'DLQ' and line_error is null
),

named as (
    select
        {{ without_namespace('lines.consumer_group') }} as consumer_group,
        {{ namespace_of('lines.dlq_topic') }} as `namespace`,
        lines.dlq_topic,
        lines.msg_id,
        -- the line's names as logged, not the unwrapped group named above
        {{ trace_side_topic('lines.original_topic', 'lines.consumer_group') }} as original_topic,
        lines.stored_at,
        lines.load_id,
        lines.source_file,
        lines.line_number
    from lines
),

ranked as (
    select
        *,
        row_number() over (
            partition by consumer_group, msg_id, stored_at order by load_id, source_file, line_number
        ) as copy_number
    from named
),

final as (
    select
        consumer_group,
        `namespace`,
        dlq_topic,
        msg_id,
        original_topic,
        stored_at,
        load_id,
        source_file,
        line_number
    from ranked
    where copy_number = 1
)

select * from final
