-- noqa: disable=LT02
{#- (The noqa above: sqlfluff asks for contradictory indents around the Jinja loops.) -#}
{#- dbt's `relationships` test (every non-null value of `column_name` is a value of `field` in
    `to`), for a test between two fact marts with the same partition columns read partition by
    partition: a lifecycle's rows share its partition, so the value must be in the same
    partition of `to`. That lets it read only the partitions changed since it last passed
    (macros/testing/checked_files.sql). Between other tables it is dbt's test. Set
    `meta: {reads_changes: true}` on such a test so that a pass is recorded. -#}
{% macro default__test_relationships(model, column_name, to, field) %}

{%- set columns = fact_mart_partition_columns(model.identifier) -%}
{%- set by_partition = columns and columns == fact_mart_partition_columns(to.identifier) -%}
{%- set changed = none -%}
{%- if by_partition -%}
    {%- set changed = partitions_changed_since_pass(
        generic_check_name('relationships', model.identifier, column_name), [model, to], columns) -%}
{%- endif %}

with

child as (
    select
        {{ column_name }} as from_field
        {%- for column in columns if by_partition %},
        {{ column }}
        {%- endfor %}
    from {{ model }}
    where
        {{ column_name }} is not null
        {%- if by_partition %}
        and {{ in_partitions(changed, columns) }}
        {%- endif %}
),

parent as (
    select
        {{ field }} as to_field
        {%- for column in columns if by_partition %},
        {{ column }}
        {%- endfor %}
    from {{ to }}
    {%- if by_partition %}
    where {{ in_partitions(changed, columns) }}
    {%- endif %}
)

select child.from_field
from child
left join parent
    on
        child.from_field = parent.to_field
        {%- for column in columns if by_partition %}
        and child.{{ column }} = parent.{{ column }}
        {%- endfor %}
where parent.to_field is null

{% endmacro %}
