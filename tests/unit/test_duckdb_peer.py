"""The DuckDB peer (retrylake.bench.duckdb_peer) on a tiny hand-written landing zone: every
expected value is written out from the spec's rules (shared/reference/rocketmq-retry-spec.md
§11, §8, docs/rules.md), not computed by the project's models or by the peer."""

from __future__ import annotations

import base64
import datetime as dt
import gzip
import json
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest

from retrylake.bench.duckdb_peer import PeerError, compare_with_marts, run_peer
from spark_udfs.snapshots import PUBLISHED_FOLDER, point_readers_at, snapshot_marts

T0 = 1_772_323_200_000  # 2026-03-01T00:00:00Z
WATERMARK = T0 + 3_600_000  # the latest store time in the landing below
EPOCH = dt.datetime(1970, 1, 1)

SEED_HEADER = (
    "consumer_group,message_model,consume_mode,max_reconsume_times,"
    "suspend_current_queue_time_millis,retry_queue_nums,delay_level_when_next_consume,"
    "broker_cluster,client_line,consume_timeout_minutes,group_retry_policy,retry_max_times,"
    "consumer_kind,dead_letter_enabled"
)
SEED_ROWS = [
    "orders,CLUSTERING,CONCURRENTLY,2,,,,,,,,,,",
    "fast,CLUSTERING,CONCURRENTLY,,,,,fast-cluster,,,,,,",
    "cache,BROADCASTING,CONCURRENTLY,,,,,,,,,,,",
    "archive,CLUSTERING,CONCURRENTLY,,,0,,,,,,,,",
    "ledger,CLUSTERING,ORDERLY,1,50000,,,,,,,,,",
    "fraud,CLUSTERING,CONCURRENTLY,,,,-1,,,,,,,",
    "push5,CLUSTERING,CONCURRENTLY,,,,,,grpc-5,,,1,PUSH,",
    "cloud5,CLUSTERING,CONCURRENTLY,,,,,,cloud-5,,,1,PUSH,",
]
LEVELS = (
    "broker_cluster,message_delay_level,broker_version\n"
    "*,1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h,4.9\n"
    "fast-cluster,5s 8s,\n"
)


# Trace records in the wire format of spec §5.2: fields joined by U+0001, each record ended by
# U+0002; a missing tag or key is the text `null`.
def pub(ts: int, msg_id: str, topic: str, offset_id: str, msg_type: int = 0) -> str:
    fields = ["Pub", ts, "DefaultRegion", "PID", topic, msg_id, "tag-a", "key-a"]
    fields += ["10.0.0.1:10911", 10, 5, msg_type, offset_id, "true"]
    return "\x01".join(map(str, fields)) + "\x02"


def sub_before(ts: int, group: str, request_id: str, msg_id: str, reconsume_times: int) -> str:
    fields = ["SubBefore", ts, "DefaultRegion", group, request_id, msg_id, reconsume_times, "null"]
    return "\x01".join(map(str, fields)) + "\x02"


def sub_after(
    request_id: str, msg_id: str, cost: int, success: bool, code: int, end: int, group: str
) -> str:
    fields = ["SubAfter", request_id, msg_id, cost, str(success).lower(), "null", code, end, group]
    return "\x01".join(map(str, fields)) + "\x02"


def sub_after_7(request_id: str, msg_id: str, cost: int, success: bool, code: int) -> str:
    fields = ["SubAfter", request_id, msg_id, cost, str(success).lower(), "null", code]
    return "\x01".join(map(str, fields)) + "\x02"


def delivery(
    group: str, msg_id: str, r: int, start: int, end: int, code: int, success: bool | None = None
) -> str:
    """A SubBefore and its 9-field SubAfter (code: ConsumeReturnType ordinal, spec §4; success
    by default for SUCCESS and TIME_OUT)."""
    request_id = f"REQ-{group}-{msg_id}-{r}-{start}"
    success = code in (0, 1) if success is None else success
    return sub_before(start, group, request_id, msg_id, r) + sub_after(
        request_id, msg_id, end - start, success, code, end, group
    )


def trace_line(stored_at: int, body: str, trace_id: str, encoded: bool = False) -> str:
    line = {"msgId": trace_id, "storeTimestamp": stored_at, "storeHost": "10.0.0.1:10911"}
    if encoded:
        line["bodyBase64"] = base64.b64encode(body.encode()).decode()
    else:
        line["body"] = body
    return json.dumps(line)


