"""The generic data test `table_checks` (tests/dbt/generic), rendered from its file with Jinja as
dbt renders it and run on rows written here: it returns exactly the rows that break a check,
each naming what failed; it lets a null through an accepted-values column, as dbt's
accepted_values does; and it counts rows whose key columns are null as one key, as a group by
does. On a fact mart with a record of its last pass it reads the changed partitions only, and
still counts their keys over the whole table, every key from one read of the other partitions:
a fact mart's keys must share a column."""

import re

import pytest
from jinja2 import Environment

from tests.conftest import PROJECT_DIR

pytestmark = pytest.mark.spark

TEST_FILE = PROJECT_DIR / "tests" / "dbt" / "generic" / "table_checks.sql"
CHECKED_FILES = PROJECT_DIR / "macros" / "testing" / "checked_files.sql"


class _Relation(str):
    identifier = "mart_under_test"


class _CompilationError(Exception):
    pass


class _Exceptions:
    """dbt's `exceptions` in the Jinja context, for the one call the test makes."""

    @staticmethod
    def raise_compiler_error(message: str) -> None:
        raise _CompilationError(message)


def _rendered(
    model: str,
    partition_columns: list[str] | None = None,
    changed: list[list[str]] | None = None,
    **arguments,
) -> str:
    """The test's SQL; with `partition_columns` the model is a fact mart whose `changed`
    partitions (None: no record) are what changed since the test last passed."""
    environment = Environment(extensions=["jinja2.ext.do"])
    environment.globals.update(
        config=lambda **_: "",
        fact_mart_partition_columns=lambda name: partition_columns or [],
        partitions_changed_since_pass=lambda name, relations, columns: changed,
        generic_check_name=lambda *names: "__".join(names),
        exceptions=_Exceptions,
    )
    # the filter on the changed partitions is the project's macro
    environment.globals["in_partitions"] = environment.from_string(
        CHECKED_FILES.read_text()
    ).module.in_partitions
    # dbt's {% test %} block is a macro with the tested relation as `model`
    text = TEST_FILE.read_text()
    text = re.sub(r"{%\s*test (\w+)\(", r"{% macro \1(", text)
    text = re.sub(r"{%\s*endtest\s*%}", "{% endmacro %}", text)
    macros = environment.from_string(text).module
    return str(macros.table_checks(_Relation(model), **arguments))


def test_returns_the_rows_that_break_a_check_and_names_it(spark) -> None:
    spark.sql(
        """
        create or replace temporary view attempts_under_test as
        select * from values
            (1, 'g', 'm1', 1, 'SUCCESS', 'TRACE', 10, 12),
            (2, 'g', null, 1, 'SUCCESS', 'TRACE', 10, null),
            (3, 'g', 'm3', 1, 'BOGUS', 'TRACE', 10, 9),
            (4, 'g', 'm4', 1, null, 'TRACE', 10, 10),
            (5, null, null, 1, 'FAILED', 'SPAN', 10, 11),
            (6, 'g', 'm6', 1, 'SUCCESS', 'TRACE', 10, 11),
            (7, 'g', 'm6', 1, 'FAILED', 'TRACE', 10, 11),
            (8, 'g', 'm6', 2, 'FAILED', 'TRACE', 10, 11),
            (9, null, null, 1, 'SUCCESS', 'TRACE', 10, 11)
        as attempts(
            row_id, consumer_group, msg_id, delivery_number, return_type, attempt_source,
            started, ended
        )
        """
    )
    sql = _rendered(
        "attempts_under_test",
        not_null=["consumer_group", "msg_id"],
        accepted_values={
            "return_type": ["SUCCESS", "FAILED"],
            "attempt_source": ["TRACE", "OTEL_SPAN"],
        },
        expressions=["ended >= started or ended is null", "delivery_number < 2"],
        unique_keys=[["consumer_group", "msg_id", "delivery_number"], ["row_id"]],
    )
    failing = {row.row_id: row.failed_checks for row in spark.sql(sql).collect()}
    assert failing == {
        2: "msg_id is null",
        3: "return_type = BOGUS is not accepted; not (ended >= started or ended is null)",
        5: "consumer_group is null; msg_id is null; attempt_source = SPAN is not accepted; "
        "(consumer_group, msg_id, delivery_number) on 2 rows",
        6: "(consumer_group, msg_id, delivery_number) on 2 rows",
        7: "(consumer_group, msg_id, delivery_number) on 2 rows",
        8: "not (delivery_number < 2)",
        9: "consumer_group is null; msg_id is null; "
        "(consumer_group, msg_id, delivery_number) on 2 rows",
    }


def test_a_table_that_holds_the_rules_passes(spark) -> None:
    sql = _rendered(
        "(select 'g' as consumer_group, cast(null as string) as evidence, 1 as n)",
        not_null=["consumer_group"],
        accepted_values={"evidence": ["BOTH"]},
        expressions=["n > 0"],
        unique_keys=[["consumer_group"], ["consumer_group", "evidence"]],
    )
    assert spark.sql(sql).collect() == []


def test_an_expression_that_is_null_fails_and_is_named_with_its_quotes(spark) -> None:
    sql = _rendered(
        "(select 1 as row_id, cast(null as string) as state)",
        expressions=["state <> 'DLQ'"],
    )
    assert [row.failed_checks for row in spark.sql(sql).collect()] == ["not (state <> 'DLQ')"]


