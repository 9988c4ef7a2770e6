"""The one simulation of a RocketMQ deployment, behind `retrylake generate`, the demo, the bench
and the hand-written sample: simulated traffic written as a landing zone, with ground truth.

Topics, producer groups and consumer groups run as one discrete-event simulation in time order.
Consumers take due messages in consume requests (batches), and the broker rules of
`rules.decide` schedule the redeliveries. Every client writes its trace records through a
dispatcher that batches them into trace messages the way AsyncTraceDispatcher does, and the
trace messages land in hourly files. What the world does (which message is published when, which
delivery fails, how late a redelivery comes, which trace message is duplicated, cut short or
lost, what becomes of a dead letter) is the `Traffic`'s choice: `RandomTraffic` here for
`retrylake generate`, a fixed script for the sample (`sample.py`).

RandomTraffic's failure models, per consumer group:
- transient failures whose chance halves with each retry;
- poison messages that always fail, so they reach the DLQ (or are dropped, or retried locally);
- an outage window in which the group fails everything with RECONSUME_LATER: the flow-control
  anti-pattern the RocketMQ docs warn about;
- a consumer that goes offline before the end, leaving retries overdue;
- a listener that sets `delayLevelWhenNextConsume = -1` on some failed calls: the broker sends
  those messages straight to the DLQ (spec §1.2 step 8), though the group's seed says retry.

The redelivery paths (each delivery after the first has one true cause, `CAUSES`):
- SCHEDULED: the broker's send-back at level 3 + r (or the group's level), redelivered with
  r + 1 after the level's delay; an orderly group's local retry after the suspend time;
- LISTENER_LEVEL: a listener that sets a positive `delayLevelWhenNextConsume` on some failed
  calls; the broker uses that level as is (§1.2 step 9);
- CONSUME_TIMEOUT: a listener stuck past consumeTimeout. Each concurrent consumer's expiry
  cleaner runs every consumeTimeout from the consumer's start and sends a message whose consume
  started more than consumeTimeout ago back at level 3 (§3.6): redelivered with r + 1 about 10 s
  after that run, or a DLQ copy at r >= max. The stuck listener ends later with the TIME_OUT
  label; a success is acked, a failure is sent back once more (4.9.8);
- CLIENT_FALLBACK: the send-back RPC fails (a broker-unreachable window, a few random calls);
  the client sends a new message to %RETRY%<group> with DELAY = 3 + r and RECONSUME_TIME = r + 1,
  whatever the listener's level, and the broker's handleRetryAndDLQ retries it or (4.x: r + 1 >=
  max, delayed by that level; 5.x: r + 1 > max, at once) dead-letters it (§1.3, §1.4, §3.4);
  the copy loses ORIGIN_MESSAGE_ID unless the consumed copy carried one;
- LOCAL_RECONSUME: the fallback fails too; the client re-consumes the message 5 s later with
  r + 1 in memory, nothing stored (§3.3). A later broker send-back reads the stored count;
- PARTIAL_BATCH_ACK: a batch listener returns CONSUME_SUCCESS with ackIndex k < size - 1: the
  messages after k are sent back (level 3 + r, only while r + 1 < max), though every SubAfter
  says success (§3.3);
- DUPLICATE_DELIVERY: a rebalance drops a finished request's result (no ack, no send-back, §3.2)
  and the new owner delivers the same copies again 1-60 s later with the same count;
- RESENT: an operator re-sends a dead letter (below);
- BROADCAST_COPY: each instance of a broadcasting group (`Behaviour.instances`) receives every
  message and drops its own failures (§3.3); the second instance pulls it 20 ms after the
  first, and so on. A delivery, not a retry: the lifecycle is CONSUMED when one instance
  consumed it, DROPPED when every delivery was dropped.
Publications are normal, delayed (Pub msgType 3, a DELAY level: the Pub's offset id names the
SCHEDULE_TOPIC_XXXX copy, and consumers receive a copy re-put after the delay with a new offset
id) or transactional (msgType 1, the half message; an EndTransaction record commits it as a new
copy) (§2.2, §2.4, §5.2). Imports and catalog updates come in bursts, which fill batches.

The dead-letter side (spec §1.2-§1.6):
- every DLQ entry is a stored copy; the dlq/ export (`dlq_export`) holds the copies stored before
  the export was taken (`dlq_export_end_fraction` of the run, never after its end: a 4.9.x
  orderly or client-fallback copy is stored up to 2 h late, §1.3), except those of groups whose
  %DLQ% topic was never exported (`dlq_unexported_groups`);
- a recovery consumer group (`order-service-dlq`) subscribes to `%DLQ%order-service` and
  consumes each stored copy a few minutes later, with the copy's reconsumeTimes (e.g. 17), under
  its own group's rules;
- an operator re-sends some of bulk-importer's dead letters to its topic (a new stored message,
  same msgId, reconsumeTimes 0, no Pub trace): the same lifecycle continues and is consumed.

The trace side: a few trace messages are duplicated, land an hour late, are cut short, or are
lost (AsyncTraceDispatcher discards contexts when its queue is full, spec §5.4).

ground_truth.jsonl has one row per (consumer group, msg_id) lifecycle, written once when the
lifecycle closes and its trace records have all been sent (landed or lost): final state,
deliveries as they really happened and the cause of each redelivery, DLQ entry and recovery,
whether its trace is complete, and for a dead letter what a reader of the landing can see of it
(`dlq_evidence`) and, when that is one-sided, the true cause (`reconciliation_reason`). See
`Engine._truth_row`.

RandomTraffic draws in three ways, so that two runs with the same seed and other retry settings
(another delay ladder, another max reconsume count) simulate the same traffic and differ only
where the settings make them differ:
- the publications (times, topics, bursts, keys, bodies, delayed and transactional choices,
  poison flags, first pulls) come from one seeded stream of their own, drawn in publication
  order, and message ids have a counter of their own;
- what a consumer does with a delivery (its outcome, listener time and level, ackIndex,
  send-back failure, dropped result, redelivery lag, and the fate of a dead letter) is a keyed
  draw (`keyed`): a value of (seed, purpose, consumer group, message, attempt index), where the
  attempt index is reconsumeTimes minus the lifecycle's first reconsumeTimes. A message that
  fails its first k attempts in one run fails them in the other, wherever it is delivered at
  those indexes. What is fixed in time (an outage window, an offline group, a send-back
  outage) holds whatever is delivered then; a batch fails when one of its messages does, so
  a batch of other messages can fail a message that would have succeeded alone;
- each client's trace messages land (lost, late, duplicated, cut short) by a stream of its
  own, so a producer's trace lands the same whatever its consumers did; the broker's own
  copies (retries, dead letters, re-sends) are numbered in a commit log of their own.
A seed gives byte-identical output. Memory is bounded by the lifecycles still open, not by
the size of the run.
"""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import datetime as dt
import functools
import gc
import hashlib
import heapq
import io
import json
import random
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from json.encoder import encode_basestring_ascii
from pathlib import Path
from typing import Protocol

from retrylake.config_check import GROUP_COLUMNS, check_consumer_groups
from retrylake.errors import ConfigError, UsageError
from retrylake.project import retry_overdue_grace_ms
from retrylake.sim import grpc5, keyed
from retrylake.sim import trace_format as tf
from retrylake.sim.output import LineFile, Writer, compact_json
from retrylake.sim.rules import (
    DEFAULT_BROKER_VERSION,
    DEFAULT_CLUSTER_NAME,
    GRPC_CLIENT_LINES,
    Decision,
    Group,
    broker_name,
    decide,
    delay_table,
    dlq_copy_reconsume_times,
    is_4x_broker,
)
from spark_udfs import DEFAULT_DELAY_LEVELS

HOUR_MS = 3_600_000
MINUTE_MS = 60_000
MAX_BODY_CHARS = 128_000 - 10_000  # AsyncTraceDispatcher flushes a segment at this size
DISPATCH_WINDOW_MS = 500  # ... or when its first record is this old
REQUEST_WINDOW_MS = 20  # due messages a consumer gathers into one consume request
SCHEDULE_POLL_MS = 100  # ScheduleMessageService polls each level every 100 ms
LOCAL_RECONSUME_MS = 5000  # submitConsumeRequestLater after a failed send-back (§3.3)
CLEANER_DELAY_LEVEL = 3  # cleanExpiredMsg sends an expired message back at level 3 (§3.6)
FAILURE_KINDS = (("EXCEPTION", 0.5), ("FAILED", 0.4), ("RETURNNULL", 0.1))
STORE_HOST = "10.0.0.1:10911"
REGION = "DefaultRegion"
# The true cause of a delivery after the first (ground_truth.jsonl's redelivery_causes).
CAUSES = (
    "SCHEDULED",
    "LISTENER_LEVEL",
    "CONSUME_TIMEOUT",
    "CLIENT_FALLBACK",
    "LOCAL_RECONSUME",
    "PARTIAL_BATCH_ACK",
    "DUPLICATE_DELIVERY",
    "RESENT",
    "BROADCAST_COPY",
)
# how much later each further instance of a broadcasting group pulls a message
BROADCAST_PULL_SPREAD_MS = 20
# What a Pub record's MessageType says its offset id names (spec §5.1).
MESSAGE_TYPES = {
    "NORMAL": tf.NORMAL_MSG,
    "TRANSACTIONAL": tf.TRANS_MSG_HALF,
    "DELAYED": tf.DELAY_MSG,
}
# ground_truth.jsonl's columns (`Engine._truth_values`). There is a row per lifecycle, so it is
# written from a template rather than by json.dumps, to the same bytes: the columns in this
# order, compact, each value as json.dumps writes it (`_json_text`, `_json_or_null`).
TRUTH_COLUMNS = (
    "consumer_group",
    "msg_id",
    "origin_msg_id",
    "origin_kind",
    "received_offset_msg_id",
    "final_state",
    "deliveries",
    "successful_deliveries",
    "redelivery_causes",
    "in_dlq",
    "dlq_reconsume_times",
    "dlq_entered_ms",
    "recovered_ms",
    "recovery_of",
    "trace_complete",
    "dlq_evidence",
    "reconciliation_reason",
)
TRUTH_ROW = "{" + ",".join(f'"{column}":%s' for column in TRUTH_COLUMNS) + "}\n"
_json_text = encode_basestring_ascii  # a str as json.dumps writes it


def _json_or_null(value: str | int | None) -> str:
    """A str, an int or None as json.dumps writes it."""
    if value is None:
        return "null"
    return str(value) if type(value) is int else _json_text(value)


def _json_bool(value: bool) -> str:
    return "true" if value else "false"


# RandomTraffic starts no redelivery the trace could not show before the run ends after this
# fraction of the run (a listener level, a fallback, a partial ack, a dropped result).
LATE_FRACTION = 0.85
# where the broker's own copies (retries, dead letters, re-sends) start in the commit log, far
# above the publications' (`Engine._new_broker_offset_id`)
BROKER_COPY_OFFSET = 1 << 40


@dataclass(frozen=True)
class Topic:
    name: str
    producer_group: str
    weight: int  # share of the messages
    tags: tuple[str, ...]
    burst: tuple[int, int] = (1, 1)  # messages sent at once (an import, a price list)
    delayed: float = 0.0  # share sent with a delay level (Pub msgType 3)
    transactional: float = 0.0  # share sent in a transaction and committed (Pub msgType 1)


@dataclass(frozen=True)
class Behaviour:
    """How a consumer group's listener behaves."""

    topics: tuple[str, ...]
    batch_size: int = 1  # consumeMessageBatchMaxSize
    cost_ms: int = 30  # listener time per message
    transient: float = 0.03  # chance that a first delivery fails; halves per retry
    poison: float = 0.001  # share of messages that always fail for this group
    # share of would-be successes whose listener is stuck past the consume timeout; concurrent
    # groups' expiry cleaner may send them back while they run
    slow: float = 0.0005
    slow_failure: float = 0.0  # ... of which this share ends in RECONSUME_LATER
    rollback: float = 0.0  # orderly only: share of successes returned as ROLLBACK
    outage: tuple[float, float] | None = None  # (start, end) as fractions of the run
    outage_hang: float = 0.0  # share of calls in the outage that hang until it ends, then succeed
    offline_from: float | None = None  # fraction of the run after which it consumes nothing
    request_window_ms: int = REQUEST_WINDOW_MS  # how long a consume request gathers messages
    # concurrent clustering only: share of failed listener calls that set
    # context.delayLevelWhenNextConsume = -1, sending their messages straight to the DLQ
    listener_dlq: float = 0.0
    # ... and share of failed listener calls that set it to a positive level of their own
    listener_level: float = 0.0
    # concurrent clustering only: a window (fractions of the run) in which every send-back RPC
    # fails (the broker is unreachable), and the share of other send-backs whose RPC fails; the
    # client's fallback then sends the message itself, and fails too for `fallback_fails`
    send_back_outage: tuple[float, float] | None = None
    send_back_fails: float = 0.0
    fallback_fails: float = 0.0
    # share of successful batch requests that return an ackIndex below the last message
    partial_ack: float = 0.0
    # share of finished requests whose result a rebalance drops: delivered again, same count
    duplicate: float = 0.0
    # share of the group's dead letters an operator re-sends to their topic 20-40 minutes after
    # they enter the DLQ; only for a topic this group alone subscribes to
    resend: float = 0.0
    # broadcasting only: how many consumer instances each receive every message
    instances: int = 1


