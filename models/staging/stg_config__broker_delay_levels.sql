-- The delay-level strings users edit (seeds/broker_delay_levels.csv), one per broker cluster;
-- `*` is the default row. The only model that reads the seed. `broker_version` (e.g. 4.9, 5.3)
-- is optional: a seed without the column, or an empty cell, leaves it null.
{%- set seed = ref('broker_delay_levels') %}
with

seeded as (
    select * from {{ seed }}
),

final as (
    select
        broker_cluster,
        message_delay_level,
        {%- if seed_has_column(seed, 'broker_version') %}
            nullif(trim(broker_version), '') as broker_version
        {%- else %}
            cast(null as string) as broker_version
        {%- endif %}
    from seeded
)

select * from final
