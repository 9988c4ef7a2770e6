"""The record of what a data test last passed with (macros/testing/checked_files.sql), rendered
with Jinja as dbt renders it and run on Spark: `files_changed_since_pass` says whether
the test has a record under this code and which files differ from it (added, removed, another
length or modification time); a test without a record reads everything (none)."""

import pytest

from tests.conftest import PROJECT_DIR
from tests.unit.macro_calls import CompilerError, call_macro

pytestmark = pytest.mark.spark

CHECKED_FILES = PROJECT_DIR / "macros" / "testing" / "checked_files.sql"
CODE = "code-1"


def _call_macro(spark, macro: str, *args):
    given = {
        "checked_files_relation": lambda: "checked_files_under_test_meta.checked_files",
        "checks_code": lambda: CODE,
    }
    return call_macro(spark, CHECKED_FILES, macro, given, *args)


def _files_changed_since_pass(spark, name: str, listed: str):
    return _call_macro(spark, "files_changed_since_pass", name, listed)


@pytest.fixture(scope="module")
def record(spark):
    """A test `t` that passed with files a (3 bytes), b and c; `other` recorded only under
    another code."""
    spark.sql("drop database if exists checked_files_under_test_meta cascade")
    spark.sql("create database checked_files_under_test_meta")
    spark.sql(
        """
        create table checked_files_under_test_meta.checked_files
            (path string, length bigint, modified timestamp, code string, check_name string)
        using parquet
        """
    )
    spark.sql(
        f"""
        insert into checked_files_under_test_meta.checked_files values
            ('file:/w/a', 3, timestamp'2026-01-01 00:00:00', '{CODE}', 't'),
            ('file:/w/b', 5, timestamp'2026-01-01 00:00:00', '{CODE}', 't'),
            ('file:/w/c', 7, timestamp'2026-01-01 00:00:00', '{CODE}', 't'),
            ('', null, null, '{CODE}', 't'),
            ('file:/w/a', 3, timestamp'2026-01-01 00:00:00', 'code-0', 'other'),
            ('', null, null, 'code-0', 'other')
        """
    )
    yield
    spark.sql("drop database checked_files_under_test_meta cascade")


def _listed(*files: tuple[str, int, str]) -> str:
    return " union all ".join(
        f"select '{path}' as path, cast({length} as bigint) as length,"
        f" timestamp'{modified}' as modified"
        for path, length, modified in files
    )


def test_nothing_changed_is_an_empty_list(spark, record) -> None:
    listed = _listed(
        ("file:/w/a", 3, "2026-01-01 00:00:00"),
        ("file:/w/b", 5, "2026-01-01 00:00:00"),
        ("file:/w/c", 7, "2026-01-01 00:00:00"),
    )
    assert _files_changed_since_pass(spark, "t", listed) == []


def test_added_removed_and_rewritten_files_are_changed(spark, record) -> None:
    listed = _listed(
        ("file:/w/a", 4, "2026-01-01 00:00:00"),  # another length
        ("file:/w/b", 5, "2026-01-02 00:00:00"),  # another modification time
        ("file:/w/d", 1, "2026-01-02 00:00:00"),  # added; c is gone
    )
    changed = _files_changed_since_pass(spark, "t", listed)
    assert sorted(changed) == [
        ["file:/w/a", True],
        ["file:/w/b", True],
        ["file:/w/c", False],
        ["file:/w/d", True],
    ]


def test_no_record_under_this_code_reads_everything(spark, record) -> None:
    listed = _listed(("file:/w/a", 3, "2026-01-01 00:00:00"))
    assert _files_changed_since_pass(spark, "other", listed) is None
    assert _files_changed_since_pass(spark, "never_passed", listed) is None


def test_table_locations_in_the_order_asked(spark, tmp_path) -> None:
    """Each table's location, in the order asked, across two schemas and whatever the case of
    the names asked; a table that does not exist is an error naming it."""
    spark.sql("drop database if exists locations_under_test_a cascade")
    spark.sql("drop database if exists locations_under_test_b cascade")
    spark.sql("create database locations_under_test_a")
    spark.sql("create database locations_under_test_b")
    try:
        for name in ("locations_under_test_a.t_1", "locations_under_test_a.t2",
                     "locations_under_test_b.t_1"):  # fmt: skip
            spark.sql(f"create table {name} (x int) using parquet location '{tmp_path / name}'")
        asked = ["locations_under_test_b.t_1", "locations_under_test_a.t2",
                 "locations_under_test_a.t_1"]  # fmt: skip
        assert _call_macro(spark, "table_locations", asked) == [
            f"file:{tmp_path / name}" for name in asked
        ]
        assert _call_macro(spark, "table_locations", ["Locations_Under_Test_A.T2"]) == [
            f"file:{tmp_path / 'locations_under_test_a.t2'}"
        ]
        with pytest.raises(CompilerError, match=r"locations_under_test_a\.t3"):
            _call_macro(spark, "table_locations", ["locations_under_test_a.t3"])
    finally:
        spark.sql("drop database locations_under_test_a cascade")
        spark.sql("drop database locations_under_test_b cascade")
