"""The 5.x gRPC consumer groups of `retrylake generate --grpc5-messages`, checked on the landing
they write (otel/, consume_events/, broker_logs/) against literals of spec §8, seed 002 and the
observability note (§1.2, §3.2, §4, §5.2, §5.4), not against the simulation's own rules."""

from __future__ import annotations

import csv
import datetime as dt
import gzip
import hashlib
import json
import re
from collections import Counter, defaultdict
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

import pytest

from retrylake.cli import _parser, main
from retrylake.commands import grpc5_messages_for
from retrylake.config_check import check_consumer_groups
from retrylake.errors import ConfigError
from retrylake.sim.engine import GeneratorConfig, generate, read_ground_truth
from retrylake.sim.grpc5 import (
    BEHAVIOURS5,
    Delivery5,
    Lifecycle5,
    Message5,
    _Simulation,
    reconciliation_reason,
)
from retrylake.sim.sample import write_seeds

SECOND = 1000
HOUR = 3_600_000
# the default CustomizedRetryPolicy list (spec §8.1), in seconds
DEFAULT_LIST = [1, 5, 10, 30, 60, 120, 180, 240, 300, 360, 420, 480, 540, 600, 1200, 1800]
DEFAULT_LIST = [s * SECOND for s in [*DEFAULT_LIST, 3600, 7200]]
LATENCY = (50, 1500)  # revive, pop and the client's cache
SCOPE_5 = "io.opentelemetry.rocketmq-client-5.0"
FOREIGN_SCOPES = {"io.opentelemetry.tomcat-10.0", "io.opentelemetry.rocketmq-client-4.8"}
DLQ_LINE = re.compile(
    r"send msg to DLQ (\S+), owner=(\S*), originalTopic=(\S+), consumerId=(\S+), "
    r"msgUniqKey=(\S+), storeTimestamp=(\d+)"
)
TRUTH_KEYS = {
    "consumer_group",
    "msg_id",
    "client_line",
    "consumer_kind",
    "origin_msg_id",
    "origin_kind",
    "received_offset_msg_id",
    "final_state",
    "deliveries",
    "successful_deliveries",
    "attempts",
    "redelivery_causes",
    "redelivery_gaps_ms",
    "in_dlq",
    "dlq_reconsume_times",
    "dlq_entered_ms",
    "dropped_ms",
    "recovered_ms",
    "recovery_of",
    "trace_complete",
    "observed_deliveries",
    "dlq_evidence",
    "dlq_logged",
    "reconciliation_reason",
    "attempt_number_observed",
}
GROUPS_5 = (
    "checkout-push",
    "notify-exp",
    "ledger-fifo",
    "report-simple",
    "cloud-orders",
    "cloud-fifo",
    "mislabeled-push",
    "mislabeled-exp",
)


@dataclass
class Attempt:
    """One delivery as a process span or a consume event shows it."""

    start: int
    end: int
    failed: bool
    attempt: int | None = None
    event: dict | None = None


def _read(path: Path) -> str:
    data = path.read_bytes()
    return (gzip.decompress(data) if path.suffix == ".gz" else data).decode("utf-8")


def _files(root: Path, kind: str) -> list[Path]:
    return sorted(path for path in (root / kind).rglob("*") if path.is_file())


def _lines(root: Path, kind: str) -> list[tuple[Path, str]]:
    return [(path, line) for path in _files(root, kind) for line in _read(path).splitlines()]


def _attribute(value: dict) -> object:
    if "stringValue" in value:
        return value["stringValue"]
    if "intValue" in value:
        return int(value["intValue"])
    if "arrayValue" in value:
        return [_attribute(item) for item in value["arrayValue"]["values"]]
    raise AssertionError(value)


def _attributes(span: dict) -> dict[str, object]:
    return {item["key"]: _attribute(item["value"]) for item in span.get("attributes", [])}


def _resource_spans(line: str) -> list[dict]:
    parsed = json.loads(line)
    return parsed.get("resourceSpans", [parsed])


def _spans(root: Path) -> list[tuple[dict, str, dict]]:
    """(resource attributes, scope name, span) of every span of every line."""
    found = []
    for _, line in _lines(root, "otel"):
        for resource in _resource_spans(line):
            attributes = _attributes(resource["resource"])
            for scope in resource["scopeSpans"]:
                for span in scope["spans"]:
                    found.append((attributes, scope["scope"]["name"], span))
    return found


@dataclass
class Landing:
    spans: dict  # (group, msg_id) -> [Attempt] from process spans, deduplicated, by start
    events: dict  # (group, msg_id) -> [Attempt] from consume events, by start
    dlq_lines: dict  # (group, msg_id) -> [(originalTopic, storeTimestamp, text)]
    watermark: int
    truth: dict  # (group, msg_id) -> row, 5.x only
    generation: dict


def _landing(root: Path) -> Landing:
    spans: dict = defaultdict(list)
    seen = set()
    for _, scope, span in _spans(root):
        if scope != SCOPE_5 or (span["traceId"], span["spanId"]) in seen:
            continue
        seen.add((span["traceId"], span["spanId"]))
        attributes = _attributes(span)
        group = attributes.get("messaging.consumer.group.name") or attributes.get(
            "messaging.rocketmq.client_group"
        )
        attempt = attributes.get(
            "messaging.rocketmq.message.delivery_attempt",
            attributes.get("retrylake.delivery_attempt"),
        )
        spans[(group, attributes["messaging.message.id"])].append(
            Attempt(
                int(span["startTimeUnixNano"]) // 1_000_000,
                int(span["endTimeUnixNano"]) // 1_000_000,
                span.get("status", {}).get("code") == 2,
                attempt,  # type: ignore[arg-type]
            )
        )
    events: dict = defaultdict(list)
    for _, line in _lines(root, "consume_events"):
        event = json.loads(line)
        events[(event["consumer_group"], event["msg_id"])].append(
            Attempt(
                event["ts_start"],
                event["ts_end"],
                event["result"] != "SUCCESS",
                event["delivery_attempt"],
                event,
            )
        )
    for found in (spans, events):
        for attempts in found.values():
            attempts.sort(key=lambda a: a.start)
    dlq_lines: dict = defaultdict(list)
    for _, line in _lines(root, "broker_logs"):
        match = DLQ_LINE.search(line)
        if match:
            dlq, _, topic, group, msg_id, stored = match.groups()
            assert dlq == f"%DLQ%{group}"
            # notify-exp runs in namespace MQ_INST_1_demo: the broker names the group and its
            # topics in it (spec §7); the spans and events do not
            if group.startswith("MQ_INST_1_demo%"):
                group = group.removeprefix("MQ_INST_1_demo%")
                assert group == "notify-exp"
                assert topic.startswith(
                    ("MQ_INST_1_demo%", "%RETRY%MQ_INST_1_demo%notify-exp_MQ_INST_1_demo%")
                ), line
            dlq_lines[(group, msg_id)].append((topic, int(stored), line))
    assert any(group == "notify-exp" for group, _ in dlq_lines)
    generation = json.loads((root / "generation.json").read_text())
    truth = {
        (row["consumer_group"], row["msg_id"]): row
        for row in read_ground_truth(root)
        if "client_line" in row
    }
    return Landing(spans, events, dlq_lines, generation["stats"]["watermark_ms"], truth, generation)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("grpc5")
    config = GeneratorConfig(out=out, messages=300, grpc5_messages=600)
    stats = generate(config)
    return config, stats


