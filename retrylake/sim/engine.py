"""The one simulation of a RocketMQ deployment, behind `retrylake generate`, the demo, the bench
and the hand-written sample: simulated traffic written as a landing zone, with ground truth.

Topics, producer groups and consumer groups run as one discrete-event simulation in time order.
Consumers take due messages in consume requests (batches), and the broker rules of
`rules.decide` schedule the redeliveries. Every client writes its trace records through a
dispatcher that batches them into trace messages the way AsyncTraceDispatcher does, and the
trace messages land in hourly files. What the world does (which message is published when, which
delivery fails, how late a redelivery comes, which trace message is duplicated or cut short) is
the `Traffic`'s choice: `RandomTraffic` here for `retrylake generate`, a fixed script for the
sample (`sample.py`).

RandomTraffic's failure models, per consumer group:
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
from typing import IO, Protocol

from retrylake.config_check import GROUP_COLUMNS
from retrylake.project import retry_overdue_grace_ms
from retrylake.sim import trace_format as tf
from retrylake.sim.rules import (
    CONSUME_TIMEOUT_MS,
    DEFAULT_CLUSTER_NAME,
    Decision,
    Group,
    decide,
    dlq_copy_reconsume_times,
)
from spark_udfs import DEFAULT_DELAY_LEVELS, parse_delay_levels

HOUR_MS = 3_600_000
MAX_BODY_CHARS = 128_000 - 10_000  # AsyncTraceDispatcher flushes a segment at this size
DISPATCH_WINDOW_MS = 500  # ... or when its first record is this old
REQUEST_WINDOW_MS = 20  # due messages a consumer gathers into one consume request
SCHEDULE_POLL_MS = 100  # ScheduleMessageService polls each level every 100 ms
FAILURE_KINDS = (("EXCEPTION", 0.5), ("FAILED", 0.4), ("RETURNNULL", 0.1))
STORE_HOST = "10.0.0.1:10911"
REGION = "DefaultRegion"


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
    rollback: float = 0.0  # orderly only: share of successes returned as ROLLBACK
    outage: tuple[float, float] | None = None  # (start, end) as fractions of the run
    offline_from: float | None = None  # fraction of the run after which it consumes nothing
    request_window_ms: int = REQUEST_WINDOW_MS  # how long a consume request gathers messages


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
    "payment-ledger": Behaviour(
        ("payments",), cost_ms=60, transient=0.05, poison=0.002, rollback=0.02
    ),
    "fraud-check": Behaviour(("payments",), transient=0.01, poison=0.001),
    "audit-archiver": Behaviour(("audit",), batch_size=8, transient=0.02),
    "bulk-importer": Behaviour(("imports",), batch_size=16, cost_ms=80, poison=0.01),
    "search-indexer": Behaviour(("catalog", "stock"), batch_size=4, transient=0.05, slow=0.02),
    "notification-push": Behaviour(("notify",), transient=0.08, poison=0.01, offline_from=0.8),
}


# The demo's deployment: the groups of seeds/consumer_groups.csv (a unit test keeps them in step)
# and one group missing from the seed, whose settings the build must assume.
GROUPS = {
    group.name: group
    for group in (
        Group("order-service", broker_cluster=DEFAULT_CLUSTER_NAME),
        Group("inventory-sync", max_reconsume_times=3, broker_cluster=DEFAULT_CLUSTER_NAME),
        Group(
            "payment-ledger",
            consume_mode="ORDERLY",
            max_reconsume_times=3,
            broker_cluster=DEFAULT_CLUSTER_NAME,
        ),
        Group(
            "cache-invalidator", message_model="BROADCASTING", broker_cluster=DEFAULT_CLUSTER_NAME
        ),
        Group("audit-archiver", retry_queue_nums=0, broker_cluster=DEFAULT_CLUSTER_NAME),
        Group("bulk-importer", max_reconsume_times=20, broker_cluster=DEFAULT_CLUSTER_NAME),
        Group("search-indexer", broker_cluster="fast-cluster"),
        Group("fraud-check", delay_level_when_next_consume=-1, broker_cluster=DEFAULT_CLUSTER_NAME),
        Group("notification-push", in_seed=False),
    )
}
DELAY_LEVELS = {"*": DEFAULT_DELAY_LEVELS, "fast-cluster": "5s 8s"}


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
    traced: bool = True  # whether the producer wrote a Pub trace


@dataclass
class Delivery:
    """One delivery, as the trace and the rules tell it; kept only when history is asked for."""

    request_id: str
    reconsume_times: int
    started_ms: int
    ended_ms: int | None = None
    return_type: str | None = None
    success: bool | None = None
    decision: str | None = None
    delay_level: int | None = None
    delay_ms: int | None = None
    expected_redelivery_ms: int | None = None
    entered_dlq_ms: int | None = None


@dataclass
class Lifecycle:
    """One message's life in one consumer group."""

    index: int  # the group's position in the engine's groups
    group: str
    message: Published
    poisoned: bool = False
    script: tuple[str, ...] = ()  # the outcome of each delivery, for scripted traffic
    deliveries: int = 0
    reconsume_times: int = 0
    expected_ms: int | None = None  # when the rules say the pending redelivery is due
    in_flight: bool = False
    previous_level: int | None = None  # the last schedule hop's level, for DLQ copies
    history: list[Delivery] | None = None
    state: str | None = None  # the final state, once the engine has judged it


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


