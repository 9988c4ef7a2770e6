{#- Namespaces (spec §7): an instance with a namespace `ns` stores a group G as `ns%G` and a topic
    T as `ns%T` on the broker, so its `%DLQ%` topic is `%DLQ%ns%G`, and the broker's DLQ log
    names the consumerId `ns%G`. Trace records carry the names without it: the client's trace
    hook writes `NamespaceUtil.withoutNamespace` of each (ConsumeMessageTraceHookImpl). So what
    the broker shows is unwrapped here, as NamespaceUtil does, before it meets the trace. The
    three macros follow NamespaceUtil: the %RETRY% or %DLQ% prefix is set aside, and the
    namespace is what comes before the first `%` after it, when something does (a leading `%`
    names none). -#}

{#- The name without its %RETRY% or %DLQ% prefix (NamespaceUtil.withOutRetryAndDLQ). -#}
{% macro without_retry_and_dlq_prefix(resource) -%}
    case
        when startswith({{ resource }}, '%RETRY%') then substring({{ resource }}, 8)
        when startswith({{ resource }}, '%DLQ%') then substring({{ resource }}, 6)
        else {{ resource }}
    end
{%- endmacro %}

{#- The namespace a broker-side name carries, else null (NamespaceUtil.getNamespaceFromResource,
    which gives '' for none). -#}
{% macro namespace_of(resource) -%}
    case
        when instr({{ without_retry_and_dlq_prefix(resource) }}, '%') > 1
            then substring_index({{ without_retry_and_dlq_prefix(resource) }}, '%', 1)
    end
{%- endmacro %}

{#- A broker-side name as the trace writes it: `ns%G` is G, `%DLQ%ns%G` is `%DLQ%G`
    (NamespaceUtil.withoutNamespace). -#}
{% macro without_namespace(resource) -%}
    case
        when instr({{ without_retry_and_dlq_prefix(resource) }}, '%') > 1
            then concat(
                case
                    when startswith({{ resource }}, '%RETRY%') then '%RETRY%'
                    when startswith({{ resource }}, '%DLQ%') then '%DLQ%'
                    else ''
                end,
                substring(
                    {{ without_retry_and_dlq_prefix(resource) }},
                    instr({{ without_retry_and_dlq_prefix(resource) }}, '%') + 1
                )
            )
        else {{ resource }}
    end
{%- endmacro %}

{#- A name as the broker stores it in `namespace` (null: none): G is `ns%G`, `%DLQ%G` is
    `%DLQ%ns%G` (NamespaceUtil.wrapNamespace). -#}
{% macro with_namespace(namespace, resource) -%}
    case
        when {{ namespace }} is null then {{ resource }}
        when startswith({{ resource }}, '%RETRY%')
            then concat('%RETRY%', {{ namespace }}, '%', substring({{ resource }}, 8))
        when startswith({{ resource }}, '%DLQ%')
            then concat('%DLQ%', {{ namespace }}, '%', substring({{ resource }}, 6))
        else concat({{ namespace }}, '%', {{ resource }})
    end
{%- endmacro %}