@pytest.fixture(scope="module")
def landing(run) -> Landing:
    config, _ = run
    return _landing(config.out)


def _complete(landing: Landing, group: str, source: str) -> list[list[Attempt]]:
    """The group's lifecycles whose every delivery landed in ``source``, in start order."""
    found = []
    records = landing.spans if source == "spans" else landing.events
    for (name, msg_id), row in landing.truth.items():
        attempts = records.get((name, msg_id), [])
        if name == group and row["trace_complete"] and len(attempts) == row["deliveries"]:
            found.append(attempts)
    return found


def _gaps(lifecycles: list[list[Attempt]]) -> dict[int, list[int]]:
    """Failed attempt number (by order) -> the gaps to the next delivery's start."""
    gaps: dict[int, list[int]] = defaultdict(list)
    for attempts in lifecycles:
        for number, (failed, following) in enumerate(pairwise(attempts), start=1):
            assert failed.failed
            gaps[number].append(following.start - failed.end)
    return gaps


def _assert_gaps(gaps: dict[int, list[int]], delay, low: int, high: int, first: int = 3):
    assert all(gaps.get(a) for a in range(1, first + 1)), dict(gaps)
    for attempt, found in gaps.items():
        for gap in found:
            assert low <= gap - delay(attempt) <= high, (attempt, gap, delay(attempt))


def test_checkout_push_retries_after_1_5_10_s(landing: Landing):
    """grpc-5, the default policy: the client indexes the list by attempt - 1 (spec §8.3), so
    1 s, 5 s, 10 s, 30 s, ...; old-mode spans carry no attempt: it is their order."""
    lifecycles = _complete(landing, "checkout-push", "spans")
    assert all(a.attempt is None for attempts in lifecycles for a in attempts)
    _assert_gaps(_gaps(lifecycles), lambda a: DEFAULT_LIST[a - 1], *LATENCY)


def test_notify_exp_retries_after_2_6_18_s(landing: Landing):
    """EXPONENTIAL initial 2000, multiplier 3, max 60000: 2 s, 6 s, 18 s, 54 s."""
    lifecycles = _complete(landing, "notify-exp", "spans")
    assert [a.attempt for a in max(lifecycles, key=len)] == [1, 2, 3, 4, 5]
    literal = {1: 2000, 2: 6000, 3: 18000, 4: 54000}
    _assert_gaps(_gaps(lifecycles), literal.__getitem__, *LATENCY)


def test_cloud_orders_retry_on_the_documented_ladder(landing: Landing):
    """cloud-5 indexes the default list on the server: 10 s, 30 s, 1 m, 2 m, ... (seed 002)."""
    lifecycles = _complete(landing, "cloud-orders", "events")
    gaps = _gaps(lifecycles)
    _assert_gaps(gaps, lambda a: DEFAULT_LIST[min(a + 1, 17)], *LATENCY)
    assert max(gaps) >= 16  # poison messages go all the way to the 2 h steps
    for attempts in lifecycles:
        assert [a.attempt for a in attempts] == list(range(1, len(attempts) + 1))


def test_mislabeled_groups_really_follow_another_schedule(landing: Landing):
    """mislabeled-push's seed says grpc-5 (1 s, 5 s, ...) but it retries after 10 s, 30 s, ...;
    mislabeled-exp's says CUSTOMIZED but it backs off 5 s x 2 up to 2 h."""
    assert landing.generation["true_schedules"]["mislabeled-push"] == "DOCUMENTED_LADDER"
    assert landing.generation["true_schedules"]["mislabeled-exp"] == "EXPONENTIAL"
    push = _gaps(_complete(landing, "mislabeled-push", "events"))
    _assert_gaps(push, lambda a: DEFAULT_LIST[min(a + 1, 17)], *LATENCY)
    exponential = _gaps(_complete(landing, "mislabeled-exp", "spans"))
    _assert_gaps(exponential, lambda a: min(5000 * 2 ** (a - 1), 7_200_000), *LATENCY)
    for group in ("mislabeled-push", "mislabeled-exp"):
        rows = [row for (name, _), row in landing.truth.items() if name == group]
        assert sum(row["deliveries"] - 1 for row in rows) >= 40, group
    overdue = {
        name for (name, _), row in landing.truth.items() if row["final_state"] == "RETRY_OVERDUE"
    }
    assert overdue <= {"mislabeled-push", "mislabeled-exp"} and overdue, overdue


