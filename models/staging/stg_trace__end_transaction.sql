-- EndTransaction: the commit or rollback of a transactional message (4.9.0+, §5.2).
with

records as (
    {{ trace_records_of_kind('EndTransaction') }}
),

final as (
    select
        fields[5] as msg_id,
        fields[10] as transaction_id,
        fields[3] as producer_group,
        fields[4] as topic,
        {{ trace_text('fields[6]') }} as tags,
        {{ trace_text('fields[7]') }} as `keys`,
        fields[2] as region_id,
        fields[8] as store_host,
        cast(fields[9] as int) as message_type,
        fields[11] as transaction_state,
        fields[12] = 'true' as is_from_transaction_check,
        timestamp_millis(cast(fields[1] as bigint)) as ended_at,
        {{ trace_record_lineage() }}
    from records
)

select * from final
