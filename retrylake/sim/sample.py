"""The sample landing set: a few dozen lifecycles, scripted on the simulation engine, that
exercise every retry rule, every final state and every transport fault the staging handles.

The integration tests build it and check every mart, row by row, against its ground truth.
Its consumer groups are the engine's demo deployment, the ones in seeds/consumer_groups.csv;
that seed also lists the 5.x gRPC groups of `grpc5` (the sample has no traffic for them).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path

from retrylake.sim import grpc5
from retrylake.sim import trace_format as tf
from retrylake.sim.engine import (
    BROKER_VERSIONS,
    DELAY_LEVELS,
    GROUPS,
    HOUR_MS,
    STORE_HOST,
    Behaviour,
    Copy,
    Engine,
    Lifecycle,
    Published,
    Request,
    write_seed_files,
)
from retrylake.sim.rules import Decision

START_MS = int(dt.datetime(2026, 3, 1, 22, 0, tzinfo=dt.UTC).timestamp() * 1000)
END_MS = START_MS + 14 * HOUR_MS  # the last events; the run crosses midnight
MINUTE = 60_000
COST_MS = 25  # every listener call takes this long (plus the timeout for a slow success)
PULL_LAG_MS = 40  # a redelivery reaches the consumer this long after it is due
STORE_DELAY_MS = 7
CLIENT_VERSIONS = {"inventory-sync": "4.9.1", "notification-push": "4.8"}  # others: 4.9
INSTANCES = {"cache-invalidator": 2}  # a broadcasting group's instances; others: 1

# Records no client writes, appended to the bodies of these trace messages: each must reach the
# quarantine.
BAD_RECORDS = {
    3: "Bogus\u0001x\u0002",
    4: "Pub\u00011772402400000\u0001DefaultRegion\u0001PID_demo\u0001orders\u0002",
    6: "SubBefore\u0001yesterday\u0001DefaultRegion\u0001g\u0001r\u0001m\u00010\u0001k\u0002",
}
DUPLICATED = 0  # this trace message lands again, in the next hour's file (at-least-once)
CUT_SHORT = 1  # ... and a copy of this one is cut in half: a malformed line
BASE64_EVERY = 5  # every fifth trace message carries bodyBase64


class ScriptedTraffic:
    """The sample's world: each lifecycle's deliveries follow its script, times are fixed, and
    the transport faults land on chosen trace messages."""

    def __init__(self) -> None:
        self.sent = 0
        self.bad_records = 0

    def begin(self, engine: Engine) -> None:
        pass  # the script publishes and subscribes before the run

    def on_publish(self, engine: Engine, at: int, index: int) -> None:
        raise AssertionError("the sample publishes before the run")

    def offline(self, engine: Engine, at: int, lifecycle: Lifecycle) -> bool:
        # the script ends: a retry that is never redelivered, waiting or overdue
        return lifecycle.deliveries >= len(lifecycle.script)

    def outcome(self, engine: Engine, at: int, request: Request) -> str:
        (lifecycle,) = request.lifecycles
        return lifecycle.script[lifecycle.deliveries - 1]

    def consume_ms(self, engine: Engine, request: Request, behaviour: Behaviour) -> int:
        return behaviour.cost_ms * len(request.lifecycles)

    def stuck_ms(self, engine: Engine, request: Request, timeout_ms: int) -> int:
        return timeout_ms  # a slow success takes the consume timeout longer

    def consumer_started_ms(self, engine: Engine, index: int) -> int | None:
        return None  # no expiry cleaner: a slow success is only labelled TIME_OUT

    def redelivery_lag(
        self, engine: Engine, decision: Decision, lifecycle: Lifecycle, copy: Copy
    ) -> int:
        return PULL_LAG_MS

    def listener_delay_level(self, engine: Engine, request: Request) -> int | None:
        return None  # fraud-check's seed asks for the DLQ; no listener overrides its group's

    def ack_index(self, engine: Engine, request: Request) -> int | None:
        return None  # one message per request

    def send_back_failure(
        self, engine: Engine, at: int, lifecycle: Lifecycle, copy: Copy
    ) -> tuple[str, int] | None:
        return None  # every send-back reaches the broker

    def redeliver_after_drop(self, engine: Engine, request: Request, success: bool) -> int | None:
        return None  # no rebalance

    def offset_step(self, engine: Engine) -> int:
        return 517

    def dlq_copy_choices(self, engine: Engine) -> tuple[int, bool]:
        return 517, True

    def on_dead_letter(self, engine: Engine, lifecycle: Lifecycle) -> None:
        pass  # no recovery consumer and no re-send in the sample

    def trace_lost(self, engine: Engine, client: str) -> bool:
        return False

    def store_delay(self, engine: Engine, client: str) -> int:
        return STORE_DELAY_MS

    def land(
        self, engine: Engine, client: str, store_ms: int, trace_id: str, keys: str, body: str
    ) -> None:
        index = self.sent
        self.sent += 1
        if index in BAD_RECORDS:
            body += BAD_RECORDS[index]
            self.bad_records += 1
        line = tf.landing_line(
            trace_msg_id=trace_id,
            store_timestamp=store_ms,
            store_host=STORE_HOST,
            body=body,
            keys=keys,
            as_base64=index % BASE64_EVERY == 0,
        )
        hour = store_ms // HOUR_MS
        engine.write_line(hour, line, store_ms)
        if index == DUPLICATED:
            engine.stats.duplicate_lines += 1
            engine.write_line(hour + 1, line, store_ms)
        if index == CUT_SHORT:
            engine.stats.malformed_lines += 1
            engine.write_line(hour, line[: len(line) // 2], None)


@dataclass
class SampleSet:
    landing: Path
    lifecycles: list[Lifecycle]
    watermark_ms: int
    trace_messages: int
    landing_lines: int
    malformed_lines: int
    bad_records: int
    duplicate_lines: int


def _fail(times: int, then: str | None = None) -> tuple[str, ...]:
    outcomes = (["FAILED", "EXCEPTION", "RETURNNULL"] * times)[:times]
    return (*outcomes, then) if then else tuple(outcomes)


class _Script:
    """The sample's publications and deliveries, written against the engine before it runs."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.index = {name: i for i, name in enumerate(GROUPS)}

    def publish(
        self,
        topic: str,
        at: int,
        tags: str | None = "TagA",
        keys: str | None = None,
        traced: bool = True,
        version: str = "4.9",
    ) -> Published:
        return self.engine.publish(
            at,
            topic=topic,
            producer_group="PID_demo",
            pid=4242,
            version=tf.CLIENT_VERSIONS[version],
            tags=tags,
            keys=keys,
            offset_step=517,
            body_length=128,
            cost_ms=3,
            traced=traced,
        )

    def consume(self, group: str, message: Published, script: tuple[str, ...], at: int) -> None:
        """Deliver ``message`` to ``group`` from ``at`` on, once per scripted outcome: SUCCESS,
        SLOW_SUCCESS (TIME_OUT, still acked), ROLLBACK (orderly: success false, acked), FAILED,
        EXCEPTION, RETURNNULL, or IN_FLIGHT (no result; last only). Redeliveries come when the
        rules say, plus the pull lag."""
        lifecycle = self.engine.subscribe(self.index[group], message, script=script)
        self.engine.deliver_at(at, lifecycle)


