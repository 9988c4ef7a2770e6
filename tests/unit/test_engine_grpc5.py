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

from retrylake.config_check import check_consumer_groups
from retrylake.sim.engine import GeneratorConfig, generate, read_ground_truth

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
            dlq_lines[(group, msg_id)].append((topic, int(stored), line))
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
            if row["dlq_logged"]:
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
            assert attributes["messaging.rocketmq.namespace"] == ""
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
