{{ config(tags=['whatif']) }}
-- The what-if scenarios' group settings (seeds/whatif_consumer_groups.csv): one row per
-- scenario and group it changes; an empty cell keeps the group's observed setting.
with

seeded as (
    select * from {{ ref('whatif_consumer_groups') }}
),

final as (
    select
        scenario,
        consumer_group,
        max_reconsume_times,
        retry_max_times,
        nullif(group_retry_policy, '') as group_retry_policy,
        nullif(replay_model, '') as replay_model
    from seeded
)

select * from final
