{#- The landing zone is a folder of files, not a table: (re)declare it as external text tables at
    the start of every run, so the `landing` source always points at the configured folder.
    `wholetext` keeps each file in one row so that staging can number its lines exactly. -#}
{% macro register_landing_sources() %}
    {%- if execute -%}
        {%- set landing = var('landing_path') | replace("'", "\\'") -%}
        {%- set schema = target.schema ~ '_landing' -%}
        {%- set statements = [
            "create database if not exists " ~ schema,
            "drop table if exists " ~ schema ~ ".trace_files",
            "create table " ~ schema ~ ".trace_files using text options (path '"
                ~ landing ~ "/trace', wholetext 'true', recursiveFileLookup 'true',"
                ~ " pathGlobFilter '*.{jsonl,jsonl.gz}')",
        ] -%}
        {%- for statement in statements -%}
            {%- do run_query(statement) -%}
        {%- endfor -%}
    {%- endif -%}
    select 1
{% endmacro %}
