"""RocketMQ 5.x gRPC consumer groups for `retrylake generate --grpc5-messages N`.

gRPC clients write no trace-topic records (rocketmq5-observability.md §3.1), so their deliveries
land in three other feeds of the same landing zone (design.md, "RocketMQ 5.x gRPC consumers"):

- ``otel/YYYY/MM/DD/HH/spans-00000.jsonl[.gz]``: OTLP/JSON lines as the Collector's file exporter
  writes them, one export batch a line: the `process` spans (kind 5, one per listener call) of one
  consumer instance that ended in one 5-second window, landing a second after the window ends,
  in the semantic-convention mode of the group (old, v1.43 or both), with spans of other systems
  in the same batches and in lines of their own (observability §1.2, §4, §5.2, §5.4);
- ``consume_events/YYYY/MM/DD/HH/events-00000.jsonl[.gz]``: one object per listener invocation,
  written by the listener decorator of the README; the only record of a SimpleConsumer;
- ``broker_logs/YYYY/MM/DD/HH/broker-a.log[.gz]`` (and broker-b): the broker's root log, where
  every DLQ forward writes one `send msg to DLQ` line (§3.2) among lines of other kinds.

Files are hourly by the time a record lands. Nothing lands after the watermark the run is given
(the 4.x trace's latest store time): the run ended there, and lifecycles still open are judged
at it. The groups (`GRPC5_GROUPS`) follow the retry rules of spec §8 and seed 002, each with the
failures of its `Behaviour5`; two of them really run another schedule than their seed row says.
Their retry settings (retry_max_times, group_retry_policy, dead_letter_enabled) are the ones
defined here, or a seed's (`groups_from_seed_rows`, `retrylake generate
--grpc5-settings-from-seeds`).

The publications are drawn first, from one seeded stream; what a listener does with each
delivery (its result, time, instance, and the redelivery's lag) is a keyed draw (`keyed`) of
(seed, purpose, group, message, attempt), so that runs with the same seed and other retry
settings publish the same messages and see the same result at the same attempt of each; the
landing (spans, events, log lines and their faults) is drawn from the stream afterwards. A seed
gives byte-identical output.

Ground truth: one row per (group, msg_id) lifecycle with a delivery that ended by the watermark,
appended to ground_truth.jsonl after the 4.x rows (see `_truth_row`).
"""

from __future__ import annotations

import csv
import dataclasses
import datetime as dt
import functools
import io
import itertools
import json
import random
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from retrylake.config_check import GROUP_COLUMNS
from retrylake.errors import ConfigError
from retrylake.project import project_vars, retry_overdue_grace_ms
from retrylake.sim import keyed
from retrylake.sim import trace_format as tf
from retrylake.sim.output import Writer, compact_json
from retrylake.sim.rules import DEFAULT_CLUSTER_NAME, NAMESPACES, Group, broker_name
from spark_udfs import DEFAULT_DELAY_LEVELS, parse_delay_levels

SECOND = 1000
HOUR_MS = 3_600_000
GMT8 = dt.timezone(dt.timedelta(hours=8))

# The default CustomizedRetryPolicy list (spec §8.1) and ExponentialRetryPolicy (§8.1, §8.3)
DEFAULT_NEXT = tuple(ms for _, _, ms in parse_delay_levels(DEFAULT_DELAY_LEVELS))
DEFAULT_EXPONENTIAL = (5000, 7_200_000, 2)  # initial, max, multiplier
INVISIBLE_MS = 30_000  # a SimpleConsumer's receive(n, 30 s)
CHANGED_INVISIBLE_MS = 5000  # ... and its changeInvisibleDuration(5 s) on some failures
EXPORT_WINDOW_MS = 5000  # the span processor exports what ended in the last 5 s ...
EXPORT_LAG_MS = 1000  # ... and the Collector's file exporter writes it a second later

# The schedule a group really follows (generation.json's "true_schedules")
CONFIGURED, DOCUMENTED_LADDER, EXPONENTIAL = "CONFIGURED", "DOCUMENTED_LADDER", "EXPONENTIAL"
FINAL_STATES = ("CONSUMED", "DLQ", "DROPPED", "WAITING_RETRY", "RETRY_OVERDUE")

SCOPE_VERSION = "2.31.0-alpha"
SCOPE_ROCKETMQ_5 = "io.opentelemetry.rocketmq-client-5.0"
SCOPE_ROCKETMQ_48 = "io.opentelemetry.rocketmq-client-4.8"
SCOPE_TOMCAT = "io.opentelemetry.tomcat-10.0"
# semantic-convention modes of the agent (observability §1.1)
OLD, V143, DUP = "old", "v1.43", "messaging/dup"
ATTEMPT_SEMCONV = "messaging.rocketmq.message.delivery_attempt"  # the likely future name (§5.3)
ATTEMPT_PROJECT = "retrylake.delivery_attempt"  # the project's own key (§5.3)

# Transport faults
SPAN_LOST_SHARE = 0.003  # process spans a JVM crash drops (groups without consume events)
# A poison message that exhausts the heap: each of its failures ends in an OutOfMemoryError and
# the instance is killed right after its client nacked the message, before the span processor's
# next export or the consume-event writer's next flush half the time: that delivery's records
# are lost. Dead letters whose deciding failure left no record are seen in the broker log only.
OOM_ERROR = "java.lang.OutOfMemoryError"
OOM_RECORD_LOST_SHARE = 0.5
DUPLICATE_BATCH_SHARE = 0.005  # export lines written twice (at-least-once)
LATE_BATCH_SHARE = 0.01  # export lines that land 1-2 hours late
BARE_LINE_SHARE = 0.02  # lines of the old logging exporter: a bare ResourceSpans
MERGE_SHARE = 0.5  # batches landing in the same ms that the Collector writes as one line
DLQ_LINE_MISSING_SHARE = 0.02  # DLQ log lines in a rotated file that was lost
INCIDENT_FRACTION = 0.15  # a bad release at the start of the run poisons some messages


GRPC5_GROUPS = (
    Group(
        "checkout-push",
        broker_cluster=DEFAULT_CLUSTER_NAME,
        client_line="grpc-5",
        retry_max_times=16,
        consumer_kind="PUSH",
    ),
    Group(
        "notify-exp",
        broker_cluster=DEFAULT_CLUSTER_NAME,
        client_line="grpc-5",
        retry_max_times=4,
        group_retry_policy='{"type":"EXPONENTIAL","exponentialRetryPolicy":'
        '{"initial":2000,"max":60000,"multiplier":3}}',
    ),
    Group(
        "ledger-fifo",
        consume_mode="ORDERLY",
        broker_cluster=DEFAULT_CLUSTER_NAME,
        client_line="grpc-5",
        retry_max_times=3,
        group_retry_policy='{"type":"CUSTOMIZED","customizedRetryPolicy":{"next":[1000,2000,5000]}}',
    ),
    Group(
        "report-simple",
        broker_cluster=DEFAULT_CLUSTER_NAME,
        client_line="grpc-5",
        retry_max_times=2,
        consumer_kind="SIMPLE",
    ),
    Group(
        "cloud-orders",
        broker_cluster=DEFAULT_CLUSTER_NAME,
        client_line="cloud-5",
        retry_max_times=16,
        dead_letter_enabled="true",
    ),
    Group(
        "cloud-fifo",
        consume_mode="ORDERLY",
        broker_cluster=DEFAULT_CLUSTER_NAME,
        client_line="cloud-5",
        retry_max_times=3,
        dead_letter_enabled="false",
    ),
    Group(
        "mislabeled-push",
        broker_cluster=DEFAULT_CLUSTER_NAME,
        client_line="grpc-5",
        retry_max_times=16,
    ),
    Group(
        "mislabeled-exp",
        broker_cluster=DEFAULT_CLUSTER_NAME,
        client_line="grpc-5",
        retry_max_times=16,
        group_retry_policy='{"type":"CUSTOMIZED"}',
    ),
)
# Remoting-only columns, left empty in a 5.x group's seed row: for a cloud-5 FIFO group an empty
# suspend_current_queue_time_millis is the managed service's fixed 3000 ms.
REMOTING_ONLY_COLUMNS = (
    "max_reconsume_times",
    "suspend_current_queue_time_millis",
    "retry_queue_nums",
    "delay_level_when_next_consume",
    "consume_timeout_minutes",
)
# The columns of a 5.x group's seed row it takes its retry settings from, when asked to
# (`groups_from_seed_rows`); the others stay as `GRPC5_GROUPS` defines them.
SEED_SETTINGS = ("retry_max_times", "group_retry_policy", "dead_letter_enabled")