def _play(s: _Script) -> None:
    t = START_MS
    # order-service: concurrent clustering with the defaults, and a broadcast listener on the
    # same topic, with two instances: the first drops the message, the second consumes it.
    first_try = s.publish("orders", t, keys="order-1001")
    s.consume("order-service", first_try, ("SUCCESS",), t + 50)
    s.consume("cache-invalidator", first_try, ("FAILED", "SUCCESS"), t + 60)
    twice = s.publish("orders", t + 1000, keys="order-1002 customer-7")
    s.consume("order-service", twice, _fail(2, "SUCCESS"), t + 1050)
    poison = s.publish("orders", t + 2000, tags=None, keys="order-1003")
    s.consume("order-service", poison, _fail(17), t + 2050)
    slow = s.publish("orders", t + 3000, keys=None)
    s.consume("order-service", slow, ("SLOW_SUCCESS",), t + 3050)
    overdue = s.publish("orders", t + 4000, keys="order-1005")
    s.consume("order-service", overdue, ("RETURNNULL",), t + 4050)
    untraced = s.publish("orders", t + 5000, keys="order-1006", traced=False)
    s.consume("order-service", untraced, _fail(1, "SUCCESS"), t + 5050)
    old_client = s.publish("orders", t + 6000, keys="order-1007", version="old")
    s.consume("order-service", old_client, ("SUCCESS",), t + 6050)

    # inventory-sync: max 3, so the 4th failure goes to the DLQ. Its client (4.9.1) writes the
    # 7-field SubAfter, without timestamp or group; its producer (4.8) the 15-field Pub.
    stock = s.publish("stock", t + 7000, keys="sku-1", version="4.8")
    s.consume("inventory-sync", stock, _fail(4), t + 7050)
    stock_ok = s.publish("stock", t + 8000, keys="sku-2", version="4.8")
    s.consume("inventory-sync", stock_ok, _fail(3, "SUCCESS"), t + 8050)

    # payment-ledger: orderly, local retries after the suspend time, DLQ after max 3.
    pay = s.publish("payments", t + 9000, keys="pay-1")
    s.consume("payment-ledger", pay, _fail(2, "SUCCESS"), t + 9050)
    pay_dead = s.publish("payments", t + 10_000, keys="pay-2")
    s.consume("payment-ledger", pay_dead, _fail(4), t + 10_050)
    # ... and a listener that returns the deprecated ROLLBACK: acked with autoCommit on (§3.5)
    pay_rollback = s.publish("payments", t + 10_500, keys="pay-4")
    s.consume("payment-ledger", pay_rollback, ("ROLLBACK",), t + 10_550)

    # audit-archiver: retryQueueNums 0, the broker drops failures.
    audit = s.publish("audit", t + 11_000)
    s.consume("audit-archiver", audit, ("EXCEPTION",), t + 11_050)

    # bulk-importer: max 20, so retries after the 16th wait 2h each (the clamp to level 18).
    bulk = s.publish("imports", t + 12_000, keys="batch-9")
    s.consume("bulk-importer", bulk, _fail(21), t + 12_050)

    # search-indexer: its cluster's table is "5s 8s", so level 3 clamps to level 2 (8 s).
    index = s.publish("catalog", t + 13_000)
    s.consume("search-indexer", index, _fail(2, "SUCCESS"), t + 13_050)

    # fraud-check: the listener sets delayLevelWhenNextConsume = -1: straight to the DLQ.
    fraud = s.publish("payments", t + 14_000, keys="pay-3")
    s.consume("fraud-check", fraud, ("FAILED",), t + 14_050)

    # notification-push is not in the seed: RocketMQ defaults apply. Its 4.8 client writes the
    # 9-field SubBefore (with the client host).
    push = s.publish("notify", t + 15_000)
    s.consume("notification-push", push, _fail(1, "SUCCESS"), t + 15_050)

    # A steady stream that crosses midnight, so lifecycles fall in two date partitions.
    for n in range(24):
        at = t + 20 * MINUTE + n * 5 * MINUTE
        steady = s.publish("orders", at, keys=f"order-2{n:03d}")
        s.consume("order-service", steady, ("SUCCESS",) if n % 4 else _fail(1, "SUCCESS"), at + 30)

    # Transactions and a recall: parsed, not part of the retry ledger.
    engine = s.engine
    engine.record(
        t + 16_000,
        "producer:PID_tx",
        tf.end_transaction_record(
            timestamp=t + 16_000,
            region="DefaultRegion",
            producer_group="PID_tx",
            topic="orders",
            msg_id=(tx := engine.new_id("10.0.0.9", 4243, t + 16_000)),
            tags=None,
            keys=None,
            store_host=STORE_HOST,
            transaction_id="tx-1",
            state="COMMIT_MESSAGE",
            from_check=False,
        ),
        tx,
    )
    engine.record(
        t + 17_000,
        "producer:PID_delay",
        tf.recall_record(
            timestamp=t + 17_000,
            region="DefaultRegion",
            group="PID_delay",
            topic="orders",
            msg_id=(recalled := engine.new_id("10.0.0.9", 4244, t + 17_000)),
            success=True,
        ),
        recalled,
    )

    # The last events: a failure whose retry is still due, and a delivery still running.
    waiting = s.publish("orders", END_MS - 5 * MINUTE, keys="order-9001")
    s.consume("order-service", waiting, ("FAILED",), END_MS)
    running = s.publish("orders", END_MS - 4 * MINUTE, keys="order-9002")
    s.consume("order-service", running, ("IN_FLIGHT",), END_MS + 100)


