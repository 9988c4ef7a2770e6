-- SubAfter: the result of a consume request, per message (§5.2). The 7-field layout of some
-- client versions has no timestamp and no group.
with

records as (
    {{ trace_records_of_kind('SubAfter') }}
),

final as (
    select
        case when field_count >= 9 then fields[8] end as consumer_group,
        fields[2] as msg_id,
        fields[1] as request_id,
        cast(fields[3] as bigint) as cost_ms,
        fields[4] = 'true' as is_success,
        cast(fields[6] as int) as context_code,
        {{ trace_text('fields[5]') }} as `keys`,
        field_count,
        case
            when field_count >= 9 then timestamp_millis(cast(fields[7] as bigint))
        end as consume_ended_at,
        {{ trace_record_lineage() }}
    from records
)

select * from final
