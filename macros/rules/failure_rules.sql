{#- What the rules do with one failed delivery, for either client line: the 4.x macros of
    retry_rules.sql for a remoting group, the 5.x macros of grpc_retry_rules.sql for a gRPC
    group. They read a group's settings by the column names of int_consumer_group_settings,
    qualified by `settings` (a table alias and a dot, or '' for unqualified names): the ledger
    passes the observed settings, a what-if scenario its own under the same names. -#}

{#- RETRY, LOCAL_RETRY, DLQ or DROP for the delivery that failed at `reconsume_times`. -#}
{% macro failure_decision(reconsume_times, settings='') -%}
    case
        when {{ is_grpc_client_line(settings ~ 'client_line') }}
            then {{ grpc_retry_decision(
                settings ~ 'consume_mode', settings ~ 'consumer_kind', reconsume_times ~ ' + 1',
                settings ~ 'max_delivery_attempts', settings ~ 'dead_letter_enabled',
                settings ~ 'retry_queue_nums'
            ) }}
        else {{ retry_decision(
            settings ~ 'message_model', settings ~ 'consume_mode', settings ~ 'retry_queue_nums',
            reconsume_times, settings ~ 'effective_max_reconsume_times',
            settings ~ 'delay_level_when_next_consume'
        ) }}
    end
{%- endmacro %}

{#- The schedule-topic delay level of a remoting group's decision (null for a gRPC group, whose
    retries do not go through SCHEDULE_TOPIC_XXXX); `max_delay_level` is the highest level of the
    group's cluster. -#}
{% macro failure_delay_level(decision, reconsume_times, max_delay_level, settings='') -%}
    case
        when not {{ is_grpc_client_line(settings ~ 'client_line') }}
            then {{ scheduled_delay_level(
                decision, settings ~ 'consume_mode', settings ~ 'broker_version', reconsume_times,
                settings ~ 'delay_level_when_next_consume', max_delay_level
            ) }}
    end
{%- endmacro %}

{#- The reconsumeTimes of the copy the decision creates. -#}
{% macro failure_next_reconsume_times(decision, reconsume_times, settings='') -%}
    case
        when {{ is_grpc_client_line(settings ~ 'client_line') }}
            then {{ grpc_next_reconsume_times(
                decision, reconsume_times, settings ~ 'consume_mode', settings ~ 'consumer_kind'
            ) }}
        else {{ next_reconsume_times(
            decision, reconsume_times, settings ~ 'consume_mode', settings ~ 'client_line'
        ) }}
    end
{%- endmacro %}

{#- A gRPC group's retry-policy delay after the delivery that failed at `reconsume_times`
    (attempt reconsume_times + 1, §8.2); read for gRPC groups only. -#}
{% macro failure_policy_delay_ms(reconsume_times, settings='') -%}
    {{ grpc_retry_delay_ms(
        settings ~ 'client_line', reconsume_times ~ ' + 1', settings ~ 'retry_policy_type',
        settings ~ 'retry_policy_delays_ms', settings ~ 'retry_policy_initial_ms',
        settings ~ 'retry_policy_max_ms', settings ~ 'retry_policy_multiplier'
    ) }}
{%- endmacro %}

{#- How long the decision waits from the failure: a gRPC group's by its consumer kind and
    policy; a remoting group's local retry the orderly suspend time; else the delay of the
    level (`level_delay_ms`: the cluster's delay at failure_delay_level, null without one). -#}
{% macro failure_delay_ms(decision, failed_at, visible_again_at, policy_delay_ms, level_delay_ms,
                          settings='') -%}
    case
        when {{ is_grpc_client_line(settings ~ 'client_line') }}
            then {{ grpc_decision_delay_ms(
                decision, settings ~ 'client_line', settings ~ 'consume_mode',
                settings ~ 'consumer_kind', failed_at, visible_again_at, policy_delay_ms,
                settings ~ 'fifo_retry_interval_ms'
            ) }}
        when {{ decision }} = 'LOCAL_RETRY' then {{ settings ~ 'effective_suspend_millis' }}
        else {{ level_delay_ms }}
    end
{%- endmacro %}

{#- When a DLQ decision's copy enters %DLQ%: after its delay, if it has one (a 4.x broker's
    delayed orderly send, a gRPC push group's forward at the next pop), else at the failure. -#}
{% macro dlq_entry_at(decision, failed_at, delay_ms) -%}
    case
        when {{ decision }} = 'DLQ'
            then {{ add_millis(failed_at, 'coalesce(' ~ delay_ms ~ ', 0)') }}
    end
{%- endmacro %}
