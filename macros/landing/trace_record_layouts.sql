{#- The trace record layouts of every client version (spec §5.2, §5.3): which field counts a
    record kind may have and which fields must be numbers, within what they become. Returns the
    reason a record is rejected, or null. Field indexes are 0-based, as in the spec. -#}
{% macro trace_record_error(kind, field_count, fields) -%}
    {#- The number fields of each kind and what they become: a time in ms, an int, a bigint. -#}
    {%- set layouts = {
        'Pub': {'counts': [13, 14, 15], 'numbers': {1: 'millis', 9: 'int', 10: 'bigint', 11: 'int'}},
        'SubBefore': {'counts': [8, 9], 'numbers': {1: 'millis', 6: 'int'}},
        'SubAfter': {'counts': [7, 9], 'numbers': {3: 'bigint', 6: 'int'}},
        'EndTransaction': {'counts': [13], 'numbers': {1: 'millis', 9: 'int'}},
        'Recall': {'counts': [7], 'numbers': {1: 'millis'}},
    } -%}
    {%- set checks = [] -%}
    {%- set number_fields = [] -%}
    {%- for name, layout in layouts.items() -%}
        {%- do checks.append((
            kind ~ " = '" ~ name ~ "' and " ~ field_count ~ " not in (" ~ layout.counts | join(", ") ~ ")",
            "'" ~ name ~ " record with ' || " ~ field_count ~ " || ' fields (expected "
                ~ layout.counts | join(" or ") ~ ")'"
        )) -%}
        {%- for index, type in layout.numbers.items() -%}
            {%- do number_fields.append((kind ~ " = '" ~ name ~ "'", name, index, type)) -%}
        {%- endfor -%}
    {%- endfor -%}
    {#- SubAfter's 9-field layout adds a timestamp at [7] (4.8.0, 4.9.2+). -#}
    {%- do number_fields.append((
        kind ~ " = 'SubAfter' and " ~ field_count ~ " = 9", 'SubAfter', 7, 'millis'
    )) -%}
    {#- Each number field is written as a whole number, then within what it becomes. -#}
    {%- for applies, name, index, type in number_fields -%}
        {%- set field = fields ~ "[" ~ index ~ "]" -%}
        {%- do checks.append((
            applies ~ " and not coalesce(" ~ field ~ " rlike '^-?[0-9]+$', false)",
            "'" ~ name ~ " field " ~ index ~ " is not a number: ' || coalesce(" ~ field ~ ", 'null')"
        )) -%}
        {%- do checks.append((
            applies ~ " and not " ~ number_text_fits(field, type),
            "'" ~ name ~ " field " ~ index ~ " is out of range: ' || left(" ~ field ~ ", 40)"
        )) -%}
    {%- endfor -%}
    case
        when {{ kind }} is null or {{ kind }} = '' then 'empty trace record'
    {%- for condition, reason in checks %}
            when {{ condition }} then {{ reason }}
    {%- endfor %}
        when {{ kind }} not in ('{{ layouts.keys() | join("', '") }}')
            then 'unknown trace record kind: ' || left({{ kind }}, 40)
    end
{%- endmacro %}

{#- Whether `text`, already known to be a whole number, fits where the staging models put it
    (here rather than in a file of its own: the linter's templater reads one macro file at a time):
    `millis`, a time in ms since the epoch (at most 15 digits, the year 33658: `timestamp_millis`
    throws past about 9.2e15 whatever the ANSI setting, so one such value would fail every build
    that reads its line); `int` or `bigint`, which a cast out of range turns into null, silently,
    with ANSI off (dbt-spark turns it off). -#}
{% macro number_text_fits(text, type) -%}
    {%- if type == 'millis' -%}
        coalesce({{ text }} rlike '^-?[0-9]{1,15}$', false)
    {%- elif type in ('int', 'bigint') -%}
        (cast({{ text }} as {{ type }}) is not null)
    {%- else -%}
        {{ exceptions.raise_compiler_error("number_text_fits: unknown type " ~ type) }}
    {%- endif -%}
{%- endmacro %}

{#- A trace body with the terminator put back after each SubAfter of a CLOUD-channel client of
    4.9.5 to 4.9.8 or 5.1.4 to 5.3.0, which ends its 7 fields with U+0001 and no U+0002 (§5.3,
    a bug fixed in 5.3.1): the next record, often the next SubAfter of the same request, would
    otherwise read as more fields of it. Such a SubAfter is the only place a record kind follows
    U+0001 (a 9-field SubAfter has a timestamp there), and a consumer's trace dispatcher writes
    only SubBefore and SubAfter records, so two plain searches find the rare bodies that hold one
    (about 2.5 s on the 10x bench's 1.2 GB of bodies; `instr` over five kinds took 15 s), and
    only they are rewritten. -#}
{% macro cloud_sub_after_terminated(body) -%}
    {%- set kinds = ['Pub', 'SubBefore', 'SubAfter', 'EndTransaction', 'Recall'] -%}
    case
        when contains({{ body }}, '\u0001SubAfter\u0001') or contains({{ body }}, '\u0001SubBefore\u0001')
            then regexp_replace(
                {{ body }},
                '(?:^|(?<=[\u0001\u0002]))(SubAfter(?:\u0001[^\u0001\u0002]*){6})\u0001(?=(?:{{ kinds | join("|") }})\u0001)',
                '$1\u0002'
            )
        else {{ body }}
    end
{%- endmacro %}
