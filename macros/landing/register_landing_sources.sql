{#- The landing zone is a folder of files, not a table: (re)declare it as external tables at the
    start of every run, so the `landing` source always points at the configured folder. For
    each feed (landing_feeds), `<feed>_files` reads each file into one row (`wholetext`) so
    staging can number its lines exactly, and skips a file it cannot read (a truncated gzip)
    instead of failing the build; `<feed>_file_list` lists every file without reading it, so
    such a file is still accounted for. Not while dbt only compiles (`only_compiling`): the
    drop and create would race the nodes compiling beside them. -#}
{% macro register_landing_sources() %}
    {%- if execute and not only_compiling() -%}
        {%- set landing = landing_path() | replace("'", "\\'") -%}
        {%- set schema = target.schema ~ '_landing' -%}
        {%- set statements = ["create database if not exists " ~ schema] -%}
        {%- for feed, pattern in landing_feeds().items() -%}
            {%- set folder = landing ~ "/" ~ feed -%}
            {%- do statements.extend([
                "drop table if exists " ~ schema ~ "." ~ feed ~ "_files",
                "create table " ~ schema ~ "." ~ feed ~ "_files using text options (path '"
                    ~ folder ~ "', wholetext 'true', recursiveFileLookup 'true',"
                    ~ " pathGlobFilter '" ~ pattern ~ "', ignoreCorruptFiles 'true')",
                "drop table if exists " ~ schema ~ "." ~ feed ~ "_file_list",
                "create table " ~ schema ~ "." ~ feed ~ "_file_list using binaryFile options (path '"
                    ~ folder ~ "', recursiveFileLookup 'true',"
                    ~ " pathGlobFilter '" ~ pattern ~ "')",
            ]) -%}
        {%- endfor -%}
        {%- for statement in statements -%}
            {%- do run_query(statement) -%}
        {%- endfor -%}
    {%- endif -%}
    select 1
{% endmacro %}

{#- The landing zone's feeds, one folder each, and the files each reads (design.md, "Inputs"):
    the trace topic, the dead-letter topics, and the three records of 5.x gRPC consumers:
    OpenTelemetry spans, listener events and broker logs. -#}
{% macro landing_feeds() %}
    {{ return({
        'trace': '*.{jsonl,jsonl.gz}',
        'dlq': '*.{jsonl,jsonl.gz}',
        'otel': '*.{json,jsonl,json.gz,jsonl.gz}',
        'consume_events': '*.{jsonl,jsonl.gz}',
        'broker_logs': '*.{log,log.gz}',
    }) }}
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
