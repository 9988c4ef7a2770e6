{#- A value a node reads once and leaves in the Spark session for the nodes after it in the same
    run, which read it back without a Spark job. It is kept under `key`, prefixed by the run's
    invocation id and `owner` (the relation it was read for), so that a session several runs
    share (the tests, `--watch`, `retrylake serve`) never serves one run another's. A reader
    that finds none (another session: the plain dbt CLI through the server opens one per
    thread) reads the value itself. -#}
{% macro remember_for_run(key, owner, value) %}
    {%- set text = invocation_id ~ " " ~ owner ~ " " ~ tojson(value) -%}
    {#- SET ends its value at a semicolon: such a value is not kept, and is read again. -#}
    {%- if ";" not in text -%}
        {%- do run_query("set " ~ key ~ "=" ~ text) -%}
    {%- endif -%}
{% endmacro %}

{#- What remember_for_run kept under `key` for `owner` in this run, or none. -#}
{% macro remembered_for_run(key, owner) %}
    {%- set found = run_query("set " ~ key).rows -%}
    {%- set prefix = invocation_id ~ " " ~ owner ~ " " -%}
    {%- if found and found[0][1].startswith(prefix) -%}
        {{ return(fromjson(found[0][1][prefix | length:])) }}
    {%- endif -%}
    {{ return(none) }}
{% endmacro %}