class LandingWriter:
    def __init__(self, root: Path):
        self.root = root
        self.count = 0

    def trace(self, stored_at: int, body: str, **options) -> str:
        self.count += 1
        return trace_line(stored_at, body, f"TRACE-{self.count:04d}", **options)

    def write(self, relative: str, lines: list[str], compress: bool = False) -> Path:
        path = self.root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        data = ("\n".join(lines) + "\n").encode()
        if compress:
            path.write_bytes(gzip.compress(data))
        else:
            path.write_bytes(data)
        return path


def write_seeds(seeds: Path, rows: list[str] = SEED_ROWS, header: str = SEED_HEADER) -> None:
    seeds.mkdir(parents=True, exist_ok=True)
    (seeds / "consumer_groups.csv").write_text("\n".join([header, *rows]) + "\n")
    (seeds / "broker_delay_levels.csv").write_text(LEVELS)


def build_landing(root: Path) -> None:
    w = LandingWriter(root)
    s = 1000  # one second
    plain = [
        # orders (max 2): fails at r = 0, 1, 2; the third failure reaches the DLQ
        w.trace(T0 + 50, pub(T0, "A", "orders-topic", "OFF-A")),
        w.trace(T0 + 1200, delivery("orders", "A", 0, T0 + 1 * s, T0 + 1100, 4)),
        w.trace(T0 + 11400, delivery("orders", "A", 1, T0 + 11200, T0 + 11300, 4)),
        w.trace(T0 + 41600, delivery("orders", "A", 2, T0 + 41400, T0 + 41500, 4)),
        # fast-cluster's table is "5s 8s": level 3 is clamped to 2
        w.trace(T0 + 2200, delivery("fast", "C", 0, T0 + 2 * s, T0 + 2100, 4)),
        w.trace(T0 + 10300, delivery("fast", "C", 1, T0 + 10150, T0 + 10250, 0)),
        # a broadcasting group and one without a retry queue drop failures
        w.trace(T0 + 3200, delivery("cache", "D", 0, T0 + 3 * s, T0 + 3100, 2)),
        w.trace(T0 + 3300, delivery("archive", "E", 0, T0 + 3 * s, T0 + 3100, 3)),
        # orderly (max 1, suspend 50000 clamped to 30000): a local retry, then the DLQ
        w.trace(T0 + 4200, delivery("ledger", "F", 0, T0 + 4 * s, T0 + 4100, 4)),
        w.trace(T0 + 34300, delivery("ledger", "F", 1, T0 + 34100, T0 + 34200, 4)),
        # an orderly ROLLBACK: success false, return type SUCCESS, acked with autoCommit on
        w.trace(T0 + 5200, delivery("ledger", "F2", 0, T0 + 5 * s, T0 + 5100, 0, success=False)),
        # the listener level -1 sends the first failure to the DLQ
        w.trace(T0 + 6200, delivery("fraud", "G", 0, T0 + 6 * s, T0 + 6100, 4)),
        "{not json",
        # a message in flight: its SubBefore, no SubAfter
        w.trace(T0 + 7100, sub_before(T0 + 7 * s, "orders", "REQ-I", "I", 0)),
        # an overdue retry (due at T0 + 110 s) and one still awaited (due after the watermark)
        w.trace(T0 + 100200, delivery("orders", "K", 0, T0 + 100 * s, T0 + 100100, 4)),
        w.trace(WATERMARK, delivery("orders", "J", 0, WATERMARK - 5100, WATERMARK - 5000, 4)),
        # a failure the rules retry, and a DLQ copy of it: the listener asked for the DLQ
        w.trace(T0 + 150200, delivery("orders", "L", 0, T0 + 150 * s, T0 + 150100, 4)),
    ]
    success_b = w.trace(T0 + 8200, delivery("orders", "B", 0, T0 + 8 * s, T0 + 8120, 0))
    # one consume request of two messages, in the 7-field SubAfter layout of older clients:
    # costTime is the request's time over its size (spec §5.2)
    batch = (
        sub_before(T0 + 9 * s, "orders", "REQ-H", "H", 0)
        + sub_before(T0 + 9 * s, "orders", "REQ-H", "H2", 0)
        + sub_after_7("REQ-H", "H", 300, True, 0)
        + sub_after_7("REQ-H", "H2", 300, True, 0)
    )
    w.write("trace/2026/03/01/00/part-00000.jsonl", plain)
    w.write(
        "trace/2026/03/01/01/part-00000.jsonl.gz",
        [success_b, w.trace(T0 + 9700, batch, encoded=True), success_b],  # B landed twice
        compress=True,
    )
    # a cut gzip is skipped whole; a hidden file is still being written
    cut = w.write(
        "trace/2026/03/01/02/part-00000.jsonl.gz",
        [w.trace(T0 + 20 * s, delivery("orders", "Z", 0, T0 + 20 * s, T0 + 20100, 0))] * 50,
        compress=True,
    )
    cut.write_bytes(cut.read_bytes()[:-12])
    w.write(
        "trace/2026/03/01/02/.part-00001.jsonl",
        [w.trace(T0 + 20 * s, delivery("orders", "Y", 0, T0 + 20 * s, T0 + 20100, 0))],
    )

    # a copy read from %DLQ%orders; its properties as the stored string or as a JSON object
    def dlq_copy(
        msg_id: str, offset_id: str, reconsume_times: int, stored_at: int, as_object: bool
    ) -> str:
        properties = {
            "UNIQ_KEY": msg_id,
            "ORIGIN_MESSAGE_ID": f"OFF-{msg_id}",
            "RETRY_TOPIC": "orders-topic",
            "DELAY": "0",
        }
        line = {
            "msgId": msg_id,
            "offsetMsgId": offset_id,
            "topic": "%DLQ%orders",
            "queueId": 0,
            "reconsumeTimes": reconsume_times,
            "bornTimestamp": T0,
            "storeTimestamp": stored_at,
            "storeHost": "10.0.0.1:10911",
        }
        if as_object:
            line["properties"] = properties
        else:
            line["propertiesString"] = "".join(f"{k}\x01{v}\x02" for k, v in properties.items())
        return json.dumps(line)

    w.write(
        "dlq/2026/03/01/00/part-00000.jsonl",
        [
            dlq_copy("A", "DLQ-OFF-A", 3, T0 + 41600, as_object=False),
            dlq_copy("L", "DLQ-OFF-L", 1, T0 + 150200, as_object=True),
        ],
    )

    # 5.x: listener events of a grpc-5 group (2 attempts) and a cloud-5 group
    def event(group: str, msg_id: str, attempt: int, start: int, end: int, result: str) -> str:
        return json.dumps(
            {
                "ts_start": start,
                "ts_end": end,
                "consumer_group": group,
                "topic": f"{group}-topic",
                "msg_id": msg_id,
                "delivery_attempt": attempt,
                "result": result,
                "client_id": "c1",
                "consumer_kind": "PUSH",
            }
        )

    w.write(
        "consume_events/2026/03/01/00/events-00000.jsonl",
        [
            event("push5", "M", 1, T0 + 20 * s, T0 + 20100, "FAILURE"),
            event("push5", "M", 2, T0 + 21200, T0 + 21300, "FAILURE"),
            event("cloud5", "N", 1, T0 + 30 * s, T0 + 30100, "EXCEPTION"),
            event("cloud5", "N", 2, T0 + 40200, T0 + 40300, "SUCCESS"),
        ],
    )
    w.write(
        "broker_logs/2026/03/01/00/broker-a.log",
        [
            "2026-03-01 08:00:06 INFO PopReviveService_0 - reviveQueueId=5",
            "2026-03-01 08:00:26 INFO SendMessageThread_1 - send msg to DLQ %DLQ%push5, owner=, "
            "originalTopic=%RETRY%push5_push5-topic, consumerId=push5, msgUniqKey=M, "
            f"storeTimestamp={T0 + 26300}",
        ],
    )

    # an OpenTelemetry process span without an attempt attribute, and a span of another system
    def span(scope: str, name: str, span_id: str, start: int, end: int) -> dict:
        attributes = {
            "messaging.system": "rocketmq",
            "messaging.operation": "process",
            "messaging.rocketmq.client_group": "push5",
            "messaging.destination": "push5-topic",
            "messaging.message_id": "O",
        }
        return {
            "scope": {"name": scope},
            "spans": [
                {
                    "traceId": "T1",
                    "spanId": span_id,
                    "name": name,
                    "kind": 5,
                    "startTimeUnixNano": str(start * 1_000_000 + 123_456),
                    "endTimeUnixNano": str(end * 1_000_000 + 654_321),
                    "attributes": [
                        {"key": key, "value": {"stringValue": value}}
                        for key, value in attributes.items()
                    ],
                    "status": {"code": 2},
                }
            ],
        }

    batch_line = {
        "resourceSpans": [
            {
                "resource": {
                    "attributes": [{"key": "service.name", "value": {"stringValue": "svc"}}]
                },
                "scopeSpans": [
                    span(
                        "io.opentelemetry.rocketmq-client-5.0",
                        "process",
                        "S1",
                        T0 + 50 * s,
                        T0 + 50100,
                    ),
                    span("io.opentelemetry.jdbc", "SELECT", "S2", T0 + 50 * s, T0 + 50100),
                ],
            }
        ]
    }
    w.write("otel/2026/03/01/00/spans-00000.jsonl", [json.dumps(batch_line)] * 2)