def test_ledger_fifo_retries_locally_then_forwards_to_the_dlq(landing: Landing):
    """A grpc-5 FIFO group retries on the client after its own list (1 s, 2 s, 5 s), the
    attempt counted locally; after 4 attempts the client forwards the message to the DLQ at
    once, and the broker logs it (§3.2, §8.3). Spans (messaging/dup) and events agree."""
    lifecycles = _complete(landing, "ledger-fifo", "events")
    _assert_gaps(_gaps(lifecycles), {1: 1000, 2: 2000, 3: 5000}.__getitem__, 0, 50)
    dead = [
        (key, row)
        for key, row in landing.truth.items()
        if key[0] == "ledger-fifo" and row["final_state"] == "DLQ"
    ]
    assert len(dead) >= 3
    for key, row in dead:
        assert row["attempts"] == [1, 2, 3, 4] and row["dlq_reconsume_times"] == 1, row
        events = landing.events[key]
        if row["dlq_logged"]:
            ((topic, stored, _),) = landing.dlq_lines[key]
            assert topic == "LedgerTopic" and stored == row["dlq_entered_ms"]
            assert 5 <= stored - events[-1].end <= 200
    assert any(row["dlq_logged"] for _, row in dead)
    both = 0
    for key, row in landing.truth.items():
        spans, events = landing.spans.get(key, []), landing.events.get(key, [])
        if key[0] == "ledger-fifo" and len(spans) == len(events) == row["deliveries"]:
            assert [(a.start, a.end, a.attempt) for a in spans] == [
                (a.start, a.end, a.attempt) for a in events
            ]
            both += 1
    assert both > 50


def test_a_fifo_message_group_waits_for_its_earlier_message(landing: Landing):
    by_group: dict = defaultdict(list)
    for attempts in landing.events.values():
        event = attempts[0].event
        if event["consumer_group"] == "ledger-fifo":
            by_group[event["message_group"]].append(attempts)
    blocked = 0
    for lifecycles in by_group.values():
        lifecycles.sort(key=lambda attempts: attempts[0].start)
        for earlier, later in pairwise(lifecycles):
            assert later[0].start > earlier[-1].end
            if len(earlier) > 1 and later[0].start - earlier[-1].end < 300:
                blocked += 1  # it waited for the earlier message's retries
    assert blocked >= 1


def test_cloud_fifo_retries_every_3_s_and_discards(landing: Landing):
    """cloud-5 FIFO: a fixed interval, 3000 ms when the seed's suspend cell is empty; dead
    letters off: discarded after 4 attempts, and nothing reaches a DLQ."""
    lifecycles = _complete(landing, "cloud-fifo", "spans")
    _assert_gaps(_gaps(lifecycles), lambda a: 3000, 0, 50)
    dropped = [
        row
        for (name, _), row in landing.truth.items()
        if name == "cloud-fifo" and row["final_state"] == "DROPPED"
    ]
    assert len(dropped) >= 2
    for row in dropped:
        assert row["attempts"] == [1, 2, 3, 4] and not row["in_dlq"], row
        assert row["dropped_ms"] is not None and row["dlq_entered_ms"] is None
    assert not any(group == "cloud-fifo" for group, _ in landing.dlq_lines)


def test_report_simple_is_received_again_when_visible(landing: Landing):
    """SimpleConsumer: the message is received again once visible, at (invisible_changed_at
    or received_at) + invisible_duration_ms; a listener stuck past the invisible duration sees
    its message received again while it still runs (§8.5)."""
    changed = overlaps = 0
    for (group, _), attempts in landing.events.items():
        if group != "report-simple":
            continue
        for failed, following in pairwise(attempts):
            event = failed.event
            assert event["consumer_kind"] == "SIMPLE" and failed.failed
            if "invisible_changed_at" in event:
                assert event["invisible_duration_ms"] == 5000
                assert event["invisible_changed_at"] == event["ts_end"]
                changed += 1
            else:
                assert event["invisible_duration_ms"] == 30000
            visible_at = (event.get("invisible_changed_at") or event["received_at"]) + event[
                "invisible_duration_ms"
            ]
            received = following.event["received_at"]
            assert LATENCY[0] <= received - visible_at <= LATENCY[1]
            assert 0 <= following.start - received <= 20
            overlaps += following.start < failed.end
    assert changed >= 3 and overlaps >= 1
    for key, row in landing.truth.items():
        if key[0] == "report-simple" and row["final_state"] == "DLQ":
            assert row["attempts"] == [1, 2, 3] and row["dlq_reconsume_times"] == 4
            if row["dlq_logged"] and row["trace_complete"]:  # the deciding failure's event
                last = landing.events[key][-1].event
                visible_at = (last.get("invisible_changed_at") or last["received_at"]) + last[
                    "invisible_duration_ms"
                ]
                ((_, stored, _),) = landing.dlq_lines[key]
                assert LATENCY[0] <= stored - visible_at <= LATENCY[1]


def test_checkout_push_dead_letters_come_one_hour_after_the_17th_failure(landing: Landing):
    """17 attempts (retryMaxTimes 16 + 1); the proxy forwards the message at the pop after the
    17th failure's invisible time, L[16] = 1 h; the DLQ copy has reconsumeTimes 18 (§8.3)."""
    logged = 0
    for key, row in landing.truth.items():
        if key[0] != "checkout-push" or row["final_state"] != "DLQ":
            continue
        assert row["attempts"] == list(range(1, 18)) and row["dlq_reconsume_times"] == 18
        if row["dlq_logged"]:
            ((topic, stored, _),) = landing.dlq_lines[key]
            assert topic in ("CheckoutTopic", "%RETRY%checkout-push_CheckoutTopic")
            spans = landing.spans[key]
            if len(spans) == 17:
                assert LATENCY[0] <= stored - spans[-1].end - HOUR <= LATENCY[1]
            logged += 1
    assert logged >= 1


def test_every_otel_line_is_otlp_json(run, landing: Landing):
    config, stats = run
    bare = wrapped = 0
    scopes: Counter = Counter()
    for _, line in _lines(config.out, "otel"):
        parsed = json.loads(line)
        if "resourceSpans" in parsed:
            wrapped += 1
            assert set(parsed) == {"resourceSpans"}
        else:
            bare += 1
            assert set(parsed) == {"resource", "scopeSpans"}
        for resource in _resource_spans(line):
            names = {item["key"] for item in resource["resource"]["attributes"]}
            assert {"service.name", "service.instance.id", "host.name"} <= names
            for scope in resource["scopeSpans"]:
                assert scope["scope"]["version"] == "2.31.0-alpha"
                scopes[scope["scope"]["name"]] += len(scope["spans"])
                for span in scope["spans"]:
                    assert re.fullmatch(r"[0-9a-f]{32}", span["traceId"])
                    assert re.fullmatch(r"[0-9a-f]{16}", span["spanId"])
                    start, end = span["startTimeUnixNano"], span["endTimeUnixNano"]
                    assert isinstance(start, str) and isinstance(end, str)
                    assert start.isdigit() and end.isdigit() and int(start) <= int(end)
                    assert isinstance(span["kind"], int)
                    for item in span["attributes"]:
                        if "intValue" in item["value"]:
                            assert isinstance(item["value"]["intValue"], str)
    assert bare >= 1 and wrapped > bare * 10
    assert set(scopes) == {SCOPE_5, *FOREIGN_SCOPES}
    assert stats.grpc5["foreign_spans"] > 0


