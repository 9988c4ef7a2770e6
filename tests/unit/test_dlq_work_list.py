"""`retrylake dlq-export` and the report's DLQ reasons on small mart files written by DuckDB:
a re-send command only for the copy consumers received, a per-group command, no command for a
recovered dead letter, and a lakehouse built by the previous model version still works."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import duckdb
import pytest

from retrylake.analyst.dlq_export import (
    COMMAND_COLUMNS,
    commands_for,
    dlq_work_list,
    parse_mqadmin_version,
)
from retrylake.analyst.report import render_report
from retrylake.cli import main
from retrylake.errors import UsageError
from retrylake.lakehouse import Lakehouse

NS = "10.0.0.1:9876"

# Offset ids: store host 10.0.0.1:10911 (0A000001 00002A9F) and a commit log offset.
ORIGINAL = "0A00000100002A9F0000000000000100"  # a NORMAL message as published and consumed
SCHEDULED = "0A00000100002A9F0000000000000200"  # a delayed message's SCHEDULE_TOPIC_XXXX copy
RECEIVED_DELAYED = "0A00000100002A9F0000000000000300"  # its copy re-put into the topic
SCHEDULED_2 = "0A00000100002A9F0000000000000250"
HALF = "0A00000100002A9F0000000000000400"  # a transactional message's half message
HALF_2 = "0A00000100002A9F0000000000000450"
COMMITTED = "0A00000100002A9F0000000000000500"  # its committed copy in the topic
UNTRACED = "0A00000100002A9F0000000000000600"  # no Pub: ORIGIN_MESSAGE_ID of the DLQ copy
RECOVERED = "0A00000100002A9F0000000000000700"
DLQ_NORMAL = "0A00000100002A9F0000000000010100"  # copies stored in %DLQ%<group>
DLQ_DELAYED = "0A00000100002A9F0000000000010300"
DLQ_TX = "0A00000100002A9F0000000000010400"
DLQ_TX_2 = "0A00000100002A9F0000000000010500"
DLQ_UNTRACED = "0A00000100002A9F0000000000010600"
DLQ_NO_ORIGIN = "0A00000100002A9F0000000000010700"

DLQ_COLUMNS = """
    consumer_group varchar, dlq_topic varchar, msg_id varchar, dlq_entry_number integer,
    origin_msg_id varchar, origin_kind varchar, published_offset_msg_id varchar, topic varchar,
    keys varchar, tags varchar, reconsume_times integer, deliveries integer,
    last_failed_at timestamp, entered_dlq_at timestamp, reason varchar, evidence varchar,
    prediction_basis varchar, reconciliation_reason varchar, observed_offset_msg_id varchar,
    observed_stored_at timestamp, observed_reconsume_times integer, observed_retry_topic varchar,
    observed_origin_msg_id varchar, recovered_at timestamp, recovered_by varchar,
    recovery_consumer_group varchar
"""


def _dlq(group, msg_id, minute, kind, origin, published, evidence, observed=None, **extra):
    """One dlq_messages row in the new model's shape; ``minute`` past 2026-03-01 10:00."""
    topic = {"order-service": "Orders", "payment-ledger": "Payments"}.get(group, "Stock")
    row = {
        "consumer_group": group,
        "dlq_topic": f"%DLQ%{group}",
        "msg_id": msg_id,
        "dlq_entry_number": 1,
        "origin_msg_id": origin,
        "origin_kind": kind,
        "published_offset_msg_id": published,
        "topic": topic,
        "keys": f"k-{msg_id[-2:]}",
        "tags": "TagA",
        "reconsume_times": 17,
        "deliveries": 17 if evidence != "OBSERVED" else None,
        "last_failed_at": f"2026-03-01 10:{minute:02d}:00" if evidence != "OBSERVED" else None,
        "entered_dlq_at": f"2026-03-01 10:{minute:02d}:00.250",
        "reason": "MAX_RECONSUME_EXCEEDED" if evidence != "OBSERVED" else "UNKNOWN",
        "evidence": evidence,
        "prediction_basis": "EXACT" if evidence != "OBSERVED" else None,
        "reconciliation_reason": None,
        "observed_offset_msg_id": observed,
        "observed_stored_at": f"2026-03-01 10:{minute:02d}:00.250" if observed else None,
        "observed_reconsume_times": 17 if observed else None,
        "observed_retry_topic": topic if observed else None,
        "observed_origin_msg_id": origin if observed else None,
        "recovered_at": None,
        "recovered_by": None,
        "recovery_consumer_group": None,
    }
    row.update(extra)
    return row


