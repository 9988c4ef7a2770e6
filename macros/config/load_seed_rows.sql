-- noqa: disable=LT02
-- (the jinja templater renders these macros' bodies as loose text; dbt never emits this line)
{#- How a seed's rows are inserted. dbt-spark's own macro binds every cell as a quoted string, so
    its session connection writes an empty cell of a string column as the text 'None' (an empty
    group_retry_policy became 'None' in consumer_groups). Here each cell is an SQL literal, and
    an empty cell is null, whatever the connection. -#}
{% macro spark__load_csv_rows(model, agate_table) %}
    {%- set column_override = model['config'].get('column_types', {}) -%}
    {%- set types = [] -%}
    {%- for column_name in agate_table.column_names -%}
        {%- do types.append(column_override.get(
            column_name, adapter.convert_type(agate_table, loop.index0))) -%}
    {%- endfor -%}
    {%- set statements = [] -%}
    {%- for chunk in agate_table.rows | batch(get_batch_size()) -%}
        {%- set sql -%}
            insert into {{ this.render() }} values
            {% for row in chunk -%}
                (
                {%- for value in row -%}
                    cast({{ seed_cell_literal(value) }} as {{ types[loop.index0] }})
                    {%- if not loop.last %}, {% endif -%}
                {%- endfor -%}
                ){%- if not loop.last %},{% endif %}
            {% endfor %}
        {%- endset -%}
        {%- do adapter.add_query(sql, abridge_sql_log=True) -%}
        {%- if loop.index0 == 0 -%}
            {%- do statements.append(sql) -%}
        {%- endif -%}
    {%- endfor -%}
    {%- do return(statements[0] if statements else '') -%}
{% endmacro %}

{#- One seed cell as an SQL literal: null when empty, a number or boolean as itself, anything
    else as a quoted string. -#}
{%- macro seed_cell_literal(value) -%}
    {%- set is_boolean = value is sameas true or value is sameas false -%}
    {{- 'null' if value is none
        else ('true' if value else 'false') if is_boolean
        else value | string if value is number
        else sql_string(value | string) -}}
{%- endmacro %}
