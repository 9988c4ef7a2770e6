-- noqa: disable=LT02,LT05
{#- (The noqa above: sqlfluff lays out these macros as if they were one query.) -#}
{#- Data tests that read only what changed since they last passed (docs/performance.md,
    "Data tests that read what changed"). Parquet files are never rewritten in place and
    landing files are immutable once landed, so a table's files (path, length, modification
    time) stand for its content. When a test passes, the on-run-end hook records the files of
    the tables it read, under the code's fingerprint (`checks_code`, which `retrylake` passes;
    the plain dbt CLI passes none and every test reads everything). The next run of the same
    test, under the same code, reads only the partitions (or landing files) whose files were
    added, removed or changed since; everything else is what it saw pass. A failed test
    records nothing, so what changed since it last passed is read again until it passes. -#}

{% macro checked_files_relation() -%}
    {{ target.schema }}_meta.checked_files
{%- endmacro %}

{#- The landing files a test saw, listed when it started: files landing while it runs are not
    recorded as checked. -#}
{% macro landing_files_seen_relation() -%}
    {{ target.schema }}_meta.landing_files_seen
{%- endmacro %}

{% macro create_checked_files() %}
    {%- if execute -%}
        {%- do run_query("create database if not exists " ~ target.schema ~ "_meta") -%}
        {%- do run_query("create table if not exists " ~ checked_files_relation()
            ~ " (path string, length bigint, modified timestamp, code string, check_name string)"
            ~ " using parquet partitioned by (check_name)") -%}
        {%- do run_query("create table if not exists " ~ landing_files_seen_relation()
            ~ " (path string, length bigint, modified timestamp) using parquet") -%}
    {%- endif -%}
    select 1
{% endmacro %}

{#- The fingerprint of the code that checks and builds, or '' (check everything). -#}
{% macro checks_code() %}
    {{ return(var('checks_code', '') | string) }}
{% endmacro %}

{#- Whether a test may read only what changed: not while parsing, in a dbt unit test, or
    without the code's fingerprint. -#}
{% macro checks_can_read_changes() %}
    {{ return(execute and not in_unit_test() and checks_code() != '') }}
{% endmacro %}

{#- The name a test's files are recorded under: a generic test by its kind, its model and its
    column (the generic tests' macros know these, not the test's name; they call
    generic_check_name), a singular test by its file. -#}
{% macro check_name(node) %}
    {%- if node.test_metadata is defined and node.test_metadata -%}
        {%- set tested = node.depends_on.nodes | select('in', graph.nodes) | list -%}
        {{ return(generic_check_name(node.test_metadata.name,
            graph.nodes[node.attached_node or tested[0]].name,
            node.test_metadata.kwargs.get('column_name'))) }}
    {%- endif -%}
    {{ return(node.name) }}
{% endmacro %}

{% macro generic_check_name(test, model_name, column_name=none) %}
    {{ return(test ~ '__' ~ model_name ~ ('__' ~ column_name if column_name else '')) }}
{% endmacro %}

{#- The storage locations of `relations` (schema.table), in their order: one `show table
    extended` per schema rather than a `describe` per table, since each statement costs a round
    trip through dbt and Spark. Names compare in lower case, as the metastore keeps them. -#}
{% macro table_locations(relations) %}
    {%- set names = relations | map('string') | map('lower') | list -%}
    {%- set tables_by_schema = {} -%}
    {%- for name in names -%}
        {%- set schema, table = name.split('.') -%}
        {%- do tables_by_schema.setdefault(schema, []).append(table) -%}
    {%- endfor -%}
    {%- set locations = {} -%}
    {%- for schema, tables in tables_by_schema.items() -%}
        {%- for row in run_query("show table extended in " ~ schema
            ~ " like '" ~ tables | join('|') ~ "'").rows if (row[0] or '') | lower == schema -%}
            {%- for line in row[3].split('\n') if line.startswith('Location: ') -%}
                {%- do locations.update({schema ~ '.' ~ row[1] | lower: line[10:]}) -%}
            {%- endfor -%}
        {%- endfor -%}
    {%- endfor -%}
    {%- set ordered = [] -%}
    {%- for name in names -%}
        {%- if name not in locations -%}
            {{ exceptions.raise_compiler_error("retrylake: no location for " ~ name) }}
        {%- endif -%}
        {%- do ordered.append(locations[name]) -%}
    {%- endfor -%}
    {{ return(ordered) }}
{% endmacro %}

{#- The data files under table `locations` as (path, length, modified); listed, not read. -#}
{% macro files_at(locations) -%}
    {%- for location in locations %}
        select path, length, modificationTime as modified
        from binaryFile.`{{ location }}`
        {{- " union all" if not loop.last }}
    {%- endfor %}
{%- endmacro %}

{#- The data files of `relations` as (path, length, modified); listed, not read. -#}
{% macro files_of(relations) -%}
    {{ files_at(table_locations(relations)) }}
{%- endmacro %}

{#- The files among `listed` (a query of path, length, modified) that differ from what `name`
    last passed with under this code, as (path, whether it is still listed): added, removed,
    or with another length or modification time. none when there is no such record: the test
    then reads everything. -#}
{% macro files_changed_since_pass(name, listed) %}
    {%- set recorded -%}
        select path, length, modified
        from {{ checked_files_relation() }}
        where check_name = '{{ name }}' and code = '{{ checks_code() }}'
    {%- endset -%}
    {#- The empty path marks a record, so a table without files still has one. -#}
    {%- set marks = run_query("select count(*) from (" ~ recorded ~ ") where path = ''") -%}
    {%- if marks.columns[0].values()[0] == 0 -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set changed_query -%}
        with listed as ({{ listed }}), recorded as ({{ recorded }} and path <> '')
        select coalesce(listed.path, recorded.path) as path, listed.path is not null as listed
        from listed
        full outer join recorded on listed.path = recorded.path
        where
            listed.length is distinct from recorded.length
            or listed.modified is distinct from recorded.modified
    {%- endset -%}
    {{ return(run_query(changed_query).rows | map('list') | list) }}
{% endmacro %}

{#- More partitions than this changed (a full refresh, a backlog): read everything. -#}
{% macro most_partitions_checked_apart() %}
    {{ return(400) }}
{% endmacro %}

{#- The partitions (values of `columns`, as strings) of the files of `relations` that changed
    since `name` last passed; none: read everything. -#}
{% macro partitions_changed_since_pass(name, relations, columns) %}
    {%- if not checks_can_read_changes() -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set changed = files_changed_since_pass(name, files_of(relations)) -%}
    {%- if changed is none -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set partitions = [] -%}
    {%- for path, _ in changed -%}
        {%- set values = [] -%}
        {%- for column in columns -%}
            {%- set found = modules.re.search('/' ~ column ~ '=([^/]+)/', path) -%}
            {%- if found is none -%}
                {{ return(none) }}
            {%- endif -%}
            {%- do values.append(found.group(1)) -%}
        {%- endfor -%}
        {%- if values not in partitions -%}
            {%- do partitions.append(values) -%}
        {%- endif -%}
    {%- endfor -%}
    {%- if partitions | length > most_partitions_checked_apart() -%}
        {{ return(none) }}
    {%- endif -%}
    {{ return(partitions) }}
{% endmacro %}

{#- A filter on `columns` (with the table alias `prefix`) to `partitions` from
    partitions_changed_since_pass: `true` for none (everything), `false` for no partition.
    Partition columns only, so Spark prunes the files it opens. -#}
{% macro in_partitions(partitions, columns, prefix='') -%}
    {%- if partitions is none -%}
        true
    {%- elif partitions | length == 0 -%}
        false
    {%- else -%}
        ({% for values in partitions -%}
            ({% for column in columns -%}
                cast({{ prefix }}{{ column }} as string) = '{{ values[loop.index0] }}'
                {{- " and " if not loop.last }}
            {%- endfor %})
            {{- " or " if not loop.last }}
        {%- endfor %})
    {%- endif -%}
{%- endmacro %}

{#- The partition columns of a fact mart (tag fact_mart) named `name`, or [] for any other
    table: those are rebuilt whole, so every test of them reads everything. -#}
{% macro fact_mart_partition_columns(name) %}
    {%- if not execute -%}
        {{ return([]) }}
    {%- endif -%}
    {%- set node = fact_mart_nodes().get(name) -%}
    {%- if node is none -%}
        {{ return([]) }}
    {%- endif -%}
    {%- set columns = node.config.partition_by -%}
    {{ return([columns] if columns is string else columns) }}
{% endmacro %}

{#- The landing files as the landing check starts (see landing_files_seen_relation); nothing
    while dbt only compiles the check (`dbt docs generate`). -#}
{% macro see_landing_files() %}
    {%- if execute and not in_unit_test() and not only_compiling() -%}
        {%- set listings = [] -%}
        {%- for feed in landing_feeds() -%}
            {%- do listings.append("select path, length, modificationTime as modified from "
                ~ source('landing', feed ~ '_file_list')) -%}
        {%- endfor -%}
        {%- do run_query("insert overwrite table " ~ landing_files_seen_relation()
            ~ " select /*+ COALESCE(1) */ * from (" ~ listings | join(" union all ") ~ ")") -%}
    {%- endif -%}
{% endmacro %}

{#- On run end: each test that passed and reads what changed (meta `reads_changes`) records
    the files of the incremental tables it depends on, and the landing files it saw. One
    statement: the session overwrites partitions dynamically (retrylake/spark.py), so only
    these tests' records are replaced. Each table is listed once, in a CTE the tests' records
    share: Spark lists a folder for every mention of it, and a fact mart's hundreds of
    partition folders were listed once per test of it. -#}
{% macro record_passed_checks(results) %}
    {%- if execute and checks_code() != '' -%}
        {%- set records = [] -%}
        {%- set listed_tables = {} -%}
        {%- for result in results
            if result.node.resource_type == 'test' and result.status == 'pass'
            and result.node.config.meta.get('reads_changes') -%}
            {%- set listings = [] -%}
            {%- for unique_id in result.node.depends_on.nodes if unique_id in graph.nodes -%}
                {%- set node = graph.nodes[unique_id] -%}
                {%- if node.resource_type == 'model' and node.config.materialized == 'incremental' -%}
                    {%- if node.relation_name not in listed_tables -%}
                        {%- do listed_tables.update(
                            {node.relation_name: 'files_of_table_' ~ (listed_tables | length)}) -%}
                    {%- endif -%}
                    {%- do listings.append("select * from " ~ listed_tables[node.relation_name]) -%}
                {%- endif -%}
            {%- endfor -%}
            {%- if result.node.sources | selectattr(0, 'equalto', 'landing') | list -%}
                {%- do listings.append("select * from " ~ landing_files_seen_relation()) -%}
            {%- endif -%}
            {#- a test of tables rebuilt whole reads everything: nothing to record -#}
            {%- if listings -%}
                {%- do listings.append("select '', cast(null as bigint), cast(null as timestamp)") -%}
                {%- do records.append("select *, '" ~ check_name(result.node) ~ "' from ("
                    ~ listings | join(" union all ") ~ ")") -%}
            {%- endif -%}
        {%- endfor -%}
        {%- if records -%}
            {%- set table_listings = [] -%}
            {%- set locations = table_locations(listed_tables.keys() | list) -%}
            {%- for name in listed_tables.values() -%}
                {%- do table_listings.append(
                    name ~ " as (" ~ files_at([locations[loop.index0]]) ~ ")") -%}
            {%- endfor -%}
            {%- do run_query("insert overwrite table " ~ checked_files_relation()
                ~ " partition (check_name) "
                ~ ("with " ~ table_listings | join(", ") ~ " " if table_listings else "")
                ~ "select /*+ COALESCE(1) */ path, length, modified, '"
                ~ checks_code() ~ "', check_name from (" ~ records | join(" union all ")
                ~ ") as listed (path, length, modified, check_name)") -%}
        {%- endif -%}
    {%- endif -%}
    select 1
{% endmacro %}

{#- The landing files whose lines the landing check compares: those landed, changed or gone
    since it last passed (`seen` lists the landing files now), and those named by staged lines
    written since (new files of `staging_tables`). none: every file. -#}
{% macro landing_files_to_check(name, staging_tables, seen) %}
    {%- if not checks_can_read_changes() -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set locations = table_locations(staging_tables) -%}
    {%- set changed = files_changed_since_pass(name, "select * from " ~ seen ~ " union all "
        ~ files_at(locations)) -%}
    {%- if changed is none -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set staged_again = [] -%}
    {%- set staging_files = [] -%}
    {%- for table in staging_tables -%}
        {%- set location = locations[loop.index0] ~ '/' -%}
        {%- set written = [] -%}
        {%- for path, listed in changed if path.startswith(location) -%}
            {#- a staging file gone: its lines' files are unknown now -#}
            {%- if not listed -%}
                {{ return(none) }}
            {%- endif -%}
            {%- do written.append(path) -%}
            {%- do staging_files.append(path) -%}
        {%- endfor -%}
        {%- if written | length > 0 -%}
            {%- do staged_again.append("select source_file from " ~ table ~ " where "
                ~ landing_file_filter('_metadata.file_path', written)) -%}
        {%- endif -%}
    {%- endfor -%}
    {%- set files = changed | map(attribute=0) | reject('in', staging_files) | list -%}
    {%- if staged_again -%}
        {%- do files.extend(run_query("select distinct source_file from ("
            ~ staged_again | join(" union all ") ~ ")").columns[0].values()) -%}
    {%- endif -%}
    {%- if files | length > most_files_checked_apart() -%}
        {{ return(none) }}
    {%- endif -%}
    {{ return(files | unique | sort) }}
{% endmacro %}

{#- More landing files than this to compare: read them all. -#}
{% macro most_files_checked_apart() %}
    {{ return(2000) }}
{% endmacro %}
