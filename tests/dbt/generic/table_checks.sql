-- noqa: disable=LT02
{#- (The noqa above: sqlfluff asks for contradictory indents around the Jinja that lists the
    checks.) A table's row and key checks in one scan: every row has a value in each `not_null`
    column; each column of `accepted_values` (a mapping of column to values) holds one of its
    values or null, as dbt's accepted_values; each of `expressions` (boolean SQL) is true; and
    each of `unique_keys` (lists of columns; nulls compare equal, as in a group by) identifies at
    most one row. One test per check scanned the table once per check: on a mart of hundreds of
    hour partitions each scan costs about a second before it reads a row. A failing row names
    what failed in `failed_checks`; a duplicated key returns each of its rows. -#}
{% test table_checks(model, not_null=[], accepted_values={}, expressions=[], unique_keys=[]) %}

{%- set checks = [] -%}
{%- for column in not_null -%}
    {%- do checks.append("case when " ~ column ~ " is null then '" ~ column ~ " is null' end") -%}
{%- endfor -%}
{%- for column, values in accepted_values.items() -%}
    {%- set listed = "'" ~ (values | join("', '")) ~ "'" -%}
    {%- do checks.append("case when " ~ column ~ " not in (" ~ listed ~ ") then concat('"
        ~ column ~ " = ', " ~ column ~ ", ' is not accepted') end") -%}
{%- endfor -%}
{%- for expression in expressions -%}
    {%- set quoted = expression | replace("\\", "\\\\") | replace("'", "\\'") -%}
    {%- do checks.append("case when not coalesce(" ~ expression ~ ", false) then 'not ("
        ~ quoted ~ ")' end") -%}
{%- endfor -%}
{%- for key in unique_keys -%}
    {%- do checks.append("case when rows_with_key_" ~ loop.index ~ " > 1 then concat('("
        ~ (key | join(", ")) ~ ") on ', rows_with_key_" ~ loop.index ~ ", ' rows') end") -%}
{%- endfor %}

with

counted as (
    select
        *
        {%- for key in unique_keys %},
        count(*) over (partition by {{ key | join(', ') }}) as rows_with_key_{{ loop.index }}
        {%- endfor %}
    from {{ model }}
),

checked as (
    select
        *,
        concat_ws('; ', {{ checks | join(', ') }}) as failed_checks
    from counted
)

select * from checked
where failed_checks <> ''

{% endtest %}
