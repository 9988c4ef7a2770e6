{{ config(tags=['whatif']) }}
-- The what-if scenarios' delay strings (seeds/whatif_delay_levels.csv): one per scenario and
-- broker cluster it changes; `*` changes the default row.
with

seeded as (
    select * from {{ ref('whatif_delay_levels') }}
),

final as (
    select
        scenario,
        broker_cluster,
        message_delay_level
    from seeded
)

select * from final
