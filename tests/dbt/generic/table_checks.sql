-- noqa: disable=LT02
{#- (The noqa above: sqlfluff asks for contradictory indents around the Jinja that lists the
    checks.) A table's row and key checks in one scan: every row has a value in each `not_null`
    column; each column of `accepted_values` (a mapping of column to values) holds one of its
    values or null, as dbt's accepted_values; each of `expressions` (boolean SQL) is true; and
    each of `unique_keys` (lists of columns; nulls compare equal, as in a group by) identifies at
    most one row. One test per check scanned the table once per check: on a mart of hundreds of
    hour partitions each scan costs about a second before it reads a row. A failing row names
    what failed in `failed_checks`; a duplicated key returns each of its rows. On a fact mart
    the rows read are those of the partitions changed since the test last passed (none: all of
    them; macros/testing/checked_files.sql), and each of their keys is still counted over the
    whole table, in one scan of the other partitions for all the keys: they must share a
    column, which picks the rows read there. -#}
{% test table_checks(model, not_null=[], accepted_values={}, expressions=[], unique_keys=[]) %}
{{ config(meta={'reads_changes': true}) }}

{%- set partition_columns = fact_mart_partition_columns(model.identifier) -%}
{%- set changed = none -%}
{%- if partition_columns -%}
    {%- set changed = partitions_changed_since_pass(
        generic_check_name('table_checks', model.identifier), [model], partition_columns) -%}
{%- endif -%}

{#- the columns of any key, and those in every key -#}
{%- set key_columns = [] -%}
{%- for key in unique_keys -%}
    {%- for column in key if column not in key_columns -%}
        {%- do key_columns.append(column) -%}
    {%- endfor -%}
{%- endfor -%}
{%- set shared_columns = [] -%}
{%- for column in key_columns -%}
    {%- set keys_with_column = [] -%}
    {%- for key in unique_keys if column in key -%}
        {%- do keys_with_column.append(key) -%}
    {%- endfor -%}
    {%- if keys_with_column | length == unique_keys | length -%}
        {%- do shared_columns.append(column) -%}
    {%- endif -%}
{%- endfor -%}
{%- if partition_columns and key_columns and not shared_columns -%}
    {{ exceptions.raise_compiler_error("table_checks on " ~ model.identifier
        ~ ": the unique_keys " ~ unique_keys ~ " share no column; a fact mart's keys must") }}
{%- endif -%}

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

{% if changed is none -%}
counted as (
    select
        *
        {%- for key in unique_keys %},
        count(*) over (partition by {{ key | join(', ') }}) as rows_with_key_{{ loop.index }}
        {%- endfor %}
    from {{ model }}
),
{%- else -%}
changed_rows as (
    select * from {{ model }}
    where {{ in_partitions(changed, partition_columns) }}
),
{%- if key_columns %}

-- the key values of the rows outside the changed partitions that share the keys' common
-- columns with a changed row: one scan of the table serves every key
unchanged_key_values as (
    select
        {{ key_columns | join(', ') }},
        count(*) as unchanged_rows
    from {{ model }} as unchanged
    left semi join changed_rows
        on {% for column in shared_columns %}unchanged.{{ column }} <=> changed_rows.{{ column }}{{ " and " if not loop.last }}{% endfor %}
    where not {{ in_partitions(changed, partition_columns, 'unchanged.') }}
    group by {{ key_columns | join(', ') }}
),
{%- endif %}
{%- for key in unique_keys %}

unchanged_rows_with_key_{{ loop.index }} as (
    select
        {{ key | join(', ') }},
        sum(unchanged_rows) as unchanged_rows
    from unchanged_key_values
    group by {{ key | join(', ') }}
),
{%- endfor %}

counted as (
    select
        changed_rows.*
        {%- for key in unique_keys %},
        count(*) over (partition by {% for column in key %}changed_rows.{{ column }}{{ ", " if not loop.last }}{% endfor %})
        + coalesce(unchanged_rows_with_key_{{ loop.index }}.unchanged_rows, 0) as rows_with_key_{{ loop.index }}
        {%- endfor %}
    from changed_rows
    {%- for key in unique_keys %}
    {%- set outer = loop %}
    left join unchanged_rows_with_key_{{ outer.index }}
        on {% for column in key %}changed_rows.{{ column }} <=> unchanged_rows_with_key_{{ outer.index }}.{{ column }}{{ " and " if not loop.last }}{% endfor %}
    {%- endfor %}
),
{%- endif %}

checked as (
    select
        *,
        concat_ws('; ', {{ checks | join(', ') }}) as failed_checks
    from counted
)

select * from checked
where failed_checks <> ''

{% endtest %}
