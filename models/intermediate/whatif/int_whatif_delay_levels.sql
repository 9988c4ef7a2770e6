{{ config(materialized='table', tags=['whatif']) }}
-- Every what-if scenario's delay table, `observed` included: each cluster's observed string
-- unless the scenario gives its own, parsed by the one macro that parses delay strings.
-- A table: a view cannot call the session's Python UDF.
with

observed as (
    select
        broker_cluster,
        message_delay_level
    from {{ ref('stg_config__broker_delay_levels') }}
),

scenario_ladders as (
    select * from {{ ref('stg_config__whatif_delay_levels') }}
),

scenario_groups as (
    select scenario from {{ ref('stg_config__whatif_consumer_groups') }}
),

scenarios as (
    select 'observed' as scenario
    union
    select scenario from scenario_ladders
    union
    select scenario from scenario_groups
),

-- A scenario keeps every cluster's observed string and adds or replaces the ones it names.
ladders as (
    select
        scenarios.scenario,
        observed.broker_cluster,
        observed.message_delay_level
    from scenarios
    cross join observed
    left anti join scenario_ladders
        on
            scenarios.scenario = scenario_ladders.scenario
            and observed.broker_cluster = scenario_ladders.broker_cluster

    union all

    select
        scenario,
        broker_cluster,
        message_delay_level
    from scenario_ladders
),

final as (
    {{ delay_level_rows('ladders', ['scenario', 'broker_cluster']) }}
)

select * from final
