-- Recall: a producer withdrew a delayed message (5.3.2+, §5.2).
with

records as (
    select * from {{ ref('stg_trace__records') }}
    where record_kind = 'Recall' and record_error is null
),

final as (
    select
        fields[5] as msg_id,
        fields[3] as producer_group,
        fields[4] as topic,
        fields[2] as region_id,
        fields[6] = 'true' as is_success,
        timestamp_millis(cast(fields[1] as bigint)) as recalled_at,
        load_id,
        trace_msg_id,
        trace_stored_at,
        source_file,
        line_number,
        record_index
    from records
)

select * from final