def test_process_spans_follow_each_semconv_mode(run):
    config, _ = run
    modes: dict = defaultdict(set)
    for resource, scope, span in _spans(config.out):
        if scope != SCOPE_5:
            continue
        attributes = _attributes(span)
        group = attributes.get("messaging.consumer.group.name") or attributes.get(
            "messaging.rocketmq.client_group"
        )
        topic = attributes["messaging.destination.name"]
        assert span["kind"] == 5 and attributes["messaging.system"] == "rocketmq"
        assert re.fullmatch(r"[0-9A-F]{32}", attributes["messaging.message.id"])
        assert resource["service.instance.id"]
        old = "messaging.rocketmq.client_group" in attributes
        new = "messaging.consumer.group.name" in attributes
        if old:
            assert attributes["messaging.operation"] == "process"
            assert isinstance(attributes["messaging.message.body.size"], int)
        if new:
            assert attributes["messaging.operation.name"] == "process"
            assert attributes["messaging.operation.type"] == "process"
            namespace = "MQ_INST_1_demo" if group == "notify-exp" else ""
            assert attributes["messaging.rocketmq.namespace"] == namespace
        assert span["name"] == (f"{topic} process" if old and not new else f"process {topic}")
        failed = span.get("status", {}).get("code") == 2
        if new:
            assert ("error.type" in attributes) == failed
        for event in span.get("events", []):
            assert event["name"] == "exception" and failed
            names = {item["key"] for item in event["attributes"]}
            assert {"exception.type", "exception.message"} <= names
        if "messaging.rocketmq.message.keys" in attributes:
            assert isinstance(attributes["messaging.rocketmq.message.keys"], list)
        fifo = "messaging.rocketmq.message.group" in attributes
        assert fifo == (group in ("ledger-fifo", "cloud-fifo"))
        attempt_keys = {
            key
            for key in ("messaging.rocketmq.message.delivery_attempt", "retrylake.delivery_attempt")
            if key in attributes
        }
        modes[group].add((old, new, tuple(sorted(attempt_keys))))
    assert modes == {
        "checkout-push": {(True, False, ())},
        "cloud-fifo": {(True, False, ())},
        "notify-exp": {(False, True, ("messaging.rocketmq.message.delivery_attempt",))},
        "mislabeled-exp": {(False, True, ("messaging.rocketmq.message.delivery_attempt",))},
        "ledger-fifo": {(True, True, ("retrylake.delivery_attempt",))},
    }


def test_duplicate_batches_repeat_the_same_spans(run):
    config, stats = run
    copies: dict = defaultdict(list)
    for _, _, span in _spans(config.out):
        copies[(span["traceId"], span["spanId"])].append(span)
    repeated = {key: spans for key, spans in copies.items() if len(spans) > 1}
    assert stats.grpc5["duplicate_batches"] >= 1 and repeated
    for spans in repeated.values():
        assert all(span == spans[0] for span in spans)


def test_nothing_lands_after_the_watermark(run, landing: Landing):
    config, stats = run
    watermark = landing.watermark
    assert watermark == stats.watermark_ms == stats.grpc5["watermark_ms"]
    for kind in ("otel", "consume_events", "broker_logs"):
        for path in _files(config.out, kind):
            year, month, day, hour = map(int, path.parent.parts[-4:])
            opened = dt.datetime(year, month, day, hour, tzinfo=dt.UTC).timestamp() * 1000
            assert opened <= watermark, path
    for _, _, span in _spans(config.out):
        assert int(span["endTimeUnixNano"]) // 1_000_000 <= watermark
    for attempts in landing.events.values():
        assert all(a.end <= watermark for a in attempts)
    for lines in landing.dlq_lines.values():
        assert all(stored <= watermark for _, stored, _ in lines)


def test_the_truth_agrees_with_the_landing(run, landing: Landing):
    config, _ = run
    rows = [row for row in read_ground_truth(config.out)]
    first_5x = next(i for i, row in enumerate(rows) if "client_line" in row)
    assert all("client_line" in row for row in rows[first_5x:])
    keys = [(row["consumer_group"], row["msg_id"]) for row in rows[first_5x:]]
    assert keys == sorted(keys)
    states: dict = defaultdict(Counter)
    for key, row in landing.truth.items():
        assert set(row) == TRUTH_KEYS
        states[key[0]][row["final_state"]] += 1
        if key[0] == "report-simple":  # a listener stuck past the run's end: not yet happened
            assert row["attempts"] == sorted(set(row["attempts"])), row
        else:
            assert row["attempts"] == list(range(1, row["deliveries"] + 1)), row
        assert row["redelivery_causes"] == ["SCHEDULED"] * (row["deliveries"] - 1)
        assert len(row["redelivery_gaps_ms"]) == row["deliveries"] - 1
        seen = {a.start for a in landing.spans.get(key, [])} | {
            a.start for a in landing.events.get(key, [])
        }
        assert row["observed_deliveries"] == len(seen), row
        assert row["trace_complete"] == (len(seen) == row["deliveries"])
        assert row["dlq_logged"] == (key in landing.dlq_lines)
        assert row["in_dlq"] == (row["final_state"] == "DLQ")
        assert row["attempt_number_observed"] == (key[0] not in ("checkout-push", "cloud-fifo"))
        if row["final_state"] == "DLQ":
            # the deciding failure landed when every delivery did; else it may have or not
            logged = row["dlq_logged"]
            if row["trace_complete"]:
                assert row["dlq_evidence"] == ("BOTH" if logged else "PREDICTED"), row
            else:
                assert row["dlq_evidence"] in (
                    ("BOTH", "OBSERVED") if logged else ("PREDICTED", "NONE")
                )
            if logged:
                ((_, stored, _),) = landing.dlq_lines[key]
                assert stored == row["dlq_entered_ms"] <= landing.watermark
        else:
            assert row["dlq_evidence"] is None and row["dlq_entered_ms"] is None
    assert set(states) == set(GROUPS_5)
    for group in GROUPS_5:
        if group != "mislabeled-exp":  # its true backoff reaches the 17th attempt after 12.8 h
            ended = states[group]["DROPPED" if group == "cloud-fifo" else "DLQ"]
            assert ended >= 2, (group, states[group])
    assert landing.generation["true_schedules"] == {
        **dict.fromkeys(
            {row["consumer_group"] for row in rows[:first_5x] if row["deliveries"] > 1},
            "CONFIGURED",
        ),
        **dict.fromkeys(GROUPS_5, "CONFIGURED"),
        "mislabeled-push": "DOCUMENTED_LADDER",
        "mislabeled-exp": "EXPONENTIAL",
    }


