-- noqa: disable=LT02,LT05
{#- (The noqa above: sqlfluff lays out these macros as if they were one query.) -#}
{#- The lines of a feed's landing files (`files`, a `<feed>_files` source: one row per file),
    numbered from 1 in each file: a query of (source_file, line_number, line_text,
    line_read_error), the last why the line cannot be read as text, or null. With `new_files` (a
    list of paths) only those files are read; Spark applies the filter while it lists the folder,
    so the others are never opened. One carriage return of a CRLF ending is dropped, and the
    newline that ends the last line does not start another one. -#}
{% macro landing_lines(files, new_files=none) -%}
    select
        source_file,
        line_number,
        line_text,
        {{ unreadable_line_error('line_text', 'file_is_utf8') }} as line_read_error
    from (
        select
            landed.source_file,
            landed.file_is_utf8,
            size(landed.lines) as line_count,
            numbered.line_index + 1 as line_number,
            if(
                endswith(numbered.line_text, '\r'),
                left(numbered.line_text, length(numbered.line_text) - 1),
                numbered.line_text
            ) as line_text
        from (
            select
                -- the text source's hidden per-file column; sqlfluff cannot resolve it
                landing_files._metadata.file_path as source_file,  -- noqa: RF01
                -- before the split, which turns bytes that are not UTF-8 into U+FFFD
                is_valid_utf8(landing_files.value) as file_is_utf8,
                split(landing_files.value, '\n') as lines
            from {{ files }} as landing_files
            {%- if new_files is not none %}
            where {{ landing_file_filter('landing_files._metadata.file_path', new_files) }}
            {%- endif %}
        ) as landed
            lateral view posexplode(landed.lines) numbered as line_index, line_text
    ) as numbered_lines
    where not (line_number = line_count and line_text = '')
{%- endmacro %}

{#- Why a landed line cannot be read as text at all, or null: the checks every feed starts with.
    Splitting a file into lines turns its bytes that are not UTF-8 into U+FFFD, so a U+FFFD is
    taken for them only in a file that is not valid UTF-8 (`file_is_utf8`); in a valid file it
    is a character of the text, as an exporter wrote it. -#}
{% macro unreadable_line_error(line_text, file_is_utf8) -%}
    case
        when trim({{ line_text }}) = '' then 'empty line'
        when
            not is_valid_utf8({{ line_text }})
            or (not {{ file_is_utf8 }} and instr({{ line_text }}, '\uFFFD') > 0)
            then 'line is not valid UTF-8'
    end
{%- endmacro %}

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

{#- A filter of `path_column` to `files` (none: every file). -#}
{% macro in_files(files, path_column) -%}
    {%- if files is none -%}
        true
    {%- else -%}
        {{ landing_file_filter(path_column, files) }}
    {%- endif -%}
{%- endmacro %}
