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
        if(file_is_utf8, line_text, make_valid_utf8(line_bytes)) as line_text,
        {{ unreadable_line_error('line_bytes', 'file_is_utf8') }} as line_read_error
    from (
        select
            *,
            if(file_is_utf8, line_text, cast(encode(line_text, 'ISO-8859-1') as string)) as line_bytes
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
                    source_file,
                    file_is_utf8,
                    -- Splitting text turns bytes that are not UTF-8 into U+FFFD, so a file that
                    -- is not valid UTF-8 is split as ISO-8859-1, one character per byte, and
                    -- each line's bytes are taken back (`line_bytes`) to be judged on their own.
                    split(
                        if(file_is_utf8, file_text, decode(cast(file_text as binary), 'ISO-8859-1')),
                        '\n'
                    ) as lines
                from (
                    select
                        -- the text source's hidden per-file column; sqlfluff cannot resolve it
                        landing_files._metadata.file_path as source_file,  -- noqa: RF01
                        landing_files.value as file_text,
                        is_valid_utf8(landing_files.value) as file_is_utf8
                    from {{ files }} as landing_files
                    {%- if new_files is not none %}
                    where {{ landing_file_filter('landing_files._metadata.file_path', new_files) }}
                    {%- endif %}
                ) as files_read
            ) as landed
                lateral view posexplode(landed.lines) numbered as line_index, line_text
        ) as numbered_lines
        where not (line_number = line_count and line_text = '')
    ) as lines_read
{%- endmacro %}

{#- Why a landed line cannot be read as text at all, or null: the checks every feed starts with.
    `line_bytes` holds the line's bytes as landed; only a file that is not valid UTF-8 as a
    whole (`file_is_utf8`) can hold a line that is not. A U+FFFD written as a character is text
    like any other. -#}
{% macro unreadable_line_error(line_bytes, file_is_utf8) -%}
    case
        when trim({{ line_bytes }}) = '' then 'empty line'
        when not {{ file_is_utf8 }} and not is_valid_utf8({{ line_bytes }})
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
