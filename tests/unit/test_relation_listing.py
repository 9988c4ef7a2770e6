"""How dbt lists a schema for its relation cache (macros/list_relations_without_caching.sql),
rendered with Jinja as dbt renders it and run on Spark, against what dbt-spark's own listing,
`show table extended`, gives for the same schema: the same relations, the same ones as views, and
the fact marts described in full, so that relation_lacks_columns still reads their columns."""

from types import SimpleNamespace

import pytest

from tests.conftest import PROJECT_DIR
from tests.unit.macro_calls import Table, call_macro

pytestmark = pytest.mark.spark

LISTING = PROJECT_DIR / "macros" / "list_relations_without_caching.sql"
RUN_STATE = PROJECT_DIR / "macros" / "incremental" / "run_state.sql"
SCHEMA = "relations_under_test"
FACT_MARTS = {
    "fact_mart": SimpleNamespace(schema=SCHEMA, alias=None, name="fact_mart"),
    "elsewhere": SimpleNamespace(schema="another_schema", alias=None, name="elsewhere"),
}


def _listed(spark, command: str) -> list:
    given = {
        "flags": SimpleNamespace(WHICH=command),
        "fact_mart_nodes": lambda: FACT_MARTS,
        "listed_relation_key": lambda row: call_macro(
            spark, LISTING, "listed_relation_key", {}, row
        ),
    }
    return call_macro(spark, LISTING, "spark__list_relations_without_caching", given,
                      SimpleNamespace(schema=SCHEMA))  # fmt: skip


def _lacks_columns(spark, information: str, columns: list[str]) -> bool:
    relation = SimpleNamespace(information=information)
    return call_macro(spark, RUN_STATE, "relation_lacks_columns", {}, relation, columns)


@pytest.fixture(scope="module")
def schema(spark):
    spark.sql(f"drop database if exists {SCHEMA} cascade")
    spark.sql(f"create database {SCHEMA}")
    spark.sql(f"create table {SCHEMA}.plain (x int) using parquet")
    spark.sql(f"create table {SCHEMA}.fact_mart (a int, b string) using parquet partitioned by (b)")
    spark.sql(f"create view {SCHEMA}.shown as select x from {SCHEMA}.plain")
    spark.sql("create or replace temporary view temp_listed as select 1 as y")
    yield
    spark.sql("drop view if exists temp_listed")
    spark.sql(f"drop database {SCHEMA} cascade")


def test_the_same_relations_and_views_as_show_table_extended(spark, schema) -> None:
    described = spark.sql(f"show table extended in {SCHEMA} like '*'").collect()
    rows = _listed(spark, "run")
    assert sorted((r[0], r[1], r[2]) for r in rows) == sorted((r[0], r[1], r[2]) for r in described)
    # (the session's other temporary views are listed too, with an empty schema)
    assert {r[1] for r in rows if r[0] == SCHEMA} == {"plain", "fact_mart", "shown"}
    assert "temp_listed" in {r[1] for r in rows if r[0] == ""}
    views = {r[1] for r in rows if "Type: VIEW" in r[3]}
    assert views == {r[1] for r in described if "Type: VIEW" in r[3]}
    assert {"shown", "temp_listed"} <= views and not {"plain", "fact_mart"} & views
    # the fact mart as dbt-spark described it; the other tables by their type alone
    assert [r[3] for r in rows if r[1] == "fact_mart"] == [
        r[3] for r in described if r[1] == "fact_mart"
    ]
    assert [r[3] for r in rows if r[1] == "plain"] == ["Type: TABLE\n"]


def test_a_fact_mart_lacking_a_column_is_seen_from_the_listing(spark, schema) -> None:
    (information,) = [r[3] for r in _listed(spark, "run") if r[1] == "fact_mart"]
    assert _lacks_columns(spark, information, ["a", "b"]) is False
    assert _lacks_columns(spark, information, ["a", "dropped_deliveries"]) is True
    # a relation listed without its description is taken as complete, as before
    assert _lacks_columns(spark, "Type: TABLE\n", ["dropped_deliveries"]) is False


def test_docs_generate_lists_as_dbt_spark_does(spark, schema) -> None:
    # its catalog reads every table's columns and statistics from the descriptions
    listed = _listed(spark, "generate")
    assert isinstance(listed, Table)
    described = spark.sql(f"show table extended in {SCHEMA} like '*'").collect()
    assert sorted(listed.rows) == sorted(tuple(r) for r in described)
