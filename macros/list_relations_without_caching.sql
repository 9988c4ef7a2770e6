{#- How dbt lists a schema's tables and views for its relation cache, at the start of every
    run, test and build. dbt-spark runs `show table extended in <schema> like '*'`, which fetches
    and prints every table's whole description (its schema, location, statistics): about 40 ms
    a table, most of a warm `dbt test`'s first second on this project's 60-odd tables. The cache
    needs each relation's name and whether it is a view, which `show tables` and `show views`
    give for a fraction of that. Two readers want more, and get it as before:
    - relation_lacks_columns reads a fact mart's columns from its description: the fact marts
      (fact_mart_nodes) are still listed with `show table extended`, by name;
    - `dbt docs generate` reads every table's columns and statistics from the descriptions for
      its catalog: it lists as dbt-spark does.
    Rows as `show table extended` gives them: schema, name, whether temporary, description. -#}
{% macro spark__list_relations_without_caching(relation) %}
    {%- set schema = relation.schema -%}
    {%- if flags.WHICH == 'generate' -%}
        {{ return(run_query("show table extended in " ~ schema ~ " like '*'")) }}
    {%- endif -%}
    {%- set views = [] -%}
    {%- for row in run_query("show views in " ~ schema).rows -%}
        {%- do views.append(listed_relation_key(row)) -%}
    {%- endfor -%}
    {%- set facts = [] -%}
    {%- for node in fact_mart_nodes().values() if node.schema | lower == schema | lower -%}
        {%- do facts.append((node.alias or node.name) | lower) -%}
    {%- endfor -%}
    {%- set described = {} -%}
    {%- if facts -%}
        {%- for row in run_query("show table extended in " ~ schema
            ~ " like '" ~ facts | join('|') ~ "'").rows -%}
            {%- do described.update({listed_relation_key(row): row[3]}) -%}
        {%- endfor -%}
    {%- endif -%}
    {%- set rows = [] -%}
    {%- for row in run_query("show tables in " ~ schema).rows -%}
        {%- set key = listed_relation_key(row) -%}
        {%- set listed = 'Type: ' ~ ('VIEW' if key in views else 'TABLE') ~ '\n' -%}
        {%- do rows.append([row[0], row[1], row[2], described.get(key, listed)]) -%}
    {%- endfor -%}
    {{ return(rows) }}
{% endmacro %}

{#- A listed relation's schema and name, in lower case as the metastore keeps them; a temporary
    view is listed with an empty schema, in every listing. -#}
{% macro listed_relation_key(row) %}
    {{ return(((row[0] or '') ~ '.' ~ row[1]) | lower) }}
{% endmacro %}