class Traffic(Protocol):
    """What the world does; the engine does the rest. Each method is asked in event order, so a
    seeded implementation gives the same bytes every time."""

    def begin(self, engine: Engine) -> None:
        """Schedule the first events."""

    def on_publish(self, engine: Engine, at: int, index: int) -> None:
        """A scheduled publication is due."""

    def offline(self, engine: Engine, at: int, lifecycle: Lifecycle) -> bool:
        """Whether the group takes no delivery at ``at`` (the message keeps waiting)."""

    def outcome(self, engine: Engine, at: int, request: Request) -> str:
        """SUCCESS, SLOW_SUCCESS, FAILED, EXCEPTION, RETURNNULL or IN_FLIGHT (no result)."""

    def consume_ms(self, engine: Engine, request: Request, behaviour: Behaviour) -> int:
        """How long the listener takes for the whole request."""

    def redelivery_lag(self, engine: Engine, decision: Decision) -> int:
        """How long after it is due a redelivery reaches the consumer."""

    def dlq_copy_choices(self, engine: Engine) -> tuple[int, bool]:
        """A DLQ copy's commit-log step, and whether its properties are a map or a string."""

    def store_delay(self, engine: Engine) -> int:
        """How long a trace message takes to be stored."""

    def land(self, engine: Engine, store_ms: int, trace_id: str, keys: str, body: str) -> None:
        """Write a trace message's landing line(s), with whatever transport faults."""


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


