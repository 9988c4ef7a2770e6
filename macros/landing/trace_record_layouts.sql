{#- The trace record layouts of every client version (spec §5.2, §5.3): which field counts a
    record kind may have and which fields must be numbers. Returns the reason a record is
    rejected, or null. Field indexes are 0-based, as in the spec. -#}
{% macro trace_record_error(kind, field_count, fields) -%}
    {%- set layouts = {
        'Pub': {'counts': [13, 14, 15], 'numbers': [1, 9, 10, 11]},
        'SubBefore': {'counts': [8, 9], 'numbers': [1, 6]},
        'SubAfter': {'counts': [7, 9], 'numbers': [3, 6]},
        'EndTransaction': {'counts': [13], 'numbers': [1, 9]},
        'Recall': {'counts': [7], 'numbers': [1]},
    } -%}
    {%- set checks = [] -%}
    {%- for name, layout in layouts.items() -%}
        {%- do checks.append((
            kind ~ " = '" ~ name ~ "' and " ~ field_count ~ " not in (" ~ layout.counts | join(", ") ~ ")",
            "'" ~ name ~ " record with ' || " ~ field_count ~ " || ' fields (expected "
                ~ layout.counts | join(" or ") ~ ")'"
        )) -%}
        {%- for index in layout.numbers -%}
            {%- do checks.append((
                kind ~ " = '" ~ name ~ "' and not coalesce(" ~ fields ~ "[" ~ index ~ "] rlike '^-?[0-9]+$', false)",
                "'" ~ name ~ " field " ~ index ~ " is not a number: ' || coalesce(" ~ fields ~ "[" ~ index ~ "], 'null')"
            )) -%}
        {%- endfor -%}
    {%- endfor -%}
    {#- SubAfter's 9-field layout adds a timestamp at [7] (4.8.0, 4.9.2+). -#}
    {%- do checks.append((
        kind ~ " = 'SubAfter' and " ~ field_count ~ " = 9 and not coalesce(" ~ fields ~ "[7] rlike '^-?[0-9]+$', false)",
        "'SubAfter field 7 is not a number: ' || " ~ fields ~ "[7]"
    )) -%}
    case
        when {{ kind }} is null or {{ kind }} = '' then 'empty trace record'
    {%- for condition, reason in checks %}
            when {{ condition }} then {{ reason }}
    {%- endfor %}
        when {{ kind }} not in ('{{ layouts.keys() | join("', '") }}')
            then 'unknown trace record kind: ' || left({{ kind }}, 40)
    end
{%- endmacro %}
