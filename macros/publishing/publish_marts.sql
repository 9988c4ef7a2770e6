{#- Write, audit, publish (docs/publishing.md). dbt builds the marts in the unpublished schema
    (`<target>_unpublished`), where readers do not look, and tests them there. When a `dbt build`
    or `dbt run` ends with nothing failed or skipped, the on-run-end hook publishes it: each
    mart's files are hard-linked into a snapshot folder of the build, then `<target>.<mart>`, a
    view, is pointed at its snapshot, then DuckDB readers' manifest is switched. A failing test
    leaves the views on the last published build. -#}

{% macro unpublished_schema() -%}
    {{ return(generate_schema_name('marts', none) | trim) }}
{%- endmacro %}

{#- The tables of the models dbt_project.yml sends to the `marts` schema (an alias, if set). -#}
{% macro published_mart_names() -%}
    {%- set names = [] -%}
    {%- for node in graph.nodes.values()
        if node.resource_type == 'model' and node.config.schema == 'marts' -%}
        {%- do names.append(node.alias or node.name) -%}
    {%- endfor -%}
    {{ return(names | sort) }}
{%- endmacro %}

{% macro published_builds_kept() -%}
    {{ return(var('published_builds_kept') | int) }}
{%- endmacro %}

{% macro sql_string(value) -%}
    '{{ value | replace("\\", "\\\\") | replace("'", "\\'") }}'
{%- endmacro %}

{#- The build a published view shows, from its table property; none before the first publish. -#}
{% macro published_build_of(mart) -%}
    {%- set view = adapter.get_relation(database=none, schema=target.schema, identifier=mart) -%}
    {%- if view is none or not view.is_view -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set shown = run_query("show tblproperties " ~ view ~ " ('retrylake.published_build')") -%}
    {%- set value = shown.rows[0][-1] if shown.rows else '' -%}
    {{ return(none if 'does not have property' in value else value) }}
{%- endmacro %}

{% macro publish_marts(results) %}
    {%- if execute and flags.WHICH in ('build', 'run') -%}
        {%- set failed = [] -%}
        {%- set skipped = [] -%}
        {%- for result in results -%}
            {%- if result.status in ('error', 'fail', 'runtime error') -%}
                {%- do failed.append(result.node.name) -%}
            {%- elif result.status == 'skipped' -%}
                {%- do skipped.append(result.node.name) -%}
            {%- endif -%}
        {%- endfor -%}
        {#- A run that wrote some fact marts and not the others (a --select, or a run after one
            that stopped part way and wrote none) leaves them disagreeing until a run writes them
            all: readers keep the last whole build. -#}
        {%- set facts_built = fact_marts_built(results) -%}
        {%- set unsettled = none if facts_built or failed or skipped else unsettled_by_earlier_run() -%}
        {%- set partial = unsettled or facts_built and facts_built | length < fact_mart_names() | length -%}
        {%- if failed or skipped or partial -%}
            {%- set marts = published_mart_names() -%}
            {%- set shown = published_build_of(marts[0]) if marts else none -%}
            {%- set failures = failed | length ~ " failed: " ~ failed[:5] | join(", ")
                ~ ("..." if failed | length > 5 else "") ~ "; " ~ skipped | length ~ " skipped" -%}
            {%- set partial_run = (unsettled or "a partial run: " ~ facts_built | length ~ " of "
                ~ fact_mart_names() | length ~ " fact marts built") ~ "; the next run that builds"
                ~ " them all publishes" -%}
            {{ log("retrylake: not published ("
                ~ (failures if failed or skipped else partial_run) ~ "); readers still see "
                ~ ("build " ~ shown if shown else "no build"), info=true) }}
        {%- else -%}
            {%- do publish_build() -%}
        {%- endif -%}
    {%- endif -%}
    select 1
{% endmacro %}

{% macro publish_build() %}
    {%- set source_schema = unpublished_schema() -%}
    {%- set warehouse = run_query("set spark.sql.warehouse.dir").rows[0][1] -%}
    {%- set local = '://' not in warehouse or warehouse.startswith('file:') -%}
    {%- set folder = warehouse.replace('file://', '').replace('file:', '') ~ '/_published' -%}
    {%- set build = run_started_at.strftime('%Y%m%dT%H%M%SZ') ~ '-' ~ invocation_id[:8] -%}
    {%- set locations = {} -%}
    {%- set columns = {} -%}
    {%- for mart in published_mart_names() -%}
        {%- set relation = adapter.get_relation(
            database=none, schema=source_schema, identifier=mart) -%}
        {%- if relation is not none -%}
            {%- set described = mart_description(relation) -%}
            {%- do locations.update({mart: described.location}) -%}
            {%- do columns.update({mart: described.columns}) -%}
        {%- endif -%}
    {%- endfor -%}

    {#- 1. Snapshots, all of them before the first view changes. -#}
    {%- set files = {} -%}
    {%- if local -%}
        {%- set linked = run_query("select retrylake_snapshot_marts(" ~ sql_string(folder) ~ ", "
            ~ sql_string(build) ~ ", " ~ sql_string(tojson(locations)) ~ ")") -%}
        {%- do files.update(fromjson(linked.columns[0].values()[0])) -%}
    {%- endif -%}

    {#- 2. The views, one metastore update each: a reader sees a view before or after. -#}
    {%- do run_query("create database if not exists " ~ target.schema) -%}
    {%- set views = run_query("show views in " ~ target.schema).columns[1].values() -%}
    {%- for mart in locations -%}
        {%- if local -%}
            {%- set source = folder ~ "/" ~ build ~ "/" ~ mart -%}
            {%- set has_files = files[mart] > 0 -%}
        {%- else -%}
            {#- no snapshot on a remote warehouse: the view reads the table being built -#}
            {%- set source = source_schema ~ "." ~ mart -%}
            {%- set has_files = true -%}
        {%- endif -%}
        {%- do replace_view(target.schema, mart,
            published_view_select(source, local, columns[mart], has_files), views) -%}
        {%- do run_query("alter view " ~ target.schema ~ "." ~ mart
            ~ " set tblproperties ('retrylake.published_build' = " ~ sql_string(build) ~ ")") -%}
    {%- endfor -%}

    {#- 3. DuckDB readers' manifest, switched by one rename; old builds pruned. -#}
    {%- if local -%}
        {%- set manifest = {
            'build': build,
            'invocation_id': invocation_id,
            'dbt_command': flags.WHICH,
            'run_started_at': run_started_at.isoformat(),
            'marts': locations.keys() | list | sort,
            'columns': columns,
        } -%}
        {%- do run_query("select retrylake_point_readers_at(" ~ sql_string(folder) ~ ", "
            ~ sql_string(tojson(manifest)) ~ ", " ~ published_builds_kept() ~ ")") -%}
        {%- do run_query("create database if not exists " ~ target.schema ~ "_meta") -%}
        {%- do replace_view(target.schema ~ "_meta", "published_builds",
            "select build, cast(published_at as timestamp) as published_at,"
            ~ " cast(run_started_at as timestamp) as run_started_at, dbt_command, invocation_id,"
            ~ " marts, concat(" ~ sql_string(folder ~ "/") ~ ", build) as snapshot_folder"
            ~ " from json.`file:" ~ folder ~ "/manifests`") -%}
    {%- endif -%}
    {{ log("retrylake: published build " ~ build ~ ": " ~ locations | length ~ " marts"
        ~ (", " ~ files.values() | sum ~ " files linked" if local
           else " (views over " ~ source_schema ~ ": the warehouse is not local)"), info=true) }}
{% endmacro %}

{#- A table's location and its columns (name, type) as `describe formatted` prints them. -#}
{% macro mart_description(relation) %}
    {%- set rows = run_query("describe formatted " ~ relation).rows -%}
    {%- set columns = [] -%}
    {%- set state = {'in_columns': true, 'location': none} -%}
    {%- for row in rows -%}
        {%- set name = (row[0] or '') | trim -%}
        {%- if name == '' or name.startswith('#') -%}
            {%- do state.update({'in_columns': false}) -%}
        {%- elif state.in_columns -%}
            {%- do columns.append((name, row[1] | trim)) -%}
        {%- elif name == 'Location' -%}
            {%- do state.update({'location': row[1] | trim}) -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return({'location': state.location, 'columns': columns}) }}
{% endmacro %}

{#- Point the view `schema.name` at `select_sql`. Spark's `create or replace view` drops the
    view and creates it again, so a reader in another process can find no view in between;
    `alter view ... as` is one metastore update. A table of that name (a mart of a lakehouse
    built before publishing) is dropped first. `views`: the schema's views, if the caller
    listed them already (once for all the marts). -#}
{% macro replace_view(schema, name, select_sql, views=none) %}
    {%- if views is none -%}
        {%- set views = run_query("show views in " ~ schema).columns[1].values() -%}
    {%- endif -%}
    {%- if name in views -%}
        {%- do run_query("alter view " ~ schema ~ "." ~ name ~ " as " ~ select_sql) -%}
    {%- else -%}
        {%- do run_query("drop table if exists " ~ schema ~ "." ~ name) -%}
        {%- do run_query("create view " ~ schema ~ "." ~ name ~ " as " ~ select_sql) -%}
    {%- endif -%}
{% endmacro %}

{#- A mart's reader view with the mart's own column types: Spark infers partition columns'
    types from folder names (`lifecycle_hour=5` is an int), so every column is cast. Spark
    cannot infer a schema from an empty folder, so an empty mart is a typed view of no rows. -#}
{% macro published_view_select(source, is_snapshot, columns, has_files) -%}
    select
    {%- for name, data_type in columns %}
        {{ ("cast(null as " ~ data_type ~ ")") if not has_files else ("cast(`" ~ name ~ "` as "
            ~ data_type ~ ")") }} as `{{ name }}`{{ "," if not loop.last }}
    {%- endfor %}
    {%- if not has_files %}
    where false
    {%- elif is_snapshot %}
    from parquet.`file:{{ source }}`
    {%- else %}
    from {{ source }}
    {%- endif %}
{%- endmacro %}
