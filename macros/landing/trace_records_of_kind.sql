{#- The valid records of one kind, the start of every typed staging view. -#}
{% macro trace_records_of_kind(kind) -%}
    select * from {{ ref('stg_trace__records') }}
    where record_partition = '{{ kind }}'
{%- endmacro %}

{#- Where a record came from: kept on every typed record for lineage and deduplication. -#}
{% macro trace_record_lineage() -%}
    load_id,
    trace_msg_id,
    trace_stored_at,
    source_file,
    line_number,
    record_index
{%- endmacro %}
