{#- The trace encoder appends a missing tag or key as the literal text `null` (§5.2). -#}
{% macro trace_text(field) -%}
    nullif(nullif({{ field }}, 'null'), '')
{%- endmacro %}