TOPICS = (
    Topic(
        "orders",
        "PID_order",
        40,
        ("created", "paid", "shipped", "cancelled"),
        delayed=0.02,
        transactional=0.02,
    ),
    Topic("payments", "PID_payment", 15, ("charge", "refund"), transactional=0.1),
    Topic("stock", "PID_stock", 15, ("reserve", "release")),
    Topic("audit", "PID_audit", 10, ("login", "change")),
    Topic("imports", "PID_import", 5, ("batch",), burst=(8, 40)),
    Topic("catalog", "PID_catalog", 5, ("price", "title"), burst=(2, 8), delayed=0.05),
    Topic("notify", "PID_notify", 10, ("sms", "mail", "push"), delayed=0.05),
)

BEHAVIOURS = {
    # Some failed calls ask for a level of their own; a few send-backs fail while the client is
    # cut off from every broker (the fallback fails too): re-consumed locally.
    "order-service": Behaviour(
        ("orders",),
        transient=0.06,
        poison=0.002,
        slow=0.003,
        slow_failure=0.1,
        listener_dlq=0.01,
        listener_level=0.05,
        send_back_fails=0.02,
        fallback_fails=1.0,
        duplicate=0.004,
    ),
    # Three instances, each dropping its own failures: a drop hides behind another's success.
    "cache-invalidator": Behaviour(("orders",), cost_ms=5, transient=0.01, instances=3),
    # In its outage some calls hang until the downstream is back: the expiry cleaner sends them
    # back, or to the DLQ at the max. A few send-back RPCs fail: the client's fallback reaches
    # the DLQ one attempt early (§3.4).
    "inventory-sync": Behaviour(
        ("stock",),
        transient=0.08,
        poison=0.003,
        outage=(0.30, 0.36),
        outage_hang=0.1,
        listener_dlq=0.01,
        send_back_fails=0.03,
        duplicate=0.005,
    ),
    "payment-ledger": Behaviour(
        ("payments",), cost_ms=60, transient=0.05, poison=0.002, rollback=0.02
    ),
    # Its broker is unreachable for a while: the fallback retries messages the seed's level -1
    # would dead-letter, and some of the fallbacks fail as well.
    "fraud-check": Behaviour(
        ("payments",),
        transient=0.04,
        poison=0.001,
        send_back_outage=(0.35, 0.55),
        fallback_fails=0.3,
    ),
    "audit-archiver": Behaviour(("audit",), batch_size=8, transient=0.02),
    # A bad batch is rejected straight to the DLQ by the listener; the operator re-sends half of
    # the dead letters once the importer is fixed (its retries would take 12 h 45 min). Some
    # batches are acked only up to where the importer got.
    "bulk-importer": Behaviour(
        ("imports",),
        batch_size=16,
        cost_ms=80,
        poison=0.01,
        listener_dlq=0.3,
        resend=0.5,
        partial_ack=0.15,
    ),
    "search-indexer": Behaviour(
        ("catalog", "stock"),
        batch_size=4,
        transient=0.05,
        slow=0.02,
        slow_failure=0.1,
        partial_ack=0.05,
        duplicate=0.01,
    ),
    "notification-push": Behaviour(("notify",), transient=0.08, poison=0.01, offline_from=0.8),
    # The recovery consumer of order-service's dead letters: it mostly succeeds, often slowly.
    "order-service-dlq": Behaviour(("%DLQ%order-service",), transient=0.05, poison=0.0, slow=0.2),
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
        Group("order-service-dlq", broker_cluster=DEFAULT_CLUSTER_NAME),
    )
}
DELAY_LEVELS = {"*": DEFAULT_DELAY_LEVELS, "fast-cluster": "5s 8s"}
BROKER_VERSIONS = {"*": "4.9", "fast-cluster": "4.9"}


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
    lost_share: float = 0.0005  # trace messages that never land (the dispatcher's queue was full)
    # the dlq/ export was taken at start + this fraction of the run: later copies are not in it
    dlq_export_end_fraction: float = 0.9
    dlq_unexported_groups: tuple[str, ...] = ("fraud-check",)  # %DLQ% topics never exported
    # messages to the 5.x gRPC groups (`grpc5`), simulated after the 4.x run; 0: none
    grpc5_messages: int = 0
    # the 5.x groups take retry_max_times, group_retry_policy and dead_letter_enabled from the
    # seed's rows (`generate`'s ``seeds_dir``), not from `grpc5.GRPC5_GROUPS`
    grpc5_settings_from_seeds: bool = False
    # 4.x consumer groups that consume nothing from an instant (epoch ms) on, whatever the run's
    # length: (group, from_ms). The bench's long history has one, so its retries stay overdue.
    offline_groups: tuple[tuple[str, int], ...] = ()


@dataclass
class Published:
    msg_id: str
    offset_id: str  # what the Pub record names: the stored message, schedule copy or half message
    origin_msg_id: str | None  # what the Pub trace tells: the 13-field Pub has no offset id
    topic: str
    tags: str | None
    keys: str | None
    born_ms: int
    traced: bool = True  # whether the producer wrote a Pub trace
    pub_lost: bool = False  # whether its trace message was lost: the trace tells no origin
    kind: str = "NORMAL"  # NORMAL, DELAYED or TRANSACTIONAL
    received_offset_id: str = ""  # the copy consumers receive (the re-put or committed copy)
    available_ms: int = 0  # when consumers can first receive it
    producer_group: str = ""
    number: int = 0  # its place among the run's publications, from 1


@dataclass(slots=True)
class Copy:
    """The copy of a message a delivery hands to the listener: a stored copy, or the same one
    again (a local re-consume, a duplicate delivery)."""

    reconsume_times: int  # what the listener (and SubBefore) sees
    stored_times: int  # what the stored copy holds: what the broker reads on a send-back
    cause: str | None  # why it is delivered (`CAUSES`); None for a lifecycle's first delivery
    real_topic: str | None = None  # REAL_TOPIC left over from a schedule hop or a commit (§2.4)
    origin: str | None = None  # its ORIGIN_MESSAGE_ID property
    offset_id: str | None = None  # its own offset id, where a later copy may need it
    instance: int = 0  # the broadcasting group's instance it is delivered to (0: the first)


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
    cause: str | None = None


@dataclass(slots=True)
class Lifecycle:
    """One message's life in one consumer group."""

    index: int  # the group's position in the engine's groups
    group: str
    message: Published
    poisoned: bool = False
    script: tuple[str, ...] = ()  # the outcome of each delivery, for scripted traffic
    deliveries: int = 0
    reconsume_times: int = 0  # of the delivery started last
    first_reconsume_times: int = 0  # of its first delivery: a recovery consumer's starts high
    first_copy: Copy | None = None  # what its first delivery hands over
    pending: int = 0  # deliveries due or running, and a re-send awaited: open while above 0
    consumed: bool = False  # a listener acked it
    successes: int = 0  # deliveries whose SubAfter counts as a success
    causes: list[str] = field(default_factory=list)  # of its deliveries after the first
    # the delivery started last: running, or when its redelivery is due by the rules
    in_flight: bool = False
    expected_ms: int | None = None
    last_dropped: bool = False  # the delivery started last failed and was dropped (no retry)
    last_record_ms: int = 0  # the time of its latest trace record
    history: list[Delivery] | None = None
    state: str | None = None  # the final state, once the engine has judged it
    recovery_of: str | None = None  # the group whose %DLQ% topic this group consumes
    # the (last) DLQ entry
    dlq_entered_ms: int | None = None  # store time of the copy
    dlq_reconsume_times: int | None = None  # the copy's stored reconsumeTimes
    dlq_delivery: int = 0  # the deciding delivery's number
    dlq_path: str = ""  # BROKER, LISTENER, CONSUME_TIMEOUT, FALLBACK or ORDERLY
    dlq_rules_agree: bool = False  # the rules on the seed's settings send it to the DLQ too
    dlq_exported: bool = False  # the copy is in the dlq/ export
    dlq_copy: Copy | None = None  # the copy's properties, for a recovery consumer
    awaiting_resend: bool = False  # an operator will re-send it; not delivered again yet
    resent: bool = False
    recovered_ms: int | None = None  # end of the first successful delivery after the entry
    # what landed of its trace: the first delivery with a record in the landing, and the
    # deliveries with a record lost
    first_landed: int | None = None
    lost_deliveries: set[int] | None = None
    # the traffic's draw key of the lifecycle (`RandomTraffic`), the highest attempt index
    # delivered so far, and how many deliveries came at an index already delivered
    key: int = 0
    top_attempt: int = -1
    repeats: int = 0


@dataclass
class Request:
    """One consume request: the messages handed to one listener call, and how it went."""

    group: int
    start_ms: int  # when it opened; from the call on, when the listener was called
    lifecycles: list[Lifecycle] = field(default_factory=list)
    copies: list[Copy] = field(default_factory=list)
    numbers: list[int] = field(default_factory=list)  # each lifecycle's delivery number
    request_id: str = ""
    outcome: str = ""
    took_ms: int = 0
    ended_ms: int = 0
    cleaned: bool = False  # the expiry cleaner runs while it is stuck
    key: int = 0  # the traffic's draw key for the request's own choices (`RandomTraffic`)


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
    dlq_messages: int = 0  # DLQ entries: copies stored
    watermark_ms: int = 0
    states: dict[str, int] = field(default_factory=dict)
    lost_trace_messages: int = 0  # trace messages that never landed
    lost_records: int = 0  # ... and the records they held (not counted in `records`)
    trace_incomplete_lifecycles: int = 0  # truth rows with trace_complete false
    listener_dlq: int = 0  # DLQ entries the listener asked for (delayLevelWhenNextConsume -1)
    dlq_exported: int = 0  # copies written to dlq/
    recovery_lifecycles: int = 0  # dead letters delivered to a recovery consumer group
    recovery_deliveries: int = 0  # deliveries to recovery consumer groups
    resent: int = 0  # dead letters re-sent by an operator
    recovered: int = 0  # lifecycles consumed after their DLQ entry
    # dead letters by what the landing shows: "BOTH", or "OBSERVED:<reason>" and the like
    dlq_evidence: dict[str, int] = field(default_factory=dict)
    delayed_messages: int = 0  # publications with a delay level (Pub msgType 3)
    transactional_messages: int = 0  # committed transactional publications (Pub msgType 1)
    time_out_labels: int = 0  # deliveries whose SubAfter says TIME_OUT
    listener_levels: int = 0  # messages sent back at a positive level the listener set
    consume_timeouts: int = 0  # messages the expiry cleaner sent back (retried or DLQ)
    consume_timeout_dlq: int = 0  # ... of which dead-lettered
    stuck_failures_sent_back: int = 0  # cleaned messages whose stuck listener failed later
    fallback_sends: int = 0  # send-backs whose RPC failed and whose fallback was stored
    fallback_dlq: int = 0  # ... of which dead-lettered by handleRetryAndDLQ
    local_reconsumes: int = 0  # messages re-consumed locally after the fallback failed too
    partial_acks: int = 0  # successful requests with ackIndex below their last message
    partial_ack_messages: int = 0  # ... and the messages after the ackIndex, sent back
    dropped_results: int = 0  # requests whose result a rebalance dropped
    duplicate_deliveries: int = 0  # messages of those delivered again with the same count
    # the true cause of every delivery after a lifecycle's first
    redelivery_causes: dict[str, int] = field(default_factory=dict)
    grpc5: dict[str, object] | None = None  # the 5.x groups' counters (`grpc5`), when simulated


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
        """SUCCESS, FAILED, EXCEPTION, RETURNNULL, ROLLBACK (orderly), SLOW_SUCCESS or
        SLOW_FAILED (the listener is stuck past the consume timeout, `stuck_ms`), or IN_FLIGHT
        (no result)."""

    def consume_ms(self, engine: Engine, request: Request, behaviour: Behaviour) -> int:
        """How long the listener takes for the whole request."""

    def stuck_ms(self, engine: Engine, request: Request, timeout_ms: int) -> int:
        """How much longer a SLOW_ listener takes (at least the consume timeout)."""

    def consumer_started_ms(self, engine: Engine, index: int) -> int | None:
        """When group ``index``'s consumer started: its expiry cleaner runs every consume
        timeout from then on (concurrent groups). None: no cleaner runs."""

    def redelivery_lag(
        self, engine: Engine, decision: Decision, lifecycle: Lifecycle, copy: Copy
    ) -> int:
        """How long after it is due the redelivery of ``copy`` reaches the consumer."""

    def listener_delay_level(self, engine: Engine, request: Request) -> int | None:
        """The ``context.delayLevelWhenNextConsume`` the listener of a failed call of a
        concurrent clustering group set: -1 sends its messages straight to the DLQ, a positive
        level is used as is; None leaves the group's setting."""

    def ack_index(self, engine: Engine, request: Request) -> int | None:
        """The ackIndex a successful batch request (concurrent clustering) returns: the messages
        after it are sent back; None acks them all."""

    def send_back_failure(
        self, engine: Engine, at: int, lifecycle: Lifecycle, copy: Copy
    ) -> tuple[str, int] | None:
        """Whether the send-back RPC of a message (the delivery of ``copy`` failed) fails:
        ("FALLBACK", ms) when the client's fallback is stored ms after the failed call ended,
        ("LOCAL", ms) when the fallback fails too (ms later); None when the RPC succeeds."""

    def redeliver_after_drop(self, engine: Engine, request: Request, success: bool) -> int | None:
        """Whether a rebalance drops the result of a finished concurrent clustering request:
        how long after its end the new owner delivers its messages again; None: processed."""

    def offset_step(self, engine: Engine) -> int:
        """How far the broker's log of its own copies has moved when it stores one."""

    def dlq_copy_choices(self, engine: Engine) -> tuple[int, bool]:
        """A DLQ copy's commit-log step, and whether its properties are a map or a string."""

    def on_dead_letter(self, engine: Engine, lifecycle: Lifecycle) -> None:
        """A DLQ copy of ``lifecycle`` was stored at ``lifecycle.dlq_entered_ms``: deliver it to
        the groups that consume its %DLQ% topic (`Engine.subscribe_dead_letter`), or have an
        operator re-send it (`Engine.resend`), or nothing."""

    def trace_lost(self, engine: Engine, client: str) -> bool:
        """Whether a trace message of ``client`` is lost: it never lands."""

    def store_delay(self, engine: Engine, client: str) -> int:
        """How long a trace message of ``client`` takes to be stored."""

    def land(
        self, engine: Engine, client: str, store_ms: int, trace_id: str, keys: str, body: str
    ) -> None:
        """Write a trace message's landing line(s), with whatever transport faults."""


