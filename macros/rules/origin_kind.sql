{#- What kind of copy a Pub record's offset id names, from its MessageType ordinal (spec §5.1):
    Normal_Msg 0 and 5.x Order_Msg 4 are stored where consumers read them (NORMAL); a
    Trans_Msg_Half 1 is the half message, committed later as a new copy (TRANSACTIONAL); a
    Delay_Msg 3 waits in SCHEDULE_TOPIC_XXXX and is re-put into its topic as a new copy
    (DELAYED, §2.4). -#}
{% macro origin_kind(message_type) -%}
    case
        when {{ message_type }} in (1, 2) then 'TRANSACTIONAL'
        when {{ message_type }} = 3 then 'DELAYED'
        else 'NORMAL'
    end
{%- endmacro %}
