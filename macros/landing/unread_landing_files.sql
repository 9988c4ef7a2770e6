-- noqa: disable=LT02,LT05
{#- (The noqa above: sqlfluff lays out these macros as if they were one query.) -#}
{#- The landing files of a feed not ingested yet: listed by `file_list` (a `<feed>_file_list`
    source, which reads no content) and not named in this staging table. Called by the feed's
    lines model on incremental runs only. The list is kept for the run (remember_for_run): the
    model's post-hook then reads only those files' lines. -#}
{% macro unread_landing_files(file_list) %}
    {%- if not execute or in_unit_test() -%}
        {{ return([]) }}
    {%- endif -%}
    {#- An ingested file has a line 1, or a line 0 if it could not be read: filtering on the
        number first leaves one name per file to compare rather than one per line. -#}
    {%- set unread_query -%}
        select file_list.path
        from {{ file_list }} as file_list
        left anti join (
            select distinct source_file from {{ this }} where line_number <= 1
        ) as ingested
            on file_list.path = ingested.source_file
        where file_list.length > 0
    {%- endset -%}
    {%- set unread = run_query(unread_query).columns[0].values() | list -%}
    {%- do remember_for_run(unread_files_key(file_list), this, unread) -%}
    {{ return(unread) }}
{% endmacro %}

{#- The session property that keeps a feed's unread files as this run's model found them. -#}
{% macro unread_files_key(file_list) -%}
    retrylake.unread_files.{{ file_list.identifier }}
{%- endmacro %}

{#- A landing file that the text reader skipped (truncated or corrupt gzip) yields no line, so
    after a feed's lines are written (post-hook), every file of `file_list` with none is looked
    at again: one the reader of `files` can read is empty (a gzip of nothing) and is left alone;
    one it cannot is recorded as line 0 with the reason, the table's other columns null. Found
    this way rather than in the model, which would read every file twice. A crash before this
    hook leaves the file unread, so the next run reads it and records it. The files the model
    set out to read are the only ones that can have become silent, so with their list in the
    session only their lines are looked up; else (a full refresh) every file's. -#}
{% macro record_unreadable_files(file_list, files) %}
    {%- if execute -%}
        {#- none: a full refresh (it lists no unread files), or another session -#}
        {%- set read = remembered_for_run(unread_files_key(file_list), this) -%}
        {%- if read is none -%}
            {%- set silent = unread_landing_files(file_list) -%}
        {%- elif read | length == 0 -%}
            {%- set silent = [] -%}
        {%- else -%}
            {%- set with_lines_query -%}
                select distinct source_file from {{ this }}
                where line_number <= 1 and {{ landing_file_filter('source_file', read) }}
            {%- endset -%}
            {%- set with_lines = run_query(with_lines_query).columns[0].values() | list -%}
            {%- set silent = read | reject('in', with_lines) | list -%}
        {%- endif -%}
        {%- set readable = [] -%}
        {%- if silent | length > 0 -%}
            {%- set readable_query -%}
                select distinct landing_files._metadata.file_path
                from {{ files }} as landing_files
                where {{ landing_file_filter('landing_files._metadata.file_path', silent) }}
            {%- endset -%}
            {%- set readable = run_query(readable_query).columns[0].values() | list -%}
        {%- endif -%}
        {%- set unreadable = silent | reject('in', readable) | list -%}
    {%- endif -%}
    {%- if execute and unreadable | length > 0 -%}
        {%- set recorded = {
            'load_id': '(select coalesce(max(load_id), 1) from ' ~ this ~ ')',
            'source_file': 'file_list.path',
            'line_number': '0',
            'line_error': "'file could not be read: truncated or corrupt'",
        } -%}
        {%- set columns = adapter.get_columns_in_relation(this) | map(attribute='name') | list -%}
        insert into {{ this }} ({{ columns | join(', ') }})
        select
        {%- for column in columns %}
            {{ recorded.get(column, 'null') }}{{ "," if not loop.last }}
        {%- endfor %}
        from {{ file_list }} as file_list
        where {{ landing_file_filter('file_list.path', unreadable) }}
    {%- else -%}
        select 1
    {%- endif -%}
{% endmacro %}
