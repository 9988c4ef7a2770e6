-- Recall: a producer withdrew a delayed message (5.3.2+, §5.2).
with

records as (
    {{ trace_records_of_kind('Recall') }}
),

final as (
    select
        fields[5] as msg_id,
        fields[3] as producer_group,
        fields[4] as topic,
        fields[2] as region_id,
        fields[6] = 'true' as is_success,
        timestamp_millis(cast(fields[1] as bigint)) as recalled_at,
        {{ trace_record_lineage() }}
    from records
)

select * from final
