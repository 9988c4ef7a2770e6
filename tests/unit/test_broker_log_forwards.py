"""`stg_broker_log__dlq_forwards`, rendered from its file with its ref pointing at lines written
here: a DLQ log line landed twice counts once, known by the consumerId as the broker logged it
(as `landing_ignored` counts the repeats), so two instances whose groups share a name outside
their namespaces keep a forward each, each unwrapped as the trace names it (spec §7)."""

import pytest
from jinja2 import Environment

from tests.conftest import PROJECT_DIR, rule_macros

pytestmark = pytest.mark.spark

MODEL = PROJECT_DIR / "models" / "staging" / "stg_broker_log__dlq_forwards.sql"


def test_a_line_landed_again_counts_once_and_each_namespace_keeps_its_forward(spark) -> None:
    spark.sql(
        """
        create or replace temporary view broker_log_lines_under_test as
        select
            line_kind, line_error, consumer_group, dlq_topic, msg_id, original_topic,
            timestamp_millis(stored_ms) as stored_at, load_id, source_file, line_number
        from values
            ('DLQ', null, 'a%G', '%DLQ%a%G', 'M1', 'a%T', 1000, 1, 'f1', 1),
            ('DLQ', null, 'b%G', '%DLQ%b%G', 'M1', 'b%T', 1000, 1, 'f1', 2),
            ('DLQ', null, 'a%G', '%DLQ%a%G', 'M1', 'a%T', 1000, 2, 'f2', 7),
            ('DLQ', null, 'G', '%DLQ%G', 'M1', '%RETRY%G_T', 1000, 1, 'f1', 3),
            ('DLQ', 'not a DLQ line', 'G', '%DLQ%G', 'M2', 'T', 1000, 1, 'f1', 4),
            ('OTHER', null, 'G', '%DLQ%G', 'M3', 'T', 1000, 1, 'f1', 5)
        as t(line_kind, line_error, consumer_group, dlq_topic, msg_id, original_topic,
             stored_ms, load_id, source_file, line_number)
        """
    )
    macros = rule_macros()
    sql = (
        Environment()
        .from_string(MODEL.read_text())
        .render(
            config=lambda **_: "",
            ref={"stg_landing__broker_log_lines": "broker_log_lines_under_test"}.__getitem__,
            without_namespace=macros.without_namespace,
            namespace_of=macros.namespace_of,
            trace_side_topic=macros.trace_side_topic,
        )
    )
    forwards = {
        (row.consumer_group, row.namespace, row.dlq_topic, row.original_topic, row.source_file,
         row.line_number)
        for row in spark.sql(sql).collect()
    }  # fmt: skip
    assert forwards == {
        ("G", "a", "%DLQ%a%G", "T", "f1", 1),
        ("G", "b", "%DLQ%b%G", "T", "f1", 2),
        ("G", None, "%DLQ%G", "%RETRY%G_T", "f1", 3),  # the trace's name of the pop retry topic
    }
