{#- Marts are built in `<target>_unpublished` and published as views in the target schema itself
    (`retrylake`, the public contract) once a build passes (macros/publishing/publish_marts.sql);
    every other layer gets its own `<target>_<layer>` schema, so analysts see only the marts. -#}
{% macro generate_schema_name(custom_schema_name, node) -%}
    {%- if custom_schema_name is none -%}
        {{ target.schema }}
    {%- elif custom_schema_name == 'marts' -%}
        {{ target.schema }}_unpublished
    {%- else -%}
        {{ target.schema }}_{{ custom_schema_name | trim }}
    {%- endif -%}
{%- endmacro %}