@dataclass(frozen=True)
class Behaviour5:
    """How a 5.x group really behaves, and what it writes."""

    topic: str
    service: str  # the consumer application's service.name
    tags: tuple[str, ...]
    spans: str | None = None  # semconv mode of its process spans (OLD, V143, DUP); None: none
    attempt_key: str | None = None  # the span attribute its listener adds with the attempt
    events: bool = False  # it writes consume events (the listener decorator)
    schedule: str = CONFIGURED
    # the policy and line it really runs with, where they are not the seed row's
    real_policy: str | None = None
    real_line: str | None = None
    transient: float = 0.15  # chance that a first attempt fails; x0.6 per further attempt
    poison: float = 0.04  # messages that always fail
    incident_poison: float = 0.0  # ... among those published in the first INCIDENT_FRACTION
    slow: float = 0.02  # successes that take 8-90 s
    exception: float = 0.4  # failures that throw rather than return FAILURE
    instances: int = 2
    message_groups: tuple[str, int] | None = None  # FIFO: the message groups' prefix and count
    burst: float = 0.0  # FIFO: publications followed at once by more of the same message group
    change_invisible: float = 0.0  # SimpleConsumer: failures that change the invisible duration
    timeout: float = 0.0  # SimpleConsumer: deliveries that run past the invisible duration
    exceptions: tuple[str, ...] = ("java.lang.IllegalStateException",)
    oom: float = 0.0  # poison messages that exhaust the heap (`OOM_ERROR`; non-FIFO groups)


BEHAVIOURS5 = {
    "checkout-push": Behaviour5(
        "CheckoutTopic",
        "checkout-service",
        ("created", "paid"),
        spans=OLD,
        transient=0.18,
        poison=0.05,
        incident_poison=0.25,
        instances=3,
        exceptions=("java.net.SocketTimeoutException", "java.lang.IllegalStateException"),
    ),
    "notify-exp": Behaviour5(
        "NotifyTopic",
        "notification-service",
        ("sms", "mail", "push"),
        spans=V143,
        attempt_key=ATTEMPT_SEMCONV,
        transient=0.22,
        poison=0.06,
        incident_poison=0.2,
        exceptions=("com.example.notify.GatewayUnavailableException",),
        oom=0.5,
    ),
    "ledger-fifo": Behaviour5(
        "LedgerTopic",
        "ledger-service",
        ("debit", "credit"),
        spans=DUP,
        attempt_key=ATTEMPT_PROJECT,
        events=True,
        transient=0.15,
        poison=0.06,
        message_groups=("account-", 24),
        burst=0.3,
        exceptions=("com.example.ledger.InsufficientFundsException",),
    ),
    "report-simple": Behaviour5(
        "ReportTopic",
        "report-worker",
        ("daily", "monthly"),
        events=True,
        transient=0.2,
        poison=0.08,
        incident_poison=0.2,
        change_invisible=0.5,
        timeout=0.1,
        exceptions=("java.io.UncheckedIOException",),
        oom=0.5,
    ),
    "cloud-orders": Behaviour5(
        "CloudOrderTopic",
        "cloud-order-service",
        ("created", "cancelled"),
        events=True,
        transient=0.15,
        poison=0.03,
        incident_poison=0.6,
        instances=3,
        exceptions=("org.springframework.dao.DataAccessResourceFailureException",),
    ),
    "cloud-fifo": Behaviour5(
        "CloudFifoTopic",
        "inventory-fifo-service",
        ("reserve", "release"),
        spans=OLD,
        transient=0.12,
        poison=0.06,
        incident_poison=0.2,
        message_groups=("store-", 12),
        burst=0.3,
        exceptions=("java.lang.IllegalArgumentException",),
    ),
    "mislabeled-push": Behaviour5(
        "PromoTopic",
        "promo-service",
        ("coupon", "banner"),
        events=True,
        schedule=DOCUMENTED_LADDER,
        real_line="cloud-5",  # the server's indexing: 10 s, 30 s, 1 m, ...
        transient=0.25,
        poison=0.06,
        incident_poison=0.6,
        exceptions=("java.lang.NullPointerException",),
    ),
    "mislabeled-exp": Behaviour5(
        "ShipmentTopic",
        "shipping-service",
        ("label", "pickup"),
        spans=V143,
        attempt_key=ATTEMPT_SEMCONV,
        schedule=EXPONENTIAL,
        real_policy='{"type":"EXPONENTIAL"}',  # the default 5 s x2 up to 2 h
        transient=0.3,
        poison=0.1,
        incident_poison=0.4,
        exceptions=("com.example.shipping.CarrierTimeoutException",),
    ),
}


# the rules (spec §8, seed 002) -----------------------------------------------------------------
@dataclass(frozen=True)
class RetryPolicy:
    """A group's `groupRetryPolicy` (spec §8.1): CUSTOMIZED with its `next` list (ms), or
    EXPONENTIAL with initial, max and multiplier."""

    kind: str
    next: tuple[int, ...] = DEFAULT_NEXT
    initial: int = DEFAULT_EXPONENTIAL[0]
    max: int = DEFAULT_EXPONENTIAL[1]
    multiplier: int = DEFAULT_EXPONENTIAL[2]


@functools.lru_cache(maxsize=256)  # asked for every redelivery; a policy is immutable
def parse_retry_policy(text: str) -> RetryPolicy:
    """The policy of a group_retry_policy cell; empty, or a missing object, is the default of its
    type (the default CUSTOMIZED list; EXPONENTIAL 5000 ms, 7200000 ms, 2)."""
    policy = json.loads(text) if text else {}
    if policy.get("type", "CUSTOMIZED") == "EXPONENTIAL":
        values = policy.get("exponentialRetryPolicy") or {}
        return RetryPolicy(
            "EXPONENTIAL",
            initial=int(values.get("initial", DEFAULT_EXPONENTIAL[0])),
            max=int(values.get("max", DEFAULT_EXPONENTIAL[1])),
            multiplier=int(values.get("multiplier", DEFAULT_EXPONENTIAL[2])),
        )
    delays = (policy.get("customizedRetryPolicy") or {}).get("next")
    return RetryPolicy("CUSTOMIZED", next=tuple(delays) if delays else DEFAULT_NEXT)


def max_attempts(group: Group) -> int:
    """Deliveries a message gets: retryMaxTimes + 1 (spec §8.2)."""
    return group.retry_max_times + 1


def cloud_fifo_interval_ms() -> int:
    """A cloud-5 FIFO group's fixed retry interval when its suspend cell is empty (seed 002)."""
    return int(project_vars().get("cloud_fifo_retry_interval_millis", 3000))


def retry_delay_ms(group: Group, attempt: int, suspend_ms: int | None = None) -> int:
    """The delay after failed attempt ``attempt`` (1-based) of a PushConsumer of ``group``:

    - grpc-5 indexes the policy on the client (§8.3): CUSTOMIZED L[min(a - 1, len - 1)];
    - cloud-5 indexes it on the server (§8.1, seed 002): L[min(a + 1, len - 1)], the documented
      ladder 10 s, 30 s, 1 m, ..., 2 h;
    - EXPONENTIAL on either line: min(initial * multiplier ** (a - 1), max);
    - a cloud-5 FIFO group retries at a fixed interval, ``suspend_ms`` (None: the default).
    """
    if group.client_line == "cloud-5" and group.consume_mode == "ORDERLY":
        return cloud_fifo_interval_ms() if suspend_ms is None else suspend_ms
    policy = parse_retry_policy(group.group_retry_policy)
    if policy.kind == "EXPONENTIAL":
        return min(policy.initial * policy.multiplier ** (attempt - 1), policy.max)
    shift = 1 if group.client_line == "cloud-5" else -1
    return policy.next[max(min(attempt + shift, len(policy.next) - 1), 0)]


