{{ config(materialized='view') }}

-- Every landing line or trace record that could not be used, with the reason. Together with the
-- parsed lines it accounts for every line that landed.
with

lines as (
    select * from {{ ref('stg_landing__trace_lines') }}
),

records as (
    select * from {{ ref('stg_trace__records') }}
),

rejected_lines as (
    select
        'trace' as source,
        source_file as file,
        line_number as line,
        cast(null as int) as record_index,
        raw_text,
        line_error as reason
    from lines
    where line_error is not null
),

rejected_records as (
    select
        'trace' as source,
        source_file as file,
        line_number as line,
        record_index,
        raw_text,
        record_error as reason
    from records
    where record_error is not null
),

final as (
    select * from rejected_lines
    union all
    select * from rejected_records
)

select * from final
