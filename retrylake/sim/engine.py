"""`retrylake generate`: simulated RocketMQ traffic written as a landing zone, with ground truth.

A deployment of topics, producer groups and consumer groups runs as one discrete-event
simulation in time order. Consumers take due messages in consume requests (batches), fail them
by the failure models below, and the broker rules of `broker_rules.decide` schedule the
redeliveries. Every client writes its trace records through a dispatcher that batches them into
trace messages the way AsyncTraceDispatcher does, and the trace messages land in hourly files,
with the transport faults of a real export: duplicates, late lines, a few malformed lines.

Failure models, per consumer group:
- transient failures whose chance halves with each retry;
- poison messages that always fail, so they reach the DLQ (or are dropped, or retried locally);
- an outage window in which the group fails everything with RECONSUME_LATER: the flow-control
  anti-pattern the RocketMQ docs warn about;
- slow successes (the TIME_OUT label on an acked message);
- a consumer that goes offline before the end, leaving retries overdue.

Everything is drawn from one seeded random stream in event order: a seed gives byte-identical
output. Memory is bounded by the lifecycles still open, not by the size of the run.
"""

from __future__ import annotations

import csv
import datetime as dt
import functools
import gzip
import hashlib
import heapq
import io
import json
import random
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from retrylake.config_check import GROUP_COLUMNS
from retrylake.sim import trace_format as tf
from retrylake.sim.rules import CONSUME_TIMEOUT_MS, Decision, Group, decide
from spark_udfs import DEFAULT_DELAY_LEVELS, parse_delay_levels

HOUR_MS = 3_600_000
MAX_BODY_CHARS = 128_000 - 10_000  # AsyncTraceDispatcher flushes a segment at this size
DISPATCH_WINDOW_MS = 500  # ... or when its first record is this old
REQUEST_WINDOW_MS = 20  # due messages a consumer gathers into one consume request
SCHEDULE_POLL_MS = 100  # ScheduleMessageService polls each level every 100 ms
RETRY_OVERDUE_GRACE_MS = 300_000  # dbt var retry_overdue_grace_seconds
FAILURE_KINDS = (("EXCEPTION", 0.5), ("FAILED", 0.4), ("RETURNNULL", 0.1))


@dataclass(frozen=True)
class Topic:
    name: str
    producer_group: str
    weight: int
    tags: tuple[str, ...]


@dataclass(frozen=True)
class Behaviour:
    """How a consumer group's listener behaves."""

    topics: tuple[str, ...]
    batch_size: int = 1  # consumeMessageBatchMaxSize
    cost_ms: int = 30  # listener time per message
    transient: float = 0.03  # chance that a first delivery fails; halves per retry
    poison: float = 0.001  # share of messages that always fail for this group
    slow: float = 0.0005  # share of successes that take longer than the consume timeout
    outage: tuple[float, float] | None = None  # (start, end) as fractions of the run
    offline_from: float | None = None  # fraction of the run after which it consumes nothing


TOPICS = (
    Topic("orders", "PID_order", 40, ("created", "paid", "shipped", "cancelled")),
    Topic("payments", "PID_payment", 15, ("charge", "refund")),
    Topic("stock", "PID_stock", 15, ("reserve", "release")),
    Topic("audit", "PID_audit", 10, ("login", "change")),
    Topic("imports", "PID_import", 5, ("batch",)),
    Topic("catalog", "PID_catalog", 5, ("price", "title")),
    Topic("notify", "PID_notify", 10, ("sms", "mail", "push")),
)

BEHAVIOURS = {
    "order-service": Behaviour(("orders",), transient=0.06, poison=0.002),
    "cache-invalidator": Behaviour(("orders",), cost_ms=5, transient=0.01),
    "inventory-sync": Behaviour(("stock",), transient=0.08, poison=0.003, outage=(0.30, 0.36)),
    "payment-ledger": Behaviour(("payments",), cost_ms=60, transient=0.05, poison=0.002),
    "fraud-check": Behaviour(("payments",), transient=0.01, poison=0.001),
    "audit-archiver": Behaviour(("audit",), batch_size=8, transient=0.02),
    "bulk-importer": Behaviour(("imports",), batch_size=16, cost_ms=80, poison=0.01),
    "search-indexer": Behaviour(("catalog", "stock"), batch_size=4, transient=0.05, slow=0.02),
    "notification-push": Behaviour(("notify",), transient=0.08, poison=0.01, offline_from=0.8),
}


