-- noqa: disable=LT02
{#- (The noqa above: sqlfluff asks for contradictory indents around the Jinja that lists the
    checks.) Every row has a value in each `not_null` column, and each column of
    `accepted_values` (a mapping of column to values) holds one of its values or null, as dbt's
    accepted_values. One scan of the model checks them all, where one test per column scanned
    the model once per column: on a mart of hundreds of hour partitions each scan costs about a
    second before it reads a row. A failing row names what failed in `failed_checks`. -#}
{% test valid_column_values(model, not_null=[], accepted_values={}) %}

{%- set checks = [] -%}
{%- for column in not_null -%}
    {%- do checks.append("case when " ~ column ~ " is null then '" ~ column ~ " is null' end") -%}
{%- endfor -%}
{%- for column, values in accepted_values.items() -%}
    {%- set listed = "'" ~ (values | join("', '")) ~ "'" -%}
    {%- do checks.append("case when " ~ column ~ " not in (" ~ listed ~ ") then concat('"
        ~ column ~ " = ', " ~ column ~ ", ' is not accepted') end") -%}
{%- endfor %}

with

checked as (
    select
        *,
        concat_ws('; ', {{ checks | join(', ') }}) as failed_checks
    from {{ model }}
)

select * from checked
where failed_checks <> ''

{% endtest %}