def test_the_seed_holds_the_5x_groups(run):
    config, _ = run
    path = config.out / "seeds" / "consumer_groups.csv"
    check_consumer_groups(path)
    with path.open(newline="", encoding="utf-8") as handle:
        rows = {row["consumer_group"]: row for row in csv.DictReader(handle)}
    assert {name: rows[name]["client_line"] for name in GROUPS_5} == {
        "checkout-push": "grpc-5",
        "notify-exp": "grpc-5",
        "ledger-fifo": "grpc-5",
        "report-simple": "grpc-5",
        "cloud-orders": "cloud-5",
        "cloud-fifo": "cloud-5",
        "mislabeled-push": "grpc-5",
        "mislabeled-exp": "grpc-5",
    }
    fifo = rows["cloud-fifo"]
    assert fifo["consume_mode"] == "ORDERLY" and fifo["suspend_current_queue_time_millis"] == ""
    assert fifo["dead_letter_enabled"] == "false" and fifo["retry_max_times"] == "3"
    assert rows["report-simple"]["consumer_kind"] == "SIMPLE"
    assert json.loads(rows["notify-exp"]["group_retry_policy"]) == {
        "type": "EXPONENTIAL",
        "exponentialRetryPolicy": {"initial": 2000, "max": 60000, "multiplier": 3},
    }
    assert json.loads(rows["ledger-fifo"]["group_retry_policy"]) == {
        "type": "CUSTOMIZED",
        "customizedRetryPolicy": {"next": [1000, 2000, 5000]},
    }
    assert rows["mislabeled-push"]["group_retry_policy"] == ""
    assert json.loads(rows["mislabeled-exp"]["group_retry_policy"])["type"] == "CUSTOMIZED"
    assert {rows[name]["broker_cluster"] for name in GROUPS_5} == {"DefaultCluster"}


