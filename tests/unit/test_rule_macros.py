"""The rule macros of macros/rules, rendered from their files and run on the session's Spark:
the delay a level of zero or less waits, and the names a namespace and a pop retry topic give.
Expected values are the spec's (§2.3, §7, §8.4), written as literals."""

from __future__ import annotations

import pytest

from tests.conftest import rule_macros

pytestmark = pytest.mark.spark


def _values(spark, expression: str, rows: list[tuple]) -> list:
    """``expression`` over ``rows`` of (a, b), in their order."""
    values = ", ".join(
        "(" + ", ".join("null" if v is None else f"'{v}'" for v in row) + ")" for row in rows
    )
    sql = (
        f"select {expression} as value from values {values} as t(a, b)"
        if len(rows[0]) == 2
        else f"select {expression} as value from values {values} as t(a)"
    )
    return [row.value for row in spark.sql(sql).collect()]


def test_a_delay_level_of_zero_or_less_is_delivered_at_once(spark) -> None:
    # "-1s" and "0s" parse (spec §2.3); their deliver time is never ahead of now, so no wait
    spark.sql(
        "create or replace temporary view clusters_under_test as select * from values "
        "('c', '-1s 0s 5s 2h') as clusters(broker_cluster, message_delay_level)"
    )
    sql = str(rule_macros().delay_level_rows("clusters_under_test", ["broker_cluster"]))
    rows = spark.sql(sql).orderBy("level").collect()
    assert [(r.level, r.token, r.delay_ms, r.schedule_queue_id, r.is_max_level) for r in rows] == [
        (1, "-1s", 0, 0, False),
        (2, "0s", 0, 1, False),
        (3, "5s", 5_000, 2, False),
        (4, "2h", 7_200_000, 3, True),
    ]


def test_names_in_a_namespace_unwrap_and_wrap_as_namespace_util_does(spark) -> None:
    macros = rule_macros()
    names = [
        None, "", "G", "ns%G", "%DLQ%ns%G", "%RETRY%ns%G", "%DLQ%G", "%G", "%DLQ%%G", "a%b%c",
        "%RETRY%%G", "%RETRYX%G", "abc%RETRY%x", "%DLQ%", "p$1%G",
    ]  # fmt: skip
    rows = [(name,) for name in names]
    assert _values(spark, str(macros.without_namespace("a")), rows) == [
        None, "", "G", "G", "%DLQ%G", "%RETRY%G", "%DLQ%G", "%G", "%DLQ%%G", "b%c",
        "%RETRY%%G", "%RETRYX%G", "RETRY%x", "%DLQ%", "G",
    ]  # fmt: skip
    assert _values(spark, str(macros.namespace_of("a")), rows) == [
        None, None, None, "ns", "ns", "ns", None, None, None, "a",
        None, None, "abc", None, "p$1",
    ]  # fmt: skip
    wrapped = str(macros.with_namespace("'ns'", "a"))
    assert _values(spark, wrapped, [("G",), ("%DLQ%G",), ("%RETRY%G",), (None,)]) == [
        "ns%G", "%DLQ%ns%G", "%RETRY%ns%G", None,
    ]  # fmt: skip
    assert _values(spark, str(macros.with_namespace("null", "a")), [("%DLQ%G",)]) == ["%DLQ%G"]


def test_a_pop_retry_topic_in_a_namespace_names_the_trace_group_and_topic(spark) -> None:
    # KeyBuilder.buildPopRetryTopic of the broker's names: %RETRY%ns%G_ns%T (v1), + in v2
    expression = str(rule_macros().trace_side_topic("a", "b"))
    rows = [
        ("%RETRY%ns%G_ns%T", "ns%G"),
        ("%RETRY%ns%G+ns%T", "ns%G"),
        ("ns%T", "ns%G"),  # a 4.x copy's RETRY_TOPIC
        ("%RETRY%ns%other_ns%T", "ns%G"),  # another group's topic: withoutNamespace only
        ("%RETRY%G_T", "G"),
        ("T", "G"),
        (None, "ns%G"),
    ]
    assert _values(spark, expression, rows) == [
        "%RETRY%G_T", "%RETRY%G+T", "T", "%RETRY%other_ns%T", "%RETRY%G_T", "T", None,
    ]  # fmt: skip
    # each macro names its argument once, so nested they grow with their input, not by a copy
    # per use (the copies once made 14 KB of SQL of one column)
    assert str(rule_macros().trace_side_topic("topic_in", "group_in")).count("topic_in") < 16


def test_the_topic_of_a_pop_retry_topic_is_the_topic_it_retries(spark) -> None:
    # KeyBuilder.parseNormalTopic; a 4.x retry topic and a plain topic stay as they are
    expression = str(rule_macros().topic_of_pop_retry_topic("a", "b"))
    rows = [
        ("%RETRY%G_T", "G"),
        ("%RETRY%G+T", "G"),
        ("%RETRY%G_a_b", "G"),
        ("%RETRY%G", "G"),
        ("T", "G"),
        ("%RETRY%H_T", "G"),
        (None, "G"),
    ]
    assert _values(spark, expression, rows) == [
        "T",
        "T",
        "a_b",
        "%RETRY%G",
        "T",
        "%RETRY%H_T",
        None,
    ]
