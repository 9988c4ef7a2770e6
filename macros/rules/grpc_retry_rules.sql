{#- The retry rules of 5.x gRPC consumers (spec §8, seed 002), each written once, beside the 4.x
    rules of retry_rules.sql. `client_line` is grpc-5 (open-source rocketmq-clients and proxy)
    or cloud-5 (the managed service's documented behaviour). Arguments are SQL expressions. -#}

{#- A client line of 5.x gRPC consumers; false for a remoting line, or none. -#}
{% macro is_grpc_client_line(client_line) -%}
    coalesce({{ client_line }} in ('grpc-5', 'cloud-5'), false)
{%- endmacro %}

{#- How long a message waits after failed delivery attempt `attempt` (1-based; reconsumeTimes +
    1, as the proxy sets it, §8.2) under the group retry policy:
    - EXPONENTIAL: min(initial * multiplier^(attempt - 1), max), the exponent clamped to 32;
    - CUSTOMIZED on grpc-5: the client indexes the list by attempt - 1, clamped to its last
      entry (§8.3), so the default list gives 1 s, 5 s, 10 s, ...;
    - CUSTOMIZED on cloud-5: the server's own indexing, reconsumeTimes + 2 clamped (§8.1), which
      gives the documented ladder of seed 002: 10 s, 30 s, 1 m, ... 2 h, then 2 h. -#}
{% macro grpc_retry_delay_ms(client_line, attempt, policy_type, delays_ms, initial_ms, max_ms,
                             multiplier) -%}
    case
        when {{ policy_type }} = 'EXPONENTIAL'
            then cast(least(
                {{ initial_ms }} * power({{ multiplier }}, least(greatest({{ attempt }} - 1, 0), 32)),
                {{ max_ms }}
            ) as bigint)
        when {{ client_line }} = 'cloud-5'
            then element_at({{ delays_ms }}, least(greatest({{ attempt }}, 1) + 2, size({{ delays_ms }})))
        else element_at({{ delays_ms }}, least(greatest({{ attempt }}, 1), size({{ delays_ms }})))
    end
{%- endmacro %}

{#- What happens to failed delivery attempt `attempt` of a gRPC consumer (§8.3, §8.5, seed 002):
    before the last attempt, a push consumer's FIFO group retries locally (LOCAL_RETRY) and every
    other group waits for the server's redelivery (RETRY); after it, the message goes to the DLQ,
    unless dead letters are off (cloud-5) or the group has no retry queue (retryQueueNums <= 0:
    the proxy's forward writes nothing), where it is discarded (DROP). -#}
{% macro grpc_retry_decision(consume_mode, consumer_kind, attempt, max_attempts,
                             dead_letter_enabled, retry_queue_nums) -%}
    case
        when {{ attempt }} < {{ max_attempts }}
            then if({{ consumer_kind }} = 'PUSH' and {{ consume_mode }} = 'ORDERLY', 'LOCAL_RETRY', 'RETRY')
        when not {{ dead_letter_enabled }} or {{ retry_queue_nums }} <= 0 then 'DROP'
        else 'DLQ'
    end
{%- endmacro %}

{#- The delay a gRPC decision waits, from the failure, or null when it acts at once:
    - SimpleConsumer: the message is visible again when its invisible duration, counted from
      the receive or the last changeInvisibleDuration, runs out: the interval is that duration
      minus the processing time, and a timeout retries at once (seed 002, §8.5), so the delay
      is negative when the message was received again before the failed call returned;
    - push FIFO: a local retry after the policy's delay (grpc-5) or the fixed interval
      (cloud-5); the client forwards the last failure to the DLQ at once (§8.3);
    - push non-FIFO: the nack's invisible duration; after the last attempt the proxy forwards
      the message at the next pop, one such delay later (§8.3). -#}
{% macro grpc_decision_delay_ms(decision, client_line, consume_mode, consumer_kind, failed_at,
                                visible_again_at, policy_delay_ms, fifo_retry_interval_ms) -%}
    case
        when {{ consumer_kind }} = 'SIMPLE'
            then unix_millis({{ visible_again_at }}) - unix_millis({{ failed_at }})
        when {{ consume_mode }} = 'ORDERLY' and {{ decision }} = 'LOCAL_RETRY'
            then if({{ client_line }} = 'cloud-5', {{ fifo_retry_interval_ms }}, {{ policy_delay_ms }})
        when {{ consume_mode }} = 'ORDERLY' then null
        else {{ policy_delay_ms }}
    end
{%- endmacro %}

{#- The reconsumeTimes of the copy a gRPC decision creates: the revived retry copy counts one
    more (§8.4); the proxy forwards the copy it popped, already counted to the max, and the
    broker adds one (so r + 2, §8.3); a FIFO client forwards the broker's copy, which its local
    retries never counted (so 1); a discarded message has none. -#}
{% macro grpc_next_reconsume_times(decision, reconsume_times, consume_mode, consumer_kind) -%}
    case
        when {{ decision }} in ('RETRY', 'LOCAL_RETRY') then {{ reconsume_times }} + 1
        when {{ decision }} = 'DLQ' and {{ consumer_kind }} = 'PUSH' and {{ consume_mode }} = 'ORDERLY'
            then 1
        when {{ decision }} = 'DLQ' then {{ reconsume_times }} + 2
    end
{%- endmacro %}

{#- The pop retry topic a revived message is written to (KeyBuilder.buildPopRetryTopic, §8.4). -#}
{% macro pop_retry_topic(consumer_group, topic) -%}
    concat('%RETRY%', {{ consumer_group }}, '_', {{ topic }})
{%- endmacro %}

{#- Where the topic part of `name` begins when it is a pop retry topic of `consumer_group`:
    `%RETRY%<group>_<topic>`, or `%RETRY%<group>+<topic>` in the v2 form; else 0. -#}
{% macro pop_retry_topic_part_at(name, consumer_group) -%}
    if(
        startswith({{ name }}, concat('%RETRY%', {{ consumer_group }}, '_'))
        or startswith({{ name }}, concat('%RETRY%', {{ consumer_group }}, '+')),
        length({{ consumer_group }}) + 9,
        0
    )
{%- endmacro %}

{#- The topic a pop retry topic of `consumer_group` retries (KeyBuilder.parseNormalTopic): T of
    `%RETRY%<group>_T` or `%RETRY%<group>+T`; any other name as it is. -#}
{% macro topic_of_pop_retry_topic(retry_topic, consumer_group) -%}
    case
        when {{ pop_retry_topic_part_at(retry_topic, consumer_group) }} > 0
            then substring(
                {{ retry_topic }}, {{ pop_retry_topic_part_at(retry_topic, consumer_group) }}
            )
        else {{ retry_topic }}
    end
{%- endmacro %}

{#- Delivery attempts a 5.x group gets: maxAttempts = retryMaxTimes + 1 (§8.2). -#}
{% macro max_delivery_attempts(retry_max_times) -%}
    {{ retry_max_times }} + 1
{%- endmacro %}

{#- A group retry policy (the JSON of group metadata, §8.1) in its parts, as five select items
    named retry_policy_type, retry_policy_delays_ms, retry_policy_initial_ms, retry_policy_max_ms
    and retry_policy_multiplier (after `prefix`): a missing or empty policy is the default
    CUSTOMIZED list; a policy object left out takes its type's defaults (dbt_project.yml). -#}
{% macro retry_policy_columns(group_retry_policy, prefix='') -%}
    coalesce(get_json_object({{ group_retry_policy }}, '$.type'), 'CUSTOMIZED') as {{ prefix }}retry_policy_type,
    coalesce(
        from_json(
            get_json_object({{ group_retry_policy }}, '$.customizedRetryPolicy.next'), 'array<bigint>'
        ),
        {{ customized_retry_policy_default() }}
    ) as {{ prefix }}retry_policy_delays_ms,
    coalesce(
        cast(get_json_object({{ group_retry_policy }}, '$.exponentialRetryPolicy.initial') as bigint),
        {{ exponential_retry_policy_default('initial') }}
    ) as {{ prefix }}retry_policy_initial_ms,
    coalesce(
        cast(get_json_object({{ group_retry_policy }}, '$.exponentialRetryPolicy.max') as bigint),
        {{ exponential_retry_policy_default('max') }}
    ) as {{ prefix }}retry_policy_max_ms,
    coalesce(
        cast(get_json_object({{ group_retry_policy }}, '$.exponentialRetryPolicy.multiplier') as bigint),
        {{ exponential_retry_policy_default('multiplier') }}
    ) as {{ prefix }}retry_policy_multiplier
{%- endmacro %}
