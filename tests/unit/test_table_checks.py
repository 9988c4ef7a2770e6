"""The generic data test `table_checks` (tests/dbt/generic), rendered from its file with Jinja as
dbt renders it and run on rows written here: it returns exactly the rows that break a check,
each naming what failed; it lets a null through an accepted-values column, as dbt's
accepted_values does; and it counts rows whose key columns are null as one key, as a group by
does."""

import re

import pytest
from jinja2 import Environment

from tests.conftest import PROJECT_DIR

pytestmark = pytest.mark.spark

TEST_FILE = PROJECT_DIR / "tests" / "dbt" / "generic" / "table_checks.sql"


def _rendered(model: str, **arguments) -> str:
    # dbt's {% test %} block is a macro with the tested relation as `model`
    text = TEST_FILE.read_text()
    text = re.sub(r"{%\s*test (\w+)\(", r"{% macro \1(", text)
    text = re.sub(r"{%\s*endtest\s*%}", "{% endmacro %}", text)
    macros = Environment(extensions=["jinja2.ext.do"]).from_string(text).module
    return str(macros.table_checks(model, **arguments))


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