class HourlyFiles:
    """Landing files split by hour of store time; a file closes once no line can reach it."""

    def __init__(self, root: Path, kind: str, compression: str, writer: Writer) -> None:
        self.root = root
        self.kind = kind
        self.compression = compression
        self.writer = writer
        self.handles: dict[int, LineFile] = {}
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
            handle = self.handles[hour] = self.writer.lines(self.path(hour), compresslevel=6)
        handle.write(line)

    def close_before(self, hour: int) -> None:
        for old in [h for h in self.handles if h < hour]:
            self._close(old)

    def close_all(self) -> None:
        for hour in list(self.handles):
            self._close(hour)

    def _close(self, hour: int) -> None:
        self.handles.pop(hour).close()
        self.closed.add(hour)


class Dispatcher:
    """One client's trace dispatcher: records batch into a trace message until it is 500 ms old
    or about 118,000 characters long (AsyncTraceDispatcher, 4.9.x)."""

    def __init__(self, client: str, client_ip: str, pid: int) -> None:
        self.client = client
        self.client_ip = client_ip
        self.pid = pid
        self.records: list[str] = []
        self.owners: list[object] = []  # whose record each is: see `Engine.record`
        self.ids: set[str] = set()
        self.first_ms = 0
        self.last_ms = 0
        self.chars = 0
        self.counter = 0

    def add(self, timestamp: int, record: str, msg_id: str, owner: object) -> bool:
        """Add a record; True when the segment is full and must be sent now."""
        if not self.records:
            self.first_ms = timestamp
        self.records.append(record)
        self.owners.append(owner)
        self.ids.add(msg_id)
        self.last_ms = timestamp
        self.chars += len(record)
        return self.chars >= MAX_BODY_CHARS

    def deadline(self) -> int:
        return self.first_ms + DISPATCH_WINDOW_MS

    def take(self, month_start_ms: int) -> tuple[str, str, str, list[object]]:
        """The trace message: its own msgId, its KEYS (the traced msgIds), its body, and the
        owners of its records."""
        self.counter += 1
        trace_id = tf.uniq_msg_id(
            self.client_ip, self.pid, 0x5F3759DF, self.last_ms, month_start_ms, self.counter
        )
        body = "".join(self.records)
        keys = " ".join(sorted(self.ids))
        owners = self.owners
        self.records, self.owners, self.ids, self.chars = [], [], set(), 0
        return trace_id, keys, body, owners