def write_sample(landing: Path) -> SampleSet:
    """Write the sample's trace files (and its ground_truth.jsonl) under ``landing``."""
    traffic = ScriptedTraffic()
    groups = list(GROUPS.values())
    engine = Engine(
        out=landing,
        groups=groups,
        delay_levels=DELAY_LEVELS,
        broker_versions=BROKER_VERSIONS,
        behaviours=[
            Behaviour((), cost_ms=COST_MS, request_window_ms=0, instances=INSTANCES.get(g.name, 1))
            for g in groups
        ],
        client_versions=[tf.CLIENT_VERSIONS[CLIENT_VERSIONS.get(g.name, "4.9")] for g in groups],
        traffic=traffic,
        start_ms=START_MS,
        end_ms=END_MS + HOUR_MS,
        compression="mixed",
        keep_history=True,
    )
    _play(_Script(engine))
    stats = engine.run()
    assert engine.finished is not None
    assert traffic.bad_records == len(BAD_RECORDS), "too few trace messages for the bad records"
    return SampleSet(
        landing,
        engine.finished,
        watermark_ms=stats.watermark_ms,
        trace_messages=stats.trace_messages,
        landing_lines=stats.lines,
        malformed_lines=stats.malformed_lines,
        bad_records=traffic.bad_records,
        duplicate_lines=stats.duplicate_lines,
    )


def write_seeds(seeds: Path) -> None:
    """Write the project's consumer-group and delay-level seeds: the sample's groups, then the
    5.x gRPC groups' rows as `grpc5.seed_rows` writes them (remoting-only columns empty)."""
    write_seed_files(
        seeds,
        list(GROUPS.values()),
        DELAY_LEVELS,
        BROKER_VERSIONS,
        grpc_rows=grpc5.seed_rows(grpc5.GRPC5_GROUPS),
    )
