"""The mart `dlq_reconciliation`, rendered from its model file with its refs pointing at rows
written here: per group, the dead letters by evidence, and how many DLQ topics they sit in (two
instances in different namespaces that share a group's name, spec §7)."""

import pytest
from jinja2 import Environment

from tests.conftest import PROJECT_DIR

pytestmark = pytest.mark.spark

MODEL_FILE = PROJECT_DIR / "models" / "marts" / "dlq" / "dlq_reconciliation.sql"


def test_a_group_name_shared_across_namespaces_shows_its_dlq_topics(spark) -> None:
    spark.sql(
        """
        create or replace temporary view dead_letters_under_test as
        select
            consumer_group, dlq_topic, evidence,
            cast(null as timestamp) as recovered_at,
            cast(null as timestamp) as observed_stored_at,
            cast(null as string) as recovery_consumer_group,
            cast(null as int) as implied_max_reconsume_times,
            cast(null as int) as observed_reconsume_times,
            false as max_reconsume_drift
        from values
            ('shared', '%DLQ%ns1%shared', 'BOTH'),
            ('shared', '%DLQ%ns2%shared', 'OBSERVED'),
            ('shared', '%DLQ%ns2%shared', 'PREDICTED'),
            ('plain', '%DLQ%plain', 'BOTH'),
            ('plain', '%DLQ%plain', 'BOTH')
        as t(consumer_group, dlq_topic, evidence)
        """
    )
    spark.sql(
        """
        create or replace temporary view groups_under_test as
        select * from values ('shared', 16), ('plain', 16)
        as t(consumer_group, effective_max_reconsume_times)
        """
    )
    tables = {
        "dlq_messages": "dead_letters_under_test",
        "int_consumer_group_settings": "groups_under_test",
    }
    sql = Environment().from_string(MODEL_FILE.read_text()).render(ref=tables.__getitem__)
    found = {
        row.consumer_group: (
            row.dlq_topic,
            row.dlq_topic_count,
            row.dead_letters,
            row.predicted_and_observed,
        )
        for row in spark.sql(sql).collect()
    }
    assert found == {
        "shared": ("%DLQ%ns1%shared", 2, 3, 1),
        "plain": ("%DLQ%plain", 1, 2, 2),
    }
