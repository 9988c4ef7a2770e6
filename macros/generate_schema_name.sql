{#- Marts land in the target schema itself (`retrylake`), the public contract; every other layer
    gets its own `<target>_<layer>` schema so analysts see only the marts by default. -#}
{% macro generate_schema_name(custom_schema_name, node) -%}
    {%- if custom_schema_name is none or custom_schema_name == 'marts' -%}
        {{ target.schema }}
    {%- else -%}
        {{ target.schema }}_{{ custom_schema_name | trim }}
    {%- endif -%}
{%- endmacro %}
