-- The dead letters the 5.x brokers logged, one row per forward: a log shipped twice, or two
-- brokers' logs that overlap, hold the same line, and it counts once. The only per-message record
-- of a 5.x dead letter (observability note §3.2): OBSERVED evidence, like a dlq/ export's copy.
-- The consumerId and originalTopic are unwrapped of an instance's namespace, as the trace and
-- the OpenTelemetry spans name them (macros/rules/namespace.sql; a pop retry topic on both sides
-- of its separator); `dlq_topic` stays the broker's.
{{ config(materialized='table') }}
-- A table, rebuilt whole on every run (dead letters are few): message_lifecycles and the dlq
-- models scan it five times a run, and as a view each scan would read every broker log line.
with

lines as (
    select * from {{ ref('stg_landing__broker_log_lines') }}
    where line_kind = 'DLQ' and line_error is null
),

-- A line landed again is known by the consumerId as logged, as landing_ignored counts it: two
-- instances' groups that share a name outside their namespaces are two forwards.
ranked as (
    select
        *,
        row_number() over (
            partition by consumer_group, msg_id, stored_at order by load_id, source_file, line_number
        ) as copy_number
    from lines
),

final as (
    select
        {{ without_namespace('ranked.consumer_group') }} as consumer_group,
        {{ namespace_of('ranked.dlq_topic') }} as `namespace`,
        ranked.dlq_topic,
        ranked.msg_id,
        -- the line's names as logged, not the unwrapped group named above
        {{ trace_side_topic('ranked.original_topic', 'ranked.consumer_group') }} as original_topic,
        ranked.stored_at,
        ranked.load_id,
        ranked.source_file,
        ranked.line_number
    from ranked
    where ranked.copy_number = 1
)

select * from final