ROWS = [
    _dlq("order-service", "AC11000100002A9F0000000000000001", 0, "NORMAL", ORIGINAL, ORIGINAL,
         "BOTH", DLQ_NORMAL),
    _dlq("order-service", "AC11000100002A9F0000000000000002", 1, "DELAYED", None, SCHEDULED,
         "PREDICTED", reconciliation_reason="GROUP_NOT_EXPORTED"),
    _dlq("order-service", "AC11000100002A9F0000000000000003", 2, "DELAYED", RECEIVED_DELAYED,
         SCHEDULED_2, "BOTH", DLQ_DELAYED),
    _dlq("payment-ledger", "AC11000100002A9F0000000000000004", 3, "TRANSACTIONAL", None, HALF,
         "BOTH", DLQ_TX),
    _dlq("payment-ledger", "AC11000100002A9F0000000000000005", 4, "TRANSACTIONAL", COMMITTED,
         HALF_2, "BOTH", DLQ_TX_2),
    _dlq("inventory-sync", "AC11000100002A9F0000000000000006", 5, "UNKNOWN", UNTRACED, None,
         "OBSERVED", DLQ_UNTRACED, reconciliation_reason="NOT_IN_TRACE"),
    # an orderly 4.9.x client's DLQ copy: no ORIGIN_MESSAGE_ID, and no Pub record either
    _dlq("inventory-sync", "AC11000100002A9F0000000000000007", 6, "UNKNOWN", None, None,
         "OBSERVED", DLQ_NO_ORIGIN, reconciliation_reason="NOT_IN_TRACE"),
    _dlq("order-service", "AC11000100002A9F0000000000000008", 7, "NORMAL", RECOVERED, RECOVERED,
         "BOTH", recovered_at="2026-03-01 12:00:00", recovered_by="RESEND"),
]  # fmt: skip


