"""The what-if build's data test `whatif_settings_apply_to_their_groups` (tests/dbt), rendered
from its file with its refs pointing at rows written here: a scenario row that sets what its
group's client line does not read is returned, whatever line the group got (the seed's, or
grpc-5 for a group seen only in 5.x inputs), and so is a row for a group that neither the seed
nor the data names; the settings a line reads pass."""

import pytest
from jinja2 import Environment

from tests.conftest import PROJECT_DIR

pytestmark = pytest.mark.spark

TEST_FILE = PROJECT_DIR / "tests" / "dbt" / "whatif_settings_apply_to_their_groups.sql"
GRPC_RULES = PROJECT_DIR / "macros" / "rules" / "grpc_retry_rules.sql"


def test_a_setting_the_groups_line_does_not_read_is_returned(spark) -> None:
    spark.sql(
        """
        create or replace temporary view scenario_groups_under_test as
        select * from values
            ('s', 'remoting', 5, null, null),
            ('s', 'remoting-told-5x', null, 5, null),
            ('s', 'remoting-policy', null, null, '{"type":"EXPONENTIAL"}'),
            ('s', 'spans-only', 5, null, null),
            ('s', 'spans-only-5x', null, 5, '{"type":"EXPONENTIAL"}'),
            ('s', 'cloud', 3, null, null),
            ('s', 'unseen', 5, 5, null)
        as t(scenario, consumer_group, max_reconsume_times, retry_max_times, group_retry_policy)
        """
    )
    spark.sql(
        """
        create or replace temporary view groups_under_test as
        select * from values
            ('remoting', 'remoting-4.9'), ('remoting-told-5x', 'remoting-5'),
            ('remoting-policy', 'remoting-4.9'), ('spans-only', 'grpc-5'),
            ('spans-only-5x', 'grpc-5'), ('cloud', 'cloud-5')
        as t(consumer_group, client_line)
        """
    )
    tables = {
        "stg_config__whatif_consumer_groups": "scenario_groups_under_test",
        "int_consumer_group_settings": "groups_under_test",
    }
    sql = _render(tables, execute=True, load_relation=lambda relation: relation)
    failing = {
        (row.consumer_group, row.client_line, row.setting_not_read)
        for row in spark.sql(sql).collect()
    }
    assert failing == {
        ("remoting-told-5x", "remoting-5", "retry_max_times"),
        ("remoting-policy", "remoting-4.9", "group_retry_policy"),
        ("spans-only", "grpc-5", "max_reconsume_times"),
        ("cloud", "cloud-5", "max_reconsume_times"),
        ("unseen", None, "every setting: no seed row and no data name this group"),
    }


def test_a_lakehouse_whose_what_if_was_never_built_has_nothing_to_check(spark) -> None:
    """A selection of ledger models (`--select +consume_attempts`) picks the test up through the
    settings it reads: with no what-if staging table it returns no row, and names no table that
    is not there."""
    spark.sql(
        "create or replace temporary view groups_under_test as "
        "select * from values ('remoting', 'remoting-4.9') as t(consumer_group, client_line)"
    )
    tables = {
        "stg_config__whatif_consumer_groups": "no_such_table_here",
        "int_consumer_group_settings": "groups_under_test",
    }
    sql = _render(tables, execute=True, load_relation=lambda relation: None)
    assert "no_such_table_here" not in sql
    assert spark.sql(sql).collect() == []


def _render(tables: dict[str, str], **context) -> str:
    macros = Environment().from_string(GRPC_RULES.read_text()).module
    return (
        Environment()
        .from_string(TEST_FILE.read_text())
        .render(
            config=lambda **_: "",
            ref=tables.__getitem__,
            is_grpc_client_line=macros.is_grpc_client_line,
            **context,
        )
    )
