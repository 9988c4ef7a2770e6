"""The generic data test `valid_column_values` (tests/dbt/generic), rendered from its file with
Jinja as dbt renders it and run on rows written here: it returns exactly the rows that break a
check, each naming what failed, and lets a null through an accepted-values column, as dbt's
accepted_values does."""

import re

import pytest
from jinja2 import Environment

from tests.conftest import PROJECT_DIR

pytestmark = pytest.mark.spark

TEST_FILE = PROJECT_DIR / "tests" / "dbt" / "generic" / "valid_column_values.sql"


def _rendered(model: str, **arguments) -> str:
    # dbt's {% test %} block is a macro with the tested relation as `model`
    text = TEST_FILE.read_text()
    text = re.sub(r"{%\s*test (\w+)\(", r"{% macro \1(", text)
    text = re.sub(r"{%\s*endtest\s*%}", "{% endmacro %}", text)
    macros = Environment(extensions=["jinja2.ext.do"]).from_string(text).module
    return str(macros.valid_column_values(model, **arguments))


def test_returns_the_rows_that_break_a_check_and_names_it(spark) -> None:
    spark.sql(
        """
        create or replace temporary view attempts_under_test as
        select * from values
            (1, 'g', 'm1', 'SUCCESS', 'TRACE'),
            (2, 'g', null, 'SUCCESS', 'TRACE'),
            (3, 'g', 'm3', 'BOGUS', 'TRACE'),
            (4, 'g', 'm4', null, 'TRACE'),
            (5, null, null, 'FAILED', 'SPAN')
        as attempts(row_id, consumer_group, msg_id, return_type, attempt_source)
        """
    )
    sql = _rendered(
        "attempts_under_test",
        not_null=["consumer_group", "msg_id"],
        accepted_values={
            "return_type": ["SUCCESS", "FAILED"],
            "attempt_source": ["TRACE", "OTEL_SPAN"],
        },
    )
    failing = {row.row_id: row.failed_checks for row in spark.sql(sql).collect()}
    assert failing == {
        2: "msg_id is null",
        3: "return_type = BOGUS is not accepted",
        5: "consumer_group is null; msg_id is null; attempt_source = SPAN is not accepted",
    }


def test_a_table_that_holds_the_rules_passes(spark) -> None:
    sql = _rendered(
        "(select 'g' as consumer_group, cast(null as string) as evidence)",
        not_null=["consumer_group"],
        accepted_values={"evidence": ["BOTH"]},
    )
    assert spark.sql(sql).collect() == []