def _write_rows(path: Path, columns: str, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    connection = duckdb.connect()
    connection.execute(f"create table t ({columns})")
    names = [part.split()[0] for part in columns.replace("\n", " ").split(",")]
    connection.executemany(
        f"insert into t values ({', '.join('?' * len(names))})",
        [[row[name] for name in names] for row in rows],
    )
    connection.execute(f"copy t to '{path}' (format parquet)")
    connection.close()


def _write(path: Path, sql: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    duckdb.execute(f"copy ({sql}) to '{path}' (format parquet)")


def _other_marts(marts: Path) -> None:
    """The marts the report reads besides the DLQ ones, one or two rows each."""
    _write(
        marts / "message_lifecycles" / "part-0.parquet",
        "select * from (values "
        "('order-service', 'm1', 'o1', 'Orders', 'k1', 1, 'CONSUMED', "
        "timestamp '2026-03-01 10:00:00', 0), "
        "('order-service', 'm2', 'o2', 'Orders', 'k2', 3, 'CONSUMED', "
        "timestamp '2026-03-01 10:01:00', 40000)) "
        "as t(consumer_group, msg_id, origin_msg_id, topic, keys, deliveries, final_state, "
        "last_consume_at, time_to_success_ms)",
    )
    _write(
        marts / "consume_attempts" / "part-0.parquet",
        "select * from (values "
        "('order-service', 'm2', false, timestamp '2026-03-01 10:00:00'), "
        "('order-service', 'm2', true, timestamp '2026-03-01 10:00:40')) "
        "as t(consumer_group, msg_id, is_success, consume_started_at)",
    )
    _write(
        marts / "retry_decisions" / "part-0.parquet",
        "select 'RETRY' as decision, 3 as delay_level, 10000 as delay_ms, 120 as redelivery_lag_ms",
    )


@pytest.fixture()
def lakehouse(tmp_path: Path) -> Lakehouse:
    lake = Lakehouse(tmp_path, tmp_path / "landing")
    marts = lake.warehouse / "retrylake.db"
    _write_rows(marts / "dlq_messages" / "dlq_date=2026-03-01" / "part-0.parquet", DLQ_COLUMNS,
                ROWS[:4])  # fmt: skip
    _write_rows(marts / "dlq_messages" / "dlq_date=2026-03-02" / "part-0.parquet", DLQ_COLUMNS,
                ROWS[4:])  # fmt: skip
    _write(
        marts / "dlq_reconciliation" / "part-0.parquet",
        "select * from (values "
        "('order-service', '%DLQ%order-service', 4, 2, 3, 16, 16, false), "
        "('inventory-sync', '%DLQ%inventory-sync', 0, 2, 0, 3, 5, true)) "
        'as t(consumer_group, dlq_topic, predicted, observed, "both", '
        "effective_max_reconsume_times, "
        "implied_max_reconsume_times, max_reconsume_drift)",
    )
    _other_marts(marts)
    return lake


@pytest.fixture()
def old_lakehouse(tmp_path: Path) -> Lakehouse:
    """A lakehouse built by the previous model version: the old dlq_messages columns and no
    dlq_reconciliation."""
    lake = Lakehouse(tmp_path, tmp_path / "landing")
    marts = lake.warehouse / "retrylake.db"
    _write(
        marts / "dlq_messages" / "part-0.parquet",
        f"select 'order-service' as consumer_group, '%DLQ%order-service' as dlq_topic, "
        f"'AC11000100002A9F0000000000000001' as msg_id, '{ORIGINAL}' as origin_msg_id, "
        "'Orders' as topic, 'k' as keys, 'TagA' as tags, 17 as reconsume_times, "
        "timestamp '2026-03-01 10:00:00' as entered_dlq_at, "
        "'MAX_RECONSUME_EXCEEDED' as reason, 'PREDICTED' as evidence, "
        "'EXACT' as prediction_basis, cast(null as varchar) as observed_offset_msg_id, "
        "cast(null as timestamp) as recovered_at",
    )
    _other_marts(marts)
    return lake


def _by_msg(rows: list[dict]) -> dict[str, dict]:
    return {row["msg_id"][-1]: row for row in rows}


def test_the_columns_of_the_export(lakehouse: Lakehouse):
    columns, rows = dlq_work_list(lakehouse)
    assert columns == [
        "consumer_group",
        "namespace",
        "dlq_topic",
        "msg_id",
        "origin_msg_id",
        "topic",
        "keys",
        "tags",
        "reconsume_times",
        "entered_dlq_at",
        "reason",
        "evidence",
        "origin_kind",
        "published_offset_msg_id",
        "reconciliation_reason",
        "observed_offset_msg_id",
        "observed_stored_at",
        "observed_reconsume_times",
        "recovered_at",
        "recovered_by",
        "recovery_consumer_group",
        "dlq_entry_number",
        "resend_command",
        "lookup_command",
        "resend_note",
        "group_command",
        "group_note",
    ]
    assert [row["msg_id"][-1] for row in rows] == list("12345678")  # oldest first
    first = rows[0]
    assert first["entered_dlq_at"] == "2026-03-01T10:00:00.250Z"
    assert first["observed_stored_at"] == "2026-03-01T10:00:00.250Z"
    assert first["recovered_at"] is None
    assert _by_msg(rows)["6"]["reconciliation_reason"] == "NOT_IN_TRACE"


def test_a_normal_message_is_re_sent_from_its_original(lakehouse: Lakehouse):
    row = _by_msg(dlq_work_list(lakehouse, namesrv=NS)[1])["1"]
    assert row["resend_command"] == (
        "mqadmin queryMsgById -n 10.0.0.1:9876 -i 0A00000100002A9F0000000000000100 -s true"
    )
    assert row["lookup_command"] is None
    assert "every consumer group subscribed to Orders receives it again" in row["resend_note"]
    # one client of the group consumes the copy consumers received, not the DLQ copy
    assert row["group_command"] == (
        "mqadmin queryMsgById -n 10.0.0.1:9876 -i 0A00000100002A9F0000000000000100 "
        "-g order-service -d <clientId>"
    )
    note = row["group_note"]
    assert "mqadmin consumerConnection -n 10.0.0.1:9876 -g order-service" in note
    assert "no other client or group receives it" in note
    assert "the group's offsets are untouched" in note
    assert "without the consume hooks, so the trace records nothing" in note


def test_a_delayed_message_is_never_re_sent_from_its_schedule_copy(lakehouse: Lakehouse):
    rows = _by_msg(dlq_work_list(lakehouse, namesrv=NS)[1])
    unseen = rows["2"]  # predicted only: the Pub id is the SCHEDULE_TOPIC_XXXX copy
    assert unseen["resend_command"] is None
    assert unseen["lookup_command"] == (
        "mqadmin queryMsgByUniqueKey -n 10.0.0.1:9876 -i AC11000100002A9F0000000000000002 -t Orders"
    )
    assert (
        "0A00000100002A9F0000000000000200 is the SCHEDULE_TOPIC_XXXX copy"
        in (unseen["resend_note"])
    )
    assert "Predicted only (GROUP_NOT_EXPORTED)" in unseen["resend_note"]
    assert unseen["group_command"] == (
        "mqadmin queryMsgByUniqueKey -n 10.0.0.1:9876 -i AC11000100002A9F0000000000000002 "
        "-t Orders -g order-service -d <clientId>"
    )
    seen = rows["3"]  # the DLQ copy's ORIGIN_MESSAGE_ID names the copy re-put into Orders
    assert seen["resend_command"] == (
        "mqadmin queryMsgById -n 10.0.0.1:9876 -i 0A00000100002A9F0000000000000300 -s true"
    )
    assert "waits its delay level again" in seen["resend_note"]
    assert seen["group_command"] == (
        "mqadmin queryMsgById -n 10.0.0.1:9876 -i 0A00000100002A9F0000000000000300 "
        "-g order-service -d <clientId>"
    )


def test_a_transactional_message_is_never_re_sent_from_its_half_message(lakehouse: Lakehouse):
    rows = _by_msg(dlq_work_list(lakehouse)[1])
    half = rows["4"]
    assert half["resend_command"] is None
    assert half["lookup_command"] == (
        "mqadmin queryMsgByUniqueKey -i AC11000100002A9F0000000000000004 -t Payments"
    )
    assert "is the half message, which must never be re-sent" in half["resend_note"]
    # the observed DLQ copy is the only offset id of the message as consumers got it
    assert half["group_command"] == (
        "mqadmin queryMsgById -i 0A00000100002A9F0000000000010400 -g payment-ledger -d <clientId>"
    )
    assert "its listener sees topic %DLQ%payment-ledger, not Payments" in half["group_note"]
    committed = rows["5"]
    assert committed["resend_command"] == (
        "mqadmin queryMsgById -i 0A00000100002A9F0000000000000500 -s true"
    )
    assert "TRAN_MSG=true" in committed["resend_note"]
    assert "PGROUP" in committed["resend_note"]


def test_a_message_without_a_pub_record(lakehouse: Lakehouse):
    rows = _by_msg(dlq_work_list(lakehouse, namesrv=NS)[1])
    with_origin = rows["6"]  # a broker-path DLQ copy's ORIGIN_MESSAGE_ID
    assert with_origin["resend_command"] == (
        "mqadmin queryMsgById -n 10.0.0.1:9876 -i 0A00000100002A9F0000000000000600 -s true"
    )
    assert "its kind is unknown" in with_origin["resend_note"]
    without = rows["7"]
    assert without["resend_command"] is None
    assert without["lookup_command"] == (
        "mqadmin queryMsgByUniqueKey -n 10.0.0.1:9876 -i AC11000100002A9F0000000000000007 -t Stock"
    )
    assert without["group_command"] == (
        "mqadmin queryMsgById -n 10.0.0.1:9876 -i 0A00000100002A9F0000000000010700 "
        "-g inventory-sync -d <clientId>"
    )


def test_a_recovered_dead_letter_gets_no_command(lakehouse: Lakehouse):
    row = _by_msg(dlq_work_list(lakehouse, namesrv=NS)[1])["8"]
    assert row["recovered_at"] == "2026-03-01T12:00:00.000Z"
    assert row["recovered_by"] == "RESEND"
    assert [row[c] for c in ("resend_command", "lookup_command", "group_command")] == [None] * 3
    assert row["resend_note"] == (
        "Already recovered at 2026-03-01T12:00:00.000Z by RESEND: no command."
    )
    assert row["group_note"] == row["resend_note"]


def test_mqadmin_5_3_names_the_stored_topic_of_the_copy(lakehouse: Lakehouse):
    rows = _by_msg(dlq_work_list(lakehouse, namesrv=NS, mqadmin_version=(5, 3))[1])
    assert rows["1"]["resend_command"] == (
        "mqadmin queryMsgById -n 10.0.0.1:9876 -t Orders -i 0A00000100002A9F0000000000000100 "
        "-s true"
    )
    assert rows["4"]["group_command"] == (
        "mqadmin queryMsgById -n 10.0.0.1:9876 -t %DLQ%payment-ledger "
        "-i 0A00000100002A9F0000000000010400 -g payment-ledger -d <clientId>"
    )
    # queryMsgByUniqueKey has always taken -t
    assert rows["2"]["lookup_command"] == (
        "mqadmin queryMsgByUniqueKey -n 10.0.0.1:9876 -i AC11000100002A9F0000000000000002 -t Orders"
    )


def test_a_client_path_origin_that_is_the_msg_id_is_no_offset_id():
    msg_id = "AC11000100002A9F0000000000000009"
    row = _dlq("inventory-sync", msg_id, 9, "UNKNOWN", msg_id, None, "OBSERVED")
    commands = commands_for(row)
    assert commands["resend_command"] is None
    assert commands["lookup_command"] == f"mqadmin queryMsgByUniqueKey -i {msg_id} -t Stock"


def test_a_group_in_a_namespace_is_named_as_the_broker_stores_it():
    """The mart names a group and its topic as the trace does; mqadmin needs the broker's names,
    `ns%G` and `ns%T` (spec §7), and the DLQ copy's topic as stored, `%DLQ%ns%G`."""
    row = _dlq(
        "order-service",
        "AC11000100002A9F0000000000000011",
        11,
        "NORMAL",
        "0A00000100002A9F0000000000001100",
        "0A00000100002A9F0000000000001100",
        "BOTH",
        observed="0A00000100002A9F0000000000011100",
        namespace="MQ_INST_1_demo",
        dlq_topic="%DLQ%MQ_INST_1_demo%order-service",
    )
    commands = commands_for(row, mqadmin_version=(5, 3))
    assert commands["resend_command"] == (
        "mqadmin queryMsgById -t MQ_INST_1_demo%Orders -i 0A00000100002A9F0000000000001100 -s true"
    )
    assert commands["group_command"] == (
        "mqadmin queryMsgById -t MQ_INST_1_demo%Orders -i 0A00000100002A9F0000000000001100 "
        "-g MQ_INST_1_demo%order-service -d <clientId>"
    )
    assert "consumerConnection -g MQ_INST_1_demo%order-service" in commands["group_note"]
    without_pub = commands_for(
        {**row, "origin_msg_id": None, "published_offset_msg_id": None, "origin_kind": "UNKNOWN"},
        mqadmin_version=(5, 3),
    )
    assert without_pub["group_command"] == (
        "mqadmin queryMsgById -t %DLQ%MQ_INST_1_demo%order-service "
        "-i 0A00000100002A9F0000000000011100 -g MQ_INST_1_demo%order-service -d <clientId>"
    )
    # without a namespace the names stay as they are
    assert "-g order-service " in commands_for({**row, "namespace": None})["group_command"]
    # a 5.x pop retry topic as the mart has it (withoutNamespace of %RETRY%ns%G_ns%T), and a
    # name already in the namespace: wrapped after the prefix, and not twice (wrapNamespace)
    for topic, stored in (
        ("%RETRY%order-service_MQ_INST_1_demo%Orders", "%RETRY%MQ_INST_1_demo%order-service_"),
        ("MQ_INST_1_demo%Orders", "MQ_INST_1_demo%Orders"),
    ):
        lookup = commands_for(
            {**row, "origin_msg_id": None, "published_offset_msg_id": None, "topic": topic}
        )["lookup_command"]
        assert f"-t {stored}" in lookup, lookup


def test_filters_and_formats(lakehouse: Lakehouse, tmp_path: Path):
    out = tmp_path / "dlq.csv"
    args = ["dlq-export", "--lakehouse", str(lakehouse.root), "--namesrv", NS]
    assert main([*args, "--group", "payment-ledger", "--out", str(out)]) == 0
    kept = list(csv.DictReader(io.StringIO(out.read_text())))
    assert [row["msg_id"][-1] for row in kept] == ["4", "5"]
    assert kept[0]["resend_command"] == ""
    out = tmp_path / "dlq.jsonl"
    since = "2026-03-01T10:05:00Z"
    assert main([*args, "--since", since, "--format", "jsonl", "--out", str(out)]) == 0
    exported = [json.loads(line) for line in out.read_text().splitlines()]
    assert [row["msg_id"][-1] for row in exported] == ["6", "7", "8"]
    out = tmp_path / "dlq-5.jsonl"
    assert main([*args, "--mqadmin-version", "5.3.3", "--format", "jsonl", "--out", str(out)]) == 0
    assert " -t Orders " in json.loads(out.read_text().splitlines()[0])["resend_command"]
    assert main([*args, "--mqadmin-version", "latest"]) == 2


def test_mqadmin_versions():
    assert parse_mqadmin_version("4.9") == (4, 9)
    assert parse_mqadmin_version("5.3.3") == (5, 3)
    with pytest.raises(UsageError, match=r"4\.9 or 5\.3\.3"):
        parse_mqadmin_version("5")


def test_a_lakehouse_of_the_previous_model_version(old_lakehouse: Lakehouse):
    columns, rows = dlq_work_list(old_lakehouse, namesrv=NS)
    assert columns[-len(COMMAND_COLUMNS) :] == list(COMMAND_COLUMNS)
    (row,) = rows
    assert row["origin_kind"] is None and row["reconciliation_reason"] is None
    assert row["resend_command"] == (
        "mqadmin queryMsgById -n 10.0.0.1:9876 -i 0A00000100002A9F0000000000000100 -s true"
    )
    assert "built before dlq_messages had origin_kind" in row["resend_note"]


def test_the_report_of_the_previous_model_version(old_lakehouse: Lakehouse):
    html = render_report(old_lakehouse)
    assert "Dead letters per day" in html
    assert "seen on one side only" not in html and "drift" not in html


def test_the_report_shows_one_sided_dead_letters_and_drift(lakehouse: Lakehouse):
    html = render_report(lakehouse)
    assert "<h3>Dead letters seen on one side only</h3>" in html
    rows = [
        ("inventory-sync", "observed only", "NOT_IN_TRACE", "2"),
        ("order-service", "predicted only", "GROUP_NOT_EXPORTED", "1"),
    ]
    body = html.split('<table class="reasons">')[1].split("</table>")[0]
    assert body.count("<tr>") == 1 + len(rows)  # the header and one row per group and reason
    for row in rows:
        assert "<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" in body
    drift = html.split('<ul class="drift">')[1].split("</ul>")[0]
    assert drift == (
        "<li>inventory-sync: the rules apply maxReconsumeTimes 3, its DLQ copies imply 5. "
        "Check the consumer's setting and seeds/consumer_groups.csv.</li>"
    )
