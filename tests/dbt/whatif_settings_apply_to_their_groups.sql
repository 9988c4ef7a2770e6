-- A what-if row sets only what its group's client line reads (docs/whatif.md): a remoting
-- group's maxReconsumeTimes, a gRPC group's retryMaxTimes and retry policy. The seed check
-- refuses the others for a group consumer_groups.csv lists; a group it does not list takes its
-- line from the data (a group seen only in 5.x spans or consume events is grpc-5), so its row
-- is checked here, where the line is known. A setting its group does not read would change
-- nothing in the replay, silently; so would a row for a group that neither the seed nor the
-- data names (a misspelt group, or one whose traffic is not in the landing yet).
{{ config(tags=['whatif']) }}

with

-- A selection of ledger models (`--select +consume_attempts`) picks this test up through the
-- settings it reads; on a lakehouse whose what-if was never built there is no row to check.
scenario_groups as (
    {%- if execute and load_relation(ref('stg_config__whatif_consumer_groups')) is none %}
        select
            cast(null as string) as scenario,
            cast(null as string) as consumer_group,
            cast(null as int) as max_reconsume_times,
            cast(null as int) as retry_max_times,
            cast(null as string) as group_retry_policy
        where false
    {%- else %}
        select * from {{ ref('stg_config__whatif_consumer_groups') }}
    {%- endif %}
),

groups as (
    select
        consumer_group,
        client_line,
        {{ is_grpc_client_line('client_line') }} as is_grpc
    from {{ ref('int_consumer_group_settings') }}
),

judged as (
    select
        scenario_groups.scenario,
        scenario_groups.consumer_group,
        groups.client_line,
        case
            when groups.consumer_group is null
                then 'every setting: no seed row and no data name this group'
            when groups.is_grpc and scenario_groups.max_reconsume_times is not null
                then 'max_reconsume_times'
            when not groups.is_grpc and scenario_groups.retry_max_times is not null
                then 'retry_max_times'
            when not groups.is_grpc and scenario_groups.group_retry_policy is not null
                then 'group_retry_policy'
        end as setting_not_read
    from scenario_groups
    left join groups
        on scenario_groups.consumer_group = groups.consumer_group
),

final as (
    select * from judged
    where setting_not_read is not null
)

select * from final
