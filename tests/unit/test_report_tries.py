"""The report counts a message's tries, not a broadcasting group's copies to its other
instances: a broadcast message delivered once to each of three instances is not retried."""

from __future__ import annotations

from pathlib import Path

from retrylake.analyst.report import render_report
from retrylake.lakehouse import Lakehouse
from tests.unit.test_dlq_work_list import DLQ_COLUMNS, ROWS, _other_marts, _write, _write_rows


def test_broadcast_copies_are_not_tries(tmp_path: Path):
    lake = Lakehouse(tmp_path, tmp_path / "landing")
    marts = lake.warehouse / "retrylake.db"
    _write_rows(marts / "dlq_messages" / "part-0.parquet", DLQ_COLUMNS, ROWS)
    _other_marts(marts)
    # two clustering messages (one retried twice), and a broadcast one on three instances
    _write(
        marts / "message_lifecycles" / "part-0.parquet",
        "select * from (values "
        "('order-service', 'm1', 'o1', 'Orders', 'k1', 1, 0, 'CONSUMED', "
        "timestamp '2026-03-01 10:00:00', 0), "
        "('order-service', 'm2', 'o2', 'Orders', 'k2', 3, 0, 'CONSUMED', "
        "timestamp '2026-03-01 10:01:00', 40000), "
        "('cache-invalidator', 'm1', 'o1', 'Orders', 'k1', 3, 2, 'CONSUMED', "
        "timestamp '2026-03-01 10:00:00', 30)) "
        "as t(consumer_group, msg_id, origin_msg_id, topic, keys, deliveries, broadcast_copies, "
        "final_state, last_consume_at, time_to_success_ms)",
    )
    html = render_report(lake)
    assert "<span>1 retried</span>" in html
    assert "2 messages were consumed on their first delivery" in html
    # the most failed messages: the retried one only
    assert html.count("<td>m2</td>") == 1 and "cache-invalidator</td><td>m1" not in html
