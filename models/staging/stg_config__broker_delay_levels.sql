-- The delay-level strings users edit (seeds/broker_delay_levels.csv), one per broker cluster;
-- `*` is the default row. The only model that reads the seed.
with

seeded as (
    select * from {{ ref('broker_delay_levels') }}
),

final as (
    select
        broker_cluster,
        message_delay_level
    from seeded
)

select * from final