def seed_rows(groups: Iterable[Group] = GRPC5_GROUPS) -> list[list[object]]:
    """The groups' rows of consumer_groups.csv, the remoting-only columns left empty."""
    blank = [GROUP_COLUMNS.index(column) for column in REMOTING_ONLY_COLUMNS]
    rows = []
    for group in groups:
        row = group.seed_row()
        for index in blank:
            row[index] = ""
        rows.append(row)
    return rows


def read_seed_rows(seeds: Path) -> list[list[str]]:
    """The rows of seeds/consumer_groups.csv (written in `GROUP_COLUMNS` order), header left out."""
    with (seeds / "consumer_groups.csv").open(newline="", encoding="utf-8") as handle:
        return [row for row in list(csv.reader(handle))[1:] if row]


def groups_from_seed_rows(rows: Iterable[Sequence[str]]) -> tuple[Group, ...]:
    """`GRPC5_GROUPS`, each with the retry settings (`SEED_SETTINGS`: retry_max_times,
    group_retry_policy, dead_letter_enabled) of the row of its name among ``rows`` (in
    `GROUP_COLUMNS` order; an empty cell is RocketMQ's default, as in the models). A group
    without a row keeps its own. Everything else stays as defined here (kind, mode, line, the
    failures of its `Behaviour5`), and a mislabeled group still runs its true schedule over
    its row (`true_group`)."""
    by_name = {row[0]: dict(zip(GROUP_COLUMNS, row, strict=False)) for row in rows if row}
    groups = []
    for group in GRPC5_GROUPS:
        row = by_name.get(group.name)
        if row is None:
            groups.append(group)
            continue
        cells = {column: row.get(column) or "" for column in SEED_SETTINGS}
        try:
            parse_retry_policy(cells["group_retry_policy"])
            seeded = Group.from_seed_row({"consumer_group": group.name, **cells})
        except ValueError as error:  # JSONDecodeError too; check_consumer_groups says more
            raise ConfigError(f"consumer_groups.csv, {group.name}: {error}") from None
        changes = {column: getattr(seeded, column) for column in SEED_SETTINGS}
        groups.append(dataclasses.replace(group, **changes))
    return tuple(groups)


def add_seed_rows(
    seeds: Path, groups: Iterable[Group] = GRPC5_GROUPS, keep: Sequence[str] = ()
) -> list[str]:
    """Put the groups' rows in seeds/consumer_groups.csv (written in `GROUP_COLUMNS` order): a
    row of the same name is replaced where it stands, but for its cells of the ``keep`` columns
    (the settings the simulation took from it); the others are appended. Returns the names whose
    row was there and said something else (the simulation ran them as defined here)."""
    path = seeds / "consumer_groups.csv"
    ours = {str(row[0]): [str(value) for value in row] for row in seed_rows(groups)}
    kept_columns = [GROUP_COLUMNS.index(column) for column in keep]
    with path.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    kept = [rows[0]]
    replaced = []
    for row in rows[1:]:
        if not row:
            continue
        name = row[0]
        if name in ours:
            mine = ours.pop(name)
            for index in kept_columns:
                mine[index] = row[index] if index < len(row) else ""
            if row != mine:
                replaced.append(name)
            row = mine
        kept.append(row)
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerows(kept)
    writer.writerows(ours.values())
    path.write_text(buffer.getvalue())
    return sorted(replaced)


def reconciliation_reason(
    evidence: str | None,
    entered_ms: int | None,
    last_dlq_line_ms: int | None,
    observed_deliveries: int,
) -> str | None:
    """Why a 5.x dead letter is seen on one side only, the first rule that holds:

    - PREDICTED (its deciding failure landed, its broker DLQ line did not): GROUP_NOT_EXPORTED
      when no broker DLQ line landed at all (``last_dlq_line_ms`` None), AFTER_EXPORT_WINDOW
      when it was forwarded (``entered_ms``) after the latest line that landed, else
      LOG_LINE_MISSING (its line was in a rotated file that was lost);
    - OBSERVED (its line landed, its deciding failure did not): NOT_IN_TRACE when none of its
      deliveries landed, else LAST_DELIVERY_NOT_IN_TRACE.

    None for BOTH, NONE and no dead letter."""
    if evidence == "PREDICTED":
        assert entered_ms is not None
        if last_dlq_line_ms is None:
            return "GROUP_NOT_EXPORTED"
        if entered_ms > last_dlq_line_ms:
            return "AFTER_EXPORT_WINDOW"
        return "LOG_LINE_MISSING"
    if evidence == "OBSERVED":
        return "NOT_IN_TRACE" if observed_deliveries == 0 else "LAST_DELIVERY_NOT_IN_TRACE"
    return None


def true_group(group: Group, behaviour: Behaviour5) -> Group:
    """The settings a group really runs with: its seed row, unless it is mislabeled."""
    changes: dict[str, str] = {}
    if behaviour.real_policy is not None:
        changes["group_retry_policy"] = behaviour.real_policy
    if behaviour.real_line is not None:
        changes["client_line"] = behaviour.real_line
    return dataclasses.replace(group, **changes) if changes else group


# the simulation -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Instance:
    """One consumer instance (a client)."""

    service: str
    host: str
    client_id: str


@dataclass
class Message5:
    group: Group
    behaviour: Behaviour5
    msg_id: str
    published_ms: int
    trace_id: str
    parent_span_id: str  # the producer's send span
    tag: str | None
    keys: tuple[str, ...]
    body_size: int
    message_group: str | None
    poisoned: bool
    oom: bool = False  # its failures kill the instance (`OOM_RECORD_LOST_SHARE`)
    key: int = 0  # its lifecycle's draw key (`_Simulation._attempt_key`)


@dataclass
class Delivery5:
    lifecycle: Lifecycle5
    attempt: int
    start: int
    end: int
    result: str  # SUCCESS, FAILURE or EXCEPTION
    error_class: str | None
    instance: Instance
    span_id: str
    received_at: int | None = None  # SimpleConsumer only
    invisible_ms: int | None = None
    invisible_changed_at: int | None = None
    landed: bool = False  # its span or consume event landed
    records_lost: bool = False  # the instance was killed before its records were written

    @property
    def visible_at(self) -> int:
        """When a SimpleConsumer's message becomes visible again after this delivery."""
        assert self.received_at is not None and self.invisible_ms is not None
        return (self.invisible_changed_at or self.received_at) + self.invisible_ms


@dataclass
class Lifecycle5:
    message: Message5
    deliveries: list[Delivery5] = field(default_factory=list)
    terminal: str | None = None  # CONSUMED, DLQ or DROPPED, once decided
    terminal_ms: int | None = None  # the success's end, the DLQ forward or the discard
    dlq_reconsume_times: int | None = None
    dlq_logged: bool = False  # its broker DLQ line landed


@dataclass
class _Export:
    """One export of spans: what a line of otel/ holds (merged exports share a line)."""

    landed: int
    order: int
    resources: list[dict]  # ResourceSpans
    deliveries: list[Delivery5]  # whose process spans it holds
    foreign: int  # spans of other systems
    late: bool = False  # it lands 1-2 hours late


@dataclass
class Grpc5Result:
    stats: dict[str, object]
    true_schedules: dict[str, str]


