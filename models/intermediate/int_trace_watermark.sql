-- "Now" for every state that moves with time: the latest trace store time in the lakehouse,
-- never the wall clock, so a rebuild gives the same answer.
with

trace_lines as (
    select trace_stored_at from {{ ref('stg_landing__trace_lines') }}
    where line_error is null
),

final as (
    select max(trace_stored_at) as watermark_at
    from trace_lines
)

select * from final
