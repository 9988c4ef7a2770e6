-- Pub: one per send (§5.2). 13 fields: no offsetMsgId; 15 fields (4.8.0): plus clientHost.
with

records as (
    {{ trace_records_of_kind('Pub') }}
),

final as (
    select
        fields[5] as msg_id,
        case when field_count >= 14 then fields[12] end as offset_msg_id,
        fields[3] as producer_group,
        fields[4] as topic,
        {{ trace_text('fields[6]') }} as tags,
        {{ trace_text('fields[7]') }} as `keys`,
        fields[2] as region_id,
        fields[8] as store_host,
        case when field_count >= 15 then fields[14] end as client_host,
        cast(fields[11] as int) as message_type,
        cast(fields[9] as int) as body_length,
        cast(fields[10] as bigint) as cost_ms,
        (case when field_count >= 14 then fields[13] else fields[12] end) = 'true' as is_success,
        timestamp_millis(cast(fields[1] as bigint)) as published_at,
        {{ trace_record_lineage() }}
    from records
)

select * from final
