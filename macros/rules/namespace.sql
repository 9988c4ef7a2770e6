{#- Namespaces (spec §7): an instance with a namespace `ns` stores a group G as `ns%G` and a topic
    T as `ns%T` on the broker, so its `%DLQ%` topic is `%DLQ%ns%G`, and the broker's DLQ log
    names the consumerId `ns%G`. Trace records carry the names without it: the client's trace
    hook writes `NamespaceUtil.withoutNamespace` of each (ConsumeMessageTraceHookImpl). So what
    the broker shows is unwrapped here, as NamespaceUtil does, before it meets the trace. The
    macros follow NamespaceUtil: the %RETRY% or %DLQ% prefix is set aside, and the namespace is
    what comes before the first `%` after it, when something does (a leading `%` names none). -#}

{#- Each macro names its argument once (a regular expression, anchored at the start), so that
    macros given each other's output stay as short as their input, not a copy per use. -#}

{#- The name without its %RETRY% or %DLQ% prefix (NamespaceUtil.withOutRetryAndDLQ). -#}
{% macro without_retry_and_dlq_prefix(resource) -%}
    regexp_replace({{ resource }}, '^(%RETRY%|%DLQ%)', '')
{%- endmacro %}

{#- The %RETRY% or %DLQ% prefix of a name, else ''. -#}
{% macro retry_and_dlq_prefix(resource) -%}
    regexp_extract({{ resource }}, '^(%RETRY%|%DLQ%|)', 1)
{%- endmacro %}

{#- The namespace a broker-side name carries, else null (NamespaceUtil.getNamespaceFromResource,
    which gives '' for none): what comes before the first `%` after the prefix, when something
    does. -#}
{% macro namespace_of(resource) -%}
    nullif(regexp_extract({{ resource }}, '^(%RETRY%|%DLQ%|)([^%]+)%', 2), '')
{%- endmacro %}

{#- A broker-side name as the trace writes it: `ns%G` is G, `%DLQ%ns%G` is `%DLQ%G`
    (NamespaceUtil.withoutNamespace). -#}
{% macro without_namespace(resource) -%}
    regexp_replace({{ resource }}, '^(%RETRY%|%DLQ%|)[^%]+%', '$1')
{%- endmacro %}

{#- A topic a DLQ copy or DLQ log line names (RETRY_TOPIC, originalTopic) as the trace would:
    `without_namespace`, and a pop retry topic of the group (`broker_group`, the broker's name)
    loses the namespace of its topic part too: `%RETRY%ns%G_ns%T` is `%RETRY%G_T`, the name
    `pop_retry_topic` gives the trace's group and topic (KeyBuilder.buildPopRetryTopic). -#}
{% macro trace_side_topic(topic, broker_group) -%}
    {%- set topic_part_at = pop_retry_topic_part_at(topic, broker_group) -%}
    case
        when {{ namespace_of(broker_group) }} is not null and {{ topic_part_at }} > 0
            then concat(
                '%RETRY%',
                {{ without_namespace(broker_group) }},
                substring({{ topic }}, {{ topic_part_at }} - 1, 1),
                {{ without_namespace('substring(' ~ topic ~ ', ' ~ topic_part_at ~ ')') }}
            )
        else {{ without_namespace(topic) }}
    end
{%- endmacro %}

{#- A name as the broker stores it in `namespace` (null: none): G is `ns%G`, `%DLQ%G` is
    `%DLQ%ns%G` (NamespaceUtil.wrapNamespace). -#}
{% macro with_namespace(namespace, resource) -%}
    case
        when {{ namespace }} is null then {{ resource }}
        else concat(
            {{ retry_and_dlq_prefix(resource) }},
            {{ namespace }},
            '%',
            {{ without_retry_and_dlq_prefix(resource) }}
        )
    end
{%- endmacro %}
