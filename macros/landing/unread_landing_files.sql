{#- The landing files not ingested yet: listed (without reading them) and not named in
    stg_landing__trace_lines. Called by that model on incremental runs only. -#}
{% macro unread_landing_files() %}
    {%- if not execute -%}
        {{ return([]) }}
    {%- endif -%}
    {%- set unread_query -%}
        select trace_file_list.path
        from {{ source('landing', 'trace_file_list') }} as trace_file_list
        left anti join (select distinct source_file from {{ this }}) as ingested
            on trace_file_list.path = ingested.source_file
        where trace_file_list.length > 0
    {%- endset -%}
    {{ return(run_query(unread_query).columns[0].values() | list) }}
{% endmacro %}

{#- A filter naming the files to read. Spark evaluates a filter on `_metadata.file_path` while
    it lists the files, so the others are never opened. -#}
{% macro landing_file_filter(path_column, files) -%}
    {%- if files | length == 0 -%}
        false
    {%- else -%}
        {{ path_column }} in (
        {%- for file in files -%}
            '{{ file | replace("\\", "\\\\") | replace("'", "\\'") }}'{{ "," if not loop.last }}
        {%- endfor -%}
        )
    {%- endif -%}
{%- endmacro %}

{#- A landing file that the text reader skipped (truncated or corrupt gzip) yields no line, so
    after the lines are written, every listed file with none is recorded as one line 0 with the
    reason. Found this way rather than in the model, which would read every file twice. A crash
    before this hook leaves the file unread, so the next run reads it and records it. -#}
{% macro record_unreadable_files() %}
    {%- if execute -%}
        insert into {{ this }} (
            load_id, source_file, line_number, trace_msg_id, trace_stored_at, store_host,
            trace_keys, body, line_error, raw_text
        )
        select
            (select coalesce(max(load_id), 1) from {{ this }}),
            trace_file_list.path,
            0,
            null,
            null,
            null,
            null,
            null,
            'file could not be read: truncated or corrupt',
            null
        from {{ source('landing', 'trace_file_list') }} as trace_file_list
        left anti join (select distinct source_file from {{ this }}) as ingested
            on trace_file_list.path = ingested.source_file
        where trace_file_list.length > 0
    {%- else -%}
        select 1
    {%- endif -%}
{% endmacro %}