class Engine:
    """The simulation: events in time order, the rules, the trace dispatchers, the hourly files,
    the ground truth, and the final judgement of lifecycles still open at the end."""

    _PUBLISH, _DELIVER, _FLUSH, _RESEND, _CLEAN, _END = 0, 1, 2, 3, 4, 5
    # The reasons a dead letter is seen on one side only, in order of precedence: the first
    # `TRACE_REASONS` say why the trace does not predict it, the others why dlq/ lacks it.
    REASONS = (
        "NOT_IN_TRACE",
        "LAST_DELIVERY_NOT_IN_TRACE",
        "CLIENT_FALLBACK",
        "CONSUME_TIMEOUT",
        "LISTENER_REQUESTED_DLQ",
        "GROUP_NOT_EXPORTED",
        "AFTER_EXPORT_WINDOW",
    )
    TRACE_REASONS = 5

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
        dlq_export_end_ms: int | None = None,
        dlq_unexported_groups: tuple[str, ...] = (),
        broker_versions: dict[str, str] | None = None,
        keep_history: bool = False,
        writer: Writer | None = None,
    ) -> None:
        self.groups = groups
        # Broker-side rules follow the version of each group's cluster (the `*` row's else).
        versions = broker_versions or {}
        self.broker_versions = {
            group.name: versions.get(group.broker_cluster)
            or versions.get("*")
            or DEFAULT_BROKER_VERSION
            for group in groups
        }
        # What a reader of the written seed knows of each group: a group left out of it is
        # judged with RocketMQ's defaults.
        self.seed_groups = [
            group if group.in_seed else Group(group.name, in_seed=False) for group in groups
        ]
        self.behaviours = behaviours
        self.group_versions = client_versions
        # looked up on every consume request
        self.consumer_clients = [f"consumer:{group.name}" for group in groups]
        self.consume_timeouts_ms = [group.consume_timeout_ms for group in groups]
        self.traffic = traffic
        self.tables = {
            group.name: delay_table(delay_levels.get(group.broker_cluster, delay_levels["*"]))
            for group in groups
        }
        # the topics' broker: delayed publications wait by its table
        self.topic_table = delay_table(delay_levels["*"])
        self.start_ms = start_ms
        self.end_ms = end_ms
        # the dlq/ export holds the copies stored up to this time, of the exported groups
        self.dlq_export_end_ms = min(
            end_ms, end_ms if dlq_export_end_ms is None else dlq_export_end_ms
        )
        self.dlq_unexported_groups = frozenset(dlq_unexported_groups)
        self.grace_ms = retry_overdue_grace_ms()
        self.events: list[tuple[int, int, int, object]] = []
        self.sequence = 0
        self.open_requests: dict[int, Request] = {}
        self.dispatchers: dict[str, Dispatcher] = {}
        # the consumers' dispatchers first, in the groups' order; then each producer's when it
        # first sends, so that a producer's trace ids do not depend on when consumers consume
        for client in self.consumer_clients:
            self._dispatcher(client)
        self.pending_records: list[tuple[int, int, str, str, str, object]] = []
        self.deadlines: list[tuple[int, str]] = []
        # closed lifecycles whose truth row waits until all their trace records are sent
        self.closing: list[tuple[int, int, Lifecycle]] = []
        # The commit log's offset: the publications' own, and the copies the broker stores of
        # its own (retries, dead letters, re-sends) in a region of their own, so that what
        # consumers do moves no publication's offset id.
        self.commit_log_offset = 1_000_000
        self.broker_copy_offset = BROKER_COPY_OFFSET
        self.message_counter = 0  # message ids (UNIQ_KEY) ...
        self.request_counter = 0  # ... and consume request ids count apart
        self.stats = Stats()
        self.active: dict[int, Lifecycle] = {}
        self.finished: list[Lifecycle] | None = [] if keep_history else None
        self.consumer_started: list[int | None] = []
        # the landing files go through ``writer`` (its owner finishes it), else one of our own
        self.writer = writer or Writer()
        self.owns_writer = writer is None
        self.trace_files = HourlyFiles(out, "trace", compression, self.writer)
        self.trace_open_from: int | None = None  # the hours before it are closed
        self.dlq_files = HourlyFiles(out, "dlq", "none", self.writer) if dlq_export else None
        out.mkdir(parents=True, exist_ok=True)
        self.truth = (out / "ground_truth.jsonl").open("w", encoding="utf-8")
        # the groups of the truth rows with a redelivery (generation.json's true_schedules)
        self.redelivered_groups: set[str] = set()

    # event queue ---------------------------------------------------------------------------
    def _push(self, at: int, kind: int, payload: object) -> None:
        self.sequence += 1
        heapq.heappush(self.events, (at, self.sequence, kind, payload))

    def schedule_publish(self, at: int, index: int) -> None:
        self._push(at, self._PUBLISH, index)

    def new_id(self, ip: str, pid: int, at: int) -> str:
        """A client msgId (UNIQ_KEY), unique within the run; message ids count on their own."""
        self.message_counter += 1
        month_start = _month_start_of_day(at // 86_400_000)
        return tf.uniq_msg_id(ip, pid, 0x18B4AAC2, at, month_start, self.message_counter)

    def new_request_id(self, ip: str, pid: int, at: int) -> str:
        """A consume request's id (the SubBefore's and SubAfter's), unique within the run."""
        self.request_counter += 1
        month_start = _month_start_of_day(at // 86_400_000)
        return tf.uniq_msg_id(ip, pid, 0x18B4AAC2, at, month_start, self.request_counter)

    def _new_offset_id(self, step: int) -> str:
        """The offset id of a published copy stored now, ``step`` bytes on in the commit log."""
        self.commit_log_offset += step
        return tf.offset_msg_id("10.0.0.1", 10911, self.commit_log_offset)

    def _new_broker_offset_id(self, step: int) -> str:
        """The offset id of a copy the broker stores of its own now (a retry, a dead letter, a
        re-sent message), ``step`` bytes on in the region of such copies."""
        self.broker_copy_offset += step
        return tf.offset_msg_id("10.0.0.1", 10911, self.broker_copy_offset)

    # run -------------------------------------------------------------------------------------
    def run(self, progress: bool = False) -> Stats:
        self.consumer_started = [
            self.traffic.consumer_started_ms(self, index) for index in range(len(self.groups))
        ]
        self.traffic.begin(self)
        last_report = time.monotonic()
        events, records, deadlines, closing = (
            self.events,
            self.pending_records,
            self.deadlines,
            self.closing,
        )
        while events:
            at, _, kind, payload = heapq.heappop(events)
            if at > self.end_ms:
                break
            # (most events find no record, trace message or truth row due: skip the calls)
            if (records and records[0][0] <= at) or (deadlines and deadlines[0][0] <= at):
                self._drain_records(at)
            if closing and closing[0][0] <= at:
                self._release_truth(at)
            if kind == self._DELIVER:
                self._deliver(at, *payload)  # type: ignore[misc]
            elif kind == self._FLUSH:
                self._flush_request(at, payload)  # type: ignore[arg-type]
            elif kind == self._PUBLISH:
                self.traffic.on_publish(self, at, payload)  # type: ignore[arg-type]
            elif kind == self._RESEND:
                self._resend(at, *payload)  # type: ignore[misc]
            elif kind == self._CLEAN:
                self._clean(at, payload)  # type: ignore[arg-type]
            else:
                self._end_request(payload)  # type: ignore[arg-type]
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
        kind: str = "NORMAL",
        delay_level: int = 0,
        commit_after_ms: int = 0,
        copy_step: int = 0,
    ) -> Published:
        """A message stored by the broker, with its Pub trace record unless ``traced`` is off.

        ``kind`` DELAYED: sent with DELAY ``delay_level``; the broker stores it in
        SCHEDULE_TOPIC_XXXX (the Pub's offset id) and re-puts it into the topic after the level's
        delay as a new copy, ``copy_step`` bytes on (§2.2, §2.4). TRANSACTIONAL: the Pub's
        offset id is the half message's; the producer commits it ``commit_after_ms`` later (an
        EndTransaction record from 4.9.0 clients) and the broker stores the committed copy.
        Consumers receive the copy at `Published.received_offset_id`, from `available_ms`.
        """
        self.stats.messages += 1
        msg_id = self.new_id("10.0.1.9", pid, at)
        offset_id = self._new_offset_id(offset_step)
        received, available = offset_id, at
        if kind == "DELAYED":
            level = min(delay_level, len(self.topic_table))
            available = at + self.topic_table[level - 1]
            received = self._new_offset_id(copy_step)
            self.stats.delayed_messages += 1
        elif kind == "TRANSACTIONAL":
            available = at + commit_after_ms
            received = self._new_offset_id(copy_step)
            self.stats.transactional_messages += 1
        # The ledger reads the origin from a normal message's Pub only (§5.1).
        origin = offset_id if traced and version.pub_fields >= 14 and kind == "NORMAL" else None
        message = Published(
            msg_id,
            offset_id,
            origin,
            topic,
            tags,
            keys,
            at,
            traced,
            kind=kind,
            received_offset_id=received,
            available_ms=available,
            producer_group=producer_group,
            number=self.stats.messages,
        )
        if traced:
            client = f"producer:{producer_group}"
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
                message_type=MESSAGE_TYPES[kind],
            )
            self.record(at, client, record, msg_id, message)
            if kind == "TRANSACTIONAL" and version.end_transaction:
                committed = at + commit_after_ms
                end = tf.end_transaction_record(
                    timestamp=committed,
                    region=REGION,
                    producer_group=producer_group,
                    topic=topic,
                    msg_id=msg_id,
                    tags=tags,
                    keys=keys,
                    store_host=STORE_HOST,
                    transaction_id=msg_id,  # the producer's transactionId is the UNIQ_KEY
                    state="COMMIT_MESSAGE",
                    from_check=False,
                )
                self.record(committed, client, end, msg_id)
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
        lifecycle = Lifecycle(
            index, self.groups[index].name, message, poisoned, script, history=history
        )
        # A re-put delayed copy keeps REAL_TOPIC (§2.4), and so does a committed one: the broker
        # writes the half message's properties before it clears REAL_TOPIC (EndTransaction).
        lifecycle.first_copy = Copy(
            0,
            0,
            None,
            real_topic=None if message.kind == "NORMAL" else message.topic,
            offset_id=message.received_offset_id,
        )
        return lifecycle

    def subscribe_dead_letter(self, index: int, dead: Lifecycle) -> Lifecycle:
        """The lifecycle, in group ``index`` (a consumer of %DLQ%<group>), of the DLQ copy just
        stored for ``dead``: the same msgId (UNIQ_KEY), first delivered with the copy's stored
        reconsumeTimes, and the copy's properties for any copy of its own."""
        assert dead.dlq_reconsume_times is not None and dead.dlq_copy is not None
        lifecycle = self.subscribe(index, dead.message)
        lifecycle.reconsume_times = lifecycle.first_reconsume_times = dead.dlq_reconsume_times
        lifecycle.first_copy = dataclasses.replace(dead.dlq_copy)
        lifecycle.recovery_of = dead.group
        self.stats.recovery_lifecycles += 1
        return lifecycle

    def resend(self, at: int, lifecycle: Lifecycle, *, offset_step: int, deliver_after: int):
        """An operator re-sends the dead letter ``lifecycle`` to its topic at ``at``: a new
        stored message with the same msgId (UNIQ_KEY) and reconsumeTimes 0, and no Pub trace
        (mqadmin's producer writes none). Only for a topic whose one subscriber is the
        lifecycle's group; the same lifecycle continues ``deliver_after`` ms later."""
        lifecycle.awaiting_resend = lifecycle.resent = True
        lifecycle.pending += 1
        self._push(at, self._RESEND, (lifecycle, offset_step, deliver_after))

    def _resend(self, at: int, lifecycle: Lifecycle, offset_step: int, deliver_after: int):
        self.stats.resent += 1
        copy = Copy(0, 0, "RESENT", offset_id=self._new_broker_offset_id(offset_step))
        lifecycle.first_reconsume_times = 0
        self.deliver_at(at + deliver_after, lifecycle, copy)
        lifecycle.pending -= 1

    def deliver_at(self, at: int, lifecycle: Lifecycle, copy: Copy | None = None) -> None:
        """Hand ``copy`` (by default the lifecycle's first) to the group's consumer at ``at``;
        a broadcasting group's first delivery to each of its instances."""
        first = copy is None and lifecycle.deliveries == 0 and lifecycle.pending == 0
        lifecycle.pending += 1
        self._push(at, self._DELIVER, (lifecycle, copy or lifecycle.first_copy))
        if first and self.groups[lifecycle.index].message_model == "BROADCASTING":
            assert lifecycle.first_copy is not None
            for instance in range(1, self.behaviours[lifecycle.index].instances):
                again = dataclasses.replace(
                    lifecycle.first_copy, cause="BROADCAST_COPY", instance=instance
                )
                lifecycle.pending += 1
                self._push(
                    at + instance * BROADCAST_PULL_SPREAD_MS, self._DELIVER, (lifecycle, again)
                )

    # consumers -------------------------------------------------------------------------------
    def _deliver(self, at: int, lifecycle: Lifecycle, copy: Copy) -> None:
        if self.traffic.offline(self, at, lifecycle):
            # The consumer takes nothing: the message waits; a first delivery never happens.
            if lifecycle.deliveries:
                self.active[id(lifecycle)] = lifecycle
            return
        behaviour = self.behaviours[lifecycle.index]
        orderly = self.groups[lifecycle.index].consume_mode == "ORDERLY"
        size = 1 if orderly else behaviour.batch_size
        request = self.open_requests.get(lifecycle.index)
        # another instance's copy is another client's request, never a batch with the first
        if (
            request is None
            or len(request.lifecycles) >= size
            or (
                copy.cause == "BROADCAST_COPY"
                and any(other is lifecycle for other in request.lifecycles)
            )
        ):
            request = Request(lifecycle.index, at)
            self.open_requests[lifecycle.index] = request
            self._push(at + behaviour.request_window_ms, self._FLUSH, request)
        request.lifecycles.append(lifecycle)
        request.copies.append(copy)
        self.active[id(lifecycle)] = lifecycle

    def _flush_request(self, at: int, request: Request) -> None:
        """The listener is called: SubBefore records now; the result when it returns (now, or at
        an _END event when the expiry cleaner runs first, at a _CLEAN event)."""
        if self.open_requests.get(request.group) is request:
            del self.open_requests[request.group]
        group = self.groups[request.group]
        behaviour = self.behaviours[request.group]
        version = self.group_versions[request.group]
        client = self.consumer_clients[request.group]
        request.start_ms = at
        request_id = request.request_id = self.new_request_id("10.0.2.7", 5000 + request.group, at)
        for lifecycle, copy in zip(request.lifecycles, request.copies, strict=True):
            lifecycle.deliveries += 1
            number = lifecycle.deliveries
            request.numbers.append(number)
            lifecycle.reconsume_times = copy.reconsume_times
            assert (copy.cause is None) == (number == 1), (copy, number)
            if copy.cause is not None:
                lifecycle.causes.append(copy.cause)
                causes = self.stats.redelivery_causes
                causes[copy.cause] = causes.get(copy.cause, 0) + 1
            lifecycle.in_flight = True
            lifecycle.expected_ms = None
            lifecycle.last_dropped = False
            lifecycle.awaiting_resend = False
            if lifecycle.recovery_of is not None:
                self.stats.recovery_deliveries += 1
            if lifecycle.history is not None:
                lifecycle.history.append(
                    Delivery(request_id, copy.reconsume_times, at, cause=copy.cause)
                )
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
                    retry_times=copy.reconsume_times,
                    keys=lifecycle.message.keys,
                    client_host=tf.consumer_host(copy.instance),
                ),
                lifecycle.message.msg_id,
                (lifecycle, number),
            )
        outcome = request.outcome = self.traffic.outcome(self, at, request)
        took = self.traffic.consume_ms(self, request, behaviour)
        timeout = self.consume_timeouts_ms[request.group]
        if outcome.startswith("SLOW_"):
            took += self.traffic.stuck_ms(self, request, timeout)
        ended = at + took
        request.took_ms, request.ended_ms = took, ended
        started = self.consumer_started[request.group]
        concurrent = group.consume_mode == "CONCURRENTLY"
        if concurrent and started is not None and timeout > 0 and ended > at + timeout:
            # The expiry cleaner runs every consumeTimeout from the consumer's start; the first
            # run at which the consume started more than consumeTimeout ago (§3.6).
            run_at = started + ((at + timeout - started) // timeout + 1) * timeout
            if run_at < ended and run_at <= self.end_ms:
                request.cleaned = True
                self._push(run_at, self._CLEAN, request)
        if outcome == "IN_FLIGHT" or ended > self.end_ms:
            return  # still running at the end of the run: in flight
        if request.cleaned:
            self._push(ended, self._END, request)
        else:
            self._end_request(request)

    def _clean(self, at: int, request: Request) -> None:
        """The expiry cleaner finds the request's messages still being consumed more than
        consumeTimeout after their start: each is sent back at level 3 (§3.6). The broker's
        rules apply (a DLQ copy at r >= max); a group that stores nothing (broadcasting, or
        retryQueueNums 0) just forgets it."""
        group = self.groups[request.group]
        asked = dataclasses.replace(group, delay_level_when_next_consume=CLEANER_DELAY_LEVEL)
        entries = zip(request.lifecycles, request.copies, request.numbers, strict=True)
        for lifecycle, copy, number in entries:
            decision = decide(
                asked,
                copy.stored_times,
                at,
                self.tables[group.name],
                self.broker_versions[group.name],
            )
            if decision.decision == "DROP":
                continue
            self.stats.consume_timeouts += 1
            if decision.decision == "DLQ":
                self.stats.consume_timeout_dlq += 1
                # the stuck delivery still runs: it closes the lifecycle when it ends
                self._enter_dlq(lifecycle, decision, at, number, copy, "CONSUME_TIMEOUT")
            else:  # a second path: the stuck delivery still runs
                self._retry(lifecycle, copy, decision, "CONSUME_TIMEOUT", ends=False)

    def _end_request(self, request: Request) -> None:
        """The listener returns: SubAfter records, then the client processes the result."""
        group = self.groups[request.group]
        version = self.group_versions[request.group]
        client = self.consumer_clients[request.group]
        at, took, ended, outcome = (
            request.start_ms,
            request.took_ms,
            request.ended_ms,
            request.outcome,
        )
        size = len(request.lifecycles)
        # An orderly listener's ROLLBACK (autoCommit on) is acked, though the hook, and so the
        # SubAfter, says success = false with the return type SUCCESS (spec §3.5).
        traced_success = outcome in ("SUCCESS", "SLOW_SUCCESS")
        success = traced_success or outcome == "ROLLBACK"
        # ConsumeReturnType, first rule first (§3.2): TIME_OUT labels any non-null status.
        if outcome in ("EXCEPTION", "RETURNNULL"):
            return_type = outcome
        elif took >= self.consume_timeouts_ms[request.group]:
            return_type = "TIME_OUT"
        elif success:
            return_type = "SUCCESS"
        else:
            return_type = "FAILED"
        orderly = group.consume_mode == "ORDERLY"
        # what the ledger counts as a success: the SubAfter's, or an orderly ROLLBACK's
        counted = traced_success or (orderly and return_type == "SUCCESS")
        if return_type == "TIME_OUT":
            self.stats.time_out_labels += size
        # A 7-field SubAfter has no timestamp and its costTime is the request's time divided by
        # its size (spec §5.2): the end a reader can know is the start plus costTime x size.
        traced_end = ended if version.sub_after_fields >= 9 else at + took // size * size
        concurrent_clustering = not orderly and group.message_model == "CLUSTERING"
        dropped_after = level = ack = None
        if concurrent_clustering and not request.cleaned:
            dropped_after = self.traffic.redeliver_after_drop(self, request, success)
        if concurrent_clustering and dropped_after is None:
            if success and size > 1:
                ack = self.traffic.ack_index(self, request)
            elif not success:
                level = self.traffic.listener_delay_level(self, request)
        # The listener's context level for this call (-1: straight to the DLQ, §1.2 step 8).
        asked = (
            group
            if level is None
            else dataclasses.replace(group, delay_level_when_next_consume=level)
        )
        if dropped_after is not None:
            self.stats.dropped_results += 1
        if ack is not None:
            self.stats.partial_acks += 1
        entries = zip(request.lifecycles, request.copies, request.numbers, strict=True)
        for position, (lifecycle, copy, number) in enumerate(entries):
            self.record(
                ended,
                client,
                tf.sub_after_record(
                    version,
                    request_id=request.request_id,
                    msg_id=lifecycle.message.msg_id,
                    cost_ms=took // size,
                    success=traced_success,
                    keys=lifecycle.message.keys,
                    return_type=return_type,
                    timestamp=ended,
                    group=group.name,
                ),
                lifecycle.message.msg_id,
                (lifecycle, number),
            )
            delivery = lifecycle.history[number - 1] if lifecycle.history is not None else None
            if delivery is not None:
                delivery.ended_ms, delivery.return_type = traced_end, return_type
                delivery.success = success
            if counted:
                lifecycle.successes += 1
            if number == lifecycle.deliveries:
                lifecycle.in_flight = False
            if dropped_after is not None:
                # A rebalance dropped the process queue: no ack, no send-back (§3.2); the new
                # owner pulls the same copy again. The listener did its work all the same.
                self.stats.duplicate_deliveries += 1
                if success:
                    self._consume(lifecycle, traced_end, at)
                elif number == lifecycle.deliveries:  # the ledger expects the rules' retry
                    lifecycle.expected_ms = decide(
                        group,
                        copy.reconsume_times,
                        ended,
                        self.tables[group.name],
                        self.broker_versions[group.name],
                    ).expected_redelivery_ms
                again = dataclasses.replace(copy, cause="DUPLICATE_DELIVERY")
                self.deliver_at(ended + dropped_after, lifecycle, again)
                self._release(lifecycle)
                continue
            if success and (ack is None or position <= ack):
                self._consume(lifecycle, traced_end, at)
                self._release(lifecycle, "CONSUMED")
                continue
            # The client sends the failures back when the whole request has ended.
            if success:  # after the ackIndex: sent back as failed, at the group's level
                self.stats.partial_ack_messages += 1
                cause, context = "PARTIAL_BATCH_ACK", group
            else:
                cause = "LISTENER_LEVEL" if level is not None and level > 0 else "SCHEDULED"
                context = asked
                if request.cleaned:  # 4.9.8 sends it back again (§3.6)
                    self.stats.stuck_failures_sent_back += 1
            self._send_back(lifecycle, copy, number, context, ended, cause, delivery)

    def _send_back(
        self,
        lifecycle: Lifecycle,
        copy: Copy,
        number: int,
        asked: Group,
        ended: int,
        cause: str,
        delivery: Delivery | None,
    ) -> None:
        """One failed message of a request that ended at ``ended``: the broker's send-back (a
        concurrent clustering group's), the client's fallback or local re-consume when that RPC
        fails, or the orderly or broadcasting client's own rules."""
        group = self.groups[lifecycle.index]
        table = self.tables[group.name]
        orderly = group.consume_mode == "ORDERLY"
        latest = number == lifecycle.deliveries
        if not orderly and group.message_model == "CLUSTERING":
            failure = self.traffic.send_back_failure(self, ended, lifecycle, copy)
            if failure is not None and failure[0] == "FALLBACK":
                self._fallback(lifecycle, copy, number, ended, ended + failure[1], delivery)
                return
            if failure is not None:
                # The fallback failed too: reconsumeTimes + 1 in memory, consumed again locally
                # 5 s later (§3.3); nothing is stored.
                self.stats.local_reconsumes += 1
                due = ended + failure[1] + LOCAL_RECONSUME_MS
                decision = Decision("LOCAL_RETRY", None, LOCAL_RECONSUME_MS, due)
                again = dataclasses.replace(
                    copy, reconsume_times=copy.reconsume_times + 1, cause="LOCAL_RECONSUME"
                )
                self._redeliver(lifecycle, again, decision, latest, delivery)
                return
        # The broker reads the stored copy's count; an orderly client counts in memory.
        counted = copy.reconsume_times if orderly else copy.stored_times
        decision = decide(asked, counted, ended, table, self.broker_versions[group.name])
        if decision.decision == "DROP":
            self._note(delivery, decision)
            lifecycle.last_dropped = lifecycle.last_dropped or latest
            self._release(lifecycle, "DROPPED")
            return
        if decision.decision == "DLQ":
            self._note(delivery, decision)
            listener = asked is not group and asked.delay_level_when_next_consume < 0
            path = "ORDERLY" if orderly else "LISTENER" if listener else "BROKER"
            self._enter_dlq(lifecycle, decision, ended, number, copy, path)
            self._release(lifecycle, "DLQ")
            return
        if decision.decision == "LOCAL_RETRY":
            again = dataclasses.replace(
                copy, reconsume_times=copy.reconsume_times + 1, cause="SCHEDULED"
            )
            self._redeliver(lifecycle, again, decision, latest, delivery)
            return
        if cause == "LISTENER_LEVEL":
            self.stats.listener_levels += 1
        self._retry(lifecycle, copy, decision, cause, latest, delivery)

    def _retry(
        self,
        lifecycle: Lifecycle,
        copy: Copy,
        decision: Decision,
        cause: str,
        latest: bool = False,
        delivery: Delivery | None = None,
        *,
        ends: bool = True,
    ) -> None:
        """The broker stored a retry copy of ``copy`` through the schedule topic (§1.2 steps
        9-10): the stored count + 1, REAL_TOPIC left over, ORIGIN_MESSAGE_ID kept or set."""
        group = lifecycle.group
        stored = copy.stored_times + 1
        origin = copy.origin or self._offset_of(copy)
        again = Copy(stored, stored, cause, real_topic=f"%RETRY%{group}", origin=origin)
        self._redeliver(lifecycle, again, decision, latest, delivery, ends=ends)

    def _fallback(
        self,
        lifecycle: Lifecycle,
        copy: Copy,
        number: int,
        ended: int,
        sent: int,
        delivery: Delivery | None,
    ) -> None:
        """The send-back RPC failed: the client sends the message to %RETRY%<group> itself at
        ``sent``, with DELAY = 3 + r and RECONSUME_TIME = r + 1 whatever the listener asked, and
        no ORIGIN_MESSAGE_ID unless the consumed copy had one (§3.4). The broker's
        handleRetryAndDLQ: a 4.x broker dead-letters it at r + 1 >= max, still through the
        schedule topic; a 5.x broker at r + 1 > max, at once (§1.3, §1.4)."""
        group = self.groups[lifecycle.index]
        table = self.tables[group.name]
        r = copy.reconsume_times
        limit = 16 if group.max_reconsume_times == -1 else group.max_reconsume_times
        level = min(3 + r, len(table))
        delay = table[level - 1]
        self.stats.fallback_sends += 1
        four = is_4x_broker(self.broker_versions[group.name])
        if r + 1 >= limit if four else r + 1 > limit:
            self.stats.fallback_dlq += 1
            decision = (
                Decision("DLQ", level, delay, entered_dlq_ms=sent + delay)
                if four
                else Decision("DLQ", entered_dlq_ms=sent)
            )
            self._note(delivery, decision)
            self._enter_dlq(lifecycle, decision, ended, number, copy, "FALLBACK")
            self._release(lifecycle, "DLQ")
            return
        decision = Decision("RETRY", level, delay, sent + delay)
        again = Copy(
            r + 1, r + 1, "CLIENT_FALLBACK", real_topic=f"%RETRY%{group.name}", origin=copy.origin
        )
        self._redeliver(lifecycle, again, decision, number == lifecycle.deliveries, delivery)

    def _redeliver(
        self,
        lifecycle: Lifecycle,
        copy: Copy,
        decision: Decision,
        latest: bool,
        delivery: Delivery | None,
        *,
        ends: bool = True,
    ) -> None:
        """Deliver ``copy`` when ``decision`` says, plus the pull lag; the delivery that led
        here has ended, unless ``ends`` is off."""
        expected = decision.expected_redelivery_ms
        assert expected is not None
        self._note(delivery, decision)
        if latest:
            lifecycle.expected_ms = expected
        lag = self.traffic.redelivery_lag(self, decision, lifecycle, copy)
        self.deliver_at(expected + lag, lifecycle, copy)
        if ends:
            self._release(lifecycle)

    @staticmethod
    def _note(delivery: Delivery | None, decision: Decision) -> None:
        if delivery is not None:
            delivery.decision = decision.decision
            delivery.delay_level = decision.delay_level
            delivery.delay_ms = decision.delay_ms
            delivery.expected_redelivery_ms = decision.expected_redelivery_ms
            delivery.entered_dlq_ms = decision.entered_dlq_ms

    def _offset_of(self, copy: Copy) -> str:
        """The offset id of a stored copy, given one when nothing has needed it yet."""
        if copy.offset_id is None:
            copy.offset_id = self._new_broker_offset_id(self.traffic.offset_step(self))
        return copy.offset_id

    def _consume(self, lifecycle: Lifecycle, traced_end: int, started: int) -> None:
        """A listener consumed the message (a delivery that started at ``started``)."""
        lifecycle.consumed = True
        entered = lifecycle.dlq_entered_ms
        if entered is not None and lifecycle.recovered_ms is None and started >= entered:
            lifecycle.recovered_ms = traced_end  # the end the SubAfter tells
            self.stats.recovered += 1

    def _release(self, lifecycle: Lifecycle, state: str | None = None) -> None:
        """A delivery has been dealt with: its path ends in ``state`` (DLQ, DROPPED), in a
        consumption, or goes on (None: a redelivery is due). The lifecycle closes when no
        delivery is due or running, as CONSUMED once a listener consumed it."""
        lifecycle.pending -= 1
        if lifecycle.pending == 0:
            final = "CONSUMED" if lifecycle.consumed else state
            assert final is not None, lifecycle
            self._close(lifecycle, final, lifecycle.last_record_ms)

    def _enter_dlq(
        self,
        lifecycle: Lifecycle,
        decision: Decision,
        ended: int,
        number: int,
        copy: Copy,
        path: str,
    ) -> None:
        """Store the DLQ copy of delivery ``number`` (which handed over ``copy`` and failed at
        ``ended``, or was caught by the expiry cleaner then), export it if the export holds it,
        and let the world react. ``path``: BROKER, LISTENER (level -1), CONSUME_TIMEOUT,
        FALLBACK (the client's) or ORDERLY (the orderly client's)."""
        entered = decision.entered_dlq_ms
        assert entered is not None
        group = self.groups[lifecycle.index]
        r = copy.reconsume_times
        if path == "LISTENER":
            self.stats.listener_dlq += 1
        lifecycle.dlq_entered_ms = entered
        if path == "ORDERLY":
            lifecycle.dlq_reconsume_times = dlq_copy_reconsume_times(group, r)
        elif path == "FALLBACK":
            lifecycle.dlq_reconsume_times = r + 1  # the header's RECONSUME_TIME
        else:
            lifecycle.dlq_reconsume_times = copy.stored_times + 1
        lifecycle.dlq_delivery = number
        lifecycle.dlq_path = path
        seed_group = self.seed_groups[lifecycle.index]
        lifecycle.dlq_rules_agree = (
            decide(
                seed_group, r, ended, self.tables[group.name], self.broker_versions[group.name]
            ).decision
            == "DLQ"
        )
        lifecycle.dlq_exported = (
            self.dlq_files is not None
            and group.name not in self.dlq_unexported_groups
            and entered <= self.dlq_export_end_ms
        )
        lifecycle.recovered_ms = None
        properties = self._dlq_properties(lifecycle, copy, decision, path)
        stored = lifecycle.dlq_reconsume_times
        lifecycle.dlq_copy = Copy(
            stored,
            stored,
            None,
            real_topic=properties.get("REAL_TOPIC"),
            origin=properties.get("ORIGIN_MESSAGE_ID"),
        )
        self._dlq_copy(lifecycle, properties)
        self.traffic.on_dead_letter(self, lifecycle)

    # ground truth ----------------------------------------------------------------------------
    def _close(self, lifecycle: Lifecycle, state: str, last_record_ms: int | None) -> None:
        """The lifecycle has ended in ``state``; its truth row is written once its last trace
        record (at ``last_record_ms``; None: all sent already) is sent, landed or lost."""
        self.active.pop(id(lifecycle), None)
        lifecycle.state = state
        if self.finished is not None:
            self.finished.append(lifecycle)
        self.stats.lifecycles += 1
        self.stats.states[state] = self.stats.states.get(state, 0) + 1
        if last_record_ms is None:
            self._write_truth(lifecycle)
            return
        # A record is handed to its dispatcher at its time and sent within DISPATCH_WINDOW_MS.
        self.sequence += 1
        heapq.heappush(
            self.closing, (last_record_ms + DISPATCH_WINDOW_MS, self.sequence, lifecycle)
        )

    def _release_truth(self, now: int | None) -> None:
        """Write the truth rows whose trace records have all been sent by ``now`` (None: all)."""
        while self.closing and (now is None or self.closing[0][0] <= now):
            self._write_truth(heapq.heappop(self.closing)[2])

    def dlq_evidence(self, lifecycle: Lifecycle) -> tuple[str | None, str | None]:
        """What a reader of the landing can see of the lifecycle's DLQ entry: BOTH, OBSERVED
        (the copy is in dlq/), PREDICTED (the trace shows the deciding failed delivery and the
        rules on the seed's settings send it to the DLQ) or NONE; and the true cause when it is
        not BOTH, the first of `REASONS` that applies. (None, None) for no DLQ entry."""
        entered = lifecycle.dlq_entered_ms
        if entered is None:
            return None, None
        deciding = lifecycle.dlq_delivery
        lost = lifecycle.lost_deliveries or ()
        first = lifecycle.first_landed
        causes = (
            first is None or first > deciding,  # no delivery up to the deciding one landed
            deciding in lost,  # its SubBefore or SubAfter was lost
            # the client's fallback dead-lettered it one attempt before the rules would (§3.4)
            lifecycle.dlq_path == "FALLBACK" and not lifecycle.dlq_rules_agree,
            # the expiry cleaner sent it while its listener ran: the trace shows no failure
            lifecycle.dlq_path == "CONSUME_TIMEOUT",
            not lifecycle.dlq_rules_agree,  # the listener asked; the seed says retry
            self.dlq_files is None or lifecycle.group in self.dlq_unexported_groups,
            entered > self.dlq_export_end_ms,
        )
        predicted = not any(causes[: self.TRACE_REASONS])
        observed = lifecycle.dlq_exported
        assert observed == (not any(causes[self.TRACE_REASONS :]))
        if predicted and observed:
            return "BOTH", None
        evidence = "OBSERVED" if observed else "PREDICTED" if predicted else "NONE"
        reason = next(name for name, cause in zip(self.REASONS, causes, strict=True) if cause)
        return evidence, reason

    def _write_truth(self, lifecycle: Lifecycle) -> None:
        evidence, reason = self.dlq_evidence(lifecycle)
        if lifecycle.deliveries > 1:
            self.redelivered_groups.add(lifecycle.group)
        if lifecycle.lost_deliveries:
            self.stats.trace_incomplete_lifecycles += 1
        if evidence is not None:
            key = evidence if reason is None else f"{evidence}:{reason}"
            self.stats.dlq_evidence[key] = self.stats.dlq_evidence.get(key, 0) + 1
        self.truth.write(TRUTH_ROW % self._truth_values(lifecycle, evidence, reason))

    def _truth_values(
        self, lifecycle: Lifecycle, evidence: str | None, reason: str | None
    ) -> tuple[str, ...]:
        """One ground_truth.jsonl row (`TRUTH_COLUMNS`), each value written as JSON: what really
        happened, and what the landing shows.

        - origin_msg_id: what the landed Pub record tells (none for a 13-field Pub, an untraced
          or a lost one, and for a delayed or transactional message, whose Pub names another
          copy than the one consumers receive); origin_kind: NORMAL, DELAYED or TRANSACTIONAL
          as that Pub says, UNKNOWN without one; received_offset_msg_id: the offset id of the
          copy the message's topic delivered (for a recovery group too);
        - final_state: as the ledger should judge it: CONSUMED once a listener consumed it
          (a partial ack does not consume the messages after its ackIndex);
        - deliveries: as they happened, landed or not; successful_deliveries: those whose
          SubAfter counts as a success (success true, or an orderly ROLLBACK); redelivery_causes:
          the true cause (`CAUSES`) of each delivery after the first, in start order;
        - in_dlq, dlq_reconsume_times, dlq_entered_ms: the (last) DLQ entry, its copy's stored
          reconsumeTimes and store time (for a 4.x orderly or fallback copy, after its delay);
        - recovered_ms: the end (as its SubAfter tells) of the first successful delivery that
          started after the DLQ entry, as for a re-sent dead letter; recovery_of: the group
          whose %DLQ% topic this group consumes;
        - trace_complete: every SubBefore and SubAfter of its deliveries landed;
        - dlq_evidence, reconciliation_reason: see `dlq_evidence`.
        """
        message = lifecycle.message
        assert len(lifecycle.causes) == max(lifecycle.deliveries - 1, 0), lifecycle
        assert lifecycle.state is not None
        unknown = message.pub_lost or not message.traced
        return (
            _json_text(lifecycle.group),
            _json_text(message.msg_id),
            _json_or_null(None if message.pub_lost else message.origin_msg_id),
            _json_text("UNKNOWN" if unknown else message.kind),
            _json_text(message.received_offset_id),
            _json_text(lifecycle.state),
            str(lifecycle.deliveries),
            str(lifecycle.successes),
            f"[{','.join(map(_json_text, lifecycle.causes))}]",
            _json_bool(lifecycle.dlq_entered_ms is not None),
            _json_or_null(lifecycle.dlq_reconsume_times),
            _json_or_null(lifecycle.dlq_entered_ms),
            _json_or_null(lifecycle.recovered_ms),
            _json_or_null(lifecycle.recovery_of),
            _json_bool(not lifecycle.lost_deliveries),
            _json_or_null(evidence),
            _json_or_null(reason),
        )

    def judge_open(self, lifecycle: Lifecycle, watermark_ms: int) -> str:
        """The state of a lifecycle still open when the trace ends, as the models judge it: by
        the delivery started last, unless a listener consumed the message."""
        if lifecycle.consumed:
            return "CONSUMED"  # a later delivery (a duplicate, a cleaner's retry) is pending
        if lifecycle.awaiting_resend:
            return "DLQ"  # in the DLQ; the re-sent message is not delivered yet
        if lifecycle.dlq_entered_ms is not None and lifecycle.dlq_delivery == lifecycle.deliveries:
            return "DLQ"  # the expiry cleaner dead-lettered it; its listener still runs
        if lifecycle.in_flight:
            return "IN_FLIGHT"
        if lifecycle.last_dropped:
            return "DROPPED"  # another broadcasting instance's copy is still to come
        assert lifecycle.expected_ms is not None
        overdue = lifecycle.expected_ms < watermark_ms - self.grace_ms
        return "RETRY_OVERDUE" if overdue else "WAITING_RETRY"

    def _finish(self) -> None:
        watermark = self.stats.watermark_ms
        self._release_truth(None)
        for lifecycle in sorted(
            self.active.values(), key=lambda item: (item.group, item.message.msg_id)
        ):
            if lifecycle.deliveries == 0:
                # queued for a first consume request that the run ended before sending: the
                # trace has nothing of it, so it is not a lifecycle yet
                continue
            self._close(lifecycle, self.judge_open(lifecycle, watermark), None)
        self.active.clear()
        self.trace_files.close_all()
        if self.dlq_files:
            self.dlq_files.close_all()
        if self.owns_writer:
            self.writer.finish()
        self.truth.close()

    # dead-letter export ----------------------------------------------------------------------
    def _dlq_properties(
        self, lifecycle: Lifecycle, copy: Copy, decision: Decision, path: str
    ) -> dict[str, str]:
        """The properties of the DLQ copy of ``copy`` (§1.2 step 10, §1.3-§1.6, §3.4, §3.5); the
        topics in them as the broker names them, in the group's namespace if it has one, but
        RETRY_TOPIC as the orderly client writes it: the topic its listener saw, without it
        (ConsumeMessageOrderlyService.sendMessageBack; the concurrent one wraps it first)."""
        group = self.groups[lifecycle.index]
        message = lifecycle.message
        retry_topic = message.topic if path == "ORDERLY" else broker_name(group.name, message.topic)
        properties = {
            "UNIQ_KEY": message.msg_id,
            "RETRY_TOPIC": retry_topic,
            "WAIT": "false",
            "CLUSTER": group.cluster_name,
            "MSG_REGION": REGION,
            "TRACE_ON": "true",
        }
        if message.keys:
            properties["KEYS"] = message.keys
        if message.tags:
            properties["TAGS"] = message.tags
        if message.kind == "TRANSACTIONAL":
            properties["PGROUP"] = message.producer_group
            if path not in ("ORDERLY", "FALLBACK"):  # a client's own send clears TRAN_MSG
                properties["TRAN_MSG"] = "true"
        if path in ("ORDERLY", "FALLBACK"):
            # The client sends it to %RETRY% itself: ORIGIN_MESSAGE_ID is kept from the consumed
            # copy, else the client msgId; but the 4.9.x line (and the fallback up to 5.3.3)
            # loses it, replacing the property map after setting it (§3.4, §3.5). A 4.x broker
            # routes it through the schedule topic with DELAY = 3 + r (§1.3); 5.x: DELAY = -1.
            if copy.origin:
                properties["ORIGIN_MESSAGE_ID"] = copy.origin
            elif path == "ORDERLY" and group.client_line != "remoting-4.9":
                properties["ORIGIN_MESSAGE_ID"] = message.msg_id
            if decision.delay_level is not None:
                properties.update(
                    DELAY=str(decision.delay_level),
                    REAL_TOPIC=broker_name(group.name, f"%DLQ%{group.name}"),
                    REAL_QID="0",
                )
            else:
                properties["DELAY"] = "-1"
                if copy.real_topic is not None:
                    properties.update(
                        REAL_TOPIC=broker_name(group.name, copy.real_topic), REAL_QID="0"
                    )
        else:
            # The broker's send-back: the consumed copy's ORIGIN_MESSAGE_ID, else its offset id.
            properties["ORIGIN_MESSAGE_ID"] = copy.origin or self._offset_of(copy)
            properties["DELAY"] = "0"
            if copy.real_topic is not None:  # left over from the last schedule hop or commit
                properties.update(REAL_TOPIC=broker_name(group.name, copy.real_topic), REAL_QID="0")
        return properties

    def _dlq_copy(self, lifecycle: Lifecycle, properties: dict[str, str]) -> None:
        self.stats.dlq_messages += 1
        if self.dlq_files is None or not lifecycle.dlq_exported:
            return
        self.stats.dlq_exported += 1
        group = self.groups[lifecycle.index]
        message = lifecycle.message
        entered = lifecycle.dlq_entered_ms
        assert entered is not None and lifecycle.dlq_copy is not None
        offset_step, properties_as_map = self.traffic.dlq_copy_choices(self)
        offset_id = lifecycle.dlq_copy.offset_id = self._new_broker_offset_id(offset_step)
        line: dict[str, object] = {
            "msgId": message.msg_id,
            "offsetMsgId": offset_id,
            "topic": broker_name(group.name, f"%DLQ%{group.name}"),
            "queueId": 0,
            "reconsumeTimes": lifecycle.dlq_reconsume_times,
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
        self.dlq_files.write(entered // HOUR_MS, compact_json(line))

    # trace dispatch --------------------------------------------------------------------------
    def record(self, at: int, client: str, record: str, msg_id: str, owner: object = None) -> None:
        """A trace record written by ``client`` at ``at``, for that client's dispatcher.
        ``owner`` is whose record it is: the Published message for its Pub record, (lifecycle,
        delivery number) for a SubBefore or SubAfter, None for others."""
        if type(owner) is tuple and at > owner[0].last_record_ms:
            owner[0].last_record_ms = at
        self.sequence += 1
        heapq.heappush(self.pending_records, (at, self.sequence, client, record, msg_id, owner))

    def _dispatcher(self, client: str) -> Dispatcher:
        dispatcher = self.dispatchers.get(client)
        if dispatcher is None:
            number = len(self.dispatchers)
            dispatcher = Dispatcher(client, f"10.0.3.{number % 250 + 1}", 6000 + number)
            self.dispatchers[client] = dispatcher
        return dispatcher

    def _drain_records(self, now: int, final: bool = False) -> None:
        """Hand every record whose time has come to its client's dispatcher, and send the trace
        messages that are due, in time order."""
        records, deadlines, dispatchers = self.pending_records, self.deadlines, self.dispatchers
        heappop, heappush = heapq.heappop, heapq.heappush
        while True:
            if deadlines and (not records or deadlines[0][0] <= records[0][0]):
                if deadlines[0][0] > now and not final:
                    return
                deadline, client = heappop(deadlines)
                dispatcher = dispatchers[client]
                if dispatcher.records and dispatcher.deadline() == deadline:
                    self._send(dispatcher, deadline)
                continue
            if not records or records[0][0] > now:
                return
            at, _, client, record, msg_id, owner = heappop(records)
            dispatcher = dispatchers.get(client) or self._dispatcher(client)
            was_empty = not dispatcher.records
            if dispatcher.add(at, record, msg_id, owner):
                self._send(dispatcher, at)
            elif was_empty:
                heappush(deadlines, (dispatcher.deadline(), client))

    def _send(self, dispatcher: Dispatcher, at: int) -> None:
        trace_id, keys, body, owners = dispatcher.take(_month_start_of_day(at // 86_400_000))
        client = dispatcher.client
        lost = self.traffic.trace_lost(self, client)
        if lost:
            self.stats.lost_trace_messages += 1
            self.stats.lost_records += len(owners)
        else:
            self.stats.trace_messages += 1
            self.stats.records += len(owners)
            store_ms = at + self.traffic.store_delay(self, client)
            self.traffic.land(self, client, store_ms, trace_id, keys, body)
        for owner in owners:
            if type(owner) is tuple:
                lifecycle, number = owner
                if lost:
                    if lifecycle.lost_deliveries is None:
                        lifecycle.lost_deliveries = set()
                    lifecycle.lost_deliveries.add(number)
                elif lifecycle.first_landed is None or number < lifecycle.first_landed:
                    lifecycle.first_landed = number
            elif lost and isinstance(owner, Published):
                owner.pub_lost = True

    def write_line(self, hour: int, line: str, store_ms: int | None) -> None:
        """A landing line in the file of ``hour``; ``store_ms`` None for a line cut short."""
        stats = self.stats
        if store_ms is not None and store_ms > stats.watermark_ms:
            stats.watermark_ms = store_ms
        stats.lines += 1
        # Store times only move forward, so hours two behind can no longer receive lines.
        open_from = stats.watermark_ms // HOUR_MS - 1
        if open_from != self.trace_open_from:
            self.trace_files.close_before(open_from)
            self.trace_open_from = open_from
        self.trace_files.write(hour, line)


# The purposes of RandomTraffic's keyed draws (`keyed.purpose`): one constant each, added to a
# delivery's key (or a lifecycle's, or a request's) to draw for that purpose.
_P_HANG = keyed.purpose("hang")
_P_TRANSIENT = keyed.purpose("transient")
_P_KIND = keyed.purpose("failure kind")
_P_ROLLBACK = keyed.purpose("rollback")
_P_SLOW = keyed.purpose("slow")
_P_SLOW_FAILED = keyed.purpose("slow failed")
_P_COST = keyed.purpose("consume time")
_P_STUCK = keyed.purpose("stuck time")
_P_LISTENER_DLQ = keyed.purpose("listener dlq")
_P_LISTENER_LEVEL = keyed.purpose("listener level")
_P_OWN_LEVEL = keyed.purpose("own level")
_P_ACK = keyed.purpose("partial ack")
_P_ACK_INDEX = keyed.purpose("ack index")
_P_SEND_BACK = keyed.purpose("send-back fails")
_P_RPC_MS = keyed.purpose("send-back rpc time")
_P_FALLBACK_FAILS = keyed.purpose("fallback fails")
_P_FALLBACK_MS = keyed.purpose("fallback time")
_P_DROP = keyed.purpose("result dropped")
_P_DROP_AFTER = keyed.purpose("redelivered after drop")
_P_LAG = keyed.purpose("redelivery lag")
_P_PULL = keyed.purpose("redelivery pull")
_P_RECOVERY = keyed.purpose("recovery pull")
_P_RESEND = keyed.purpose("re-send")
_P_RESEND_AT = keyed.purpose("re-send time")
_P_RESEND_STEP = keyed.purpose("re-send offset step")
_P_RESEND_AFTER = keyed.purpose("re-send delivery")
_P_RESENT_EPOCH = keyed.purpose("re-sent lifecycle")
_P_STARTED = keyed.purpose("consumer started")
# a redelivery's lag is keyed by its cause too: two paths to one attempt index lag apart
_P_CAUSES = {cause: keyed.purpose(f"cause {cause}") for cause in (None, *CAUSES)}


class RandomTraffic:
    """`retrylake generate`'s world: publications from one seeded stream in publication order,
    what consumers do from keyed draws (`keyed`), and each client's trace landing from a stream
    of its own (see the module's docstring)."""

    def __init__(self, config: GeneratorConfig, groups: list[Group]) -> None:
        self.config = config
        self.rng = random.Random(config.seed)  # the publications' stream
        self.seed_key = keyed.key_of("retrylake 4.x traffic", config.seed)
        # each group's key: by name, so that a group's draws do not depend on its place
        self.group_keys = [keyed.key_of(self.seed_key, group.name) for group in groups]
        # each client's landing stream (`_landing`), and the broker's choices for its own copies
        self.landing_rngs: dict[str, random.Random] = {}
        self.broker_rng = random.Random(keyed.key_of(self.seed_key, "broker copies"))
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
        # the groups that consume each group's %DLQ% topic
        self.dlq_subscribers = [
            [i for i, b in enumerate(behaviours) if f"%DLQ%{group.name}" in b.topics]
            for group in groups
        ]
        # A publication picks its topic by its share of the messages: a topic sent in bursts is
        # picked its mean burst size fewer times.
        self.topic_weights = [
            topic.weight * 2 / (topic.burst[0] + topic.burst[1]) for topic in TOPICS
        ]
        self.total_weight = sum(self.topic_weights)
        self.topic_pids = {topic.name: 4100 + index for index, topic in enumerate(TOPICS)}
        known = {group.name for group in groups}
        unknown = sorted({name for name, _ in config.offline_groups} - known)
        if unknown:
            raise UsageError(
                f"--offline: {', '.join(unknown)} is not a simulated 4.x consumer group; "
                f"choose from {', '.join(sorted(known))}"
            )
        self.offline_at = dict(config.offline_groups)

    # keys ------------------------------------------------------------------------------------
    def _key(self, lifecycle: Lifecycle) -> None:
        """Key ``lifecycle`` by its group and message: the same message in the same group has
        the same key in every run with this seed."""
        key = keyed.derive(self.group_keys[lifecycle.index], lifecycle.message.number)
        lifecycle.key = key

    @staticmethod
    def _delivery_key(lifecycle: Lifecycle) -> int:
        """The key of the delivery of ``lifecycle`` just started, at its attempt index
        k = reconsumeTimes - the lifecycle's first reconsumeTimes. The first delivery at an
        index above those delivered so far is keyed by k alone; another delivery at an index
        already delivered (a dropped result delivered again, a stuck listener's send-back beside
        the cleaner's) by k and how many such deliveries came before."""
        attempt = lifecycle.reconsume_times - lifecycle.first_reconsume_times
        if attempt > lifecycle.top_attempt:
            lifecycle.top_attempt = attempt
            slot = attempt
        else:
            lifecycle.repeats += 1
            slot = (attempt & 0xFFFFFFFF) | lifecycle.repeats << 32
        return lifecycle.key + slot * keyed.SLOT

    @staticmethod
    def _attempt_key(lifecycle: Lifecycle, copy: Copy) -> int:
        """The key of the attempt index of ``copy`` (its delivery's, or the redelivery's)."""
        attempt = copy.reconsume_times - lifecycle.first_reconsume_times
        return lifecycle.key + attempt * keyed.SLOT

    # publications ----------------------------------------------------------------------------
    def begin(self, engine: Engine) -> None:
        if self.config.messages > 0:
            engine.schedule_publish(self._publish_time(engine, 0), 0)

    def _publish_time(self, engine: Engine, index: int) -> int:
        """Message n is published at a jittered time in its own slot of the whole run, up to
        the end, so some work is still in flight when the run stops."""
        slot = (engine.end_ms - engine.start_ms) / self.config.messages
        return engine.start_ms + int(index * slot + self.rng.random() * slot)

    def _choose_topic(self) -> Topic:
        pick = self.rng.random() * self.total_weight
        for topic, weight in zip(TOPICS, self.topic_weights, strict=True):
            pick -= weight
            if pick < 0:
                return topic
        return TOPICS[-1]

    def on_publish(self, engine: Engine, at: int, index: int) -> None:
        rng = self.rng
        topic = self._choose_topic()
        low, high = topic.burst
        count = min(rng.randint(low, high) if high > 1 else 1, self.config.messages - index)
        pulls: dict[int, list[Lifecycle]] = {}
        sent = at
        group_keys, mix64 = self.group_keys, keyed.mix64
        for position in range(count):
            if position:
                sent += 1 + rng.randrange(5)
            message = self._publish_one(engine, sent, topic)
            step = message.number * keyed.SLOT
            for group in self.subscribers[topic.name]:
                poisoned = rng.random() < engine.behaviours[group].poison
                lifecycle = engine.subscribe(group, message, poisoned=poisoned)
                lifecycle.key = mix64(group_keys[group] + step)  # as `_key` does
                if count == 1 or message.kind != "NORMAL":
                    engine.deliver_at(message.available_ms + 5 + rng.randrange(200), lifecycle)
                else:
                    pulls.setdefault(group, []).append(lifecycle)
        # A consumer pulls a burst at once (a pull holds up to 32 messages), so its consume
        # requests fill up to the batch size.
        for lifecycles in pulls.values():
            pulled = sent + 5 + rng.randrange(200)
            for lifecycle in lifecycles:
                engine.deliver_at(pulled, lifecycle)
        following = index + count
        if following < self.config.messages:  # one at a time: memory stays bounded
            engine.schedule_publish(self._publish_time(engine, following), following)

    def _publish_one(self, engine: Engine, at: int, topic: Topic) -> Published:
        rng = self.rng
        offset_step = 180 + rng.randrange(400)
        tags = rng.choice(topic.tags) if rng.random() < 0.9 else None
        number = engine.stats.messages + 1
        keys = f"{topic.name}-{number}" if rng.random() < 0.8 else None
        body_length = 200 + rng.randrange(2000)
        cost_ms = 1 + rng.randrange(8)
        kind, delay_level, commit_after_ms, copy_step = "NORMAL", 0, 0, 0
        if topic.delayed or topic.transactional:
            pick = rng.random()
            if pick < topic.delayed:
                kind, delay_level = "DELAYED", 2 + rng.randrange(5)  # 5 s to 2 minutes
            elif pick < topic.delayed + topic.transactional:
                kind, commit_after_ms = "TRANSACTIONAL", 20 + rng.randrange(2000)
            if kind != "NORMAL":
                copy_step = 180 + rng.randrange(400)
        return engine.publish(
            at,
            topic=topic.name,
            producer_group=topic.producer_group,
            pid=self.topic_pids[topic.name],
            version=self.topic_versions[topic.name],
            tags=tags,
            keys=keys,
            offset_step=offset_step,
            body_length=body_length,
            cost_ms=cost_ms,
            kind=kind,
            delay_level=delay_level,
            commit_after_ms=commit_after_ms,
            copy_step=copy_step,
        )

    # consumers -------------------------------------------------------------------------------
    def _fraction(self, engine: Engine, at: int) -> float:
        return (at - engine.start_ms) / (engine.end_ms - engine.start_ms)

    def _late(self, engine: Engine, at: int) -> bool:
        """Too late in the run for a redelivery the trace could miss (`LATE_FRACTION`)."""
        return self._fraction(engine, at) >= LATE_FRACTION

    @staticmethod
    def _limit(group: Group) -> int:
        return 16 if group.max_reconsume_times == -1 else group.max_reconsume_times

    def _broker_retries(self, engine: Engine, request: Request, more: int = 0) -> bool:
        """Whether a send-back of every message of the request (by a concurrent clustering group
        whose listener asks for no DLQ) is a retry, ``more`` counts ahead."""
        group = engine.groups[request.group]
        limit = self._limit(group)
        return (
            group.consume_mode == "CONCURRENTLY"
            and group.message_model == "CLUSTERING"
            and group.retry_queue_nums > 0
            and group.delay_level_when_next_consume >= 0
            and all(copy.stored_times + more < limit for copy in request.copies)
        )

    def offline(self, engine: Engine, at: int, lifecycle: Lifecycle) -> bool:
        offline_at = self.offline_at.get(engine.groups[lifecycle.index].name)
        if offline_at is not None and at >= offline_at:
            return True
        offline_from = engine.behaviours[lifecycle.index].offline_from
        return offline_from is not None and self._fraction(engine, at) >= offline_from

    def outcome(self, engine: Engine, at: int, request: Request) -> str:
        """The request's outcome. Each message's delivery is keyed (`_delivery_key`); the
        request's own choices (a hang, a rollback, a slow listener, and later its listener
        time, level, ackIndex and dropped result) take its first message's key."""
        uniform = keyed.uniform
        lifecycles = request.lifecycles
        if len(lifecycles) == 1:
            keys = [self._delivery_key(lifecycles[0])]
        else:
            keys = [self._delivery_key(lifecycle) for lifecycle in lifecycles]
        first = request.key = keys[0]
        behaviour = engine.behaviours[request.group]
        outage = behaviour.outage
        if outage and outage[0] <= self._fraction(engine, at) < outage[1]:
            if behaviour.outage_hang and uniform(first + _P_HANG) < behaviour.outage_hang:
                return "SLOW_SUCCESS"  # stuck on the dead downstream until it comes back
            return "FAILED"  # RECONSUME_LATER for everything: failure as flow control
        for lifecycle in lifecycles:
            if lifecycle.poisoned:
                return "EXCEPTION"
        # Each message fails transiently on its own draw, with the behaviour's chance halved per
        # retry; a request fails if one of its messages does. In a batch of n, each message's
        # chance is 1 - (1 - c) ** (1 / n), so that a batch of messages at one attempt index
        # fails as often as one message alone (c), as when the request drew once.
        transient = behaviour.transient
        size = len(lifecycles)
        for lifecycle, key in zip(lifecycles, keys, strict=True):
            retries = lifecycle.reconsume_times - lifecycle.first_reconsume_times
            chance = transient * 0.5**retries
            if size > 1:
                chance = 1 - (1 - chance) ** (1 / size)
            if uniform(key + _P_TRANSIENT) < chance:
                pick = uniform(key + _P_KIND)
                for kind, share in FAILURE_KINDS:
                    pick -= share
                    if pick < 0:
                        return kind
                return FAILURE_KINDS[-1][0]
        orderly = engine.groups[request.group].consume_mode == "ORDERLY"
        if orderly and behaviour.rollback and uniform(first + _P_ROLLBACK) < behaviour.rollback:
            return "ROLLBACK"  # an orderly listener's deprecated ROLLBACK, acked
        if uniform(first + _P_SLOW) < behaviour.slow:
            # A stuck listener may give up with RECONSUME_LATER, only where the cleaner's
            # send-back and its own are both retries (never two dead letters of one message).
            if (
                behaviour.slow_failure
                and self._broker_retries(engine, request)
                and uniform(first + _P_SLOW_FAILED) < behaviour.slow_failure
            ):
                return "SLOW_FAILED"
            return "SLOW_SUCCESS"
        return "SUCCESS"

    def consume_ms(self, engine: Engine, request: Request, behaviour: Behaviour) -> int:
        size = len(request.lifecycles)
        cost = behaviour.cost_ms
        return size * (cost + keyed.below(request.key + _P_COST, cost + 1))

    def stuck_ms(self, engine: Engine, request: Request, timeout_ms: int) -> int:
        # up to 20 minutes more
        return timeout_ms + keyed.below(request.key + _P_STUCK, timeout_ms * 4 // 3)

    def consumer_started_ms(self, engine: Engine, index: int) -> int | None:
        timeout = max(engine.groups[index].consume_timeout_ms, 1)
        return engine.start_ms - keyed.below(self.group_keys[index] + _P_STARTED, timeout)

    def redelivery_lag(
        self, engine: Engine, decision: Decision, lifecycle: Lifecycle, copy: Copy
    ) -> int:
        key = self._attempt_key(lifecycle, copy) + _P_CAUSES[copy.cause]
        if decision.decision == "RETRY":  # schedule polling, then the consumer's pull
            return keyed.below(key + _P_LAG, SCHEDULE_POLL_MS) + 5 + keyed.below(key + _P_PULL, 200)
        return 1 + keyed.below(key + _P_LAG, 5)

    def listener_delay_level(self, engine: Engine, request: Request) -> int | None:
        if request.cleaned:
            return None  # a stuck listener that gave up: the cleaner sent it back already
        behaviour = engine.behaviours[request.group]
        share = behaviour.listener_dlq
        # a re-sent dead letter is not sent back: one DLQ entry per lifecycle
        resent = any(lifecycle.resent for lifecycle in request.lifecycles)
        if share and not resent and keyed.uniform(request.key + _P_LISTENER_DLQ) < share:
            return -1
        share = behaviour.listener_level
        if (
            share
            and not self._late(engine, request.ended_ms)
            and keyed.uniform(request.key + _P_LISTENER_LEVEL) < share
        ):
            return self._own_level(engine, request)
        return None

    def _own_level(self, engine: Engine, request: Request) -> int | None:
        """A level of the listener's own whose delay differs by more than 3 s from the level
        the rules expect (3 + r, on the stored or the traced count) and from a local
        re-consume's 5 s, so that the trace tells them apart."""
        table = engine.tables[engine.groups[request.group].name]
        counts = {c.stored_times for c in request.copies} | {
            c.reconsume_times for c in request.copies
        }
        avoid = {table[min(3 + count, len(table)) - 1] for count in counts}
        avoid.add(LOCAL_RECONSUME_MS)
        levels = [
            level
            for level in range(4, min(len(table), 9) + 1)
            if all(abs(table[level - 1] - delay) > 3000 for delay in avoid)
        ]
        if not levels:
            return None
        return levels[keyed.below(request.key + _P_OWN_LEVEL, len(levels))]

    def ack_index(self, engine: Engine, request: Request) -> int | None:
        share = engine.behaviours[request.group].partial_ack
        # The messages after the ackIndex are sent back: never as far as the DLQ, whose copy the
        # trace could not tell from a consumption.
        if not share or self._late(engine, request.ended_ms):
            return None
        if not self._broker_retries(engine, request, more=1):
            return None
        if keyed.uniform(request.key + _P_ACK) >= share:
            return None
        return keyed.below(request.key + _P_ACK_INDEX, len(request.lifecycles)) - 1

    def send_back_failure(
        self, engine: Engine, at: int, lifecycle: Lifecycle, copy: Copy
    ) -> tuple[str, int] | None:
        behaviour = engine.behaviours[lifecycle.index]
        window = behaviour.send_back_outage
        if (window is None and not behaviour.send_back_fails) or self._late(engine, at):
            return None
        fraction = self._fraction(engine, at)
        failed = window is not None and window[0] <= fraction < window[1]
        key = self._attempt_key(lifecycle, copy)
        if not failed and behaviour.send_back_fails:
            failed = keyed.uniform(key + _P_SEND_BACK) < behaviour.send_back_fails
        if not failed:
            return None
        # the broker refuses the connection, or resets it
        rpc_ms = 5 + keyed.below(key + _P_RPC_MS, 300)
        fails = behaviour.fallback_fails
        if fails and keyed.uniform(key + _P_FALLBACK_FAILS) < fails:
            return "LOCAL", rpc_ms + 5 + keyed.below(key + _P_FALLBACK_MS, 300)
        return "FALLBACK", rpc_ms

    def redeliver_after_drop(self, engine: Engine, request: Request, success: bool) -> int | None:
        share = engine.behaviours[request.group].duplicate
        if not share or self._late(engine, request.ended_ms):
            return None
        # A dropped failure must look like one the rules retry, not one they dead-letter.
        seed = engine.seed_groups[request.group]
        table = engine.tables[seed.name]
        version = engine.broker_versions[seed.name]
        if not success and any(
            decide(seed, copy.reconsume_times, request.ended_ms, table, version).decision != "RETRY"
            for copy in request.copies
        ):
            return None
        if keyed.uniform(request.key + _P_DROP) >= share:
            return None
        return 1000 + keyed.below(request.key + _P_DROP_AFTER, 59_000)

    # the broker's own copies and dead letters ------------------------------------------------
    def offset_step(self, engine: Engine) -> int:
        return 180 + self.broker_rng.randrange(400)

    def dlq_copy_choices(self, engine: Engine) -> tuple[int, bool]:
        rng = self.broker_rng
        offset_step = 180 + rng.randrange(400)
        return offset_step, rng.random() < 0.5

    def on_dead_letter(self, engine: Engine, lifecycle: Lifecycle) -> None:
        below = keyed.below
        key = lifecycle.key
        entered = lifecycle.dlq_entered_ms
        assert entered is not None
        for index in self.dlq_subscribers[lifecycle.index]:
            # the recovery consumer pulls the stored copy 1-10 minutes later
            recovery = engine.subscribe_dead_letter(index, lifecycle)
            self._key(recovery)
            after = MINUTE_MS + below(recovery.key + _P_RECOVERY, 9 * MINUTE_MS)
            engine.deliver_at(entered + after, recovery)
        share = engine.behaviours[lifecycle.index].resend
        only_subscriber = self.subscribers.get(lifecycle.message.topic) == [lifecycle.index]
        if (
            share
            and only_subscriber
            and not lifecycle.resent
            and keyed.uniform(key + _P_RESEND) < share
        ):
            lifecycle.poisoned = False  # the bug was fixed before the re-send
            engine.resend(
                entered + 20 * MINUTE_MS + below(key + _P_RESEND_AT, 20 * MINUTE_MS),
                lifecycle,
                offset_step=180 + below(key + _P_RESEND_STEP, 400),
                deliver_after=5 + below(key + _P_RESEND_AFTER, 200),
            )
            # the re-sent message starts again at attempt index 0, with draws of its own
            lifecycle.key = keyed.mix64(key + _P_RESENT_EPOCH)
            lifecycle.top_attempt, lifecycle.repeats = -1, 0

    # the trace's landing ---------------------------------------------------------------------
    def _landing(self, client: str) -> random.Random:
        """``client``'s landing stream: its trace messages, in their order, are lost, stored,
        late, duplicated or cut short by draws that no other client's traffic moves."""
        rng = self.landing_rngs.get(client)
        if rng is None:
            rng = random.Random(keyed.key_of(self.seed_key, "landing", client))
            self.landing_rngs[client] = rng
        return rng

    def trace_lost(self, engine: Engine, client: str) -> bool:
        share = self.config.lost_share
        if not share:
            return False
        rng = self.landing_rngs.get(client) or self._landing(client)
        return rng.random() < share

    def store_delay(self, engine: Engine, client: str) -> int:
        rng = self.landing_rngs.get(client) or self._landing(client)
        return 2 + rng.randrange(15)

    def land(
        self, engine: Engine, client: str, store_ms: int, trace_id: str, keys: str, body: str
    ) -> None:
        config = self.config
        rng = self.landing_rngs.get(client) or self._landing(client)
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


def read_seed_groups(path: Path) -> tuple[list[Group], list[list[str]]]:
    """A consumer_groups.csv split by client line: the remoting groups the 4.x engine simulates,
    and the rows of 5.x gRPC groups (client_line grpc-5 or cloud-5) as written, in the order of
    `GROUP_COLUMNS` (a column the file lacks left empty). The 4.x engine never simulates a gRPC
    group: those are the `grpc5` module's, which simulates the ones it knows."""
    groups: list[Group] = []
    grpc_rows: list[list[str]] = []
    with path.open(newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            if (row.get("client_line") or "") in GRPC_CLIENT_LINES:
                grpc_rows.append([row.get(column) or "" for column in GROUP_COLUMNS])
            else:
                groups.append(Group.from_seed_row(row))
    return groups, grpc_rows


def read_delay_levels(path: Path) -> dict[str, str]:
    with path.open(newline="", encoding="utf-8") as handle:
        return {row["broker_cluster"]: row["message_delay_level"] for row in csv.DictReader(handle)}


def read_broker_versions(path: Path) -> dict[str, str]:
    """The clusters whose row names a broker_version (an optional column)."""
    with path.open(newline="", encoding="utf-8") as handle:
        return {
            row["broker_cluster"]: row["broker_version"]
            for row in csv.DictReader(handle)
            if row.get("broker_version")
        }


def write_seed_files(
    seeds: Path,
    groups: list[Group],
    delay_levels: dict[str, str],
    broker_versions: dict[str, str] | None = None,
    grpc_rows: Sequence[Sequence[object]] = (),
) -> None:
    """The seeds the run used, to drop into a dbt project's seeds/ folder: the groups' rows,
    then ``grpc_rows`` (5.x gRPC groups' rows, in the order of `GROUP_COLUMNS`) as they are."""
    seeds.mkdir(parents=True, exist_ok=True)
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(GROUP_COLUMNS)
    writer.writerows(group.seed_row() for group in groups if group.in_seed)
    writer.writerows(grpc_rows)
    (seeds / "consumer_groups.csv").write_text(buffer.getvalue())
    versions = broker_versions or {}
    lines = ["broker_cluster,message_delay_level,broker_version"]
    lines += [
        f"{cluster},{levels},{versions.get(cluster, '')}"
        for cluster, levels in delay_levels.items()
    ]
    (seeds / "broker_delay_levels.csv").write_text("\n".join(lines) + "\n")


def generate(
    config: GeneratorConfig,
    *,
    seeds_dir: Path | None = None,
    unseeded_groups: tuple[str, ...] = ("notification-push",),
    progress: bool = False,
    jobs: int | None = None,
) -> Stats:
    """Write the landing zone, the seeds and the ground truth under ``config.out``.

    ``jobs``: how many cores to use (None: `default_jobs`). The simulation is one sequential
    stream; with 2 or more, the landing files are compressed and written beside it. The bytes
    are the same whatever ``jobs`` is.

    ``seeds_dir`` is a folder with consumer_groups.csv and broker_delay_levels.csv to simulate;
    without it, the sample deployment is used. Groups in ``unseeded_groups`` are simulated but
    left out of the written seed, so that the build must assume RocketMQ's defaults for them.

    A seed's 5.x gRPC rows (client_line grpc-5 or cloud-5) are not the 4.x engine's: with
    ``config.grpc5_messages`` the `grpc5` module simulates the groups it knows, as it defines
    them (their true behaviour, whatever their rows say), and its rows replace theirs in the
    written seed; a gRPC group it does not know gets no traffic. With
    ``config.grpc5_settings_from_seeds`` (which needs ``seeds_dir``), a known group with a row
    takes its retry settings from it (`grpc5.groups_from_seed_rows`), and the written row keeps
    those cells. The written seed lists each group once: the remoting groups, then the gRPC
    rows. A remoting row named like one of the 5.x groups is a `ConfigError` when they are
    simulated.
    """
    if config.grpc5_settings_from_seeds and seeds_dir is None:
        raise UsageError("the 5.x groups' settings from the seeds need a seeds folder (--seeds)")
    grpc_rows: list[list[str]] = []
    if seeds_dir is not None:
        if config.grpc5_settings_from_seeds:
            check_consumer_groups(seeds_dir / "consumer_groups.csv")  # the rows it will run
        groups, grpc_rows = read_seed_groups(seeds_dir / "consumer_groups.csv")
        if config.grpc5_messages > 0:
            names = {group.name for group in grpc5.GRPC5_GROUPS}
            for group in groups:
                if group.name in names:
                    raise ConfigError(
                        f"{seeds_dir / 'consumer_groups.csv'}: {group.name} has client_line "
                        f"{group.client_line}, but the simulated 5.x gRPC group of that name is "
                        "grpc-5 or cloud-5; give its row the 5.x line, rename it, or generate "
                        "with --grpc5-messages 0"
                    )
        delay_levels = read_delay_levels(seeds_dir / "broker_delay_levels.csv")
        broker_versions = read_broker_versions(seeds_dir / "broker_delay_levels.csv")
    else:
        groups = list(GROUPS.values())
        delay_levels = dict(DELAY_LEVELS)
        broker_versions = dict(BROKER_VERSIONS)
    known = {group.name for group in groups} | {row[0] for row in grpc_rows}
    groups += [Group(name, in_seed=False) for name in unseeded_groups if name not in known]
    groups = [
        Group(**{**group.__dict__, "in_seed": group.in_seed and group.name not in unseeded_groups})
        for group in groups
    ]
    config.out.mkdir(parents=True, exist_ok=True)
    write_seed_files(config.out / "seeds", groups, delay_levels, broker_versions, grpc_rows)
    versions = config.client_versions
    run_ms = int(config.hours * HOUR_MS)
    writer = Writer(background=(default_jobs() if jobs is None else jobs) > 1)
    with _rare_cycle_collection():
        try:
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
                end_ms=config.start_ms + run_ms,
                compression=config.compression,
                dlq_export=config.dlq_export,
                dlq_export_end_ms=config.start_ms + int(config.dlq_export_end_fraction * run_ms),
                dlq_unexported_groups=config.dlq_unexported_groups,
                broker_versions=broker_versions,
                writer=writer,
            )
            stats = engine.run(progress=progress)
            written: dict[str, object] = {"config": _config_json(config), "stats": stats.__dict__}
            if config.grpc5_messages > 0:
                # after the 4.x run: nothing lands after its trace watermark
                result = grpc5.generate_grpc5(
                    config.out,
                    messages=config.grpc5_messages,
                    seed=config.seed,
                    start_ms=config.start_ms,
                    end_ms=config.start_ms + run_ms,
                    watermark_ms=stats.watermark_ms or config.start_ms + run_ms,
                    compression=config.compression,
                    redelivered_groups=engine.redelivered_groups,
                    writer=writer,
                    settings_from_seeds=config.grpc5_settings_from_seeds,
                )
                stats.grpc5 = result.stats
                written["true_schedules"] = result.true_schedules
            else:  # a run without 5.x traffic writes what it wrote before they existed
                written["stats"] = {k: v for k, v in stats.__dict__.items() if k != "grpc5"}
        finally:
            writer.finish()  # every landing file written and closed
    (config.out / "generation.json").write_text(json.dumps(written, indent=2) + "\n")
    return stats


@contextlib.contextmanager
def _rare_cycle_collection() -> Iterator[None]:
    """Python's cyclic garbage collector passes every 100,000 allocations instead of 700 while
    the generator runs, then as before. The simulation allocates millions of small objects and
    leaves next to no cycles to collect, and the frequent passes cost about 5% of its time
    (docs/performance.md, "The generator's floor"); the bytes written are the same."""
    before = gc.get_threshold()
    gc.set_threshold(100_000, 50, 1000)
    try:
        yield
    finally:
        gc.set_threshold(*before)


# the jobs of a `generate` call that names none; None: `default_jobs`
_jobs_in_context: int | None = None


def default_jobs() -> int:
    """The ``jobs`` of a `generate` call that names none: as set by `parallel_jobs`, else 1. A
    second job only compresses and writes files: it helps where a core is idle, and costs where
    none is (measured on a busy 2-core machine), so it is asked for, not assumed."""
    return 1 if _jobs_in_context is None else _jobs_in_context


@contextlib.contextmanager
def parallel_jobs(jobs: int) -> Iterator[None]:
    """`generate` calls within use ``jobs`` cores unless they say otherwise: how
    `retrylake generate --jobs` reaches the generator through the command that runs it."""
    global _jobs_in_context
    if jobs < 1:
        raise ValueError(f"jobs must be 1 or more, not {jobs}")
    before, _jobs_in_context = _jobs_in_context, jobs
    try:
        yield
    finally:
        _jobs_in_context = before


def _config_json(config: GeneratorConfig) -> dict[str, object]:
    values = dict(config.__dict__)
    values["out"] = "."
    values["client_versions"] = list(config.client_versions)
    values["dlq_unexported_groups"] = list(config.dlq_unexported_groups)
    if not config.grpc5_messages:
        del values["grpc5_messages"]
    if not config.grpc5_settings_from_seeds:
        del values["grpc5_settings_from_seeds"]
    if config.offline_groups:
        values["offline_groups"] = [list(pair) for pair in config.offline_groups]
    else:
        del values["offline_groups"]
    return values


def read_ground_truth(out: Path) -> Iterator[dict]:
    with (out / "ground_truth.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            yield json.loads(line)
