"""The data test `dead_letters_and_lifecycles_agree` (tests/dbt), rendered from its file with its
refs pointing at rows written here: it returns exactly the lifecycles that disagree with the
work list (in the DLQ with no entry; with an entry and no dlq_at), and leaves an entry of an
untraced message alone."""

import pytest
from jinja2 import Environment

from tests.conftest import PROJECT_DIR

pytestmark = pytest.mark.spark

TEST_FILE = PROJECT_DIR / "tests" / "dbt" / "dead_letters_and_lifecycles_agree.sql"


def test_returns_the_lifecycles_that_disagree_with_the_work_list(spark) -> None:
    spark.sql(
        """
        create or replace temporary view lifecycles_under_test as
        select consumer_group, msg_id, final_state, timestamp(dlq_at) as dlq_at
        from values
            ('g', 'in-dlq', 'DLQ', '2026-01-01 00:00:00'),
            ('g', 'in-dlq-no-entry', 'DLQ', '2026-01-01 00:00:00'),
            ('g', 'recovered', 'CONSUMED', '2026-01-01 00:00:00'),
            ('g', 'entry-no-dlq-at', 'CONSUMED', null),
            ('g', 'consumed', 'CONSUMED', null),
            ('other', 'in-dlq-no-entry', 'WAITING_RETRY', null)
        as lifecycles(consumer_group, msg_id, final_state, dlq_at)
        """
    )
    spark.sql(
        """
        create or replace temporary view dead_letters_under_test as
        select * from values
            ('g', 'in-dlq'), ('g', 'in-dlq'), ('g', 'recovered'), ('g', 'entry-no-dlq-at'),
            ('g', 'untraced'), ('other', 'in-dlq')
        as dlq_messages(consumer_group, msg_id)
        """
    )
    tables = {
        "message_lifecycles": "lifecycles_under_test",
        "dlq_messages": "dead_letters_under_test",
    }
    sql = Environment().from_string(TEST_FILE.read_text()).render(ref=tables.__getitem__)
    failing = {
        (row.consumer_group, row.msg_id, row.final_state, row.entries)
        for row in spark.sql(sql).collect()
    }
    assert failing == {
        ("g", "in-dlq-no-entry", "DLQ", 0),
        ("g", "entry-no-dlq-at", "CONSUMED", 1),
    }