@dataclass(frozen=True)
class GeneratorConfig:
    out: Path
    messages: int = 3000
    seed: int = 1
    start_ms: int = int(dt.datetime(2026, 3, 1, tzinfo=dt.UTC).timestamp() * 1000)
    hours: float = 6.0
    client_versions: tuple[str, ...] = ("4.9",)
    dlq_export: bool = False
    compression: str = "mixed"  # none, gzip, or mixed (every other hour gzipped)
    duplicate_share: float = 0.005
    late_share: float = 0.01
    malformed_share: float = 0.0005
    base64_share: float = 0.1


@dataclass
class Published:
    msg_id: str
    offset_id: str
    origin_msg_id: str | None  # what the Pub trace tells: the 13-field Pub has no offset id
    topic: str
    tags: str | None
    keys: str | None
    born_ms: int


@dataclass
class Lifecycle:
    group: int
    message: Published
    poisoned: bool
    deliveries: int = 0
    reconsume_times: int = 0
    expected_ms: int | None = None  # when the rules say the pending redelivery is due
    in_flight: bool = False
    previous_level: int | None = None  # the last schedule hop's level, for DLQ copies


@dataclass
class Request:
    group: int
    start_ms: int
    lifecycles: list[Lifecycle] = field(default_factory=list)


@dataclass
class Stats:
    messages: int = 0
    records: int = 0
    trace_messages: int = 0
    lines: int = 0
    duplicate_lines: int = 0
    late_lines: int = 0
    malformed_lines: int = 0
    lifecycles: int = 0
    dlq_messages: int = 0
    watermark_ms: int = 0
    states: dict[str, int] = field(default_factory=dict)


class HourlyFiles:
    """Landing files split by hour of store time; a file closes once no line can reach it."""

    def __init__(self, root: Path, kind: str, compression: str) -> None:
        self.root = root
        self.kind = kind
        self.compression = compression
        self.handles: dict[int, IO[bytes]] = {}
        self.closed: set[int] = set()

    def path(self, hour: int) -> Path:
        moment = dt.datetime.fromtimestamp(hour * HOUR_MS / 1000, tz=dt.UTC)
        gzipped = self.compression == "gzip" or (self.compression == "mixed" and hour % 2 == 1)
        name = "part-00000.jsonl.gz" if gzipped else "part-00000.jsonl"
        return self.root / self.kind / moment.strftime("%Y/%m/%d/%H") / name

    def write(self, hour: int, line: str) -> None:
        handle = self.handles.get(hour)
        if handle is None:
            assert hour not in self.closed, f"{self.kind} hour {hour} was already closed"
            path = self.path(hour)
            path.parent.mkdir(parents=True, exist_ok=True)
            raw = path.open("wb")
            # mtime 0 and no file name keep gzip output byte-identical across runs
            handle = (
                gzip.GzipFile(filename="", fileobj=raw, mode="wb", compresslevel=6, mtime=0)
                if path.suffix == ".gz"
                else raw
            )
            self.handles[hour] = handle
        handle.write(line.encode("utf-8") + b"\n")

    def close_before(self, hour: int) -> None:
        for old in [h for h in self.handles if h < hour]:
            self._close(old)

    def close_all(self) -> None:
        for hour in list(self.handles):
            self._close(hour)

    def _close(self, hour: int) -> None:
        handle = self.handles.pop(hour)
        inner = getattr(handle, "fileobj", None)
        handle.close()
        if inner is not None:
            inner.close()
        self.closed.add(hour)


