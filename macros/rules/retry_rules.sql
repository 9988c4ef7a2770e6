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

{#- The delay level a decision sends the message through the schedule topic with, or null:
    RETRY at the escalated level; an orderly DLQ send that a 4.9.x broker still delays, at
    3 + r clamped like any escalation (§1.3); nothing else is delayed. -#}
{% macro scheduled_delay_level(decision, consume_mode, client_line, reconsume_times,
                               client_delay_level, max_delay_level) -%}
    case
        when {{ decision }} = 'RETRY'
            then {{ escalated_delay_level(reconsume_times, client_delay_level, max_delay_level) }}
        when {{ decision }} = 'DLQ' and {{ orderly_dlq_is_delayed(consume_mode, client_line) }}
            then {{ escalated_delay_level(reconsume_times, '0', max_delay_level) }}
    end
{%- endmacro %}

{#- Level n waits in queue n - 1 of SCHEDULE_TOPIC_XXXX (§2.1). -#}
{% macro schedule_queue_id(delay_level) -%}
    {{ delay_level }} - 1
{%- endmacro %}

{#- Where a decision sends the message: %RETRY%<group> or %DLQ%<group> (§1.2), else null. -#}
{% macro target_topic(decision, consumer_group) -%}
    case
        when {{ decision }} = 'RETRY' then concat('%RETRY%', {{ consumer_group }})
        when {{ decision }} = 'DLQ' then {{ dlq_topic(consumer_group) }}
    end
{%- endmacro %}

{% macro dlq_topic(consumer_group) -%}
    concat('%DLQ%', {{ consumer_group }})
{%- endmacro %}

{#- The reconsumeTimes of the copy a decision creates: one more, for the retry copy (§1.2 step
    10), the local retry and the DLQ copy alike, except the DLQ copy of an orderly client of the
    4.9.x line, which sends it with RECONSUME_TIME = r (5.1.1+ sends r + 1, §3.5); a dropped
    message has no next copy. -#}
{% macro next_reconsume_times(decision, reconsume_times, consume_mode, client_line) -%}
    case
        when {{ decision }} = 'DROP' then null
        when
            {{ decision }} = 'DLQ' and {{ consume_mode }} = 'ORDERLY'
            and {{ client_line }} = 'remoting-4.9'
            then {{ reconsume_times }}
        else {{ reconsume_times }} + 1
    end
{%- endmacro %}

{#- Why a redelivery came (retry_decisions.redelivery_cause): SCHEDULED when it carries the
    next reconsumeTimes, as the decision said; DUPLICATE_DELIVERY when it carries the same or an
    earlier count (a rebalance, a crash or an offset reset delivered a stored copy again);
    UNEXPLAINED when the count jumped ahead. -#}
{% macro redelivery_cause(next_reconsume_times, observed_reconsume_times) -%}
    case
        when {{ observed_reconsume_times }} is null then null
        when {{ observed_reconsume_times }} = {{ next_reconsume_times }} then 'SCHEDULED'
        when {{ observed_reconsume_times }} < {{ next_reconsume_times }} then 'DUPLICATE_DELIVERY'
        else 'UNEXPLAINED'
    end
{%- endmacro %}

{#- Whether a lifecycle whose redelivery is due at `expected_redelivery_at` is still awaited
    (WAITING_RETRY) rather than RETRY_OVERDUE: due no earlier than `retry_overdue_grace_seconds`
    before the watermark. The grace covers schedule polling and a busy consumer's pull lag. -#}
{% macro retry_is_awaited(expected_redelivery_at, watermark_at) -%}
    {{ expected_redelivery_at }}
    >= {{ add_millis(watermark_at, '-1000 * ' ~ var('retry_overdue_grace_seconds')) }}
{%- endmacro %}

{#- A timestamp moved by a number of milliseconds (an SQL expression), exactly: interval
    arithmetic would need a literal. -#}
{% macro add_millis(ts, millis) -%}
    timestamp_millis(unix_millis({{ ts }}) + {{ millis }})
{%- endmacro %}

{#- Whether the client acked a delivery: the SubAfter's success flag, or an orderly listener's
    ROLLBACK with autoCommit on (the default), which the client treats as success though its
    SubAfter says success = false with the return code SUCCESS (§3.5). Null while in flight. -#}
{% macro delivery_is_acked(traced_success, return_type, consume_mode) -%}
    ({{ traced_success }} or ({{ consume_mode }} = 'ORDERLY' and {{ return_type }} = 'SUCCESS'))
{%- endmacro %}
