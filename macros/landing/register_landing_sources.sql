{#- The landing zone is a folder of files, not a table: (re)declare it as external tables at the
    start of every run, so the `landing` source always points at the configured folder.
    `trace_files` reads each file into one row (`wholetext`) so staging can number its lines
    exactly, and skips a file it cannot read (a truncated gzip) instead of failing the build;
    `trace_file_list` lists every file without reading it, so such a file is still accounted
    for. -#}
{% macro register_landing_sources() %}
    {%- if execute -%}
        {%- set landing = landing_path() | replace("'", "\\'") -%}
        {%- set schema = target.schema ~ '_landing' -%}
        {%- set statements = [
            "create database if not exists " ~ schema,
            "drop table if exists " ~ schema ~ ".trace_files",
            "create table " ~ schema ~ ".trace_files using text options (path '"
                ~ landing ~ "/trace', wholetext 'true', recursiveFileLookup 'true',"
                ~ " pathGlobFilter '*.{jsonl,jsonl.gz}', ignoreCorruptFiles 'true')",
            "drop table if exists " ~ schema ~ ".trace_file_list",
            "create table " ~ schema ~ ".trace_file_list using binaryFile options (path '"
                ~ landing ~ "/trace', recursiveFileLookup 'true',"
                ~ " pathGlobFilter '*.{jsonl,jsonl.gz}')",
        ] -%}
        {%- for statement in statements -%}
            {%- do run_query(statement) -%}
        {%- endfor -%}
    {%- endif -%}
    select 1
{% endmacro %}

{#- The landing folder: `var('landing_path')` (set by `retrylake build` and by $RETRYLAKE_LANDING),
    else the one the server was started on (`retrylake serve` sets it in its shared session). -#}
{% macro landing_path() %}
    {%- set configured = var('landing_path', '') -%}
    {%- if configured -%}
        {{- return(configured) -}}
    {%- endif -%}
    {%- set answer = run_query("set retrylake.landing_path") -%}
    {%- set served = answer.rows[0][1] if answer.rows else '<undefined>' -%}
    {%- if served in ('', '<undefined>') -%}
        {{- exceptions.raise_compiler_error(
            "retrylake: no landing folder. Pass --vars '{landing_path: /path/to/landing}' "
            ~ "or set RETRYLAKE_LANDING, or run dbt against `retrylake serve` (--target server)."
        ) -}}
    {%- endif -%}
    {{- return(served) -}}
{% endmacro %}