class Dispatcher:
    """One client's trace dispatcher: records batch into a trace message until it is 500 ms old
    or about 118,000 characters long (AsyncTraceDispatcher, 4.9.x)."""

    def __init__(self, client_ip: str, pid: int) -> None:
        self.client_ip = client_ip
        self.pid = pid
        self.records: list[str] = []
        self.ids: set[str] = set()
        self.first_ms = 0
        self.last_ms = 0
        self.chars = 0
        self.counter = 0

    def add(self, timestamp: int, record: str, msg_id: str) -> bool:
        """Add a record; True when the segment is full and must be sent now."""
        if not self.records:
            self.first_ms = timestamp
        self.records.append(record)
        self.ids.add(msg_id)
        self.last_ms = timestamp
        self.chars += len(record)
        return self.chars >= MAX_BODY_CHARS

    def deadline(self) -> int:
        return self.first_ms + DISPATCH_WINDOW_MS

    def take(self, month_start_ms: int) -> tuple[str, str, str]:
        """The trace message: its own msgId, its KEYS (the traced msgIds) and its body."""
        self.counter += 1
        trace_id = tf.uniq_msg_id(
            self.client_ip, self.pid, 0x5F3759DF, self.last_ms, month_start_ms, self.counter
        )
        body = "".join(self.records)
        keys = " ".join(sorted(self.ids))
        self.records, self.ids, self.chars = [], set(), 0
        return trace_id, keys, body


