"""A small, exact simulation of RocketMQ consumers, brokers and the trace dispatcher.

It plays deliveries of messages to consumer groups under the broker's retry rules (spec §11),
emits the trace records a remoting client would, and records the ground truth of every
lifecycle. The rules here are written independently of the dbt models so that each checks the
other.
"""

from __future__ import annotations

import gzip
import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from retrylake.sim import trace_format as tf
from retrylake.sim.rules import CONSUME_TIMEOUT_MS, Group, decide
from spark_udfs import DEFAULT_DELAY_LEVELS, parse_delay_levels

SUCCESS_OUTCOMES = {"SUCCESS": "SUCCESS", "SLOW_SUCCESS": "TIME_OUT"}
FAILURE_OUTCOMES = {"FAILED": "FAILED", "EXCEPTION": "EXCEPTION", "RETURNNULL": "RETURNNULL"}


@dataclass(frozen=True)
class Message:
    msg_id: str
    origin_msg_id: str | None
    topic: str
    tags: str | None
    keys: str | None
    traced: bool = True  # whether the producer wrote a Pub trace


@dataclass
class Delivery:
    request_id: str
    reconsume_times: int
    started_ms: int
    ended_ms: int | None
    return_type: str | None
    success: bool | None
    decision: str | None = None
    delay_level: int | None = None
    delay_ms: int | None = None
    expected_redelivery_ms: int | None = None
    entered_dlq_ms: int | None = None


@dataclass
class Lifecycle:
    group: str
    message: Message
    deliveries: list[Delivery] = field(default_factory=list)
    state: str = ""  # CONSUMED, DLQ, DROPPED, IN_FLIGHT or PENDING_RETRY until judged

    def final_state(self, watermark_ms: int, grace_ms: int) -> str:
        if self.state != "PENDING_RETRY":
            return self.state
        due = self.deliveries[-1].expected_redelivery_ms
        assert due is not None
        return "WAITING_RETRY" if due >= watermark_ms - grace_ms else "RETRY_OVERDUE"


