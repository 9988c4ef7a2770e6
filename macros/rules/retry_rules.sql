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

{#- A broker of the 4.x line (broker_version 4.9, say); 5.x changed send-back behaviour. -#}
{% macro is_4x_broker(broker_version) -%}
    (cast(split({{ broker_version }}, '[.]')[0] as int) < 5)
{%- endmacro %}

{#- Orderly consumers reach the DLQ by sending a %RETRY% message with DELAY = 3 + r. A 4.x
    broker keeps that delay (§1.3 bug), so the message enters the DLQ only after that level's
    delay; a 5.x broker forces DELAY=-1 and it enters at once (§1.4). A broker-side rule: it
    follows the cluster's broker_version, not the client. -#}
{% macro orderly_dlq_is_delayed(consume_mode, broker_version) -%}
    ({{ consume_mode }} = 'ORDERLY' and {{ is_4x_broker(broker_version) }})
{%- endmacro %}

{#- The delay level a decision sends the message through the schedule topic with, or null:
    RETRY at the escalated level; an orderly DLQ send that a 4.9.x broker still delays, at
    3 + r clamped like any escalation (§1.3); nothing else is delayed. -#}
{% macro scheduled_delay_level(decision, consume_mode, broker_version, reconsume_times,
                               client_delay_level, max_delay_level) -%}
    case
        when {{ decision }} = 'RETRY'
            then {{ escalated_delay_level(reconsume_times, client_delay_level, max_delay_level) }}
        when {{ decision }} = 'DLQ' and {{ orderly_dlq_is_delayed(consume_mode, broker_version) }}
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

{#- The reconsumeTimes of the failed delivery that a DLQ copy storing `stored_reconsume_times`
    came from: the inverse of next_reconsume_times for a DLQ decision. -#}
{% macro failed_reconsume_times(stored_reconsume_times, consume_mode, client_line) -%}
    case
        when {{ consume_mode }} = 'ORDERLY' and {{ client_line }} = 'remoting-4.9'
            then {{ stored_reconsume_times }}
        else {{ stored_reconsume_times }} - 1
    end
{%- endmacro %}

{#- A concurrent group's DLQ copy that the client sent rather than the broker's send-back: the
    broker sets DELAY=0 on its DLQ copy (§1.2 step 8); the client's fallback sends DELAY = 3 + r
    (4.9.x) or the 5.x broker stores DELAY=-1 (§3.4, §1.6). Orderly copies are always sent by the
    client (§3.5). -#}
{% macro is_client_fallback_copy(consume_mode, delay_property) -%}
    ({{ consume_mode }} <> 'ORDERLY' and coalesce({{ delay_property }}, '0') <> '0')
{%- endmacro %}

{#- Whether the client's fallback send (§3.4), storing `stored_reconsume_times` = r + 1, goes to
    the DLQ: the broker's handleRetryAndDLQ tests `>=` on 4.x (one attempt earlier than the
    send-back's `r >= max`) and `>` on 5.x (§1.3, §1.4). A broker rule, by broker_version. -#}
{% macro fallback_reaches_dlq(stored_reconsume_times, max_reconsume_times, broker_version) -%}
    case
        when {{ is_4x_broker(broker_version) }}
            then {{ stored_reconsume_times }} >= {{ max_reconsume_times }}
        else {{ stored_reconsume_times }} > {{ max_reconsume_times }}
    end
{%- endmacro %}

{#- Whether a redelivery `gap_ms` after the previous delivery fits a delay of `delay_ms`: the
    schedule service polls every 100 ms and the consumer pulls soon after (§2.3), so it comes
    at most 2 s plus 1% of the delay late, and never more than 1 s early (clocks). -#}
{% macro redelivery_fits(gap_ms, delay_ms) -%}
    (
        {{ gap_ms }} >= {{ delay_ms }} - 1000
        and {{ gap_ms }} <= {{ delay_ms }} + 2000 + {{ delay_ms }} div 100
    )
{%- endmacro %}

{#- Why a delivery after the first came (redeliveries.redelivery_cause), the first rule that
    holds; times in ms. `previous_outcome` is FAILED, SUCCESS or IN_FLIGHT (no result yet);
    `gap_ms` runs from the previous delivery's end, `start_gap_ms` from its start;
    `expected_delay_ms` is what the rules waited after the failure (null unless they retry);
    `fallback_delay_ms` the delay of level 3 + r, which the broker's send-back (no level asked)
    and the client's fallback use; `timeout_delay_ms` the delay of level 3 (clamped to the
    table), which the expiry cleaner asks for; `nearest_level_delay_ms` the delay of the
    cluster's level closest to the gap.
    - RESENT: the message entered the DLQ before, and comes again with its count restarted (an
      operator re-sent it as a new message);
    - BROADCAST_COPY: a broadcasting group's delivery of the same or a lower count, carrying the
      lifecycle's first count, to an instance not seen in the lifecycle before
      (`broadcast_to_new_instance`): every instance receives each message (§3.3). Without the
      instance's name (only a 4.8.0 SubBefore carries one, the host's) a duplicate to the same
      instance cannot be told from it;
    - DUPLICATE_DELIVERY: the same or a lower count again (a rebalance, a crash before the
      offset commit, an offset reset);
    - UNEXPLAINED: a count more than one ahead;
    - CONSUME_TIMEOUT: r + 1 between consumeTimeout and twice that (+ level 3's delay) after
      the previous start, which took longer than consumeTimeout or is still running (§3.6);
    - PARTIAL_BATCH_ACK: r + 1 after level 3 + r from the end of a delivery traced as success:
      the listener acked the batch only up to ackIndex (§3.3);
    - SCHEDULED: the rules' delay (or later: the consumer came late);
    - LOCAL_RECONSUME: about 5 s after a failure whose send-back and fallback both failed (§3.3);
    - CLIENT_FALLBACK: level 3 + r where the rules wait another level or send to the DLQ: the
      send-back RPC failed and the client re-sent it itself, ignoring the level (§3.4);
    - LISTENER_LEVEL: another level's delay: the listener set delayLevelWhenNextConsume.
    The timeout, partial-ack, local re-consume, fallback and level paths are the remoting
    client's (`remoting_client`); a gRPC consumer's redelivery is SCHEDULED or unexplained. -#}
{% macro redelivery_cause(previous_outcome, previous_dead_lettered, previous_reconsume_times,
                          reconsume_times, gap_ms, start_gap_ms, previous_took_ms,
                          consume_timeout_ms, expected_delay_ms, fallback_delay_ms,
                          timeout_delay_ms, nearest_level_delay_ms, consume_mode,
                          remoting_client='true', broadcast_to_new_instance='false') -%}
    case
        when
            {{ previous_dead_lettered }}
            and {{ reconsume_times }} <= {{ previous_reconsume_times }}
            then 'RESENT'
        when
            {{ broadcast_to_new_instance }}
            and {{ reconsume_times }} <= {{ previous_reconsume_times }}
            then 'BROADCAST_COPY'
        when {{ reconsume_times }} <= {{ previous_reconsume_times }} then 'DUPLICATE_DELIVERY'
        when {{ reconsume_times }} > {{ previous_reconsume_times }} + 1 then 'UNEXPLAINED'
        when
            {{ remoting_client }} and {{ consume_mode }} <> 'ORDERLY'
            and coalesce({{ previous_took_ms }} >= {{ consume_timeout_ms }}, true)
            and {{ start_gap_ms }} >= {{ consume_timeout_ms }}
            and {{ start_gap_ms }} <= 2 * {{ consume_timeout_ms }} + {{ timeout_delay_ms }} + 2000
            then 'CONSUME_TIMEOUT'
        when
            {{ remoting_client }} and {{ previous_outcome }} = 'SUCCESS'
            and {{ redelivery_fits(gap_ms, fallback_delay_ms) }}
            then 'PARTIAL_BATCH_ACK'
        when {{ previous_outcome }} <> 'FAILED' then 'UNEXPLAINED'
        when {{ redelivery_fits(gap_ms, expected_delay_ms) }} then 'SCHEDULED'
        when {{ remoting_client }} and {{ consume_mode }} <> 'ORDERLY' and {{ redelivery_fits(gap_ms, 5000) }}
            then 'LOCAL_RECONSUME'
        when
            {{ remoting_client }} and {{ consume_mode }} <> 'ORDERLY'
            and {{ redelivery_fits(gap_ms, fallback_delay_ms) }}
            then 'CLIENT_FALLBACK'
        when
            {{ remoting_client }} and {{ consume_mode }} <> 'ORDERLY'
            and {{ redelivery_fits(gap_ms, nearest_level_delay_ms) }}
            then 'LISTENER_LEVEL'
        when {{ gap_ms }} > {{ expected_delay_ms }} then 'SCHEDULED'
        else 'UNEXPLAINED'
    end
{%- endmacro %}

{#- A DLQ decision that never reached the DLQ: the message came back after it through the
    client's fallback, which ignores the listener's level -1 (§3.4), or its local re-consume
    after the fallback failed too (§3.3). -#}
{% macro overturns_dlq_decision(previous_decision, redelivery_cause) -%}
    (
        {{ previous_decision }} = 'DLQ'
        and {{ redelivery_cause }} in ('CLIENT_FALLBACK', 'LOCAL_RECONSUME')
    )
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
