{{ config(materialized='table') }}
-- The delay-level table of each broker cluster (spec §2.3), through the one macro that parses a
-- delay string. A table: a view cannot call the session's Python UDF.
with

configured as (
    select * from {{ ref('stg_config__broker_delay_levels') }}
),

final as (
    {{ delay_level_rows('configured', ['broker_cluster']) }}
)

select * from final
