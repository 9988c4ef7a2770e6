-- Per what-if scenario and consumer group: what was observed and what the scenario predicts
-- (docs/whatif.md): dead letters, deliveries (the broker's and consumers' load) and how long
-- messages took to be consumed or dead-lettered.
with

lifecycles as (
    select * from {{ ref('whatif_lifecycles') }}
),

final as (
    select
        scenario,
        replay_model,
        consumer_group,
        count(*) as messages,
        count_if(observed_entered_dlq) as observed_dlq,
        count_if(predicted_entered_dlq) as predicted_dlq,
        count_if(observed_state = 'CONSUMED') as observed_consumed,
        count_if(predicted_state = 'CONSUMED') as predicted_consumed,
        sum(observed_deliveries) as observed_deliveries,
        sum(predicted_deliveries) as predicted_deliveries,
        sum(predicted_deliveries) - sum(observed_deliveries) as delivery_delta,
        {%- for measure in ['time_to_success_ms', 'time_to_dlq_ms'] %}
            {%- for side in ['observed', 'predicted'] %}
                {%- for fraction in [50, 95, 99] %}
                    percentile({{ side }}_{{ measure }}, {{ fraction / 100 }})
                        as {{ side }}_p{{ fraction }}_{{ measure }},
                {%- endfor %}
            {%- endfor %}
        {%- endfor %}
        count_if(predicted_state <> observed_state) as changed_outcomes,
        count_if(not replay_explains_observation) as unexplained_lifecycles
    from lifecycles
    group by scenario, replay_model, consumer_group
)

select * from final