class Simulator:
    """Plays deliveries under the broker's rules and collects trace records and ground truth."""

    def __init__(
        self,
        *,
        delay_levels: dict[str, str] | None = None,
        region: str = "DefaultRegion",
        version: str = "4.9",
        broker_ip: str = "10.0.0.1",
        seed: int = 0,
    ) -> None:
        self.delay_levels = {"*": DEFAULT_DELAY_LEVELS, **(delay_levels or {})}
        self.region = region
        self.version = tf.CLIENT_VERSIONS[version]
        self.broker_ip = broker_ip
        self.store_host = f"{broker_ip}:10911"
        self.records: list[tuple[int, int, str]] = []  # (timestamp, sequence, record)
        self.lifecycles: list[Lifecycle] = []
        self._counter = 0
        self._commit_log_offset = 1_000_000 + seed
        self._seed = seed

    # ids -----------------------------------------------------------------------------------
    def _next_counter(self) -> int:
        self._counter += 1
        return self._counter

    def new_msg_id(self, born_ms: int) -> str:
        month_start = born_ms - born_ms % (86_400_000 * 28)  # any fixed epoch works for ids
        return tf.uniq_msg_id(
            "10.0.0.9", 4242 + self._seed, 0x18B4AAC2, born_ms, month_start, self._next_counter()
        )

    def new_request_id(self, at_ms: int) -> str:
        return self.new_msg_id(at_ms)

    def _emit(self, timestamp: int, record: str) -> None:
        self.records.append((timestamp, len(self.records), record))

    def delay_table(self, cluster: str) -> list[int]:
        levels = self.delay_levels.get(cluster, self.delay_levels["*"])
        return [delay_ms for _, _, delay_ms in parse_delay_levels(levels)]

    # producer ------------------------------------------------------------------------------
    def publish(
        self,
        *,
        topic: str,
        at_ms: int,
        tags: str | None = None,
        keys: str | None = None,
        producer_group: str = "PID_demo",
        traced: bool = True,
        version: str | None = None,
    ) -> Message:
        msg_id = self.new_msg_id(at_ms)
        self._commit_log_offset += 517
        offset_id = tf.offset_msg_id(self.broker_ip, 10911, self._commit_log_offset)
        client = tf.CLIENT_VERSIONS[version] if version else self.version
        if traced:
            self._emit(
                at_ms,
                tf.pub_record(
                    client,
                    timestamp=at_ms,
                    region=self.region,
                    producer_group=producer_group,
                    topic=topic,
                    msg_id=msg_id,
                    tags=tags,
                    keys=keys,
                    store_host=self.store_host,
                    body_length=128,
                    cost_ms=3,
                    offset_id=offset_id,
                ),
            )
        origin = offset_id if traced and client.pub_fields >= 14 else None
        return Message(
            msg_id=msg_id, origin_msg_id=origin, topic=topic, tags=tags, keys=keys, traced=traced
        )

    # consumer ------------------------------------------------------------------------------
    def consume(
        self,
        group: Group,
        message: Message,
        outcomes: list[str],
        *,
        first_at_ms: int,
        cost_ms: int = 25,
        pull_lag_ms: int = 40,
        version: str | None = None,
    ) -> Lifecycle:
        """Deliver ``message`` to ``group`` once per outcome, applying the retry rules.

        Outcomes: SUCCESS, SLOW_SUCCESS (TIME_OUT label, still acked), FAILED
        (RECONSUME_LATER), EXCEPTION, RETURNNULL, and IN_FLIGHT (started, no result; last only).
        A lifecycle whose last outcome fails without a terminal decision is left waiting.
        """
        client = tf.CLIENT_VERSIONS[version] if version else self.version
        lifecycle = Lifecycle(group=group.name, message=message)
        self.lifecycles.append(lifecycle)
        started = first_at_ms
        # Every delivery after a failure carries one more reconsumeTimes.
        for reconsume_times, outcome in enumerate(outcomes):
            request_id = self.new_request_id(started)
            self._emit(
                started,
                tf.sub_before_record(
                    client,
                    timestamp=started,
                    region=self.region,
                    group=group.name,
                    request_id=request_id,
                    msg_id=message.msg_id,
                    retry_times=reconsume_times,
                    keys=message.keys,
                ),
            )
            if outcome == "IN_FLIGHT":
                assert reconsume_times == len(outcomes) - 1, "IN_FLIGHT must be the last outcome"
                lifecycle.deliveries.append(
                    Delivery(request_id, reconsume_times, started, None, None, None)
                )
                lifecycle.state = "IN_FLIGHT"
                return lifecycle
            success = outcome in SUCCESS_OUTCOMES
            return_type = SUCCESS_OUTCOMES.get(outcome) or FAILURE_OUTCOMES[outcome]
            took = CONSUME_TIMEOUT_MS + cost_ms if outcome == "SLOW_SUCCESS" else cost_ms
            ended = started + took
            self._emit(
                ended,
                tf.sub_after_record(
                    client,
                    request_id=request_id,
                    msg_id=message.msg_id,
                    cost_ms=took,
                    success=success,
                    keys=message.keys,
                    return_type=return_type,
                    timestamp=ended,
                    group=group.name,
                ),
            )
            delivery = Delivery(request_id, reconsume_times, started, ended, return_type, success)
            lifecycle.deliveries.append(delivery)
            if success:
                lifecycle.state = "CONSUMED"
                return lifecycle
            self._decide(group, delivery)
            if delivery.decision in ("DLQ", "DROP"):
                lifecycle.state = "DLQ" if delivery.decision == "DLQ" else "DROPPED"
                return lifecycle
            assert delivery.expected_redelivery_ms is not None
            started = delivery.expected_redelivery_ms + pull_lag_ms
        lifecycle.state = "PENDING_RETRY"
        return lifecycle

    def _decide(self, group: Group, delivery: Delivery) -> None:
        assert delivery.ended_ms is not None
        table = self.delay_table(group.broker_cluster)
        decision = decide(group, delivery.reconsume_times, delivery.ended_ms, table)
        delivery.decision = decision.decision
        delivery.delay_level = decision.delay_level
        delivery.delay_ms = decision.delay_ms
        delivery.expected_redelivery_ms = decision.expected_redelivery_ms
        delivery.entered_dlq_ms = decision.entered_dlq_ms

    def extra_record(self, timestamp: int, record: str) -> None:
        """Add a record the simulation does not model (EndTransaction, Recall, a bad record)."""
        self._emit(timestamp, record)

    # trace dispatcher ----------------------------------------------------------------------
    def trace_messages(
        self, *, batch_window_ms: int = 500, max_records: int = 20, store_delay_ms: int = 7
    ) -> list[tuple[str, int, str]]:
        """Group records into trace messages as AsyncTraceDispatcher does: a message is sent when
        its first record is ``batch_window_ms`` old or it holds ``max_records`` records."""
        messages: list[tuple[str, int, str]] = []
        batch: list[str] = []
        batch_start = 0
        last = 0

        def flush() -> None:
            body = "".join(batch)
            digest = hashlib.sha1(f"{self._seed}:{len(messages)}:{body}".encode()).hexdigest()
            messages.append((digest[:32].upper(), last + store_delay_ms, body))
            batch.clear()

        for timestamp, _, record in sorted(self.records):
            if batch and (timestamp - batch_start >= batch_window_ms or len(batch) >= max_records):
                flush()
            if not batch:
                batch_start = timestamp
            batch.append(record)
            last = timestamp
        if batch:
            flush()
        return messages

    def watermark_ms(self) -> int:
        return max(store_ts for _, store_ts, _ in self.trace_messages())


def hour_path(store_ms: int) -> str:
    """Landing files are split by the hour of store time: trace/YYYY/MM/DD/HH."""
    import datetime as dt

    moment = dt.datetime.fromtimestamp(store_ms / 1000, tz=dt.UTC)
    return moment.strftime("trace/%Y/%m/%d/%H")


def write_lines(path: Path, lines: list[str], *, gzipped: bool = False) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = "".join(line + "\n" for line in lines).encode("utf-8")
    if gzipped:
        # mtime=0 keeps gzip output byte-identical across runs.
        with path.open("wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as handle:
            handle.write(data)
    else:
        path.write_bytes(data)
