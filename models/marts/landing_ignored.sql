-- The landed records that are read and deliberately not used, counted per file and reason, so
-- that every landing line is accounted for: the spans of other systems (and receive spans) in
-- the otel/ batches, the broker log lines that are not dead letters, and the records landed twice
-- (a span batch exported again, a listener event or DLQ line shipped twice), which count once.
-- Rebuilt on every run from the counts kept per load (int_landing__ignored_by_load), so a run
-- counts only the loads it staged.
with

counted as (
    select * from {{ ref('int_landing__ignored_by_load') }}
    where reason is not null
),

final as (
    select
        source,
        file,
        reason,
        sum(records) as records
    from counted
    group by source, file, reason
)

select * from final