class _Files:
    """Hourly landing files, written at the end in landing-time order."""

    def __init__(self, out: Path, compression: str, writer: Writer) -> None:
        self.out = out
        self.compression = compression
        self.writer = writer
        self.lines: dict[tuple[str, str, int], list[tuple[int, int, str]]] = defaultdict(list)
        self.sequence = 0

    def add(self, kind: str, name: str, landed_ms: int, line: str) -> None:
        self.sequence += 1
        self.lines[(kind, name, landed_ms // HOUR_MS)].append((landed_ms, self.sequence, line))

    def write(self) -> None:
        for (kind, name, hour), lines in sorted(self.lines.items()):
            moment = dt.datetime.fromtimestamp(hour * HOUR_MS / 1000, tz=dt.UTC)
            gzipped = self.compression == "gzip" or (self.compression == "mixed" and hour % 2 == 1)
            path = self.out / kind / moment.strftime("%Y/%m/%d/%H") / name
            if gzipped:
                path = path.with_name(path.name + ".gz")
            data = "".join(line + "\n" for _, _, line in sorted(lines)).encode("utf-8")
            # gzip's own default level, as these files have always been written
            self.writer.write_bytes(path, data, compresslevel=9)


def _string(key: str, value: str) -> dict:
    return {"key": key, "value": {"stringValue": value}}


def _int(key: str, value: int) -> dict:
    return {"key": key, "value": {"intValue": str(value)}}


# An attribute many spans share (a topic, a group, a tag) is made once: spans are only written
# out as JSON, never changed, so one dict can stand in every span that has it.
_shared_string = functools.lru_cache(maxsize=4096)(_string)
_shared_int = functools.lru_cache(maxsize=4096)(_int)


def _nanos(ms: int, extra: int) -> str:
    return str(ms * 1_000_000 + extra)


# The purposes of the keyed draws of one attempt (`keyed.purpose`)
_P_FAILS = keyed.purpose("5.x fails")
_P_SLOW = keyed.purpose("5.x slow")
_P_TOOK = keyed.purpose("5.x listener time")
_P_EXCEPTION = keyed.purpose("5.x exception")
_P_ERROR_CLASS = keyed.purpose("5.x error class")
_P_SPAN = keyed.purpose("5.x span id")
_P_OOM_LOST = keyed.purpose("5.x records lost")
_P_INSTANCE = keyed.purpose("5.x instance")
_P_LATENCY = keyed.purpose("5.x latency")
_P_FORWARD = keyed.purpose("5.x fifo forward")
_P_LOCAL_RETRY = keyed.purpose("5.x fifo local retry")
_P_RECEIVED = keyed.purpose("5.x simple receive")
_P_TIMEOUT = keyed.purpose("5.x simple timeout")
_P_TIMEOUT_END = keyed.purpose("5.x simple timeout end")
_P_CHANGE = keyed.purpose("5.x simple change invisible")
_P_FIRST = keyed.purpose("5.x first delivery")
_P_BLOCKED = keyed.purpose("5.x fifo blocked")


class _Simulation:
    def __init__(
        self,
        out: Path,
        *,
        messages: int,
        seed: int,
        start_ms: int,
        end_ms: int,
        watermark_ms: int,
        compression: str,
        writer: Writer | None = None,
        groups: Iterable[Group] = GRPC5_GROUPS,
    ) -> None:
        self.out = out
        self.messages = messages
        # the publications, then the landing (see the module's docstring)
        self.rng = random.Random(seed * 7919 + 5)
        self.seed_key = keyed.key_of("retrylake 5.x traffic", seed)
        self.start_ms = start_ms
        self.end_ms = end_ms
        self.watermark = watermark_ms
        self.grace_ms = retry_overdue_grace_ms()
        self.files = _Files(out, compression, writer or Writer())
        self.counter = 0
        self.groups = {group.name: group for group in groups}
        self.group_keys = {name: keyed.key_of(self.seed_key, name) for name in self.groups}
        self.real = {
            name: true_group(group, BEHAVIOURS5[name]) for name, group in self.groups.items()
        }
        self.instances = {name: self._instances(name) for name in self.groups}
        self.lifecycles: list[Lifecycle5] = []
        self.last_dlq_line_ms: int | None = None  # the latest broker DLQ line that landed
        # dead letters by what the landing shows: "BOTH", "PREDICTED:<reason>", ...
        self.dlq_evidence: dict[str, int] = {}
        self.stats: dict[str, int] = {
            "messages": 0,
            "lifecycles": 0,
            "deliveries": 0,
            "redeliveries": 0,
            "process_spans": 0,  # distinct process spans landed
            "process_spans_lost": 0,  # dropped by a JVM crash
            "process_spans_after_watermark": 0,  # their export landed after the run
            "foreign_spans": 0,  # spans of other systems landed (to be ignored)
            "span_lines": 0,
            "bare_span_lines": 0,
            "duplicate_batches": 0,  # lines written twice
            "late_batches": 0,  # landed 1-2 hours late
            "consume_events": 0,
            "consume_events_after_watermark": 0,
            "consume_events_lost": 0,  # not flushed before an OOM kill
            "oom_messages": 0,  # poison messages that exhaust the heap
            "broker_dlq_lines": 0,
            "broker_dlq_lines_missing": 0,  # in the lost rotated file
            "broker_other_lines": 0,
            "dlq_forwards": 0,
            "discards": 0,
            "trace_incomplete_lifecycles": 0,
        }

    # setup --------------------------------------------------------------------------------------
    def _token(self, length: int) -> str:
        return "".join(self.rng.choice("bcdfghjklmnpqrstvwxz2456789") for _ in range(length))

    def _instances(self, name: str) -> list[Instance]:
        behaviour = BEHAVIOURS5[name]
        replica = self._token(9)
        found = []
        for index in range(behaviour.instances):
            host = f"{behaviour.service}-{replica}-{self._token(5)}"
            pid = 1000 + self.rng.randrange(60000)
            nano = self.rng.getrandbits(48)
            client_id = f"{host}@{pid}@{index}@{_base36(nano)}"
            found.append(Instance(behaviour.service, host, client_id))
        return found

    def _new_msg_id(self, topic_index: int, at: int) -> str:
        self.counter += 1
        moment = dt.datetime.fromtimestamp(at / 1000, tz=dt.UTC)
        month_start = int(
            moment.replace(day=1, hour=0, minute=0, second=0, microsecond=0).timestamp() * 1000
        )
        ip = f"10.0.6.{topic_index + 1}"
        return tf.uniq_msg_id(ip, 7100 + topic_index, 0x2A6B1F3C, at, month_start, self.counter)

    def _hex(self, bits: int) -> str:
        return f"{self.rng.getrandbits(bits) | 1:0{bits // 4}x}"

    def _publish(self) -> list[Message5]:
        rng = self.rng
        names = list(self.groups)
        slot = (self.end_ms - self.start_ms) / self.messages
        found: list[Message5] = []
        index = 0
        while index < self.messages:
            at = self.start_ms + int((index + rng.random()) * slot)
            name = rng.choice(names)
            behaviour = BEHAVIOURS5[name]
            count = 1
            message_group = None
            if behaviour.message_groups is not None:
                prefix, groups = behaviour.message_groups
                message_group = f"{prefix}{1 + rng.randrange(groups)}"
                if rng.random() < behaviour.burst:
                    count = 2 + rng.randrange(3)
            for _ in range(min(count, self.messages - index)):
                found.append(self._message(name, at, message_group))
                at += 5 + rng.randrange(150)
                index += 1
        found.sort(key=lambda message: message.published_ms)  # stable
        self.stats["messages"] = len(found)
        self.stats["oom_messages"] = sum(message.oom for message in found)
        return found

    def _message(self, name: str, at: int, message_group: str | None) -> Message5:
        rng = self.rng
        behaviour = BEHAVIOURS5[name]
        topic_index = list(self.groups).index(name)
        msg_id = self._new_msg_id(topic_index, at)
        keys: tuple[str, ...] = ()
        pick = rng.random()
        business = behaviour.topic.removesuffix("Topic").lower()
        if pick < 0.8:
            keys = (f"{business}-{self.counter}",)
        elif pick < 0.9:
            keys = (f"{business}-{self.counter}", f"customer-{rng.randrange(5000)}")
        early = (at - self.start_ms) < INCIDENT_FRACTION * (self.end_ms - self.start_ms)
        poisoned = rng.random() < behaviour.poison or (
            early and rng.random() < behaviour.incident_poison
        )
        oom = poisoned and behaviour.oom > 0 and rng.random() < behaviour.oom
        return Message5(
            key=keyed.derive(self.group_keys[name], self.counter),
            group=self.groups[name],
            behaviour=behaviour,
            msg_id=msg_id,
            published_ms=at,
            trace_id=self._hex(128),
            parent_span_id=self._hex(64),
            tag=rng.choice(behaviour.tags) if rng.random() < 0.9 else None,
            keys=keys,
            body_size=100 + rng.randrange(4000),
            message_group=message_group,
            poisoned=poisoned,
            oom=oom,
        )

    # lifecycles ---------------------------------------------------------------------------------
    @staticmethod
    def _attempt_key(message: Message5, attempt: int) -> int:
        """The draw key of ``message``'s delivery attempt ``attempt`` (from 1; 0 keys what comes
        before the first): a run with other retry settings draws the same for it."""
        return message.key + attempt * keyed.SLOT

    def _outcome(self, message: Message5, key: int, attempt: int) -> tuple[str, str | None, int]:
        """The result of one listener call, its error class and how long it took."""
        uniform, below = keyed.uniform, keyed.below
        behaviour = message.behaviour
        failed = message.poisoned or (
            uniform(key + _P_FAILS) < behaviour.transient * 0.6 ** (attempt - 1)
        )
        if not failed:
            if uniform(key + _P_SLOW) < behaviour.slow:
                return "SUCCESS", None, 8 * SECOND + below(key + _P_TOOK, 82 * SECOND)
            return "SUCCESS", None, 10 + below(key + _P_TOOK, 240)
        if uniform(key + _P_EXCEPTION) < behaviour.exception:
            exceptions = behaviour.exceptions
            error_class = exceptions[below(key + _P_ERROR_CLASS, len(exceptions))]
            return "EXCEPTION", error_class, 3 + below(key + _P_TOOK, 120)
        return "FAILURE", None, 10 + below(key + _P_TOOK, 200)

    @staticmethod
    def _latency(key: int) -> int:
        """Revive, pop and the client's cache: a redelivery reaches the listener this late."""
        return 50 + keyed.below(key + _P_LATENCY, 1451)

    def _instance(self, group: str, key: int) -> Instance:
        instances = self.instances[group]
        return instances[keyed.below(key + _P_INSTANCE, len(instances))]

    def _deliver(
        self, lifecycle: Lifecycle5, attempt: int, key: int, start: int, instance: Instance
    ) -> Delivery5:
        result, error_class, took = self._outcome(lifecycle.message, key, attempt)
        span_id = f"{keyed.mix64(key + _P_SPAN) | 1:016x}"
        delivery = Delivery5(
            lifecycle, attempt, start, start + took, result, error_class, instance, span_id
        )
        if lifecycle.message.oom:
            delivery.result, delivery.error_class = "EXCEPTION", OOM_ERROR
            delivery.records_lost = keyed.uniform(key + _P_OOM_LOST) < OOM_RECORD_LOST_SHARE
        lifecycle.deliveries.append(delivery)
        return delivery

    def _run_push(self, lifecycle: Lifecycle5, start: int) -> None:
        """A PushConsumer's concurrent group: every retry is the server's redelivery (§8.3)."""
        message = lifecycle.message
        group = message.group
        real = self.real[group.name]
        limit = max_attempts(group)
        attempt = 1
        while start <= self.watermark:
            key = self._attempt_key(message, attempt)
            instance = self._instance(group.name, key)
            delivery = self._deliver(lifecycle, attempt, key, start, instance)
            if delivery.result == "SUCCESS":
                self._decide(lifecycle, "CONSUMED", delivery.end)
                return
            due = delivery.end + retry_delay_ms(real, attempt) + self._latency(key)
            if attempt >= limit:
                self._forward(lifecycle, due, reconsume_times=attempt + 1)
                return
            start = due
            attempt += 1

    def _run_fifo(self, lifecycle: Lifecycle5, start: int, instance: Instance) -> None:
        """A FIFO PushConsumer: local retries on the same client, then the client's own DLQ
        forward (§8.3), or a discard (cloud-5, dead letters off)."""
        message = lifecycle.message
        group = message.group
        real = self.real[group.name]
        limit = max_attempts(group)
        attempt = 1
        while start <= self.watermark:
            key = self._attempt_key(message, attempt)
            delivery = self._deliver(lifecycle, attempt, key, start, instance)
            if delivery.result == "SUCCESS":
                self._decide(lifecycle, "CONSUMED", delivery.end)
                return
            if attempt >= limit:
                forwarded = delivery.end + 5 + keyed.below(key + _P_FORWARD, 196)
                self._forward(lifecycle, forwarded, 1)
                return
            retry_ms = retry_delay_ms(real, attempt) + keyed.below(key + _P_LOCAL_RETRY, 51)
            start = delivery.end + retry_ms
            attempt += 1

    def _run_simple(self, lifecycle: Lifecycle5, received: int) -> None:
        """A SimpleConsumer: receive with a 30 s invisible duration, ack on success; a failure
        waits until the message is visible again (or changes the invisible duration to 5 s); a
        listener that runs past the invisible duration sees the message received again."""
        uniform, below = keyed.uniform, keyed.below
        message = lifecycle.message
        group = message.group
        behaviour = message.behaviour
        limit = max_attempts(group)
        attempt = 1
        while received <= self.watermark:
            key = self._attempt_key(message, attempt)
            start = received + below(key + _P_RECEIVED, 21)
            instance = self._instance(group.name, key)
            delivery = self._deliver(lifecycle, attempt, key, start, instance)
            delivery.received_at = received
            delivery.invisible_ms = INVISIBLE_MS
            if uniform(key + _P_TIMEOUT) < behaviour.timeout and not message.oom:
                # stuck past its invisible duration: it fails in the end, while the message is
                # received again once it is visible
                delivery.result, delivery.error_class = "FAILURE", None
                stuck = SECOND + below(key + _P_TIMEOUT_END, 40 * SECOND)
                delivery.end = received + INVISIBLE_MS + stuck
            elif delivery.result == "SUCCESS":
                self._decide(lifecycle, "CONSUMED", delivery.end)
                return
            elif uniform(key + _P_CHANGE) < behaviour.change_invisible:
                delivery.invisible_ms = CHANGED_INVISIBLE_MS
                delivery.invisible_changed_at = delivery.end
            due = delivery.visible_at + self._latency(key)
            if attempt >= limit:
                self._forward(lifecycle, due, reconsume_times=attempt + 1)
                return
            received = due
            attempt += 1

    def _decide(self, lifecycle: Lifecycle5, state: str, at: int) -> None:
        lifecycle.terminal, lifecycle.terminal_ms = state, at

    def _forward(self, lifecycle: Lifecycle5, at: int, reconsume_times: int) -> None:
        """After the last attempt: the DLQ forward, or a discard where dead letters are off."""
        if self.real[lifecycle.message.group.name].dead_letter_enabled == "false":
            self._decide(lifecycle, "DROPPED", at)
            self.stats["discards"] += 1
            return
        self._decide(lifecycle, "DLQ", at)
        lifecycle.dlq_reconsume_times = reconsume_times
        self.stats["dlq_forwards"] += 1

    def simulate(self) -> None:
        below = keyed.below
        # a FIFO message group is blocked until its earlier message is done
        free_at: dict[tuple[str, str], int | None] = {}
        for message in self._publish():
            lifecycle = Lifecycle5(message)
            group = message.group
            first = self._attempt_key(message, 0)  # what comes before the first attempt
            if group.consumer_kind == "SIMPLE":
                self._run_simple(lifecycle, message.published_ms + self._latency(first))
            elif group.consume_mode == "ORDERLY":
                assert message.message_group is not None
                blocking = (group.name, message.message_group)
                start = message.published_ms + 20 + below(first + _P_FIRST, 281)
                blocked = free_at.get(blocking, 0)  # None: the earlier message never finishes
                if blocked is not None and blocked >= start:
                    start = blocked + 1 + below(first + _P_BLOCKED, 20)
                instances = self.instances[group.name]
                number = int(message.message_group.rsplit("-", 1)[1])
                if blocked is not None and start <= self.watermark:
                    self._run_fifo(lifecycle, start, instances[number % len(instances)])
                free_at[blocking] = lifecycle.terminal_ms
            else:
                start = message.published_ms + 20 + below(first + _P_FIRST, 281)
                self._run_push(lifecycle, start)
            self.lifecycles.append(lifecycle)

    # the landing --------------------------------------------------------------------------------
    def _span(self, delivery: Delivery5) -> dict:
        """The agent's process span of one delivery (observability §1.2, §4)."""
        rng = self.rng
        message = delivery.lifecycle.message
        behaviour = message.behaviour
        mode = behaviour.spans
        topic = behaviour.topic
        old, new = mode in (OLD, DUP), mode in (V143, DUP)
        attributes = [
            _shared_string("messaging.system", "rocketmq"),
            _shared_string("messaging.destination.name", topic),
        ]
        if old:
            attributes.append(_shared_string("messaging.operation", "process"))
            attributes.append(_shared_string("messaging.rocketmq.client_group", message.group.name))
        if new:
            attributes.append(_shared_string("messaging.consumer.group.name", message.group.name))
            attributes.append(_shared_string("messaging.operation.name", "process"))
            attributes.append(_shared_string("messaging.operation.type", "process"))
            namespace = NAMESPACES.get(message.group.name, "")
            attributes.append(_shared_string("messaging.rocketmq.namespace", namespace))
        attributes.append(_string("messaging.message.id", message.msg_id))
        if old:
            attributes.append(_shared_int("messaging.message.body.size", message.body_size))
        if message.tag is not None:
            attributes.append(_shared_string("messaging.rocketmq.message.tag", message.tag))
        if message.keys:
            values = [{"stringValue": key} for key in message.keys]
            attributes.append(
                {
                    "key": "messaging.rocketmq.message.keys",
                    "value": {"arrayValue": {"values": values}},
                }
            )
        if message.message_group is not None:
            attributes.append(
                _shared_string("messaging.rocketmq.message.group", message.message_group)
            )
        failed = delivery.result != "SUCCESS"
        if new and failed:
            attributes.append(_shared_string("error.type", delivery.error_class or "FAILURE"))
        if behaviour.attempt_key is not None:
            attributes.append(_shared_int(behaviour.attempt_key, delivery.attempt))
        end_nanos = _nanos(delivery.end, rng.randrange(1_000_000))
        span: dict[str, object] = {
            "traceId": message.trace_id,
            "spanId": delivery.span_id,
            "parentSpanId": message.parent_span_id,
            "name": f"{topic} process" if mode == OLD else f"process {topic}",
            "kind": 5,
            "startTimeUnixNano": _nanos(delivery.start, rng.randrange(1_000_000)),
            "endTimeUnixNano": end_nanos,
            "attributes": attributes,
        }
        if delivery.result == "EXCEPTION":
            span["events"] = [
                {
                    "name": "exception",
                    "timeUnixNano": end_nanos,
                    "attributes": [
                        _shared_string("exception.type", delivery.error_class or ""),
                        _shared_string("exception.message", f"{message.group.name} failed"),
                        _shared_string(
                            "exception.stacktrace",
                            f"{delivery.error_class}: {message.group.name} failed\n"
                            "\tat com.example.Listener.consume(Listener.java:42)",
                        ),
                    ],
                }
            ]
        if failed:
            span["status"] = {"code": 2}
        elif mode == OLD:
            span["status"] = {}
        return span

    def _http_span(self, ends_before: int) -> dict:
        rng = self.rng
        method, route = rng.choice(
            (("GET", "/api/orders/{id}"), ("POST", "/api/checkout"), ("GET", "/health"))
        )
        end = ends_before - 1 - rng.randrange(EXPORT_WINDOW_MS - 1)
        start = end - 2 - rng.randrange(400)
        status = rng.choice((200, 200, 200, 201, 404, 500))
        path = route.replace("{id}", str(rng.randrange(100000)))
        span: dict[str, object] = {
            "traceId": self._hex(128),
            "spanId": self._hex(64),
            "name": f"{method} {route}",
            "kind": 2,
            "startTimeUnixNano": _nanos(start, rng.randrange(1_000_000)),
            "endTimeUnixNano": _nanos(end, rng.randrange(1_000_000)),
            "attributes": [
                _shared_string("http.request.method", method),
                _string("url.path", path),
                _shared_string("url.scheme", "http"),
                _shared_string("http.route", route),
                _shared_int("http.response.status_code", status),
                _shared_string("server.address", "localhost"),
                _shared_int("server.port", 8080),
            ],
        }
        if status >= 500:
            span["status"] = {"code": 2}
        return span

    def _remoting_span(self, ends_before: int) -> dict:
        """A 4.x client's process span (rocketmq-client-4.8, old mode: no consumer group)."""
        rng = self.rng
        end = ends_before - 1 - rng.randrange(EXPORT_WINDOW_MS - 1)
        return {
            "traceId": self._hex(128),
            "spanId": self._hex(64),
            "parentSpanId": self._hex(64),
            "name": "LegacyTopic process",
            "kind": 5,
            "startTimeUnixNano": _nanos(end - 5 - rng.randrange(200), rng.randrange(1_000_000)),
            "endTimeUnixNano": _nanos(end, rng.randrange(1_000_000)),
            "attributes": [
                _shared_string("messaging.system", "rocketmq"),
                _shared_string("messaging.destination.name", "LegacyTopic"),
                _shared_string("messaging.operation", "process"),
                _string("messaging.message.id", f"{rng.getrandbits(128):032X}"),
                _shared_int("messaging.message.body.size", 64 + rng.randrange(1000)),
            ],
        }

    @staticmethod
    def _resource(service: str, instance_id: str, host: str) -> dict:
        return {
            "attributes": [
                _shared_string("service.name", service),
                _shared_string("service.instance.id", instance_id),
                _shared_string("host.name", host),
                _shared_string("telemetry.sdk.language", "java"),
            ]
        }

    @staticmethod
    def _scope(name: str, spans: list[dict]) -> dict:
        return {"scope": {"name": name, "version": SCOPE_VERSION}, "spans": spans}

    def _exports(self) -> list[_Export]:
        """The export batches of every instance, in landing order."""
        rng = self.rng
        batches: dict[tuple[str, int], list[Delivery5]] = defaultdict(list)
        for lifecycle in self.lifecycles:
            if lifecycle.message.behaviour.spans is None:
                continue
            for delivery in lifecycle.deliveries:
                if delivery.end > self.watermark:
                    continue  # still running when the run ends
                if delivery.records_lost:
                    self.stats["process_spans_lost"] += 1  # its instance was OOM-killed
                    continue
                if not lifecycle.message.behaviour.events and rng.random() < SPAN_LOST_SHARE:
                    self.stats["process_spans_lost"] += 1  # a JVM crash
                    continue
                window = delivery.end // EXPORT_WINDOW_MS
                batches[(delivery.instance.client_id, window)].append(delivery)
        exports = []
        order = 0
        for client_id, window in sorted(batches, key=lambda key: (key[1], key[0])):
            deliveries = sorted(batches[(client_id, window)], key=lambda d: (d.end, d.span_id))
            instance = deliveries[0].instance
            window_end = (window + 1) * EXPORT_WINDOW_MS
            scopes = [self._scope(SCOPE_ROCKETMQ_5, [self._span(d) for d in deliveries])]
            foreign = 0
            if rng.random() < 0.3:
                count = 1 + rng.randrange(3)
                scopes.append(
                    self._scope(SCOPE_TOMCAT, [self._http_span(window_end) for _ in range(count)])
                )
                foreign += count
            if rng.random() < 0.05:
                scopes.append(self._scope(SCOPE_ROCKETMQ_48, [self._remoting_span(window_end)]))
                foreign += 1
            resource = {
                "resource": self._resource(instance.service, client_id, instance.host),
                "scopeSpans": scopes,
            }
            landed = window_end + EXPORT_LAG_MS
            late = rng.random() < LATE_BATCH_SHARE
            if late:
                landed += HOUR_MS + rng.randrange(HOUR_MS)
            order += 1
            exports.append(_Export(landed, order, [resource], deliveries, foreign, late))
        # systems of their own: a web gateway, and a 4.x consumer's agent
        for service, scope, every in (
            ("web-gateway", SCOPE_TOMCAT, 90 * SECOND),
            ("legacy-consumer", SCOPE_ROCKETMQ_48, 240 * SECOND),
        ):
            host = f"{service}-{self._token(9)}-{self._token(5)}"
            instance_id = f"{host}-{self._hex(32)[:8]}"
            at = self.start_ms + rng.randrange(every)
            while at <= self.watermark:
                window_end = (at // EXPORT_WINDOW_MS + 1) * EXPORT_WINDOW_MS
                count = 1 + rng.randrange(4)
                make = self._http_span if scope == SCOPE_TOMCAT else self._remoting_span
                spans = [make(window_end) for _ in range(count)]
                resource = {
                    "resource": self._resource(service, instance_id, host),
                    "scopeSpans": [self._scope(scope, spans)],
                }
                order += 1
                exports.append(_Export(window_end + EXPORT_LAG_MS, order, [resource], [], count))
                at += every // 2 + rng.randrange(every)
        exports.sort(key=lambda export: (export.landed, export.order))
        return exports

    def land_spans(self) -> None:
        rng = self.rng
        lines: list[_Export] = []
        for export in self._exports():
            previous = lines[-1] if lines else None
            if (
                previous is not None
                and previous.landed == export.landed
                and rng.random() < MERGE_SHARE
            ):
                # the Collector's batch processor wrote both exports as one line
                previous.resources += export.resources
                previous.deliveries += export.deliveries
                previous.foreign += export.foreign
                previous.late = previous.late or export.late
            else:
                lines.append(export)
        for line in lines:
            landed = line.landed
            if landed > self.watermark:
                self.stats["process_spans_after_watermark"] += len(line.deliveries)
                continue
            if len(line.resources) == 1 and rng.random() < BARE_LINE_SHARE:
                text = compact_json(line.resources[0])
                self.stats["bare_span_lines"] += 1
            else:
                text = compact_json({"resourceSpans": line.resources})
            self.files.add("otel", "spans-00000.jsonl", landed, text)
            self.stats["span_lines"] += 1
            self.stats["late_batches"] += line.late
            self.stats["process_spans"] += len(line.deliveries)
            self.stats["foreign_spans"] += line.foreign
            for delivery in line.deliveries:
                delivery.landed = True
            if rng.random() < DUPLICATE_BATCH_SHARE:
                again = landed + SECOND + rng.randrange(120 * SECOND)
                if again <= self.watermark:
                    self.files.add("otel", "spans-00000.jsonl", again, text)
                    self.stats["duplicate_batches"] += 1
                    self.stats["span_lines"] += 1

    def land_events(self) -> None:
        rng = self.rng
        deliveries = [
            delivery
            for lifecycle in self.lifecycles
            if lifecycle.message.behaviour.events
            for delivery in lifecycle.deliveries
            if delivery.end <= self.watermark
        ]
        deliveries.sort(key=lambda d: (d.end, d.lifecycle.message.msg_id, d.attempt))
        for delivery in deliveries:
            if delivery.records_lost:
                self.stats["consume_events_lost"] += 1  # its instance was OOM-killed
                continue
            landed = delivery.end + rng.randrange(3001)
            if landed > self.watermark:
                self.stats["consume_events_after_watermark"] += 1
                continue
            self.files.add("consume_events", "events-00000.jsonl", landed, self._event(delivery))
            self.stats["consume_events"] += 1
            delivery.landed = True

    @staticmethod
    def _event(delivery: Delivery5) -> str:
        message = delivery.lifecycle.message
        event: dict[str, object] = {
            "ts_start": delivery.start,
            "ts_end": delivery.end,
            "consumer_group": message.group.name,
            "topic": message.behaviour.topic,
            "msg_id": message.msg_id,
            "delivery_attempt": delivery.attempt,
            "result": delivery.result,
        }
        if delivery.error_class is not None:
            event["error_class"] = delivery.error_class
        event["client_id"] = delivery.instance.client_id
        if message.message_group is not None:
            event["message_group"] = message.message_group
        event["consumer_kind"] = message.group.consumer_kind
        if message.group.consumer_kind == "SIMPLE":
            event["invisible_duration_ms"] = delivery.invisible_ms
            event["received_at"] = delivery.received_at
            if delivery.invisible_changed_at is not None:
                event["invisible_changed_at"] = delivery.invisible_changed_at
        return compact_json(event)

    def land_broker_logs(self) -> None:
        """The brokers' root logs: a `send msg to DLQ` line per DLQ forward (§3.2), among lines
        of other kinds; a few DLQ lines were in a rotated file that was lost."""
        rng = self.rng
        brokers = ("broker-a", "broker-b")
        forwards = sorted(
            (
                lifecycle
                for lifecycle in self.lifecycles
                if lifecycle.terminal == "DLQ" and lifecycle.terminal_ms is not None
            ),
            key=lambda lifecycle: (lifecycle.terminal_ms, lifecycle.message.msg_id),
        )
        for lifecycle in forwards:
            at = lifecycle.terminal_ms
            assert at is not None
            if at > self.watermark:
                continue
            if rng.random() < DLQ_LINE_MISSING_SHARE:
                self.stats["broker_dlq_lines_missing"] += 1
                continue
            message = lifecycle.message
            # the broker's names: in the group's namespace, if it has one (spec §7)
            name = message.group.name
            group = broker_name(name, name)
            topic = broker_name(name, message.behaviour.topic)
            revived = message.group.consume_mode != "ORDERLY"
            if revived and rng.random() < 0.5:
                topic = f"%RETRY%{group}_{topic}"  # the pop retry topic of a revived copy
            text = (
                f"send msg to DLQ {broker_name(name, f'%DLQ%{name}')}, owner=, "
                f"originalTopic={topic}, consumerId={group}, msgUniqKey={message.msg_id}, "
                f"storeTimestamp={at}"
            )
            thread = f"SendMessageThread_{1 + rng.randrange(16)}"
            broker = rng.choice(brokers)
            self.files.add("broker_logs", f"{broker}.log", at, _log_line(at, thread, text))
            self.stats["broker_dlq_lines"] += 1
            lifecycle.dlq_logged = True
            if self.last_dlq_line_ms is None or at > self.last_dlq_line_ms:
                self.last_dlq_line_ms = at
        for broker in brokers:
            at = self.start_ms + rng.randrange(60 * SECOND)
            while at <= self.watermark:
                thread, text = self._other_log_line()
                self.files.add("broker_logs", f"{broker}.log", at, _log_line(at, thread, text))
                self.stats["broker_other_lines"] += 1
                at += 5 * SECOND + rng.randrange(115 * SECOND)

    def _other_log_line(self) -> tuple[str, str]:
        rng = self.rng
        pick = rng.randrange(6)
        if pick == 0:
            return "BrokerControllerScheduledThread1", "dispatch behind commit log 0 bytes"
        if pick == 1:
            return "FlushRealTimeService", f"Flush data to disk costs {1 + rng.randrange(40)} ms"
        if pick == 2:
            put, get = rng.randrange(400) / 10, rng.randrange(400) / 10
            return "StoreStatsService", (
                f"[STORETPS] put_tps {put} get_found_tps {get} get_miss_tps "
                f"{rng.randrange(100) / 10} get_transfered_tps {get}"
            )
        if pick == 3:
            return "PopReviveService_0", (
                f"reviveQueueId={rng.randrange(8)}, revive topic=rmq_sys_REVIVE_LOG_"
                f"{DEFAULT_CLUSTER_NAME}, reviveOffset={rng.randrange(10**6)}"
            )
        if pick == 4:
            return "TransactionalMessageCheckService", (
                f"Begin to check prepare message, begin time:{rng.randrange(10**6)}"
            )
        return "BrokerControllerScheduledThread1", "Slave fall behind master: 0 bytes"

    # ground truth -------------------------------------------------------------------------------
    def _expected_ms(self, delivery: Delivery5) -> int:
        """When the seed row's rules expect the next delivery after the failed ``delivery``: all
        the ledger knows (a mislabeled group's seed is judged as written)."""
        group = delivery.lifecycle.message.group
        if group.consumer_kind == "SIMPLE":
            return delivery.visible_at
        return delivery.end + retry_delay_ms(group, delivery.attempt)

    def _truth_row(self, lifecycle: Lifecycle5) -> dict[str, object] | None:
        """One ground_truth.jsonl row, as of the watermark W: only deliveries that ended by W
        happened for the ledger; a lifecycle with none is no lifecycle yet.

        - final_state: CONSUMED, DLQ or DROPPED once its last attempt ended by W (even if the
          forward or discard is later); else WAITING_RETRY, or RETRY_OVERDUE when the seed's
          rules expected the next delivery more than the overdue grace before W;
        - attempts: the true attempt numbers in start order; redelivery_gaps_ms: each
          redelivery's start minus the previous delivery's end (negative where a SimpleConsumer
          received the message again while the earlier delivery still ran);
        - trace_complete: every delivery has a landed span or consume event
          (observed_deliveries of them); dlq_evidence: BOTH when the deciding failure and the
          broker's DLQ line landed, OBSERVED the line only, PREDICTED the failure only, NONE;
          reconciliation_reason: why a PREDICTED or OBSERVED one is one-sided
          (`reconciliation_reason`, judged on the whole landing's DLQ lines);
        - attempt_number_observed: the group's records carry the attempt number.
        """
        happened = [d for d in lifecycle.deliveries if d.end <= self.watermark]
        if not happened:
            return None
        message = lifecycle.message
        group = message.group
        behaviour = message.behaviour
        last = lifecycle.deliveries[-1]
        decided = lifecycle.terminal is not None and last.end <= self.watermark
        state = lifecycle.terminal if decided else None
        if state is None:
            failed = happened[-1]
            assert failed.result != "SUCCESS"
            overdue = self._expected_ms(failed) < self.watermark - self.grace_ms
            state = "RETRY_OVERDUE" if overdue else "WAITING_RETRY"
        in_dlq = state == "DLQ"
        observed = sum(1 for d in happened if d.landed)
        evidence = None
        if in_dlq:
            deciding = last.landed
            evidence = (
                "BOTH"
                if deciding and lifecycle.dlq_logged
                else "OBSERVED"
                if lifecycle.dlq_logged
                else "PREDICTED"
                if deciding
                else "NONE"
            )
        reason = reconciliation_reason(
            evidence, lifecycle.terminal_ms, self.last_dlq_line_ms, observed
        )
        return {
            "consumer_group": group.name,
            "msg_id": message.msg_id,
            "client_line": group.client_line,
            "consumer_kind": group.consumer_kind,
            "origin_msg_id": None,
            "origin_kind": "UNKNOWN",
            "received_offset_msg_id": None,
            "final_state": state,
            "deliveries": len(happened),
            "successful_deliveries": sum(1 for d in happened if d.result == "SUCCESS"),
            "attempts": [d.attempt for d in happened],
            "redelivery_causes": ["SCHEDULED"] * (len(happened) - 1),
            "redelivery_gaps_ms": [
                later.start - earlier.end for earlier, later in itertools.pairwise(happened)
            ],
            "in_dlq": in_dlq,
            "dlq_reconsume_times": lifecycle.dlq_reconsume_times if in_dlq else None,
            "dlq_entered_ms": lifecycle.terminal_ms if in_dlq else None,
            "dropped_ms": lifecycle.terminal_ms if state == "DROPPED" else None,
            "recovered_ms": None,
            "recovery_of": None,
            "trace_complete": observed == len(happened),
            "observed_deliveries": observed,
            "dlq_evidence": evidence,
            "dlq_logged": lifecycle.dlq_logged,
            "reconciliation_reason": reason,
            "attempt_number_observed": behaviour.events or behaviour.attempt_key is not None,
        }

    def write_truth(self) -> dict[str, dict[str, int]]:
        rows = [row for row in map(self._truth_row, self.lifecycles) if row is not None]
        rows.sort(key=lambda row: (row["consumer_group"], row["msg_id"]))
        by_group: dict[str, dict[str, int]] = {name: {} for name in sorted(self.groups)}
        with (self.out / "ground_truth.jsonl").open("a", encoding="utf-8") as handle:
            for row in rows:
                handle.write(compact_json(row) + "\n")
                states = by_group[row["consumer_group"]]
                states[row["final_state"]] = states.get(row["final_state"], 0) + 1
                self.stats["lifecycles"] += 1
                self.stats["deliveries"] += row["deliveries"]
                self.stats["redeliveries"] += row["deliveries"] - 1
                if not row["trace_complete"]:
                    self.stats["trace_incomplete_lifecycles"] += 1
                if row["dlq_evidence"] is not None:
                    key = str(row["dlq_evidence"])
                    if row["reconciliation_reason"] is not None:
                        key += f":{row['reconciliation_reason']}"
                    self.dlq_evidence[key] = self.dlq_evidence.get(key, 0) + 1
        return by_group


def _base36(number: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    text = ""
    while number:
        number, digit = divmod(number, 36)
        text = digits[digit] + text
    return text or "0"


def _log_line(at: int, thread: str, text: str) -> str:
    """A broker log line: `%d{yyy-MM-dd HH:mm:ss,GMT+8} %p %t - %m` (observability §3.2)."""
    moment = dt.datetime.fromtimestamp(at / 1000, tz=GMT8)
    return f"{moment:%Y-%m-%d %H:%M:%S} INFO {thread} - {text}"


def _groups_with_redeliveries(out: Path) -> list[str]:
    """The groups of the ground truth written so far (the 4.x run) with a redelivery."""
    path = out / "ground_truth.jsonl"
    if not path.exists():
        return []
    found = set()
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            if row["deliveries"] > 1:
                found.add(row["consumer_group"])
    return sorted(found)


def generate_grpc5(
    out: Path,
    *,
    messages: int,
    seed: int,
    start_ms: int,
    end_ms: int,
    watermark_ms: int,
    compression: str = "mixed",
    redelivered_groups: Iterable[str] | None = None,
    writer: Writer | None = None,
    settings_from_seeds: bool = False,
) -> Grpc5Result:
    """Simulate ``messages`` publications to the 5.x groups between ``start_ms`` and ``end_ms``
    and write their landing feeds under ``out``, nothing after ``watermark_ms``; add the
    groups to out/seeds/consumer_groups.csv and their lifecycles to out/ground_truth.jsonl.

    ``settings_from_seeds``: the groups listed in out/seeds/consumer_groups.csv take their retry
    settings from their rows there (`groups_from_seed_rows`), which keep those cells; otherwise
    they run as `GRPC5_GROUPS` defines them, and their rows are replaced by those.

    Returns the counters and the schedule each group with redeliveries really follows (the 4.x
    groups of the ground truth already written, and every 5.x group). ``redelivered_groups``:
    those 4.x groups, when the caller knows them (None: read from the ground truth). The
    landing files go through ``writer`` when given (its owner finishes it)."""
    if redelivered_groups is None:
        redelivered_groups = _groups_with_redeliveries(out)
    schedules = dict.fromkeys(sorted(redelivered_groups), CONFIGURED)
    schedules.update((group.name, BEHAVIOURS5[group.name].schedule) for group in GRPC5_GROUPS)
    groups = GRPC5_GROUPS
    if settings_from_seeds:
        groups = groups_from_seed_rows(read_seed_rows(out / "seeds"))
    simulation = _Simulation(
        out,
        messages=messages,
        seed=seed,
        start_ms=start_ms,
        end_ms=end_ms,
        watermark_ms=watermark_ms,
        compression=compression,
        writer=writer or Writer(),
        groups=groups,
    )
    if messages > 0:
        simulation.simulate()
        simulation.land_spans()
        simulation.land_events()
        simulation.land_broker_logs()
        simulation.files.write()
        if writer is None:
            simulation.files.writer.finish()
    states = simulation.write_truth()
    replaced = add_seed_rows(
        out / "seeds", groups, keep=SEED_SETTINGS if settings_from_seeds else ()
    )
    stats: dict[str, object] = dict(simulation.stats)
    stats["watermark_ms"] = watermark_ms
    stats["dlq_evidence"] = dict(sorted(simulation.dlq_evidence.items()))
    stats["seed_rows_replaced"] = replaced
    totals: dict[str, int] = {}
    for counts in states.values():
        for state, count in counts.items():
            totals[state] = totals.get(state, 0) + count
    stats["states"] = {state: totals[state] for state in FINAL_STATES if state in totals}
    stats["states_by_group"] = {
        name: {state: counts[state] for state in FINAL_STATES if state in counts}
        for name, counts in states.items()
    }
    return Grpc5Result(stats, dict(sorted(schedules.items())))
