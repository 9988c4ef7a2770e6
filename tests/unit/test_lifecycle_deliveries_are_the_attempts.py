"""The data test `lifecycle_deliveries_are_the_attempts` (tests/dbt), rendered from its file with
its refs pointing at rows written here: a lifecycle whose `deliveries` is not its number of
attempts fails, and so does an attempt in another partition than its lifecycle (both sides of
it); with a record of its last pass it compares the changed partitions only."""

import pytest
from jinja2 import Environment

from tests.conftest import PROJECT_DIR

pytestmark = pytest.mark.spark

TEST_FILE = PROJECT_DIR / "tests" / "dbt" / "lifecycle_deliveries_are_the_attempts.sql"
CHECKED_FILES = PROJECT_DIR / "macros" / "testing" / "checked_files.sql"


def _failing(spark, changed: list[list[str]] | None) -> set[tuple]:
    environment = Environment(extensions=["jinja2.ext.do"])
    in_partitions = environment.from_string(CHECKED_FILES.read_text()).module.in_partitions
    tables = {
        "message_lifecycles": "lifecycles_under_test",
        "consume_attempts": "attempts_under_test",
    }
    sql = environment.from_string(TEST_FILE.read_text()).render(
        config=lambda **_: "",
        ref=tables.__getitem__,
        partitions_changed_since_pass=lambda name, relations, columns: changed,
        in_partitions=in_partitions,
    )
    return {
        (row.msg_id, row.lifecycle_hour, row.deliveries, row.attempts)
        for row in spark.sql(sql).collect()
    }


def test_deliveries_are_counted_partition_by_partition(spark) -> None:
    spark.sql(
        """
        create or replace temporary view lifecycles_under_test as
        select 'g' as consumer_group, msg_id, date'2026-01-01' as lifecycle_date,
            lifecycle_hour, deliveries
        from values ('agrees', 1, 2), ('moved', 1, 1), ('short', 2, 3)
        as lifecycles(msg_id, lifecycle_hour, deliveries)
        """
    )
    spark.sql(
        """
        create or replace temporary view attempts_under_test as
        select 'g' as consumer_group, msg_id, date'2026-01-01' as lifecycle_date, lifecycle_hour
        from values ('agrees', 1), ('agrees', 1), ('moved', 2), ('short', 2), ('short', 2)
        as attempts(msg_id, lifecycle_hour)
        """
    )
    everything = {("moved", 1, 1, None), ("moved", 2, None, 1), ("short", 2, 3, 2)}
    assert _failing(spark, None) == everything
    assert _failing(spark, [["2026-01-01", "2"]]) == {("moved", 2, None, 1), ("short", 2, 3, 2)}
    assert _failing(spark, [["2026-01-01", "1"]]) == {("moved", 1, 1, None)}
    assert _failing(spark, []) == set()