class Generator:
    def __init__(self, config: GeneratorConfig, groups: list[Group], delay_levels: dict[str, str]):
        self.config = config
        self.rng = random.Random(config.seed)
        self.groups = groups
        self.behaviours = [behaviour_for(group.name) for group in groups]
        self.tables = {
            group.name: [
                ms
                for _, _, ms in parse_delay_levels(
                    delay_levels.get(group.broker_cluster, delay_levels["*"])
                )
            ]
            for group in groups
        }
        versions = config.client_versions
        self.group_versions = [
            tf.CLIENT_VERSIONS[versions[i % len(versions)]] for i in range(len(groups))
        ]
        self.topic_versions = {
            topic.name: tf.CLIENT_VERSIONS[versions[(i + 1) % len(versions)]]
            for i, topic in enumerate(TOPICS)
        }
        self.subscribers = {
            topic.name: [i for i, b in enumerate(self.behaviours) if topic.name in b.topics]
            for topic in TOPICS
        }
        self.end_ms = config.start_ms + int(config.hours * HOUR_MS)
        self.events: list[tuple[int, int, int, object]] = []
        self.sequence = 0
        self.open_requests: dict[int, Request] = {}
        self.dispatchers: dict[str, Dispatcher] = {}
        self.pending_records: list[tuple[int, int, str, str, str]] = []
        self.deadlines: list[tuple[int, str]] = []
        self.commit_log_offset = 1_000_000
        self.counter = 0
        self.stats = Stats()
        self.active: dict[int, Lifecycle] = {}
        out = config.out
        self.trace_files = HourlyFiles(out, "trace", config.compression)
        self.dlq_files = HourlyFiles(out, "dlq", "none") if config.dlq_export else None
        self.truth = (out / "ground_truth.jsonl").open("w", encoding="utf-8")
        self.delayed_lines: list[tuple[int, int, int, str]] = []

    # event queue ---------------------------------------------------------------------------
    _PUBLISH, _DELIVER, _FLUSH = 0, 1, 2

    def _push(self, at: int, kind: int, payload: object) -> None:
        self.sequence += 1
        heapq.heappush(self.events, (at, self.sequence, kind, payload))

    def _month_start(self, ms: int) -> int:
        return _month_start_of_day(ms // 86_400_000)

    def _new_id(self, ip: str, pid: int, at: int) -> str:
        self.counter += 1
        return tf.uniq_msg_id(ip, pid, 0x18B4AAC2, at, self._month_start(at), self.counter)

    # run -------------------------------------------------------------------------------------
    def run(self, progress: bool = False) -> Stats:
        config = self.config
        if config.messages > 0:
            self._push(self._publish_time(0), self._PUBLISH, 0)
        last_report = time.monotonic()
        while self.events:
            at, _, kind, payload = heapq.heappop(self.events)
            if at > self.end_ms:
                break
            self._drain_records(at)
            if kind == self._PUBLISH:
                self._publish(at)
                following = payload + 1  # type: ignore[operator]
                if following < config.messages:  # one at a time: memory stays bounded
                    self._push(self._publish_time(following), self._PUBLISH, following)
            elif kind == self._DELIVER:
                self._deliver(at, payload)  # type: ignore[arg-type]
            else:
                self._flush_request(at, payload)  # type: ignore[arg-type]
            if progress and time.monotonic() - last_report > 0.5:
                last_report = time.monotonic()
                done = (at - config.start_ms) / (self.end_ms - config.start_ms)
                print(
                    f"\rgenerating: {done:6.1%} of simulated time, {self.stats.records:,} records",
                    end="",
                    file=sys.stderr,
                )
        self._drain_records(self.end_ms + 1, final=True)
        self._finish()
        if progress:
            print(file=sys.stderr)
        return self.stats

    # producers -------------------------------------------------------------------------------
    def _publish_time(self, index: int) -> int:
        """Message n is published at a jittered time in its own slot of the whole run, up to
        the end, so some work is still in flight when the run stops."""
        slot = (self.end_ms - self.config.start_ms) / self.config.messages
        return self.config.start_ms + int(index * slot + self.rng.random() * slot)

    def _publish(self, at: int) -> None:
        topic = self._choose_topic()
        self.stats.messages += 1
        msg_id = self._new_id("10.0.1.9", 4100 + TOPICS.index(topic), at)
        self.commit_log_offset += 180 + self.rng.randrange(400)
        offset_id = tf.offset_msg_id("10.0.0.1", 10911, self.commit_log_offset)
        tags = self.rng.choice(topic.tags) if self.rng.random() < 0.9 else None
        keys = f"{topic.name}-{self.stats.messages}" if self.rng.random() < 0.8 else None
        version = self.topic_versions[topic.name]
        origin = offset_id if version.pub_fields >= 14 else None
        message = Published(msg_id, offset_id, origin, topic.name, tags, keys, at)
        record = tf.pub_record(
            version,
            timestamp=at,
            region="DefaultRegion",
            producer_group=topic.producer_group,
            topic=topic.name,
            msg_id=msg_id,
            tags=tags,
            keys=keys,
            store_host="10.0.0.1:10911",
            body_length=200 + self.rng.randrange(2000),
            cost_ms=1 + self.rng.randrange(8),
            offset_id=offset_id,
        )
        self._record(at, f"producer:{topic.producer_group}", record, msg_id)
        for group in self.subscribers[topic.name]:
            behaviour = self.behaviours[group]
            lifecycle = Lifecycle(group, message, poisoned=self.rng.random() < behaviour.poison)
            self._push(at + 5 + self.rng.randrange(200), self._DELIVER, lifecycle)

    def _choose_topic(self) -> Topic:
        total = sum(topic.weight for topic in TOPICS)
        pick = self.rng.randrange(total)
        for topic in TOPICS:
            pick -= topic.weight
            if pick < 0:
                return topic
        raise AssertionError("unreachable")

    # consumers -------------------------------------------------------------------------------
    def _fraction(self, at: int) -> float:
        return (at - self.config.start_ms) / (self.end_ms - self.config.start_ms)

    def _deliver(self, at: int, lifecycle: Lifecycle) -> None:
        behaviour = self.behaviours[lifecycle.group]
        if behaviour.offline_from is not None and self._fraction(at) >= behaviour.offline_from:
            # The consumer is gone: the message waits; a first delivery never happens at all.
            if lifecycle.deliveries:
                self.active[id(lifecycle)] = lifecycle
            return
        size = 1 if self.groups[lifecycle.group].consume_mode == "ORDERLY" else behaviour.batch_size
        request = self.open_requests.get(lifecycle.group)
        if request is None or len(request.lifecycles) >= size:
            request = Request(lifecycle.group, at)
            self.open_requests[lifecycle.group] = request
            self._push(at + REQUEST_WINDOW_MS, self._FLUSH, request)
        request.lifecycles.append(lifecycle)
        self.active[id(lifecycle)] = lifecycle

    def _flush_request(self, at: int, request: Request) -> None:
        if self.open_requests.get(request.group) is request:
            del self.open_requests[request.group]
        group = self.groups[request.group]
        behaviour = self.behaviours[request.group]
        version = self.group_versions[request.group]
        client = f"consumer:{group.name}"
        request_id = self._new_id("10.0.2.7", 5000 + request.group, at)
        for lifecycle in request.lifecycles:
            lifecycle.deliveries += 1
            lifecycle.in_flight = True
            lifecycle.expected_ms = None
            self._record(
                at,
                client,
                tf.sub_before_record(
                    version,
                    timestamp=at,
                    region="DefaultRegion",
                    group=group.name,
                    request_id=request_id,
                    msg_id=lifecycle.message.msg_id,
                    retry_times=lifecycle.reconsume_times,
                    keys=lifecycle.message.keys,
                ),
                lifecycle.message.msg_id,
            )
        outcome = self._outcome(at, request, behaviour)
        size = len(request.lifecycles)
        took = size * (behaviour.cost_ms + self.rng.randrange(behaviour.cost_ms + 1))
        if outcome == "SLOW_SUCCESS":
            took += CONSUME_TIMEOUT_MS
        ended = at + took
        if ended > self.end_ms:
            return  # still running at the end of the run: in flight
        success = outcome in ("SUCCESS", "SLOW_SUCCESS")
        return_type = {"SUCCESS": "SUCCESS", "SLOW_SUCCESS": "TIME_OUT"}.get(outcome, outcome)
        for lifecycle in request.lifecycles:
            lifecycle.in_flight = False
            self._record(
                ended,
                client,
                tf.sub_after_record(
                    version,
                    request_id=request_id,
                    msg_id=lifecycle.message.msg_id,
                    cost_ms=took // size,
                    success=success,
                    keys=lifecycle.message.keys,
                    return_type=return_type,
                    timestamp=ended,
                    group=group.name,
                ),
                lifecycle.message.msg_id,
            )
            if success:
                self._close(lifecycle, "CONSUMED")
                continue
            failed_at = ended if version.sub_after_fields >= 9 else at + took // size
            decision = decide(group, lifecycle.reconsume_times, failed_at, self.tables[group.name])
            self._apply(lifecycle, decision)

    def _outcome(self, at: int, request: Request, behaviour: Behaviour) -> str:
        outage = behaviour.outage
        if outage and outage[0] <= self._fraction(at) < outage[1]:
            return "FAILED"  # RECONSUME_LATER for everything: failure as flow control
        if any(lifecycle.poisoned for lifecycle in request.lifecycles):
            return "EXCEPTION"
        retries = max(lifecycle.reconsume_times for lifecycle in request.lifecycles)
        if self.rng.random() < behaviour.transient * 0.5**retries:
            pick = self.rng.random()
            for kind, share in FAILURE_KINDS:
                pick -= share
                if pick < 0:
                    return kind
            return FAILURE_KINDS[-1][0]
        return "SLOW_SUCCESS" if self.rng.random() < behaviour.slow else "SUCCESS"

    def _apply(self, lifecycle: Lifecycle, decision: Decision) -> None:
        if decision.decision == "DROP":
            self._close(lifecycle, "DROPPED")
            return
        if decision.decision == "DLQ":
            assert decision.entered_dlq_ms is not None
            self._dlq_copy(lifecycle, decision)
            self._close(lifecycle, "DLQ", dlq_reconsume_times=lifecycle.reconsume_times + 1)
            return
        assert decision.expected_redelivery_ms is not None
        lifecycle.expected_ms = decision.expected_redelivery_ms
        lifecycle.previous_level = decision.delay_level
        lifecycle.reconsume_times += 1
        lag = 1 + self.rng.randrange(5)
        if decision.decision == "RETRY":  # schedule polling, then the consumer's pull
            lag = self.rng.randrange(SCHEDULE_POLL_MS) + 5 + self.rng.randrange(200)
        self._push(decision.expected_redelivery_ms + lag, self._DELIVER, lifecycle)

    # ground truth ----------------------------------------------------------------------------
    def _close(self, lifecycle: Lifecycle, state: str, dlq_reconsume_times: int | None = None):
        self.active.pop(id(lifecycle), None)
        self._truth(lifecycle, state, dlq_reconsume_times)

    def _truth(self, lifecycle: Lifecycle, state: str, dlq_reconsume_times: int | None) -> None:
        self.stats.lifecycles += 1
        self.stats.states[state] = self.stats.states.get(state, 0) + 1
        row = {
            "consumer_group": self.groups[lifecycle.group].name,
            "msg_id": lifecycle.message.msg_id,
            "origin_msg_id": lifecycle.message.origin_msg_id,
            "final_state": state,
            "deliveries": lifecycle.deliveries,
            "in_dlq": state == "DLQ",
            "dlq_reconsume_times": dlq_reconsume_times,
        }
        self.truth.write(json.dumps(row, separators=(",", ":")) + "\n")

    def _finish(self) -> None:
        watermark = self.stats.watermark_ms
        for lifecycle in sorted(
            self.active.values(),
            key=lambda item: (self.groups[item.group].name, item.message.msg_id),
        ):
            if lifecycle.in_flight:
                state = "IN_FLIGHT"
            elif lifecycle.deliveries == 0:
                # queued for a first consume request that the run ended before sending: the
                # trace has nothing of it, so it is not a lifecycle yet
                continue
            else:
                assert lifecycle.expected_ms is not None
                overdue = lifecycle.expected_ms < watermark - RETRY_OVERDUE_GRACE_MS
                state = "RETRY_OVERDUE" if overdue else "WAITING_RETRY"
            self._truth(lifecycle, state, None)
        self.active.clear()
        self.trace_files.close_all()
        if self.dlq_files:
            self.dlq_files.close_all()
        self.truth.close()

    # dead-letter export ----------------------------------------------------------------------
    def _dlq_copy(self, lifecycle: Lifecycle, decision: Decision) -> None:
        self.stats.dlq_messages += 1
        if self.dlq_files is None:
            return
        group = self.groups[lifecycle.group]
        message = lifecycle.message
        entered = decision.entered_dlq_ms
        assert entered is not None
        self.commit_log_offset += 180 + self.rng.randrange(400)
        properties = {
            "UNIQ_KEY": message.msg_id,
            "RETRY_TOPIC": message.topic,
            "WAIT": "false",
            "CLUSTER": group.broker_cluster,
            "MSG_REGION": "DefaultRegion",
            "TRACE_ON": "true",
        }
        if message.keys:
            properties["KEYS"] = message.keys
        if message.tags:
            properties["TAGS"] = message.tags
        if group.consume_mode == "ORDERLY":
            # The client sends it to %RETRY% itself: ORIGIN_MESSAGE_ID is the client msgId, and
            # a 4.9.x broker routes it through the schedule topic with DELAY = 3 + r (§1.3).
            properties["ORIGIN_MESSAGE_ID"] = message.msg_id
            if decision.delay_level is not None:
                properties.update(
                    DELAY=str(decision.delay_level),
                    REAL_TOPIC=f"%DLQ%{group.name}",
                    REAL_QID="0",
                )
        else:
            properties["ORIGIN_MESSAGE_ID"] = message.offset_id
            properties["DELAY"] = "0"
            if lifecycle.previous_level is not None:  # left over from the last retry hop
                properties.update(REAL_TOPIC=f"%RETRY%{group.name}", REAL_QID="0")
        line: dict[str, object] = {
            "msgId": message.msg_id,
            "offsetMsgId": tf.offset_msg_id("10.0.0.1", 10911, self.commit_log_offset),
            "topic": f"%DLQ%{group.name}",
            "queueId": 0,
            "reconsumeTimes": lifecycle.reconsume_times + 1,
            "bornTimestamp": message.born_ms,
            "storeTimestamp": entered,
            "storeHost": "10.0.0.1:10911",
        }
        if self.rng.random() < 0.5:
            line["properties"] = dict(sorted(properties.items()))
        else:
            line["propertiesString"] = "".join(
                f"{key}\u0001{value}\u0002" for key, value in sorted(properties.items())
            )
        self.dlq_files.write(entered // HOUR_MS, json.dumps(line, separators=(",", ":")))

    # trace dispatch --------------------------------------------------------------------------
    def _record(self, at: int, client: str, record: str, msg_id: str) -> None:
        self.sequence += 1
        heapq.heappush(self.pending_records, (at, self.sequence, client, record, msg_id))

    def _dispatcher(self, client: str) -> Dispatcher:
        dispatcher = self.dispatchers.get(client)
        if dispatcher is None:
            number = len(self.dispatchers)
            dispatcher = Dispatcher(f"10.0.3.{number % 250 + 1}", 6000 + number)
            self.dispatchers[client] = dispatcher
        return dispatcher

    def _drain_records(self, now: int, final: bool = False) -> None:
        """Hand every record whose time has come to its client's dispatcher, and send the trace
        messages that are due, in time order."""
        while True:
            next_record = self.pending_records[0][0] if self.pending_records else None
            next_deadline = self.deadlines[0][0] if self.deadlines else None
            if next_deadline is not None and (next_record is None or next_deadline <= next_record):
                if next_deadline > now and not final:
                    return
                deadline, client = heapq.heappop(self.deadlines)
                dispatcher = self.dispatchers[client]
                if dispatcher.records and dispatcher.deadline() == deadline:
                    self._send(dispatcher, deadline)
                continue
            if next_record is None or next_record > now:
                return
            at, _, client, record, msg_id = heapq.heappop(self.pending_records)
            self.stats.records += 1
            dispatcher = self._dispatcher(client)
            was_empty = not dispatcher.records
            if dispatcher.add(at, record, msg_id):
                self._send(dispatcher, at)
            elif was_empty:
                heapq.heappush(self.deadlines, (dispatcher.deadline(), client))

    def _send(self, dispatcher: Dispatcher, at: int) -> None:
        store_ms = at + 2 + self.rng.randrange(15)
        trace_id, keys, body = dispatcher.take(self._month_start(at))
        self.stats.trace_messages += 1
        self._land(store_ms, trace_id, keys, body)

    def _land(self, store_ms: int, trace_id: str, keys: str, body: str) -> None:
        config = self.config
        rng = self.rng
        line = tf.landing_line(
            trace_msg_id=trace_id,
            store_timestamp=store_ms,
            store_host="10.0.0.1:10911",
            body=body,
            keys=keys,
            as_base64=rng.random() < config.base64_share,
        )
        hour = store_ms // HOUR_MS
        if rng.random() < config.late_share:
            self.stats.late_lines += 1
            self._write_line(hour + 1, line, store_ms)
        else:
            self._write_line(hour, line, store_ms)
        if rng.random() < config.duplicate_share:
            # The trace producer re-sent it: same msgId and body, stored again a little later.
            again = store_ms + 50 + rng.randrange(3000)
            self.stats.duplicate_lines += 1
            copy = tf.landing_line(
                trace_msg_id=trace_id,
                store_timestamp=again,
                store_host="10.0.0.1:10911",
                body=body,
                keys=keys,
            )
            self._write_line(again // HOUR_MS, copy, again)
        if rng.random() < config.malformed_share:
            self.stats.malformed_lines += 1
            self._write_line(hour, line[: rng.randrange(1, max(2, len(line) // 2))], None)

    def _write_line(self, hour: int, line: str, store_ms: int | None) -> None:
        if store_ms is not None:
            self.stats.watermark_ms = max(self.stats.watermark_ms, store_ms)
        self.stats.lines += 1
        # Store times only move forward, so hours two behind can no longer receive lines.
        self.trace_files.close_before(self.stats.watermark_ms // HOUR_MS - 1)
        self.trace_files.write(hour, line)


@functools.lru_cache(maxsize=64)
def _month_start_of_day(day: int) -> int:
    """UTC start of the month holding ``day`` (days since the epoch), in ms."""
    moment = dt.datetime.fromtimestamp(day * 86_400, tz=dt.UTC)
    return int(moment.replace(day=1, hour=0).timestamp() * 1000)


def behaviour_for(name: str) -> Behaviour:
    """The built-in behaviour of a known group; other groups get a topic chosen by name."""
    if name in BEHAVIOURS:
        return BEHAVIOURS[name]
    digest = int(hashlib.sha256(name.encode()).hexdigest(), 16)
    return Behaviour((TOPICS[digest % len(TOPICS)].name,))


def read_groups(path: Path) -> list[Group]:
    with path.open(newline="", encoding="utf-8") as handle:
        return [
            Group(
                name=row["consumer_group"],
                message_model=row["message_model"] or "CLUSTERING",
                consume_mode=row["consume_mode"] or "CONCURRENTLY",
                max_reconsume_times=int(row["max_reconsume_times"] or -1),
                suspend_ms=int(row["suspend_current_queue_time_millis"] or 1000),
                retry_queue_nums=int(row["retry_queue_nums"] or 1),
                delay_level_when_next_consume=int(row["delay_level_when_next_consume"] or 0),
                broker_cluster=row["broker_cluster"] or "DefaultCluster",
                client_line=row["client_line"] or "remoting-4.9",
            )
            for row in csv.DictReader(handle)
        ]


def read_delay_levels(path: Path) -> dict[str, str]:
    with path.open(newline="", encoding="utf-8") as handle:
        return {row["broker_cluster"]: row["message_delay_level"] for row in csv.DictReader(handle)}


def write_seed_files(seeds: Path, groups: list[Group], delay_levels: dict[str, str]) -> None:
    """The seeds the run used, to drop into a dbt project's seeds/ folder."""
    seeds.mkdir(parents=True, exist_ok=True)
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(GROUP_COLUMNS)
    writer.writerows(group.seed_row() for group in groups if group.in_seed)
    (seeds / "consumer_groups.csv").write_text(buffer.getvalue())
    lines = ["broker_cluster,message_delay_level"]
    lines += [f"{cluster},{levels}" for cluster, levels in delay_levels.items()]
    (seeds / "broker_delay_levels.csv").write_text("\n".join(lines) + "\n")


def generate(
    config: GeneratorConfig,
    *,
    seeds_dir: Path | None = None,
    unseeded_groups: tuple[str, ...] = ("notification-push",),
    progress: bool = False,
) -> Stats:
    """Write the landing zone, the seeds and the ground truth under ``config.out``.

    ``seeds_dir`` is a folder with consumer_groups.csv and broker_delay_levels.csv to simulate;
    without it, the sample deployment is used. Groups in ``unseeded_groups`` are simulated but
    left out of the written seed, so that the build must assume RocketMQ's defaults for them.
    """
    from retrylake.sim.sample import DELAY_LEVELS, GROUPS

    if seeds_dir is not None:
        groups = read_groups(seeds_dir / "consumer_groups.csv")
        delay_levels = read_delay_levels(seeds_dir / "broker_delay_levels.csv")
    else:
        groups = list(GROUPS.values())
        delay_levels = {"*": DEFAULT_DELAY_LEVELS, **DELAY_LEVELS}
    known = {group.name for group in groups}
    groups += [Group(name, in_seed=False) for name in unseeded_groups if name not in known]
    groups = [
        Group(**{**group.__dict__, "in_seed": group.in_seed and group.name not in unseeded_groups})
        for group in groups
    ]
    config.out.mkdir(parents=True, exist_ok=True)
    write_seed_files(config.out / "seeds", groups, delay_levels)
    stats = Generator(config, groups, delay_levels).run(progress=progress)
    (config.out / "generation.json").write_text(
        json.dumps({"config": _config_json(config), "stats": stats.__dict__}, indent=2) + "\n"
    )
    return stats


def _config_json(config: GeneratorConfig) -> dict[str, object]:
    values = dict(config.__dict__)
    values["out"] = "."
    values["client_versions"] = list(config.client_versions)
    return values


def read_ground_truth(out: Path) -> Iterator[dict]:
    with (out / "ground_truth.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            yield json.loads(line)
