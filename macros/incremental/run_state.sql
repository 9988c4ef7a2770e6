{#- Run state: the highest staging load id of each landing feed (run_state_feeds) that
    a complete run of the fact marts has processed. Fact marts recompute the lifecycles touched
    by rows loaded after it. It only advances when
    every fact mart was built successfully in the same run, so a partial `--select` or a failed
    run never skips data; re-processing is idempotent. -#}

{% macro run_state_relation() -%}
    {{ target.schema }}_meta.run_state
{%- endmacro %}

{#- The fact marts are the models tagged `fact_mart` (every model in models/marts/ledger, and
    the ones kept by day in the intermediate schema, by dbt_project.yml), so a new fact mart
    cannot be forgotten here: their graph nodes, by name. -#}
{% macro fact_mart_nodes() -%}
    {%- set nodes = {} -%}
    {%- for node in graph.nodes.values()
        if node.resource_type == 'model' and 'fact_mart' in node.tags -%}
        {%- do nodes.update({node.name: node}) -%}
    {%- endfor -%}
    {%- if execute and nodes | length == 0 -%}
        {{ exceptions.raise_compiler_error("no model is tagged fact_mart; see dbt_project.yml") }}
    {%- endif -%}
    {{ return(nodes) }}
{%- endmacro %}

{% macro fact_mart_names() -%}
    {{ return(fact_mart_nodes().keys() | sort) }}
{%- endmacro %}

{#- The staging table each landing feed's load ids come from, and its run-state column. -#}
{% macro run_state_feeds() %}
    {{ return({
        'trace': ('processed_load_id', 'stg_trace__records'),
        'dlq': ('processed_dlq_load_id', 'stg_landing__dlq_lines'),
        'otel': ('processed_otel_load_id', 'stg_otel__process_spans'),
        'consume_events': ('processed_consume_events_load_id', 'stg_landing__consume_event_lines'),
        'broker_logs': ('processed_broker_logs_load_id', 'stg_landing__broker_log_lines'),
    }) }}
{% endmacro %}

{#- The partitions of runs begun since the last complete one. A run that stops after some fact
    marts are written (killed, or a `--select` of some of them) has moved lifecycles out of
    partitions that only the previous lifecycles knew; the next run's scope takes these in, so
    the marts it writes after message_lifecycles rewrite those partitions too. -#}
{% macro unsettled_partitions_relation() -%}
    {{ target.schema }}_meta.unsettled_partitions
{%- endmacro %}

{#- A table of the `_meta` schema as dbt's relation cache knew it when this invocation began:
    none if it did not exist then (one made during the run by run_query is not in the cache). -#}
{% macro meta_table(identifier) -%}
    {{ return(adapter.get_relation(
        database=none, schema=target.schema ~ '_meta', identifier=identifier)) }}
{%- endmacro %}

{#- The unsettled partitions' table: none before it exists. -#}
{% macro unsettled_partitions_table() -%}
    {{ return(meta_table('unsettled_partitions')) }}
{%- endmacro %}

{#- Present while a run that writes fact marts over the whole history (a first build, a full
    refresh, the upgrade's run) has not completed: it may have rewritten message_lifecycles
    everywhere, so the marts it did not reach may be stale on any day, beyond any list of
    partitions. Until a run completes, each run's scope is the whole history again
    (previous_fact_relation). Recorded by record_whole_runs. -#}
{% macro history_unsettled_relation() -%}
    {{ target.schema }}_meta.history_unsettled
{%- endmacro %}

{#- `partitions` (a relation of lifecycle_date, lifecycle_hour) and the unsettled partitions,
    as a subquery; `partitions` alone on a build that rewrites everything, in a unit test, or
    before the table exists (a lakehouse of an earlier release, compiled before its first run). -#}
{% macro with_unsettled_partitions(partitions) -%}
    {%- set unsettled = unsettled_partitions_table() if execute and not in_unit_test() else none -%}
    {%- if unsettled is none or refresh_scope_is_everything() -%}
        {{ partitions }}
    {%- else -%}
        (select lifecycle_date, lifecycle_hour from {{ partitions }}
        union
        select lifecycle_date, lifecycle_hour from {{ unsettled_partitions_relation() }})
        as with_unsettled
    {%- endif -%}
{%- endmacro %}

{#- Post-hook of int_run__refresh_partitions, before any fact mart is written: its partitions
    join the unsettled ones (none on a run that rewrites everything: record_whole_runs). -#}
{% macro record_unsettled_partitions() %}
    {%- if execute and not in_unit_test() -%}
        {%- do run_query("insert into " ~ unsettled_partitions_relation()
            ~ " select lifecycle_date, lifecycle_hour from " ~ this
            ~ " except select lifecycle_date, lifecycle_hour from "
            ~ unsettled_partitions_relation()) -%}
    {%- endif -%}
    select 1
{% endmacro %}

{#- What an earlier run that stopped part way left unsettled, read at the end of this one (the
    whole-history marker as it was when this one began; a run of no fact mart makes none): the
    reason a build that wrote no fact mart must not publish, or none. -#}
{% macro unsettled_by_earlier_run() %}
    {%- if meta_table('history_unsettled') is not none -%}
        {{ return("an earlier run of the whole history stopped part way") }}
    {%- endif -%}
    {%- set unsettled = unsettled_partitions_table() -%}
    {%- if unsettled is not none -%}
        {%- set count = run_query("select count(*) from " ~ unsettled).columns[0].values()[0] -%}
        {%- if count | int > 0 -%}
            {{ return("an earlier run stopped part way, " ~ count ~ " partitions unsettled") }}
        {%- endif -%}
    {%- endif -%}
    {{ return(none) }}
{% endmacro %}

{% macro create_run_state() %}
    {%- if execute -%}
        {%- set feeds = run_state_feeds() -%}
        {%- do run_query("create database if not exists " ~ target.schema ~ "_meta") -%}
        {%- do run_query("create table if not exists " ~ unsettled_partitions_relation()
            ~ " (lifecycle_date date, lifecycle_hour int) using parquet") -%}
        {%- do run_query("create table if not exists " ~ run_state_relation() ~ " ("
            ~ feeds.values() | map(attribute=0) | join(" bigint, ") ~ " bigint) using parquet") -%}
        {#- A lakehouse built by an earlier release lacks the newer feeds' columns. -#}
        {%- set columns = run_query("describe " ~ run_state_relation()).columns[0].values() -%}
        {%- for column, _ in feeds.values() if column not in columns -%}
            {%- do run_query("alter table " ~ run_state_relation()
                ~ " add columns (" ~ column ~ " bigint)") -%}
        {%- endfor -%}
    {%- endif -%}
    select 1
{% endmacro %}

{#- The highest load id of each feed (the keys of run_state_feeds) that a complete run processed,
    read in one query. -#}
{% macro processed_load_ids() %}
    {%- set feeds = run_state_feeds() -%}
    {%- set processed = {} -%}
    {%- if not execute or in_unit_test() -%}
        {%- for feed in feeds -%}
            {%- do processed.update({feed: 0}) -%}
        {%- endfor -%}
        {{ return(processed) }}
    {%- endif -%}
    {%- set latest = [] -%}
    {%- for column, _ in feeds.values() -%}
        {%- do latest.append("coalesce(max(" ~ column ~ "), 0)") -%}
    {%- endfor -%}
    {%- set row = run_query("select " ~ latest | join(", ") ~ " from " ~ run_state_relation()).rows[0] -%}
    {%- for feed in feeds -%}
        {%- do processed.update({feed: row[loop.index0] | int}) -%}
    {%- endfor -%}
    {{ return(processed) }}
{% endmacro %}

{#- The models a run's `results` built successfully, as graph nodes. -#}
{% macro models_built(results) %}
    {%- set built = [] -%}
    {%- for result in results
        if result.node.resource_type == 'model' and result.status == 'success' -%}
        {%- do built.append(result.node) -%}
    {%- endfor -%}
    {{ return(built) }}
{% endmacro %}

{#- The fact marts a run's `results` built successfully, by name. -#}
{% macro fact_marts_built(results) %}
    {%- set built = models_built(results) | map(attribute='name') | list -%}
    {{ return(fact_mart_names() | select('in', built) | list) }}
{% endmacro %}

{% macro record_run_state(results) %}
    {%- if execute -%}
        {%- if fact_marts_built(results) | length == fact_mart_names() | length -%}
            {%- set feeds = run_state_feeds() -%}
            {%- set latest = [] -%}
            {%- for column, staging in feeds.values() -%}
                {%- do latest.append("(select coalesce(max(load_id), 0) from " ~ target.schema
                    ~ "_staging." ~ staging ~ ")") -%}
            {%- endfor -%}
            {%- do run_query("insert overwrite table " ~ run_state_relation() ~ " ("
                ~ feeds.values() | map(attribute=0) | join(", ") ~ ") select "
                ~ latest | join(", ")) -%}
            {#- after the run state: a stop between them only widens the next scope -#}
            {%- do run_query("truncate table " ~ unsettled_partitions_relation()) -%}
            {%- do run_query("drop table if exists " ~ history_unsettled_relation()) -%}
        {%- endif -%}
        {%- do settle_full_refresh(results) -%}
    {%- endif -%}
    select 1
{% endmacro %}

{% macro next_load_id() %}
    {#- Staging tables are append-only; each run's new rows share one load id. -#}
    {%- if execute and not in_unit_test() and is_incremental() -%}
        {%- set result = run_query("select coalesce(max(load_id), 0) + 1 from " ~ this) -%}
        {{ return(result.columns[0].values()[0] | int) }}
    {%- endif -%}
    {{ return(1) }}
{% endmacro %}

{#- Whether a table lacks one of `columns`, read from the relation cache's schema text (dbt-spark
    lists tables with `show table extended`, whose text draws each column as `|-- name:`), so
    that no query runs; a relation listed without that text is taken as complete. -#}
{% macro relation_lacks_columns(relation, columns) %}
    {%- set information = relation.information or '' -%}
    {%- if '|-- ' not in information -%}
        {{ return(false) }}
    {%- endif -%}
    {%- for name in columns if ('|-- ' ~ name | lower ~ ':') not in information | lower -%}
        {{ return(true) }}
    {%- endfor -%}
    {{ return(false) }}
{% endmacro %}

{% macro max_load_id(relation) %}
    {%- if execute and not in_unit_test() and is_incremental() -%}
        {%- set result = run_query("select coalesce(max(load_id), 0) from " ~ relation) -%}
        {{ return(result.columns[0].values()[0] | int) }}
    {%- endif -%}
    {{ return(0) }}
{% endmacro %}

{#- For a table that counts several feeds, each numbering its loads apart: put the highest load
    id counted of each feed (its `source`) into the dict `counted`; nothing on a first,
    full-refresh or unit-test build. It fills a dict rather than returning one so that sqlfluff's
    stand-in (.sqlfluff) can be empty. -#}
{% macro put_max_load_ids_by_source(relation, counted) %}
    {%- if execute and not in_unit_test() and is_incremental() -%}
        {%- for source, load_id in run_query(
            "select source, max(load_id) from " ~ relation ~ " group by source").rows -%}
            {%- do counted.update({source: load_id | int}) -%}
        {%- endfor -%}
    {%- endif -%}
{% endmacro %}

{% macro previous_fact_relation(name) %}
    {#- The fact mart as the previous run left it, or none on a first or full-refresh build, or
        while any fact mart is missing or lacks a column its YAML documents (a lakehouse built
        before that mart or column existed: every partition is written again, so that each of
        its files has every column a published view reads). Looked up by name rather than
        ref(): the refresh scope reads the marts' previous state, which ref() would turn into a
        cycle. Each in its own schema (the dead-letter ones are in the intermediate schema, the
        others in the unpublished marts' one). -#}
    {%- if not execute or flags.FULL_REFRESH or in_unit_test()
        or meta_table('history_unsettled') is not none -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set nodes = fact_mart_nodes() -%}
    {%- for node in nodes.values() -%}
        {%- set relation = adapter.get_relation(
                database=none, schema=node.schema, identifier=node.alias or node.name) -%}
        {%- if relation is none or relation_lacks_columns(relation, node.columns) -%}
            {{ return(none) }}
        {%- endif -%}
    {%- endfor -%}
    {%- set node = nodes[name] -%}
    {{ return(adapter.get_relation(
        database=none, schema=node.schema, identifier=node.alias or node.name)) }}
{% endmacro %}

{#- A full refresh of a staging table starts its load ids from 1 again, so until a full refresh
    has rebuilt every incremental model, the tables it did not reach (the load ids of
    int_trace__pairing_verdicts and int_landing__ignored_by_load, the fact marts' days) belong
    to the history before it, and an incremental run would join the two. So such a full
    refresh records itself as pending (record_whole_runs), one that rebuilt every incremental
    model settles it (settle_full_refresh), and meanwhile a run or build of an incremental
    model that is not a full refresh is refused (guard_full_refresh). -#}
{% macro full_refresh_pending_relation() -%}
    {{ target.schema }}_meta.full_refresh_pending
{%- endmacro %}

{#- The project's incremental models (the staging tables, the pairing verdicts, the ignored
    records' counts, the fact marts), by unique id; with `folder`, those in that folder of
    models/ only. -#}
{% macro incremental_model_ids(folder=none) %}
    {%- set ids = [] -%}
    {%- for node in graph.nodes.values()
        if node.resource_type == 'model' and node.config.materialized == 'incremental'
        and (folder is none or node.fqn[1] == folder) -%}
        {%- do ids.append(node.unique_id) -%}
    {%- endfor -%}
    {{ return(ids) }}
{% endmacro %}

{#- Those of `ids` this invocation may write: the selected ones, or all of them when dbt gives
    no selection (`dbt retry` builds its own queue, leaving selected_resources empty, and runs
    with the flags of the command it retries). -#}
{% macro selected_of(ids) %}
    {%- if not selected_resources -%}
        {{ return(ids) }}
    {%- endif -%}
    {{ return(ids | select('in', selected_resources) | list) }}
{% endmacro %}

{#- Whether this invocation's selection names the project's model `name`: false for a dbt
    retry, which gives no selection (unlike selected_of, which reads none as every model). -#}
{% macro selection_names(name) %}
    {{ return(('model.' ~ project_name ~ '.' ~ name) in (selected_resources or [])) }}
{% endmacro %}

{#- on-run-start, first: nothing has changed yet when it refuses. -#}
{% macro guard_full_refresh() %}
    {%- if execute and flags.WHICH in ('run', 'build') and not flags.FULL_REFRESH
        and selected_of(incremental_model_ids())
        and meta_table('full_refresh_pending') is not none -%}
        {{ exceptions.raise_compiler_error(
            "retrylake: refused before any change. A full refresh begun earlier did not rebuild"
            ~ " every incremental model (it was stopped, something in it failed, or it was given"
            ~ " a --select). It started the staging tables' load ids again, so the tables it did"
            ~ " not reach still hold the history before it, which this run would mix in ("
            ~ full_refresh_pending_relation() ~ "). Run the full refresh again, of every model:"
            ~ " retrylake build --full-refresh (plain dbt: dbt run --full-refresh, with no"
            ~ " --select)."
        ) }}
    {%- endif -%}
    select 1
{% endmacro %}

{#- on-run-start, last (a hook that fails before it leaves no record): a full refresh of a
    staging table is pending until settled; a run that writes fact marts over the whole history
    leaves the history unsettled until a run completes. A `dbt retry` (no selection) records
    nothing: the run it retries recorded what it began, and the retry alone settles neither. -#}
{% macro record_whole_runs() %}
    {%- if execute and flags.WHICH in ('run', 'build') and selected_resources -%}
        {%- if flags.FULL_REFRESH and selected_of(incremental_model_ids('staging')) -%}
            {%- do run_query("create table if not exists " ~ full_refresh_pending_relation()
                ~ " (marker boolean) using parquet") -%}
        {%- endif -%}
        {%- set fact_marts = fact_mart_nodes().values() | map(attribute='unique_id') | list -%}
        {%- if selected_of(fact_marts) and refresh_scope_is_everything() -%}
            {%- do run_query("create table if not exists " ~ history_unsettled_relation()
                ~ " (marker boolean) using parquet") -%}
        {%- endif -%}
    {%- endif -%}
    select 1
{% endmacro %}

{#- In the run state's hook: a full refresh in which every incremental model was rebuilt. -#}
{% macro settle_full_refresh(results) %}
    {%- if flags.FULL_REFRESH -%}
        {%- set built = models_built(results) | map(attribute='unique_id') | list -%}
        {%- if incremental_model_ids() | reject('in', built) | list | length == 0 -%}
            {%- do run_query("drop table if exists " ~ full_refresh_pending_relation()) -%}
        {%- endif -%}
    {%- endif -%}
{% endmacro %}