def _hashes(root: Path) -> dict[str, str]:
    return {
        str(path.relative_to(root)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


def test_one_seed_gives_the_same_bytes(run, tmp_path: Path):
    config, _ = run
    again = GeneratorConfig(**{**config.__dict__, "out": tmp_path / "again"})
    generate(again)
    assert _hashes(config.out) == _hashes(again.out)


def test_without_5x_messages_nothing_changes(run, tmp_path: Path):
    """grpc5_messages 0 writes what the generator wrote before: no 5.x folders, rows, seed
    rows or keys; and 5.x traffic leaves the 4.x landing and truth as they were."""
    config, _ = run
    plain = GeneratorConfig(**{**config.__dict__, "out": tmp_path / "plain", "grpc5_messages": 0})
    generate(plain)
    for kind in ("otel", "consume_events", "broker_logs"):
        assert not (plain.out / kind).exists()
    assert not any("client_line" in row for row in read_ground_truth(plain.out))
    written = json.loads((plain.out / "generation.json").read_text())
    assert set(written) == {"config", "stats"}
    assert "grpc5_messages" not in written["config"] and "grpc5" not in written["stats"]
    with_5x, without = _hashes(config.out), _hashes(plain.out)
    for name, digest in without.items():
        if name.startswith(("trace/", "dlq/")):
            assert with_5x[name] == digest, name
    truth = (config.out / "ground_truth.jsonl").read_text()
    assert truth.startswith((plain.out / "ground_truth.jsonl").read_text())
    seed = (config.out / "seeds" / "consumer_groups.csv").read_text()
    plain_seed = (plain.out / "seeds" / "consumer_groups.csv").read_text()
    assert seed.startswith(plain_seed)
    assert len(seed.splitlines()) == len(plain_seed.splitlines()) + len(GROUPS_5)


# seeds that already hold gRPC rows ------------------------------------------------------------
# The 5.x rows of seeds/consumer_groups.csv, after the 4.x rows, as the generator writes them.
SEED_ROWS_5X = """\
checkout-push,CLUSTERING,CONCURRENTLY,,,,,DefaultCluster,grpc-5,,,16,PUSH,true
notify-exp,CLUSTERING,CONCURRENTLY,,,,,DefaultCluster,grpc-5,,"{""type"":""EXPONENTIAL"",\
""exponentialRetryPolicy"":{""initial"":2000,""max"":60000,""multiplier"":3}}",4,PUSH,true
ledger-fifo,CLUSTERING,ORDERLY,,,,,DefaultCluster,grpc-5,,"{""type"":""CUSTOMIZED"",\
""customizedRetryPolicy"":{""next"":[1000,2000,5000]}}",3,PUSH,true
report-simple,CLUSTERING,CONCURRENTLY,,,,,DefaultCluster,grpc-5,,,2,SIMPLE,true
cloud-orders,CLUSTERING,CONCURRENTLY,,,,,DefaultCluster,cloud-5,,,16,PUSH,true
cloud-fifo,CLUSTERING,ORDERLY,,,,,DefaultCluster,cloud-5,,,3,PUSH,false
mislabeled-push,CLUSTERING,CONCURRENTLY,,,,,DefaultCluster,grpc-5,,,16,PUSH,true
mislabeled-exp,CLUSTERING,CONCURRENTLY,,,,,DefaultCluster,grpc-5,,"{""type"":""CUSTOMIZED""}",\
16,PUSH,true
"""
# a gRPC group the generator does not know: in the seed, never simulated
UNKNOWN_GRPC_ROW = "legacy-grpc,,,,,,,DefaultCluster,grpc-5,,,5,PUSH,\n"
CHECKOUT_ROW = "checkout-push,CLUSTERING,CONCURRENTLY,,,,,DefaultCluster,grpc-5,,,16,PUSH,true\n"


def _project_seeds(folder: Path, *, grpc: bool) -> Path:
    """The project's seeds (the sample's groups, with or without the 5.x rows)."""
    write_seeds(folder)
    if not grpc:
        path = folder / "consumer_groups.csv"
        path.write_text(path.read_text().removesuffix(SEED_ROWS_5X))
        assert "grpc-5" not in path.read_text()
    return folder


def _landing_files(root: Path) -> dict[str, str]:
    """Every file's digest but the written consumer-group seed's."""
    return {
        name: digest
        for name, digest in _hashes(root).items()
        if name != "seeds/consumer_groups.csv"
    }


def test_the_project_seed_lists_the_5x_groups_after_the_4x_groups(run, tmp_path: Path):
    seeds = _project_seeds(tmp_path / "seeds", grpc=True)
    text = (seeds / "consumer_groups.csv").read_text()
    assert text.endswith(
        "\norder-service-dlq,CLUSTERING,CONCURRENTLY,-1,1000,1,0,DefaultCluster,"
        "remoting-4.9,15,,,,\n" + SEED_ROWS_5X
    )
    check_consumer_groups(seeds / "consumer_groups.csv")
    # a run without a seeds folder simulates that deployment and writes the same seed
    config, _ = run
    assert (config.out / "seeds" / "consumer_groups.csv").read_text() == text


def test_the_4x_engine_leaves_grpc_rows_alone(tmp_path: Path):
    """Without 5.x traffic, a seed's gRPC rows change nothing the 4.x engine writes, none of
    them gets a lifecycle, and the written seed is the given one, each group once."""
    plain = _project_seeds(tmp_path / "plain-seeds", grpc=False)
    mixed = _project_seeds(tmp_path / "mixed-seeds", grpc=True)
    with (mixed / "consumer_groups.csv").open("a") as handle:
        handle.write(UNKNOWN_GRPC_ROW)
    outs = {}
    for name, seeds in (("plain", plain), ("mixed", mixed)):
        config = GeneratorConfig(out=tmp_path / name, messages=300)
        generate(config, seeds_dir=seeds)
        written = (config.out / "seeds" / "consumer_groups.csv").read_text()
        assert written == (seeds / "consumer_groups.csv").read_text()
        outs[name] = config.out
    assert _landing_files(outs["plain"]) == _landing_files(outs["mixed"])
    groups = {row["consumer_group"] for row in read_ground_truth(outs["mixed"])}
    assert not groups & {*GROUPS_5, "legacy-grpc"}
    assert not (outs["mixed"] / "otel").exists()


def test_grpc_rows_in_the_seed_are_simulated_as_the_5x_module_defines_them(run, tmp_path: Path):
    """With 5.x traffic, a seed that already lists the 5.x groups (one of them with another
    retryMaxTimes) gives the bytes of the same seed without them: the groups run as the module
    defines them, mislabeled ones on their true schedules; the written seed has the module's row
    in place of the changed one, and the unknown gRPC group, which gets no traffic."""
    config, _ = run
    outs = {}
    for name, grpc in (("plain", False), ("mixed", True)):
        seeds = _project_seeds(tmp_path / f"{name}-seeds", grpc=grpc)
        if grpc:
            path = seeds / "consumer_groups.csv"
            changed = CHECKOUT_ROW.replace(",16,PUSH,", ",5,PUSH,")
            path.write_text(path.read_text().replace(CHECKOUT_ROW, changed) + UNKNOWN_GRPC_ROW)
        again = GeneratorConfig(**{**config.__dict__, "out": tmp_path / name})
        outs[name] = generate(again, seeds_dir=seeds), again.out
    (plain_stats, plain), (stats, mixed) = outs["plain"], outs["mixed"]
    written = (mixed / "seeds" / "consumer_groups.csv").read_text()
    expected = (plain / "seeds" / "consumer_groups.csv").read_text() + UNKNOWN_GRPC_ROW
    assert written == expected
    assert written.count("\ncheckout-push,") == 1 and written.endswith(
        SEED_ROWS_5X + UNKNOWN_GRPC_ROW
    )
    assert plain_stats.grpc5["seed_rows_replaced"] == []
    assert stats.grpc5["seed_rows_replaced"] == ["checkout-push"]
    theirs, ours = _landing_files(mixed), _landing_files(plain)
    assert theirs.pop("generation.json") != ours.pop("generation.json")  # seed_rows_replaced
    assert theirs == ours
    generation = json.loads((mixed / "generation.json").read_text())
    assert generation["true_schedules"]["mislabeled-exp"] == "EXPONENTIAL"
    assert generation["true_schedules"]["mislabeled-push"] == "DOCUMENTED_LADDER"
    assert "legacy-grpc" not in generation["true_schedules"]
    truth = {row["consumer_group"] for row in read_ground_truth(mixed)}
    assert set(GROUPS_5) <= truth and "legacy-grpc" not in truth


def test_5x_groups_take_their_retry_settings_from_the_seed_when_asked(tmp_path: Path):
    """--grpc5-settings-from-seeds: each 5.x group runs the retry_max_times, group_retry_policy
    and dead_letter_enabled of its seed row, and the written seed keeps them; its other columns
    stay the generator's (a row that says otherwise is replaced, but for those three cells), and
    a mislabeled group still runs its true schedule."""
    seeds = _project_seeds(tmp_path / "seeds", grpc=True)
    path = seeds / "consumer_groups.csv"
    rows = {
        "checkout-push": (",16,PUSH,true", ",2,PUSH,true"),
        "cloud-fifo": (",3,PUSH,false", ",3,PUSH,true"),
        "mislabeled-exp": (",16,PUSH,true", ",3,PUSH,true"),
        "notify-exp": (",4,PUSH,true", ",4,SIMPLE,true"),  # another kind: not the simulated one
    }
    lines = path.read_text().splitlines(keepends=True)
    for index, line in enumerate(lines):
        name = line.split(",", 1)[0]
        if name in rows:
            old, new = rows[name]
            assert line.count(old) == 1, line
            lines[index] = line.replace(old, new)
    path.write_text("".join(lines))
    config = GeneratorConfig(
        out=tmp_path / "out", messages=300, grpc5_messages=600, grpc5_settings_from_seeds=True
    )
    stats = generate(config, seeds_dir=seeds)
    assert stats.grpc5["seed_rows_replaced"] == ["notify-exp"]
    written = (config.out / "seeds" / "consumer_groups.csv").read_text()
    assert written == path.read_text().replace(",4,SIMPLE,true", ",4,PUSH,true")
    truth = defaultdict(list)
    for row in read_ground_truth(config.out):
        truth[row["consumer_group"]].append(row)
    # retryMaxTimes 2: 3 attempts (§8.2), then a DLQ copy counting one more (§8.3)
    checkout = truth["checkout-push"]
    assert max(len(row["attempts"]) for row in checkout) == 3
    dead = [row for row in checkout if row["in_dlq"]]
    assert dead and all(r["attempts"] == [1, 2, 3] and r["dlq_reconsume_times"] == 4 for r in dead)
    # dead letters on: the FIFO client forwards its failures to the DLQ (the broker's copy: 1)
    fifo = truth["cloud-fifo"]
    assert not [row for row in fifo if row["final_state"] == "DROPPED"]
    assert [row for row in fifo if row["in_dlq"]]
    assert all(row["dlq_reconsume_times"] == 1 for row in fifo if row["in_dlq"])
    # mislabeled-exp: 4 attempts, waiting 5 s x 2^(a-1) (the default exponential policy, §8.1,
    # §8.3), whatever its CUSTOMIZED row says
    mislabeled = truth["mislabeled-exp"]
    assert max(len(row["attempts"]) for row in mislabeled) == 4
    gaps = [(a, gap) for row in mislabeled for a, gap in enumerate(row["redelivery_gaps_ms"], 1)]
    assert gaps
    for attempt, gap in gaps:
        assert LATENCY[0] <= gap - 5000 * 2 ** (attempt - 1) <= LATENCY[1], (attempt, gap)
    generation = json.loads((config.out / "generation.json").read_text())
    assert generation["true_schedules"]["mislabeled-exp"] == "EXPONENTIAL"
    assert generation["config"]["grpc5_settings_from_seeds"] is True


def test_5x_settings_from_seeds_need_a_seed(tmp_path: Path, capsys):
    args = ["generate", "--out", str(tmp_path), "--messages", "10", "--grpc5-settings-from-seeds"]
    assert main(args) == 2
    assert "--grpc5-settings-from-seeds needs --seeds DIR" in capsys.readouterr().err


def test_a_remoting_row_named_like_a_5x_group_is_refused_with_5x_traffic(tmp_path: Path):
    seeds = _project_seeds(tmp_path / "seeds", grpc=False)
    with (seeds / "consumer_groups.csv").open("a") as handle:
        handle.write(
            "ledger-fifo,CLUSTERING,ORDERLY,3,1000,1,0,DefaultCluster,remoting-4.9,15,,,,\n"
        )
    config = GeneratorConfig(out=tmp_path / "out", messages=30, grpc5_messages=10)
    with pytest.raises(ConfigError, match=r"ledger-fifo has client_line remoting-4\.9"):
        generate(config, seeds_dir=seeds)
    assert not (tmp_path / "out").exists()
    plain = GeneratorConfig(out=tmp_path / "plain", messages=30)  # without 5.x traffic: its own
    generate(plain, seeds_dir=seeds)
    assert "ledger-fifo" in {row["consumer_group"] for row in read_ground_truth(plain.out)}


# the CLI's default 5.x traffic --------------------------------------------------------------
def test_generate_publishes_a_fifth_to_the_5x_groups_by_default(tmp_path: Path, capsys):
    assert main(["generate", "--out", str(tmp_path / "a"), "--messages", "60"]) == 0
    written = json.loads((tmp_path / "a" / "generation.json").read_text())
    assert written["config"]["grpc5_messages"] == 12
    assert written["stats"]["grpc5"]["messages"] == 12
    assert "5.x gRPC groups: 12 messages" in capsys.readouterr().out
    args = ["generate", "--out", str(tmp_path / "b"), "--messages", "60", "--grpc5-messages", "0"]
    assert main(args) == 0
    assert (
        "grpc5_messages"
        not in json.loads((tmp_path / "b" / "generation.json").read_text())["config"]
    )
    assert not (tmp_path / "b" / "otel").exists()
    args[-1] = "-1"
    assert main(args) == 2
    assert "--grpc5-messages must be 0 or more" in capsys.readouterr().err
    assert grpc5_messages_for(3000, None) == 600 and grpc5_messages_for(3000, 7) == 7
    assert grpc5_messages_for(4, None) == 0


def test_the_demo_takes_grpc5_messages():
    demo = _parser().parse_args(["demo"])
    assert demo.grpc5_messages is None and demo.messages == 3000
    assert _parser().parse_args(["demo", "--grpc5-messages", "0"]).grpc5_messages == 0
    assert GeneratorConfig(out=Path(".")).grpc5_messages == 0  # library callers: none


# dead letters seen on one side --------------------------------------------------------------
@pytest.mark.parametrize(
    ("evidence", "entered", "last_line", "observed", "reason"),
    [
        ("BOTH", 900, 1000, 5, None),
        ("NONE", 900, 1000, 4, None),
        ("PREDICTED", 900, None, 5, "GROUP_NOT_EXPORTED"),
        ("PREDICTED", 1001, 1000, 5, "AFTER_EXPORT_WINDOW"),
        ("PREDICTED", 1000, 1000, 5, "LOG_LINE_MISSING"),
        ("PREDICTED", 900, 1000, 1, "LOG_LINE_MISSING"),
        ("OBSERVED", 900, 1000, 0, "NOT_IN_TRACE"),
        ("OBSERVED", 900, 1000, 4, "LAST_DELIVERY_NOT_IN_TRACE"),
        (None, None, 1000, 3, None),
    ],
)
def test_the_reason_of_a_one_sided_5x_dead_letter(evidence, entered, last_line, observed, reason):
    assert reconciliation_reason(evidence, entered, last_line, observed) == reason


def _dead_letter(simulation, number: int, landed: list[bool], logged: bool, forwarded: int):
    """A notify-exp lifecycle of len(landed) failed deliveries, forwarded to the DLQ."""
    group = simulation.groups["notify-exp"]
    message = Message5(
        group,
        BEHAVIOURS5["notify-exp"],
        f"MSG{number:02d}",
        1000,
        "t",
        "p",
        None,
        (),
        10,
        None,
        True,
    )
    lifecycle = Lifecycle5(message)
    instance = simulation.instances["notify-exp"][0]
    for attempt, seen in enumerate(landed, start=1):
        start = 10_000 * attempt
        delivery = Delivery5(lifecycle, attempt, start, start + 50, "FAILURE", None, instance, "s")
        delivery.landed = seen
        lifecycle.deliveries.append(delivery)
    lifecycle.terminal, lifecycle.terminal_ms = "DLQ", forwarded
    lifecycle.dlq_reconsume_times = len(landed) + 1
    lifecycle.dlq_logged = logged
    return lifecycle


def test_5x_truth_rows_give_the_evidence_and_reason(tmp_path: Path):
    simulation = _Simulation(
        tmp_path,
        messages=0,
        seed=1,
        start_ms=0,
        end_ms=HOUR,
        watermark_ms=HOUR,
        compression="none",
    )
    simulation.last_dlq_line_ms = 200_000
    cases = [
        ([True] * 5, True, 100_000, "BOTH", None),
        ([True] * 5, False, 100_000, "PREDICTED", "LOG_LINE_MISSING"),
        ([False, True, True, True, True], False, 250_000, "PREDICTED", "AFTER_EXPORT_WINDOW"),
        ([True, True, False, True, False], True, 100_000, "OBSERVED", "LAST_DELIVERY_NOT_IN_TRACE"),
        ([False] * 5, True, 100_000, "OBSERVED", "NOT_IN_TRACE"),
        ([True, True, True, True, False], False, 100_000, "NONE", None),
    ]
    for number, (landed, logged, forwarded, evidence, reason) in enumerate(cases):
        simulation.lifecycles.append(_dead_letter(simulation, number, landed, logged, forwarded))
        row = simulation._truth_row(simulation.lifecycles[-1])
        assert (row["dlq_evidence"], row["reconciliation_reason"]) == (evidence, reason), number
        assert row["final_state"] == "DLQ" and row["dlq_reconsume_times"] == 6
        assert row["dlq_entered_ms"] == forwarded and row["observed_deliveries"] == sum(landed)
    simulation.last_dlq_line_ms = None  # no broker DLQ line landed at all
    row = simulation._truth_row(simulation.lifecycles[1])
    assert (row["dlq_evidence"], row["reconciliation_reason"]) == (
        "PREDICTED",
        "GROUP_NOT_EXPORTED",
    )
    simulation.last_dlq_line_ms = 200_000
    simulation.write_truth()
    assert simulation.dlq_evidence == {
        "BOTH": 1,
        "PREDICTED:LOG_LINE_MISSING": 1,
        "PREDICTED:AFTER_EXPORT_WINDOW": 1,
        "OBSERVED:LAST_DELIVERY_NOT_IN_TRACE": 1,
        "OBSERVED:NOT_IN_TRACE": 1,
        "NONE": 1,
    }


def test_the_run_reasons_its_one_sided_dead_letters_from_the_landing(run, landing: Landing):
    """Each 5.x dead letter's evidence and reason follow from the landing as written: the latest
    storeTimestamp of every broker DLQ line, and which of its deliveries left a span or event;
    the counts are in the stats. A DLQ copy counts a+1 (a the attempts), a FIFO forward 1."""
    _, stats = run
    last_line = max(stored for lines in landing.dlq_lines.values() for _, stored, _ in lines)
    counts: Counter = Counter()
    for key, row in landing.truth.items():
        if row["final_state"] != "DLQ":
            assert row["reconciliation_reason"] is None
            continue
        fifo = key[0] in ("ledger-fifo", "cloud-fifo")
        assert row["dlq_reconsume_times"] == (1 if fifo else row["deliveries"] + 1), row
        evidence, reason = row["dlq_evidence"], row["reconciliation_reason"]
        seen = {a.start for a in landing.spans.get(key, []) + landing.events.get(key, [])}
        if evidence == "PREDICTED":
            assert not row["dlq_logged"]
            assert reason == (
                "AFTER_EXPORT_WINDOW" if row["dlq_entered_ms"] > last_line else "LOG_LINE_MISSING"
            ), row
        elif evidence == "OBSERVED":
            assert row["dlq_logged"] and not row["trace_complete"]
            assert reason == ("NOT_IN_TRACE" if not seen else "LAST_DELIVERY_NOT_IN_TRACE"), row
        else:
            assert reason is None
        counts[evidence + (f":{reason}" if reason else "")] += 1
    assert (
        stats.grpc5["dlq_evidence"]
        == dict(sorted(counts.items()))
        == {
            "BOTH": 15,
            "OBSERVED:LAST_DELIVERY_NOT_IN_TRACE": 5,
            "PREDICTED:AFTER_EXPORT_WINDOW": 13,
        }
    )


def test_oom_poison_messages_lose_some_records(run, landing: Landing):
    """notify-exp's and report-simple's heap-exhausting poison messages fail with an
    OutOfMemoryError, and half of those failures leave no span or consume event."""
    _, stats = run
    assert stats.grpc5["oom_messages"] == 6
    assert stats.grpc5["consume_events_lost"] == 3
    oom = 0
    for attempts in landing.events.values():
        for attempt in attempts:
            if attempt.event.get("error_class") == "java.lang.OutOfMemoryError":
                assert attempt.event["consumer_group"] == "report-simple"
                assert attempt.event["result"] == "EXCEPTION"
                oom += 1
    assert oom >= 1
    exceptions = Counter(
        item["value"]["stringValue"]
        for _, scope, span in _spans(run[0].out)
        for event in span.get("events", [])
        for item in event["attributes"]
        if item["key"] == "exception.type"
    )
    assert exceptions["java.lang.OutOfMemoryError"] >= 1
