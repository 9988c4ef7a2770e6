-- SubBefore: one per message of a consume request, written when consumption starts (§5.2).
with

records as (
    select * from {{ ref('stg_trace__records') }}
    where record_kind = 'SubBefore' and record_error is null
),

final as (
    select
        fields[3] as consumer_group,
        fields[5] as msg_id,
        fields[4] as request_id,
        cast(fields[6] as int) as reconsume_times,
        {{ trace_text('fields[7]') }} as `keys`,
        fields[2] as region_id,
        case when field_count >= 9 then fields[8] end as client_host,
        timestamp_millis(cast(fields[1] as bigint)) as consume_started_at,
        load_id,
        trace_msg_id,
        trace_stored_at,
        source_file,
        line_number,
        record_index
    from records
)

select * from final