class Engine:
    """The simulation: events in time order, the rules, the trace dispatchers, the hourly files,
    the ground truth, and the final judgement of lifecycles still open at the end."""

    _PUBLISH, _DELIVER, _FLUSH = 0, 1, 2

    def __init__(
        self,
        *,
        out: Path,
        groups: list[Group],
        delay_levels: dict[str, str],
        behaviours: list[Behaviour],
        client_versions: list[tf.ClientVersion],
        traffic: Traffic,
        start_ms: int,
        end_ms: int,
        compression: str = "mixed",
        dlq_export: bool = False,
        keep_history: bool = False,
    ) -> None:
        self.groups = groups
        self.behaviours = behaviours
        self.group_versions = client_versions
        self.traffic = traffic
        self.tables = {
            group.name: [
                ms
                for _, _, ms in parse_delay_levels(
                    delay_levels.get(group.broker_cluster, delay_levels["*"])
                )
            ]
            for group in groups
        }
        self.start_ms = start_ms
        self.end_ms = end_ms
        self.grace_ms = retry_overdue_grace_ms()
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
        self.finished: list[Lifecycle] | None = [] if keep_history else None
        self.trace_files = HourlyFiles(out, "trace", compression)
        self.dlq_files = HourlyFiles(out, "dlq", "none") if dlq_export else None
        out.mkdir(parents=True, exist_ok=True)
        self.truth = (out / "ground_truth.jsonl").open("w", encoding="utf-8")

    # event queue ---------------------------------------------------------------------------
    def _push(self, at: int, kind: int, payload: object) -> None:
        self.sequence += 1
        heapq.heappush(self.events, (at, self.sequence, kind, payload))

    def schedule_publish(self, at: int, index: int) -> None:
        self._push(at, self._PUBLISH, index)

    def _month_start(self, ms: int) -> int:
        return _month_start_of_day(ms // 86_400_000)

    def new_id(self, ip: str, pid: int, at: int) -> str:
        """A client msgId (UNIQ_KEY), unique within the run."""
        self.counter += 1
        return tf.uniq_msg_id(ip, pid, 0x18B4AAC2, at, self._month_start(at), self.counter)

    # run -------------------------------------------------------------------------------------
    def run(self, progress: bool = False) -> Stats:
        self.traffic.begin(self)
        last_report = time.monotonic()
        while self.events:
            at, _, kind, payload = heapq.heappop(self.events)
            if at > self.end_ms:
                break
            self._drain_records(at)
            if kind == self._PUBLISH:
                self.traffic.on_publish(self, at, payload)  # type: ignore[arg-type]
            elif kind == self._DELIVER:
                self._deliver(at, payload)  # type: ignore[arg-type]
            else:
                self._flush_request(at, payload)  # type: ignore[arg-type]
            if progress and time.monotonic() - last_report > 0.5:
                last_report = time.monotonic()
                done = (at - self.start_ms) / (self.end_ms - self.start_ms)
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
    def publish(
        self,
        at: int,
        *,
        topic: str,
        producer_group: str,
        pid: int,
        version: tf.ClientVersion,
        tags: str | None,
        keys: str | None,
        offset_step: int,
        body_length: int,
        cost_ms: int,
        traced: bool = True,
    ) -> Published:
        """A message stored by the broker, with its Pub trace record unless ``traced`` is off."""
        self.stats.messages += 1
        msg_id = self.new_id("10.0.1.9", pid, at)
        self.commit_log_offset += offset_step
        offset_id = tf.offset_msg_id("10.0.0.1", 10911, self.commit_log_offset)
        origin = offset_id if traced and version.pub_fields >= 14 else None
        message = Published(msg_id, offset_id, origin, topic, tags, keys, at, traced)
        if traced:
            record = tf.pub_record(
                version,
                timestamp=at,
                region=REGION,
                producer_group=producer_group,
                topic=topic,
                msg_id=msg_id,
                tags=tags,
                keys=keys,
                store_host=STORE_HOST,
                body_length=body_length,
                cost_ms=cost_ms,
                offset_id=offset_id,
            )
            self.record(at, f"producer:{producer_group}", record, msg_id)
        return message

    def subscribe(
        self,
        index: int,
        message: Published,
        *,
        poisoned: bool = False,
        script: tuple[str, ...] = (),
    ) -> Lifecycle:
        """The message's lifecycle in group ``index``; deliver it with `deliver_at`."""
        history = [] if self.finished is not None else None
        return Lifecycle(index, self.groups[index].name, message, poisoned, script, history=history)

    def deliver_at(self, at: int, lifecycle: Lifecycle) -> None:
        self._push(at, self._DELIVER, lifecycle)

    # consumers -------------------------------------------------------------------------------
    def _deliver(self, at: int, lifecycle: Lifecycle) -> None:
        if self.traffic.offline(self, at, lifecycle):
            # The consumer takes nothing: the message waits; a first delivery never happens.
            if lifecycle.deliveries:
                self.active[id(lifecycle)] = lifecycle
            return
        behaviour = self.behaviours[lifecycle.index]
        orderly = self.groups[lifecycle.index].consume_mode == "ORDERLY"
        size = 1 if orderly else behaviour.batch_size
        request = self.open_requests.get(lifecycle.index)
        if request is None or len(request.lifecycles) >= size:
            request = Request(lifecycle.index, at)
            self.open_requests[lifecycle.index] = request
            self._push(at + behaviour.request_window_ms, self._FLUSH, request)
        request.lifecycles.append(lifecycle)
        self.active[id(lifecycle)] = lifecycle

    def _flush_request(self, at: int, request: Request) -> None:
        if self.open_requests.get(request.group) is request:
            del self.open_requests[request.group]
        group = self.groups[request.group]
        behaviour = self.behaviours[request.group]
        version = self.group_versions[request.group]
        client = f"consumer:{group.name}"
        request_id = self.new_id("10.0.2.7", 5000 + request.group, at)
        for lifecycle in request.lifecycles:
            lifecycle.deliveries += 1
            lifecycle.in_flight = True
            lifecycle.expected_ms = None
            if lifecycle.history is not None:
                lifecycle.history.append(Delivery(request_id, lifecycle.reconsume_times, at))
            self.record(
                at,
                client,
                tf.sub_before_record(
                    version,
                    timestamp=at,
                    region=REGION,
                    group=group.name,
                    request_id=request_id,
                    msg_id=lifecycle.message.msg_id,
                    retry_times=lifecycle.reconsume_times,
                    keys=lifecycle.message.keys,
                ),
                lifecycle.message.msg_id,
            )
        outcome = self.traffic.outcome(self, at, request)
        size = len(request.lifecycles)
        took = self.traffic.consume_ms(self, request, behaviour)
        if outcome == "SLOW_SUCCESS":
            took += CONSUME_TIMEOUT_MS
        ended = at + took
        if outcome == "IN_FLIGHT" or ended > self.end_ms:
            return  # still running at the end of the run: in flight
        # An orderly listener's ROLLBACK (autoCommit on) is acked, though the hook, and so the
        # SubAfter, says success = false with the return type SUCCESS (spec §3.5).
        traced_success = outcome in ("SUCCESS", "SLOW_SUCCESS")
        success = traced_success or outcome == "ROLLBACK"
        return_type = {"SLOW_SUCCESS": "TIME_OUT", "ROLLBACK": "SUCCESS"}.get(outcome, outcome)
        # A 7-field SubAfter has no timestamp and its costTime is the request's time divided by
        # its size (spec §5.2): the end a reader can know is the start plus costTime x size.
        traced_end = ended if version.sub_after_fields >= 9 else at + took // size * size
        for lifecycle in request.lifecycles:
            lifecycle.in_flight = False
            self.record(
                ended,
                client,
                tf.sub_after_record(
                    version,
                    request_id=request_id,
                    msg_id=lifecycle.message.msg_id,
                    cost_ms=took // size,
                    success=traced_success,
                    keys=lifecycle.message.keys,
                    return_type=return_type,
                    timestamp=ended,
                    group=group.name,
                ),
                lifecycle.message.msg_id,
            )
            delivery = lifecycle.history[-1] if lifecycle.history is not None else None
            if delivery is not None:
                delivery.ended_ms, delivery.return_type = traced_end, return_type
                delivery.success = success
            if success:
                self._close(lifecycle, "CONSUMED")
                continue
            # The client sends the failures back when the whole request has ended.
            decision = decide(group, lifecycle.reconsume_times, ended, self.tables[group.name])
            if delivery is not None:
                delivery.decision = decision.decision
                delivery.delay_level = decision.delay_level
                delivery.delay_ms = decision.delay_ms
                delivery.expected_redelivery_ms = decision.expected_redelivery_ms
                delivery.entered_dlq_ms = decision.entered_dlq_ms
            self._apply(lifecycle, decision)

    def _apply(self, lifecycle: Lifecycle, decision: Decision) -> None:
        if decision.decision == "DROP":
            self._close(lifecycle, "DROPPED")
            return
        if decision.decision == "DLQ":
            assert decision.entered_dlq_ms is not None
            self._dlq_copy(lifecycle, decision)
            group = self.groups[lifecycle.index]
            stored = dlq_copy_reconsume_times(group, lifecycle.reconsume_times)
            self._close(lifecycle, "DLQ", dlq_reconsume_times=stored)
            return
        assert decision.expected_redelivery_ms is not None
        lifecycle.expected_ms = decision.expected_redelivery_ms
        lifecycle.previous_level = decision.delay_level
        lifecycle.reconsume_times += 1
        lag = self.traffic.redelivery_lag(self, decision)
        self._push(decision.expected_redelivery_ms + lag, self._DELIVER, lifecycle)

    # ground truth ----------------------------------------------------------------------------
    def _close(self, lifecycle: Lifecycle, state: str, dlq_reconsume_times: int | None = None):
        self.active.pop(id(lifecycle), None)
        self._truth(lifecycle, state, dlq_reconsume_times)

    def _truth(self, lifecycle: Lifecycle, state: str, dlq_reconsume_times: int | None) -> None:
        lifecycle.state = state
        if self.finished is not None:
            self.finished.append(lifecycle)
        self.stats.lifecycles += 1
        self.stats.states[state] = self.stats.states.get(state, 0) + 1
        row = {
            "consumer_group": lifecycle.group,
            "msg_id": lifecycle.message.msg_id,
            "origin_msg_id": lifecycle.message.origin_msg_id,
            "final_state": state,
            "deliveries": lifecycle.deliveries,
            "in_dlq": state == "DLQ",
            "dlq_reconsume_times": dlq_reconsume_times,
        }
        self.truth.write(json.dumps(row, separators=(",", ":")) + "\n")

    def judge_open(self, lifecycle: Lifecycle, watermark_ms: int) -> str:
        """The state of a lifecycle still open when the trace ends, as the models judge it."""
        if lifecycle.in_flight:
            return "IN_FLIGHT"
        assert lifecycle.expected_ms is not None
        overdue = lifecycle.expected_ms < watermark_ms - self.grace_ms
        return "RETRY_OVERDUE" if overdue else "WAITING_RETRY"

    def _finish(self) -> None:
        watermark = self.stats.watermark_ms
        for lifecycle in sorted(
            self.active.values(), key=lambda item: (item.group, item.message.msg_id)
        ):
            if lifecycle.deliveries == 0:
                # queued for a first consume request that the run ended before sending: the
                # trace has nothing of it, so it is not a lifecycle yet
                continue
            self._truth(lifecycle, self.judge_open(lifecycle, watermark), None)
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
        group = self.groups[lifecycle.index]
        message = lifecycle.message
        entered = decision.entered_dlq_ms
        assert entered is not None
        offset_step, properties_as_map = self.traffic.dlq_copy_choices(self)
        self.commit_log_offset += offset_step
        properties = {
            "UNIQ_KEY": message.msg_id,
            "RETRY_TOPIC": message.topic,
            "WAIT": "false",
            "CLUSTER": group.cluster_name,
            "MSG_REGION": REGION,
            "TRACE_ON": "true",
        }
        if message.keys:
            properties["KEYS"] = message.keys
        if message.tags:
            properties["TAGS"] = message.tags
        if group.consume_mode == "ORDERLY":
            # The client sends it to %RETRY% itself: ORIGIN_MESSAGE_ID is the client msgId, but a
            # 4.9.x client loses it, replacing the property map after setting it (§3.5); a 4.9.x
            # broker routes it through the schedule topic with DELAY = 3 + r (§1.3).
            if group.client_line != "remoting-4.9":
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
            "reconsumeTimes": dlq_copy_reconsume_times(group, lifecycle.reconsume_times),
            "bornTimestamp": message.born_ms,
            "storeTimestamp": entered,
            "storeHost": "10.0.0.1:10911",
        }
        if properties_as_map:
            line["properties"] = dict(sorted(properties.items()))
        else:
            line["propertiesString"] = "".join(
                f"{key}\u0001{value}\u0002" for key, value in sorted(properties.items())
            )
        self.dlq_files.write(entered // HOUR_MS, json.dumps(line, separators=(",", ":")))

    # trace dispatch --------------------------------------------------------------------------
    def record(self, at: int, client: str, record: str, msg_id: str) -> None:
        """A trace record written by ``client`` at ``at``, for that client's dispatcher."""
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
        store_ms = at + self.traffic.store_delay(self)
        trace_id, keys, body = dispatcher.take(self._month_start(at))
        self.stats.trace_messages += 1
        self.traffic.land(self, store_ms, trace_id, keys, body)

    def write_line(self, hour: int, line: str, store_ms: int | None) -> None:
        """A landing line in the file of ``hour``; ``store_ms`` None for a line cut short."""
        if store_ms is not None:
            self.stats.watermark_ms = max(self.stats.watermark_ms, store_ms)
        self.stats.lines += 1
        # Store times only move forward, so hours two behind can no longer receive lines.
        self.trace_files.close_before(self.stats.watermark_ms // HOUR_MS - 1)
        self.trace_files.write(hour, line)


class RandomTraffic:
    """`retrylake generate`'s world: every choice drawn from one seeded stream, in event order."""

    def __init__(self, config: GeneratorConfig, groups: list[Group]) -> None:
        self.config = config
        self.rng = random.Random(config.seed)
        versions = config.client_versions
        self.topic_versions = {
            topic.name: tf.CLIENT_VERSIONS[versions[(i + 1) % len(versions)]]
            for i, topic in enumerate(TOPICS)
        }
        behaviours = [behaviour_for(group.name) for group in groups]
        self.subscribers = {
            topic.name: [i for i, b in enumerate(behaviours) if topic.name in b.topics]
            for topic in TOPICS
        }

    def begin(self, engine: Engine) -> None:
        if self.config.messages > 0:
            engine.schedule_publish(self._publish_time(engine, 0), 0)

    def _publish_time(self, engine: Engine, index: int) -> int:
        """Message n is published at a jittered time in its own slot of the whole run, up to
        the end, so some work is still in flight when the run stops."""
        slot = (engine.end_ms - engine.start_ms) / self.config.messages
        return engine.start_ms + int(index * slot + self.rng.random() * slot)

    def _choose_topic(self) -> Topic:
        total = sum(topic.weight for topic in TOPICS)
        pick = self.rng.randrange(total)
        for topic in TOPICS:
            pick -= topic.weight
            if pick < 0:
                return topic
        raise AssertionError("unreachable")

    def on_publish(self, engine: Engine, at: int, index: int) -> None:
        rng = self.rng
        topic = self._choose_topic()
        offset_step = 180 + rng.randrange(400)
        tags = rng.choice(topic.tags) if rng.random() < 0.9 else None
        number = engine.stats.messages + 1
        keys = f"{topic.name}-{number}" if rng.random() < 0.8 else None
        body_length = 200 + rng.randrange(2000)
        cost_ms = 1 + rng.randrange(8)
        message = engine.publish(
            at,
            topic=topic.name,
            producer_group=topic.producer_group,
            pid=4100 + TOPICS.index(topic),
            version=self.topic_versions[topic.name],
            tags=tags,
            keys=keys,
            offset_step=offset_step,
            body_length=body_length,
            cost_ms=cost_ms,
        )
        for group in self.subscribers[topic.name]:
            poisoned = rng.random() < engine.behaviours[group].poison
            lifecycle = engine.subscribe(group, message, poisoned=poisoned)
            engine.deliver_at(at + 5 + rng.randrange(200), lifecycle)
        following = index + 1
        if following < self.config.messages:  # one at a time: memory stays bounded
            engine.schedule_publish(self._publish_time(engine, following), following)

    def _fraction(self, engine: Engine, at: int) -> float:
        return (at - engine.start_ms) / (engine.end_ms - engine.start_ms)

    def offline(self, engine: Engine, at: int, lifecycle: Lifecycle) -> bool:
        offline_from = engine.behaviours[lifecycle.index].offline_from
        return offline_from is not None and self._fraction(engine, at) >= offline_from

    def outcome(self, engine: Engine, at: int, request: Request) -> str:
        behaviour = engine.behaviours[request.group]
        outage = behaviour.outage
        if outage and outage[0] <= self._fraction(engine, at) < outage[1]:
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
        orderly = engine.groups[request.group].consume_mode == "ORDERLY"
        if orderly and behaviour.rollback and self.rng.random() < behaviour.rollback:
            return "ROLLBACK"  # an orderly listener's deprecated ROLLBACK, acked
        return "SLOW_SUCCESS" if self.rng.random() < behaviour.slow else "SUCCESS"

    def consume_ms(self, engine: Engine, request: Request, behaviour: Behaviour) -> int:
        size = len(request.lifecycles)
        return size * (behaviour.cost_ms + self.rng.randrange(behaviour.cost_ms + 1))

    def redelivery_lag(self, engine: Engine, decision: Decision) -> int:
        lag = 1 + self.rng.randrange(5)
        if decision.decision == "RETRY":  # schedule polling, then the consumer's pull
            lag = self.rng.randrange(SCHEDULE_POLL_MS) + 5 + self.rng.randrange(200)
        return lag

    def dlq_copy_choices(self, engine: Engine) -> tuple[int, bool]:
        offset_step = 180 + self.rng.randrange(400)
        return offset_step, self.rng.random() < 0.5

    def store_delay(self, engine: Engine) -> int:
        return 2 + self.rng.randrange(15)

    def land(self, engine: Engine, store_ms: int, trace_id: str, keys: str, body: str) -> None:
        config = self.config
        rng = self.rng
        line = tf.landing_line(
            trace_msg_id=trace_id,
            store_timestamp=store_ms,
            store_host=STORE_HOST,
            body=body,
            keys=keys,
            as_base64=rng.random() < config.base64_share,
        )
        hour = store_ms // HOUR_MS
        if rng.random() < config.late_share:
            engine.stats.late_lines += 1
            engine.write_line(hour + 1, line, store_ms)
        else:
            engine.write_line(hour, line, store_ms)
        if rng.random() < config.duplicate_share:
            # The trace producer re-sent it: same msgId and body, stored again a little later.
            again = store_ms + 50 + rng.randrange(3000)
            engine.stats.duplicate_lines += 1
            copy = tf.landing_line(
                trace_msg_id=trace_id,
                store_timestamp=again,
                store_host=STORE_HOST,
                body=body,
                keys=keys,
            )
            engine.write_line(again // HOUR_MS, copy, again)
        if rng.random() < config.malformed_share:
            engine.stats.malformed_lines += 1
            engine.write_line(hour, line[: rng.randrange(1, max(2, len(line) // 2))], None)


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
        return [Group.from_seed_row(row) for row in csv.DictReader(handle)]


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
    if seeds_dir is not None:
        groups = read_groups(seeds_dir / "consumer_groups.csv")
        delay_levels = read_delay_levels(seeds_dir / "broker_delay_levels.csv")
    else:
        groups = list(GROUPS.values())
        delay_levels = dict(DELAY_LEVELS)
    known = {group.name for group in groups}
    groups += [Group(name, in_seed=False) for name in unseeded_groups if name not in known]
    groups = [
        Group(**{**group.__dict__, "in_seed": group.in_seed and group.name not in unseeded_groups})
        for group in groups
    ]
    config.out.mkdir(parents=True, exist_ok=True)
    write_seed_files(config.out / "seeds", groups, delay_levels)
    versions = config.client_versions
    engine = Engine(
        out=config.out,
        groups=groups,
        delay_levels=delay_levels,
        behaviours=[behaviour_for(group.name) for group in groups],
        client_versions=[
            tf.CLIENT_VERSIONS[versions[i % len(versions)]] for i in range(len(groups))
        ],
        traffic=RandomTraffic(config, groups),
        start_ms=config.start_ms,
        end_ms=config.start_ms + int(config.hours * HOUR_MS),
        compression=config.compression,
        dlq_export=config.dlq_export,
    )
    stats = engine.run(progress=progress)
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
