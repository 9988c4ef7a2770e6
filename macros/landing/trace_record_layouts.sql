{#- The trace record layouts of every client version (spec §5.2, §5.3): which field counts a
    record kind may have and which fields must be numbers or booleans. Returns the reason a
    record is rejected, or null. Field indexes are 0-based, as in the spec. -#}
{% macro trace_record_error(kind, field_count, fields) -%}
    {%- set layouts = {
        'Pub': {'counts': [13, 14, 15], 'numbers': [1, 9, 10, 11]},
        'SubBefore': {'counts': [8, 9], 'numbers': [1, 6]},
        'SubAfter': {'counts': [7, 9], 'numbers': [3, 6]},
        'EndTransaction': {'counts': [13], 'numbers': [1, 9]},
        'Recall': {'counts': [7], 'numbers': [1]},
    } -%}
    case
        when {{ kind }} is null or {{ kind }} = '' then 'empty trace record'
        {%- for name, layout in layouts.items() %}
        when {{ kind }} = '{{ name }}' and {{ field_count }} not in ({{ layout.counts | join(', ') }})
            then '{{ name }} record with ' || {{ field_count }}
                || ' fields (expected {{ layout.counts | join(" or ") }})'
        {%- for index in layout.numbers %}
        when {{ kind }} = '{{ name }}' and not coalesce({{ fields }}[{{ index }}] rlike '^-?[0-9]+$', false)
            then '{{ name }} field {{ index }} is not a number: ' || coalesce({{ fields }}[{{ index }}], 'null')
        {%- endfor %}
        {%- endfor %}
        when {{ kind }} = 'SubAfter' and {{ field_count }} = 9
            and not coalesce({{ fields }}[7] rlike '^-?[0-9]+$', false)
            then 'SubAfter field 7 is not a number: ' || {{ fields }}[7]
        when {{ kind }} not in ({% for name in layouts %}'{{ name }}'{{ ", " if not loop.last }}{% endfor %})
            then 'unknown trace record kind: ' || left({{ kind }}, 40)
    end
{%- endmacro %}
