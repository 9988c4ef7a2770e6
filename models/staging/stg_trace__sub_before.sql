-- SubBefore: one per message of a consume request, written when consumption starts (§5.2).
with

records as (
    {{ trace_records_of_kind('SubBefore') }}
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
        {{ trace_record_lineage() }}
    from records
)

select * from final
