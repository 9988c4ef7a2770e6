{#- OTLP/JSON as the OpenTelemetry Collector's file exporter writes it (observability note §4):
    lowerCamelCase keys, ids as hex strings, 64-bit integers (times, intValue) as decimal strings,
    enums as integers (or, from some exporters, their names). Unknown fields are ignored. -#}

{#- An AnyValue, one level of arrays deep: enough for every attribute retrylake reads (the
    message keys are an array of strings). -#}
{% macro otlp_any_value_type() -%}
    struct<stringValue: string, intValue: string, boolValue: boolean, doubleValue: double,
        arrayValue: struct<`values`: array<struct<stringValue: string, intValue: string,
            boolValue: boolean, doubleValue: double>>>>
{%- endmacro %}

{% macro otlp_attributes_type() -%}
    array<struct<key: string, value: {{ otlp_any_value_type() }}>>
{%- endmacro %}

{% macro otlp_scope_spans_type() -%}
    array<struct<scope: struct<name: string, version: string>,
        spans: array<struct<traceId: string, spanId: string, parentSpanId: string,
            name: string, kind: string, startTimeUnixNano: string, endTimeUnixNano: string,
            attributes: {{ otlp_attributes_type() }},
            events: array<struct<name: string, timeUnixNano: string,
                attributes: {{ otlp_attributes_type() }}>>,
            status: struct<code: string, message: string>>>>>
{%- endmacro %}

{#- One landed line: `{"resourceSpans": [...]}`, or a bare ResourceSpans object (the older
    logging exporter's lines), told apart by their top-level keys. -#}
{% macro otlp_line_schema() -%}
    resourceSpans array<struct<resource: struct<attributes: {{ otlp_attributes_type() }}>,
        scopeSpans: {{ otlp_scope_spans_type() }}>>,
    resource struct<attributes: {{ otlp_attributes_type() }}>,
    scopeSpans {{ otlp_scope_spans_type() }},
    _corrupt_record string
{%- endmacro %}

{#- An AnyValue as text: a scalar as written, an array's scalars joined by spaces (as RocketMQ's
    KEYS property joins keys). -#}
{% macro otlp_value_text(value) -%}
    coalesce(
        {{ value }}.stringValue,
        {{ value }}.intValue,
        cast({{ value }}.boolValue as string),
        cast({{ value }}.doubleValue as string),
        array_join(
            transform(
                {{ value }}.arrayValue['values'],
                element -> coalesce(
                    element.stringValue,
                    element.intValue,
                    cast(element.boolValue as string),
                    cast(element.doubleValue as string)
                )
            ),
            ' '
        )
    )
{%- endmacro %}

{#- An OTLP attribute list as (key, text) pairs, for `otlp_attribute` to look up: each value's
    text is made once, not once per field of it per lookup. -#}
{% macro otlp_attribute_texts(attributes) -%}
    transform(
        {{ attributes }},
        attribute -> named_struct(
            'key', attribute.key, 'text', {{ otlp_value_text('attribute.value') }}
        )
    )
{%- endmacro %}

{#- The text of the first of `keys` (names in order of preference: a renamed attribute's new
    name first) present in `attribute_texts` (`otlp_attribute_texts` of an attribute list). A
    list lookup rather than a map, so a repeated key cannot fail the build. -#}
{% macro otlp_attribute(attribute_texts, keys) -%}
    coalesce(
    {%- for key in keys %}
        {{ "try_element_at(filter(%s, attribute -> attribute.key = '%s'), 1).text"
            % (attribute_texts, key) }}{{ "," if not loop.last }}
    {%- endfor %}
    )
{%- endmacro %}

{#- A time in Unix nanoseconds (a decimal string) as a timestamp; microseconds are kept. -#}
{% macro otlp_time(nanos) -%}
    timestamp_micros(cast({{ nanos }} as bigint) div 1000)
{%- endmacro %}
