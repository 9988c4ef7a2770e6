-- Per consumer group: how far the DLQ the rules predict from the trace and the DLQ the exports
-- show agree, what each group's dead-letter copies say its real maxReconsumeTimes is, and which
-- group consumes its DLQ to recover messages. The one-sided dead letters themselves, each with
-- its reason, are the rows of dlq_messages whose evidence is not BOTH.
with

dead_letters as (
    select * from {{ ref('dlq_messages') }}
),

consumer_groups as (
    select * from {{ ref('int_consumer_group_settings') }}
),

per_group as (
    select
        consumer_group,
        min(dlq_topic) as dlq_topic,
        -- more than one: instances in several namespaces share the group's name (spec §7), and
        -- the trace, which names groups without theirs, cannot tell their deliveries apart
        count(distinct dlq_topic) as dlq_topic_count,
        count(*) as dead_letters,
        count_if(evidence in ('PREDICTED', 'BOTH')) as predicted,
        count_if(evidence in ('OBSERVED', 'BOTH')) as observed,
        count_if(evidence = 'BOTH') as predicted_and_observed,
        count_if(evidence = 'PREDICTED') as predicted_only,
        count_if(evidence = 'OBSERVED') as observed_only,
        count_if(recovered_at is not null) as recovered,
        min(observed_stored_at) as export_first_stored_at,
        max(observed_stored_at) as export_last_stored_at,
        min(recovery_consumer_group) as recovery_consumer_group,
        max(implied_max_reconsume_times) as implied_max_reconsume_times,
        count_if(observed_reconsume_times is not null and max_reconsume_drift) > 0
            as max_reconsume_drift
    from dead_letters
    group by consumer_group
),

final as (
    select
        per_group.consumer_group,
        per_group.dlq_topic,
        per_group.dlq_topic_count,
        per_group.dead_letters,
        per_group.predicted,
        per_group.observed,
        per_group.predicted_and_observed,
        per_group.predicted_only,
        per_group.observed_only,
        per_group.predicted_and_observed / per_group.dead_letters as agreement_rate,
        per_group.recovered,
        per_group.export_first_stored_at,
        per_group.export_last_stored_at,
        consumer_groups.effective_max_reconsume_times,
        per_group.implied_max_reconsume_times,
        per_group.max_reconsume_drift,
        per_group.recovery_consumer_group
    from per_group
    left join consumer_groups
        on per_group.consumer_group = consumer_groups.consumer_group
)

select * from final
