{#- The broker's retry rules (spec §11), each written once. Every model that needs a rule calls
    these macros; nothing else restates them. Arguments are SQL expressions. -#}

{#- The consumer's maxReconsumeTimes as the broker applies it: -1 means 16 for concurrent
    consumers and unlimited (null) for orderly ones (spec §3.1). -#}
{% macro effective_max_reconsume_times(max_reconsume_times, consume_mode) -%}
    case
        when {{ max_reconsume_times }} <> -1 then {{ max_reconsume_times }}
        when {{ consume_mode }} = 'ORDERLY' then cast(null as int)
        else 16
    end
{%- endmacro %}

{#- Orderly local retry waits suspendCurrentQueueTimeMillis, clamped to [10, 30000] ms (§3.5). -#}
{% macro orderly_suspend_millis(suspend_current_queue_time_millis) -%}
    least(greatest({{ suspend_current_queue_time_millis }}, 10), 30000)
{%- endmacro %}

{#- DLQ cut-off (§1.2 step 8): reconsumeTimes >= max, or the listener asked for level < 0.
    A null max (orderly, unlimited) never cuts off. -#}
{% macro reaches_dlq(reconsume_times, max_reconsume_times, client_delay_level) -%}
    (
        coalesce({{ reconsume_times }} >= {{ max_reconsume_times }}, false)
        or {{ client_delay_level }} < 0
    )
{%- endmacro %}

{#- Escalation (§1.2 step 9, §2.2): level 0 means the broker picks 3 + reconsumeTimes; a positive
    client level is used as is; either is clamped to the highest level of the broker's table. -#}
{% macro escalated_delay_level(reconsume_times, client_delay_level, max_delay_level) -%}
    least(
        case
            when {{ client_delay_level }} > 0 then {{ client_delay_level }}
            else 3 + {{ reconsume_times }}
        end,
        {{ max_delay_level }}
    )
{%- endmacro %}

{#- What happens to one failed delivery (§3.3, §3.5, §1.2, §11):
    - concurrent broadcasting: the client logs and drops it;
    - orderly (clustering or broadcasting): the client retries locally, until the max is reached,
      then sends it to the DLQ;
    - concurrent clustering: retryQueueNums <= 0 drops it at the broker, else DLQ or RETRY. -#}
{% macro retry_decision(message_model, consume_mode, retry_queue_nums, reconsume_times,
                        max_reconsume_times, client_delay_level) -%}
    case
        when {{ consume_mode }} = 'ORDERLY' then
            case
                when {{ reaches_dlq(reconsume_times, max_reconsume_times, '0') }} then 'DLQ'
                else 'LOCAL_RETRY'
            end
        when {{ message_model }} = 'BROADCASTING' then 'DROP'
        when {{ retry_queue_nums }} <= 0 then 'DROP'
        when {{ reaches_dlq(reconsume_times, max_reconsume_times, client_delay_level) }} then 'DLQ'
        else 'RETRY'
    end
{%- endmacro %}

{#- Why a message went to the DLQ, for the compensation work list. -#}
{% macro dlq_reason(client_delay_level, consume_mode) -%}
    case
        when {{ consume_mode }} <> 'ORDERLY' and {{ client_delay_level }} < 0
            then 'CLIENT_REQUESTED'
        else 'MAX_RECONSUME_EXCEEDED'
    end
{%- endmacro %}

{#- Orderly consumers reach the DLQ by sending a %RETRY% message with DELAY = 3 + r. The 4.9.x
    broker keeps that delay (§1.3 bug), so the message enters the DLQ only after that level's
    delay; 5.x forces DELAY=-1 and it enters at once. -#}
{% macro orderly_dlq_is_delayed(consume_mode, client_line) -%}
    ({{ consume_mode }} = 'ORDERLY' and {{ client_line }} = 'remoting-4.9')
{%- endmacro %}

{% macro add_millis(ts, millis) -%}
    timestamp_millis(unix_millis({{ ts }}) + {{ millis }})
{%- endmacro %}
