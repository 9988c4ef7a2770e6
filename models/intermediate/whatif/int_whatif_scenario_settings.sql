{{ config(materialized='table', tags=['whatif']) }}
-- Every consumer group's settings under every what-if scenario, `observed` included, under the
-- column names of int_consumer_group_settings, so that the rule macros read a scenario's
-- settings as they read the observed ones. A scenario changes only what it names: a group's
-- maxReconsumeTimes (4.x), retryMaxTimes and retry policy (5.x), and its cluster's delay string.
with

observed as (
    select * from {{ ref('int_consumer_group_settings') }}
),

scenario_groups as (
    select * from {{ ref('stg_config__whatif_consumer_groups') }}
),

scenario_ladders as (
    select
        scenario,
        broker_cluster
    from {{ ref('stg_config__whatif_delay_levels') }}
),

scenarios as (
    select 'observed' as scenario
    union
    select scenario from scenario_ladders
    union
    select scenario from scenario_groups
),

overridden as (
    select
        scenarios.scenario,
        observed.*,
        scenario_groups.max_reconsume_times as scenario_max_reconsume_times,
        scenario_groups.retry_max_times as scenario_retry_max_times,
        scenario_groups.group_retry_policy as scenario_group_retry_policy,
        -- empty: chosen per group by int_whatif__tries (WALL_CLOCK where it had an outage)
        scenario_groups.replay_model,
        -- the scenario's string for the group's own cluster, else the table the group used
        if(scenario_ladders.broker_cluster is null, observed.delay_cluster, observed.broker_cluster)
            as scenario_delay_cluster
    from scenarios
    cross join observed
    left join scenario_groups
        on
            scenarios.scenario = scenario_groups.scenario
            and observed.consumer_group = scenario_groups.consumer_group
    left join scenario_ladders
        on
            scenarios.scenario = scenario_ladders.scenario
            and observed.broker_cluster = scenario_ladders.broker_cluster
),

with_policies as (
    select
        *,
        {{ retry_policy_columns('scenario_group_retry_policy', prefix='scenario_') }}
    from overridden
),

final as (
    select
        with_policies.scenario,
        with_policies.consumer_group,
        with_policies.message_model,
        with_policies.consume_mode,
        coalesce(with_policies.scenario_max_reconsume_times, with_policies.max_reconsume_times)
            as max_reconsume_times,
        {{ effective_max_reconsume_times(
            'coalesce(with_policies.scenario_max_reconsume_times, with_policies.max_reconsume_times)',
            'with_policies.consume_mode'
        ) }} as effective_max_reconsume_times,
        with_policies.effective_suspend_millis,
        with_policies.retry_queue_nums,
        with_policies.delay_level_when_next_consume,
        with_policies.broker_cluster,
        with_policies.scenario_delay_cluster as delay_cluster,
        with_policies.broker_version,
        with_policies.client_line,
        coalesce(with_policies.scenario_group_retry_policy, with_policies.group_retry_policy)
            as group_retry_policy,
        {%- for part in ['type', 'delays_ms', 'initial_ms', 'max_ms', 'multiplier'] %}
            if(
                with_policies.scenario_group_retry_policy is null,
                with_policies.retry_policy_{{ part }},
                with_policies.scenario_retry_policy_{{ part }}
            ) as retry_policy_{{ part }},
        {%- endfor %}
        coalesce(with_policies.scenario_retry_max_times, with_policies.retry_max_times)
            as retry_max_times,
        {{ max_delivery_attempts(
            'coalesce(with_policies.scenario_retry_max_times, with_policies.retry_max_times)'
        ) }} as max_delivery_attempts,
        with_policies.consumer_kind,
        with_policies.dead_letter_enabled,
        with_policies.fifo_retry_interval_ms,
        with_policies.replay_model
    from with_policies
)

select * from final