def test_a_fact_mart_is_read_in_its_changed_partitions_with_keys_counted_over_the_table(
    spark,
) -> None:
    spark.sql(
        """
        create or replace temporary view partitioned_under_test as
        select * from values
            (1, 'a', 1, 'OK'),
            (2, 'a', 2, 'OK'),
            (3, 'b', 1, 'OK'),
            (4, 'b', 1, 'OK'),
            (5, null, 2, 'OK'),
            (6, null, 1, 'OK'),
            (7, 'c', 2, 'OK'),
            (8, 'd', 3, 'BOGUS'),
            (9, 'd', 3, 'OK'),
            (10, 'e', 1, 'BOGUS')
        as mart(row_id, msg_id, lifecycle_hour, state)
        """
    )
    checks = {"accepted_values": {"state": ["OK"]}, "unique_keys": [["msg_id"]]}

    def failing(changed):
        sql = _rendered(
            "partitioned_under_test", ["lifecycle_hour"], changed, not_null=["row_id"], **checks
        )
        return {row.row_id: row.failed_checks for row in spark.sql(sql).collect()}

    # hours 2 and 3 changed: their rows are checked, and their keys are counted in hour 1 too
    # (rows 2 and 5); hour 1's own duplicate (3, 4) and bad state (10) passed before
    assert failing([["2"], ["3"]]) == {
        2: "(msg_id) on 2 rows",
        5: "(msg_id) on 2 rows",
        8: "state = BOGUS is not accepted; (msg_id) on 2 rows",
        9: "(msg_id) on 2 rows",
    }
    assert failing([]) == {}
    # no record: every row
    assert failing(None) == {
        1: "(msg_id) on 2 rows",
        2: "(msg_id) on 2 rows",
        3: "(msg_id) on 2 rows",
        4: "(msg_id) on 2 rows",
        5: "(msg_id) on 2 rows",
        6: "(msg_id) on 2 rows",
        8: "state = BOGUS is not accepted; (msg_id) on 2 rows",
        9: "(msg_id) on 2 rows",
        10: "state = BOGUS is not accepted",
    }


def test_several_keys_of_a_fact_mart_are_counted_over_the_table_from_one_read(spark) -> None:
    """Two keys sharing (consumer_group, msg_id), as consume_attempts' do: the other partitions
    are read once, for the rows of the changed rows' messages, and each key is counted there.
    The changed partition's rows fail exactly as the whole-table check fails them."""
    spark.sql(
        """
        create or replace temporary view attempts_by_hour as
        select * from values
            (1, 'g1', 'm1', 'a', 1, 1),
            (2, 'g1', 'm1', 'b', 2, 1),
            (3, 'g1', 'm2', 'c', 1, 1),
            (4, null, 'm3', 'd', 1, 1),
            (5, 'g1', 'm5', 'x', 1, 1),
            (6, 'g1', 'm5', 'x', 1, 1),
            (7, 'g1', 'm1', 'a', 3, 2),
            (8, 'g1', 'm1', 'e', 2, 2),
            (9, 'g1', 'm2', 'f', 2, 2),
            (10, null, 'm3', 'd', 1, 2),
            (11, 'g2', 'm1', 'a', 1, 2),
            (12, 'g1', 'm6', 'y', 1, 2),
            (13, 'g1', 'm6', 'y', 2, 2),
            (14, 'g1', 'm1', 'a', 4, 3),
            (15, 'g1', 'm5', 'z', 1, 2)
        as mart(row_id, consumer_group, msg_id, request_id, delivery_number, lifecycle_hour)
        """
    )
    by_request = "(consumer_group, msg_id, request_id) on "
    by_delivery = "(consumer_group, msg_id, delivery_number) on "

    def failing(changed):
        sql = _rendered(
            "attempts_by_hour",
            ["lifecycle_hour"],
            changed,
            unique_keys=[
                ["consumer_group", "msg_id", "request_id"],
                ["consumer_group", "msg_id", "delivery_number"],
            ],
        )
        return {row.row_id: row.failed_checks for row in spark.sql(sql).collect()}

    every_row = failing(None)
    assert every_row == {
        1: by_request + "3 rows",
        2: by_delivery + "2 rows",
        4: by_request + "2 rows; " + by_delivery + "2 rows",
        5: by_request + "2 rows; " + by_delivery + "3 rows",
        6: by_request + "2 rows; " + by_delivery + "3 rows",
        7: by_request + "3 rows",
        8: by_delivery + "2 rows",
        10: by_request + "2 rows; " + by_delivery + "2 rows",
        12: by_request + "2 rows",
        13: by_request + "2 rows",
        14: by_request + "3 rows",
        15: by_delivery + "3 rows",
    }
    hour_2 = {7, 8, 9, 10, 11, 12, 13, 15}
    # hour 2 changed: row 7's request is in hours 1 and 3, row 8's delivery in hour 1, row 10's
    # null group matches row 4's, row 15's delivery is on two rows of hour 1; row 11 shares a
    # message id with hour 1 in another group
    assert failing([["2"]]) == {
        row_id: checks for row_id, checks in every_row.items() if row_id in hour_2
    }
    assert failing([["1"], ["3"]]) == {
        row_id: checks for row_id, checks in every_row.items() if row_id not in hour_2
    }


def test_a_fact_mart_whose_keys_share_no_column_is_refused(spark) -> None:
    with pytest.raises(_CompilationError, match="mart_under_test: the unique_keys"):
        _rendered(
            "attempts_by_hour",
            ["lifecycle_hour"],
            [["2"]],
            unique_keys=[["request_id"], ["delivery_number"]],
        )
    # a table rebuilt whole counts each key over the whole table: any keys will do
    assert "count(*) over (partition by request_id)" in _rendered(
        "attempts_by_hour", unique_keys=[["request_id"], ["delivery_number"]]
    )