@pytest.fixture(scope="module")
def peer(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[dict, duckdb.DuckDBPyConnection, Path]]:
    root = tmp_path_factory.mktemp("peer")
    build_landing(root / "landing")
    write_seeds(root / "seeds")
    result = run_peer(root / "landing", root / "seeds", root / "work")
    con = duckdb.connect(result["database"], read_only=True)
    con.execute("set TimeZone = 'UTC'")
    yield result, con, root
    con.close()


def rows(con: duckdb.DuckDBPyConnection, sql: str, *params) -> list[dict]:
    cursor = con.execute(sql, list(params))
    names = [column[0] for column in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def ms(value: dt.datetime | None) -> int | None:
    """A peer timestamp (UTC, without a zone) as epoch ms."""
    return None if value is None else (value - EPOCH) // dt.timedelta(milliseconds=1)


def decisions_of(con, group: str, msg_id: str) -> list[dict]:
    return rows(
        con,
        "select * from retry_decisions where consumer_group = ? and msg_id = ?"
        " order by delivery_number",
        group,
        msg_id,
    )


def lifecycle(con, group: str, msg_id: str) -> dict:
    (row,) = rows(
        con,
        "select * from message_lifecycles where consumer_group = ? and msg_id = ?",
        group,
        msg_id,
    )
    return row


def test_it_reads_every_feed_and_skips_what_the_build_skips(peer):
    result, con, root = peer
    # the cut gzip is unreadable; the hidden file is not listed at all
    cut = root / "landing" / "trace" / "2026" / "03" / "01" / "02" / "part-00000.jsonl.gz"
    assert result["files"]["trace"] == {"read": 2, "unreadable": 1, "unreadable_files": [str(cut)]}
    assert {feed: counts["read"] for feed, counts in result["files"].items()} == {
        "trace": 2,
        "dlq": 1,
        "otel": 1,
        "consume_events": 1,
        "broker_logs": 1,
    }
    messages = {row["msg_id"] for row in rows(con, "select distinct msg_id from consume_attempts")}
    # not Z (in the cut gzip) nor Y (in the hidden file)
    assert sorted(messages) == [
        *("A", "B", "C", "D", "E", "F", "F2", "G", "H", "H2", "I", "J", "K", "L"),
        *("M", "N", "O"),
    ]
    # the watermark is the latest stored time, never the clock
    assert ms(con.execute("select watermark_at from watermark").fetchone()[0]) == WATERMARK


def test_a_trace_message_landed_twice_is_one_delivery(peer):
    _, con, _ = peer
    (row,) = rows(con, "select * from consume_attempts where msg_id = 'B'")
    assert (row["delivery_number"], row["return_type"], row["is_success"]) == (1, "SUCCESS", True)
    assert (ms(row["consume_started_at"]), ms(row["consume_ended_at"])) == (T0 + 8000, T0 + 8120)
    assert lifecycle(con, "orders", "B")["final_state"] == "CONSUMED"
    assert lifecycle(con, "orders", "B")["time_to_success_ms"] == 120


def test_a_7_field_sub_after_ends_at_start_plus_cost_times_the_request_size(peer):
    _, con, _ = peer
    ended = rows(
        con,
        "select msg_id, consume_ended_at, cost_ms from consume_attempts where request_id = 'REQ-H'",
    )
    assert {row["msg_id"]: (ms(row["consume_ended_at"]), row["cost_ms"]) for row in ended} == {
        "H": (T0 + 9600, 300),
        "H2": (T0 + 9600, 300),
    }


def test_the_retry_ladder_up_to_the_dlq(peer):
    _, con, _ = peer
    first, second, third = decisions_of(con, "orders", "A")
    # r = 0: level 3 + 0 = 3, 10 s, schedule queue 2; r = 1: level 4, 30 s (spec §2.5)
    assert (first["decision"], first["delay_level"], first["delay_ms"]) == ("RETRY", 3, 10_000)
    assert (first["schedule_queue_id"], first["target_topic"]) == (2, "%RETRY%orders")
    assert (first["next_reconsume_times"], first["origin_msg_id"]) == (1, "OFF-A")
    assert ms(first["expected_redelivery_at"]) == T0 + 1100 + 10_000
    assert ms(first["observed_redelivery_at"]) == T0 + 11_200
    assert (first["redelivery_lag_ms"], first["observed_reconsume_times"]) == (100, 1)
    assert (second["decision"], second["delay_level"], second["delay_ms"]) == ("RETRY", 4, 30_000)
    assert ms(second["expected_redelivery_at"]) == T0 + 11_300 + 30_000
    # r = 2 >= max 2: the DLQ at once, stored with reconsumeTimes r + 1
    assert (third["decision"], third["dlq_reason"]) == ("DLQ", "MAX_RECONSUME_EXCEEDED")
    assert (third["delay_level"], third["delay_ms"], third["next_reconsume_times"]) == (
        None,
        None,
        3,
    )
    assert (third["target_topic"], ms(third["entered_dlq_at"])) == ("%DLQ%orders", T0 + 41_500)

    state = lifecycle(con, "orders", "A")
    assert (state["deliveries"], state["max_reconsume_times"], state["final_state"]) == (
        3,
        2,
        "DLQ",
    )
    assert (state["origin_msg_id"], state["origin_kind"], state["topic"]) == (
        "OFF-A",
        "NORMAL",
        "orders-topic",
    )
    assert (state["tags"], state["keys"], ms(state["dlq_at"])) == ("tag-a", "key-a", T0 + 41_500)


def test_a_delay_level_is_clamped_to_the_clusters_highest(peer):
    _, con, _ = peer
    (decision,) = decisions_of(con, "fast", "C")
    # "5s 8s": level 3 does not exist, the clamp gives level 2, 8 s (spec §2.2)
    assert (decision["delay_level"], decision["delay_ms"], decision["schedule_queue_id"]) == (
        2,
        8_000,
        1,
    )
    (redelivery,) = rows(con, "select * from redeliveries where msg_id = 'C'")
    assert (redelivery["gap_ms"], redelivery["redelivery_cause"]) == (8_050, "SCHEDULED")
    state = lifecycle(con, "fast", "C")
    assert (state["final_state"], state["time_to_success_ms"]) == ("CONSUMED", 8_250)


def test_broadcasting_and_no_retry_queue_drop_failures(peer):
    _, con, _ = peer
    for group, msg_id, return_type in (("cache", "D", "EXCEPTION"), ("archive", "E", "RETURNNULL")):
        (decision,) = decisions_of(con, group, msg_id)
        assert (decision["decision"], decision["next_reconsume_times"]) == ("DROP", None)
        assert (decision["target_topic"], decision["expected_redelivery_at"]) == (None, None)
        state = lifecycle(con, group, msg_id)
        assert (state["final_state"], state["last_return_type"]) == ("DROPPED", return_type)


def test_orderly_retries_locally_then_a_4x_broker_delays_its_dlq_copy(peer):
    _, con, _ = peer
    local, dead = decisions_of(con, "ledger", "F")
    # suspend 50000 is clamped to 30000 ms (spec §3.5)
    assert (local["decision"], local["delay_ms"], local["delay_level"]) == (
        "LOCAL_RETRY",
        30_000,
        None,
    )
    assert ms(local["expected_redelivery_at"]) == T0 + 4100 + 30_000
    # r = 1 >= max 1: sent as a %RETRY% message with DELAY = 3 + r, which a 4.9 broker keeps
    # (spec §1.3); a 4.9.x client stores RECONSUME_TIME = r
    assert (dead["decision"], dead["delay_level"], dead["delay_ms"]) == ("DLQ", 4, 30_000)
    assert (dead["next_reconsume_times"], ms(dead["entered_dlq_at"])) == (1, T0 + 34_200 + 30_000)
    assert lifecycle(con, "ledger", "F")["final_state"] == "DLQ"
    # ROLLBACK with autoCommit: traced success false, return type SUCCESS, acked
    (rollback,) = rows(con, "select * from consume_attempts where msg_id = 'F2'")
    assert (rollback["return_type"], rollback["is_success"]) == ("SUCCESS", True)
    assert lifecycle(con, "ledger", "F2")["final_state"] == "CONSUMED"


def test_a_listener_level_below_zero_is_a_client_requested_dlq(peer):
    _, con, _ = peer
    (decision,) = decisions_of(con, "fraud", "G")
    assert (decision["decision"], decision["dlq_reason"]) == ("DLQ", "CLIENT_REQUESTED")
    assert (decision["next_reconsume_times"], ms(decision["entered_dlq_at"])) == (1, T0 + 6100)


def test_states_against_the_watermark(peer):
    _, con, _ = peer
    in_flight = lifecycle(con, "orders", "I")
    assert (in_flight["final_state"], in_flight["last_return_type"]) == ("IN_FLIGHT", None)
    assert decisions_of(con, "orders", "I") == []
    # due at T0 + 110.1 s, long before the watermark less the 300 s grace
    overdue = lifecycle(con, "orders", "K")
    assert overdue["final_state"] == "RETRY_OVERDUE"
    assert ms(overdue["next_delivery_expected_at"]) == T0 + 110_100
    # due 5 s after the watermark
    waiting = lifecycle(con, "orders", "J")
    assert waiting["final_state"] == "WAITING_RETRY"
    assert ms(waiting["next_delivery_expected_at"]) == WATERMARK + 5_000


def test_the_dead_letter_set(peer):
    _, con, _ = peer
    dead = {
        (row["consumer_group"], row["msg_id"]): row
        for row in rows(con, "select * from dlq_messages order by all")
    }
    assert set(dead) == {
        ("orders", "A"),
        ("orders", "L"),
        ("ledger", "F"),
        ("fraud", "G"),
        ("push5", "M"),
    }
    a = dead["orders", "A"]
    assert (a["evidence"], a["observed_in"], a["reconciliation_reason"]) == (
        "BOTH",
        "DLQ_EXPORT",
        None,
    )
    assert (a["reconsume_times"], a["observed_offset_msg_id"], a["origin_msg_id"]) == (
        3,
        "DLQ-OFF-A",
        "OFF-A",
    )
    assert (ms(a["entered_dlq_at"]), ms(a["observed_stored_at"])) == (T0 + 41_500, T0 + 41_600)
    # the copy of L came from its last delivery, which the rules retry: the listener asked
    l_row = dead["orders", "L"]
    assert (l_row["evidence"], l_row["reconciliation_reason"], l_row["reason"]) == (
        "OBSERVED",
        "LISTENER_REQUESTED_DLQ",
        "CLIENT_REQUESTED",
    )
    assert (l_row["observed_offset_msg_id"], l_row["observed_retry_topic"]) == (
        "DLQ-OFF-L",
        "orders-topic",
    )
    assert lifecycle(con, "orders", "L")["final_state"] == "DLQ"
    assert ms(lifecycle(con, "orders", "L")["dlq_at"]) == T0 + 150_200
    # no copy of these groups' DLQ topics landed at all
    for key, count in ((("ledger", "F"), 1), (("fraud", "G"), 1)):
        assert (dead[key]["evidence"], dead[key]["reconciliation_reason"]) == (
            "PREDICTED",
            "GROUP_NOT_EXPORTED",
        )
        assert dead[key]["reconsume_times"] == count


def test_grpc_consumers_from_listener_events(peer):
    _, con, _ = peer
    retry, dead = decisions_of(con, "push5", "M")
    # grpc-5 CUSTOMIZED: the client indexes the default list by attempt - 1: 1 s after attempt 1
    assert (retry["decision"], retry["delay_ms"], retry["target_topic"]) == (
        "RETRY",
        1_000,
        "%RETRY%push5_push5-topic",
    )
    assert ms(retry["expected_redelivery_at"]) == T0 + 21_100
    # attempt 2 = retry_max_times + 1: the proxy forwards it at the next pop, 5 s later, r + 2
    assert (dead["decision"], dead["delay_ms"], dead["next_reconsume_times"]) == ("DLQ", 5_000, 3)
    assert ms(dead["entered_dlq_at"]) == T0 + 26_300
    (entry,) = rows(con, "select * from dlq_messages where msg_id = 'M'")
    assert (entry["evidence"], entry["observed_in"], entry["prediction_basis"]) == (
        "BOTH",
        "BROKER_LOG",
        "EXACT",
    )
    first = rows(con, "select * from consume_attempts where msg_id = 'M' and delivery_number = 1")[
        0
    ]
    assert (first["attempt_source"], first["attempt_number_observed"]) == ("CONSUME_EVENT", True)
    assert first["client_line"] == "grpc-5"
    # cloud-5: the server's indexing, reconsumeTimes + 2: 10 s after attempt 1
    (cloud,) = decisions_of(con, "cloud5", "N")
    assert (cloud["decision"], cloud["delay_ms"]) == ("RETRY", 10_000)
    assert lifecycle(con, "cloud5", "N")["final_state"] == "CONSUMED"


def test_grpc_consumers_from_process_spans(peer):
    _, con, _ = peer
    # the batch landed twice and holds a JDBC span: one delivery
    (attempt,) = rows(con, "select * from consume_attempts where msg_id = 'O'")
    assert (attempt["attempt_source"], attempt["request_id"]) == ("OTEL_SPAN", "s1")
    # no attempt attribute: inferred from the order, flagged
    assert (attempt["reconsume_times"], attempt["attempt_number_observed"]) == (0, False)
    assert attempt["consume_started_at"] == dt.datetime(2026, 3, 1, 0, 0, 50, 123)
    (decision,) = decisions_of(con, "push5", "O")
    assert (decision["decision"], decision["prediction_basis"]) == ("RETRY", "INFERRED_ATTEMPTS")
    # rules count in ms: the failure's end (T0 + 50.100654 s) truncated, plus 1 s
    assert ms(decision["expected_redelivery_at"]) == T0 + 51_100


def test_groups_missing_from_an_old_seed_get_the_defaults(tmp_path: Path):
    w = LandingWriter(tmp_path / "landing")
    w.write(
        "trace/part.jsonl",
        [w.trace(T0 + 200, delivery("unseeded", "X", 15, T0, T0 + 100, 4))],
    )
    # a seed written before consume_timeout_minutes and the 5.x columns existed
    header = ",".join(SEED_HEADER.split(",")[:9])
    write_seeds(tmp_path / "seeds", ["orders,CLUSTERING,CONCURRENTLY,2,,,,,"], header)
    result = run_peer(tmp_path / "landing", tmp_path / "seeds", tmp_path / "work")
    assert result["files"]["dlq"] == {"read": 0, "unreadable": 0}
    con = duckdb.connect(result["database"], read_only=True)
    (settings,) = rows(
        con, "select * from consumer_group_settings where consumer_group = 'unseeded'"
    )
    assert (settings["settings_source"], settings["client_line"]) == ("default", "remoting-4.9")
    assert (settings["effective_max_reconsume_times"], settings["consume_timeout_minutes"]) == (
        16,
        15,
    )
    # r = 15 < 16: level 3 + 15 = 18, 2 h
    (decision,) = decisions_of(con, "unseeded", "X")
    assert (decision["decision"], decision["delay_level"], decision["delay_ms"]) == (
        "RETRY",
        18,
        7_200_000,
    )
    con.close()


def test_a_bad_delay_token_stops_the_peer(tmp_path: Path):
    (tmp_path / "landing" / "trace").mkdir(parents=True)
    write_seeds(tmp_path / "seeds")
    (tmp_path / "seeds" / "broker_delay_levels.csv").write_text(
        "broker_cluster,message_delay_level,broker_version\n*,1s 5x,4.9\n"
    )
    with pytest.raises(PeerError, match="5x"):
        run_peer(tmp_path / "landing", tmp_path / "seeds", tmp_path / "work")


# peer table -> the mart a build writes it to, and whether that mart is partitioned
MARTS = {
    "delay_levels": ("delay_levels", False),
    "consumer_group_settings": ("consumer_groups", False),
    "consume_attempts": ("consume_attempts", True),
    "retry_decisions": ("retry_decisions", True),
    "redeliveries": ("redeliveries", True),
    "message_lifecycles": ("message_lifecycles", True),
    "dlq_messages": ("dlq_messages", False),
}


def _write_marts(con: duckdb.DuckDBPyConnection, warehouse: Path, changes: dict[str, str]) -> None:
    """The peer's tables as a build writes and publishes its marts (parquet, timestamps with the
    UTC zone, the fact marts partitioned by lifecycle date and hour), each through
    `changes[table]`, a query over `t`."""
    for table, (mart, partitioned) in MARTS.items():
        columns = con.execute(f"select column_name, column_type from (describe {table})").fetchall()
        select = ", ".join(
            f"cast({name} as timestamptz) as {name}" if kind == "TIMESTAMP" else name
            for name, kind in columns
        )
        query = changes.get(table, "select * from t")
        target = warehouse / "retrylake_unpublished.db" / mart
        target.mkdir(parents=True)
        if partitioned:
            options = "format parquet, partition_by (lifecycle_date, lifecycle_hour), overwrite"
        else:
            target, options = target / "part-00000.parquet", "format parquet"
        con.execute(
            f"copy (with t as (select {select} from {table}) {query}) to '{target}' ({options})"
        )
    folder, built = warehouse / PUBLISHED_FOLDER, warehouse / "retrylake_unpublished.db"
    marts = sorted(mart for mart, _ in MARTS.values())
    snapshot_marts(folder, "b1", {mart: str(built / mart) for mart in marts})
    manifest = {"build": "b1", "published_at": "2026-03-02T00:00:00+00:00", "marts": marts}
    point_readers_at(folder, manifest, kept=1)


def test_compare_with_marts_counts_what_differs(peer, tmp_path: Path):
    result, _, _ = peer
    con = duckdb.connect(result["database"], read_only=True)
    con.execute("set TimeZone = 'UTC'")
    _write_marts(con, tmp_path / "same", {})
    _write_marts(
        con,
        tmp_path / "changed",
        {
            # one lifecycle missing, one judged otherwise, one only in the marts
            "message_lifecycles": """
                select * replace (if(msg_id = 'K', 'WAITING_RETRY', final_state) as final_state)
                from t where msg_id <> 'B'
                union all by name
                select * replace ('extra' as msg_id) from t where msg_id = 'A'
            """,
            # a failure's end one microsecond later
            "retry_decisions": """
                select * replace (
                    if(msg_id = 'G', failed_at + interval 1 microsecond, failed_at) as failed_at
                )
                from t
            """,
        },
    )
    con.close()

    same = compare_with_marts(Path(result["database"]).parent, tmp_path / "same")
    assert same["agree"]
    assert same["tables"]["consume_attempts"]["compared_rows"] == result["rows"]["consume_attempts"]
    assert same["tables"]["dlq_messages"]["mart_rows_left_out"] == 0

    changed = compare_with_marts(Path(result["database"]).parent, tmp_path / "changed")
    assert not changed["agree"]
    lifecycles = changed["tables"]["message_lifecycles"]
    assert (lifecycles["only_in_peer"], lifecycles["only_in_marts"]) == (1, 1)
    assert lifecycles["disagreeing_rows"] == 1
    assert lifecycles["disagreeing_by_column"] == {"final_state": 1}
    assert lifecycles["examples"]["only_in_peer"] == [["orders", "B"]]
    assert lifecycles["examples"]["only_in_marts"] == [["orders", "extra"]]
    assert lifecycles["examples"]["disagreeing"] == [
        {
            "key": {"consumer_group": "orders", "msg_id": "K"},
            "column": "final_state",
            "peer": "RETRY_OVERDUE",
            "mart": "WAITING_RETRY",
        }
    ]
    decisions = changed["tables"]["retry_decisions"]
    assert (decisions["disagreeing_rows"], decisions["disagreeing_by_column"]) == (
        1,
        {"failed_at": 1},
    )
    assert changed["tables"]["consume_attempts"]["disagreeing_rows"] == 0
