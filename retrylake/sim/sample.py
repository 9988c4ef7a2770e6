"""The sample landing set: a few dozen lifecycles that exercise every retry rule.

`retrylake demo` builds it, and the integration tests check the marts against its ground truth.
Its consumer groups are the ones in seeds/consumer_groups.csv (a unit test keeps them in step).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path

from retrylake.sim import trace_format as tf
from retrylake.sim.rules import Group
from retrylake.sim.simulator import Lifecycle, Message, Simulator, hour_path, write_lines
from spark_udfs import DEFAULT_DELAY_LEVELS

START_MS = int(dt.datetime(2026, 3, 1, 22, 0, tzinfo=dt.UTC).timestamp() * 1000)
MINUTE = 60_000

GROUPS = {
    group.name: group
    for group in (
        Group("order-service"),
        Group("inventory-sync", max_reconsume_times=3),
        Group("payment-ledger", consume_mode="ORDERLY", max_reconsume_times=3),
        Group("cache-invalidator", message_model="BROADCASTING"),
        Group("audit-archiver", retry_queue_nums=0),
        Group("bulk-importer", max_reconsume_times=20),
        Group("search-indexer", broker_cluster="fast-cluster"),
        Group("fraud-check", delay_level_when_next_consume=-1),
        Group("notification-push", in_seed=False),
    )
}
DELAY_LEVELS = {"fast-cluster": "5s 8s"}


# Records no client writes, appended to a few bodies: each must reach the quarantine.
BAD_RECORDS = {
    3: "Bogus\u0001x\u0002",
    4: "Pub\u00011772402400000\u0001DefaultRegion\u0001PID_demo\u0001orders\u0002",
    6: "SubBefore\u0001yesterday\u0001DefaultRegion\u0001g\u0001r\u0001m\u00010\u0001k\u0002",
}


@dataclass
class SampleSet:
    landing: Path
    simulator: Simulator
    lifecycles: list[Lifecycle]
    landing_lines: int
    malformed_lines: int
    bad_records: int
    duplicate_lines: int


def _fail(times: int, then: str | None = None) -> list[str]:
    outcomes = ["FAILED", "EXCEPTION", "RETURNNULL"] * times
    outcomes = outcomes[:times]
    return [*outcomes, then] if then else outcomes


def build_sample() -> tuple[Simulator, list[Lifecycle]]:
    sim = Simulator(delay_levels=DELAY_LEVELS)
    g = GROUPS
    t = START_MS

    def msg(
        topic: str,
        at: int,
        tags: str | None = "TagA",
        keys: str | None = None,
        traced: bool = True,
        version: str | None = None,
    ) -> Message:
        return sim.publish(
            topic=topic, at_ms=at, tags=tags, keys=keys, traced=traced, version=version
        )

    # order-service: concurrent clustering with the defaults, and a broadcast listener on the
    # same topic.
    first_try = msg("orders", t, keys="order-1001")
    sim.consume(g["order-service"], first_try, ["SUCCESS"], first_at_ms=t + 50)
    sim.consume(g["cache-invalidator"], first_try, ["FAILED"], first_at_ms=t + 60)
    twice = msg("orders", t + 1000, keys="order-1002 customer-7")
    sim.consume(g["order-service"], twice, _fail(2, "SUCCESS"), first_at_ms=t + 1050)
    poison = msg("orders", t + 2000, tags=None, keys="order-1003")
    sim.consume(g["order-service"], poison, _fail(17), first_at_ms=t + 2050)
    slow = msg("orders", t + 3000, keys=None)
    sim.consume(g["order-service"], slow, ["SLOW_SUCCESS"], first_at_ms=t + 3050)
    overdue = msg("orders", t + 4000, keys="order-1005")
    sim.consume(g["order-service"], overdue, ["RETURNNULL"], first_at_ms=t + 4050)
    untraced = msg("orders", t + 5000, keys="order-1006", traced=False)
    sim.consume(g["order-service"], untraced, _fail(1, "SUCCESS"), first_at_ms=t + 5050)
    old_client = msg("orders", t + 6000, keys="order-1007", version="old")
    sim.consume(g["order-service"], old_client, ["SUCCESS"], first_at_ms=t + 6050)

    # inventory-sync: max 3, so the 4th failure goes to the DLQ. Its client (4.9.1) writes the
    # 7-field SubAfter, without timestamp or group; its producer (4.8) the 15-field Pub.
    stock = msg("stock", t + 7000, keys="sku-1", version="4.8")
    sim.consume(g["inventory-sync"], stock, _fail(4), first_at_ms=t + 7050, version="4.9.1")
    stock_ok = msg("stock", t + 8000, keys="sku-2", version="4.8")
    sim.consume(
        g["inventory-sync"], stock_ok, _fail(3, "SUCCESS"), first_at_ms=t + 8050, version="4.9.1"
    )

    # payment-ledger: orderly, local retries after the suspend time, DLQ after max 3.
    pay = msg("payments", t + 9000, keys="pay-1")
    sim.consume(g["payment-ledger"], pay, _fail(2, "SUCCESS"), first_at_ms=t + 9050)
    pay_dead = msg("payments", t + 10_000, keys="pay-2")
    sim.consume(g["payment-ledger"], pay_dead, _fail(4), first_at_ms=t + 10_050)

    # audit-archiver: retryQueueNums 0, the broker drops failures.
    audit = msg("audit", t + 11_000)
    sim.consume(g["audit-archiver"], audit, ["EXCEPTION"], first_at_ms=t + 11_050)

    # bulk-importer: max 20, so retries after the 16th wait 2h each (the clamp to level 18).
    bulk = msg("imports", t + 12_000, keys="batch-9")
    sim.consume(g["bulk-importer"], bulk, _fail(21), first_at_ms=t + 12_050)

    # search-indexer: its cluster's table is "5s 8s", so level 3 clamps to level 2 (8 s).
    index = msg("catalog", t + 13_000)
    sim.consume(g["search-indexer"], index, _fail(2, "SUCCESS"), first_at_ms=t + 13_050)

    # fraud-check: the listener sets delayLevelWhenNextConsume = -1: straight to the DLQ.
    fraud = msg("payments", t + 14_000, keys="pay-3")
    sim.consume(g["fraud-check"], fraud, ["FAILED"], first_at_ms=t + 14_050)

    # notification-push is not in the seed: RocketMQ defaults apply. Its 4.8 client writes the
    # 9-field SubBefore (with the client host).
    push = msg("notify", t + 15_000)
    sim.consume(
        g["notification-push"], push, _fail(1, "SUCCESS"), first_at_ms=t + 15_050, version="4.8"
    )

    # A steady stream that crosses midnight, so lifecycles fall in two date partitions.
    for n in range(24):
        at = t + 20 * MINUTE + n * 5 * MINUTE
        steady = msg("orders", at, keys=f"order-2{n:03d}")
        outcomes = ["SUCCESS"] if n % 4 else _fail(1, "SUCCESS")
        sim.consume(g["order-service"], steady, outcomes, first_at_ms=at + 30)

    # Transactions and a recall: parsed, not part of the retry ledger.
    sim.extra_record(
        t + 16_000,
        tf.end_transaction_record(
            timestamp=t + 16_000,
            region="DefaultRegion",
            producer_group="PID_tx",
            topic="orders",
            msg_id=sim.new_msg_id(t + 16_000),
            tags=None,
            keys=None,
            store_host=sim.store_host,
            transaction_id="tx-1",
            state="COMMIT_MESSAGE",
            from_check=False,
        ),
    )
    sim.extra_record(
        t + 17_000,
        tf.recall_record(
            timestamp=t + 17_000,
            region="DefaultRegion",
            group="PID_delay",
            topic="orders",
            msg_id=sim.new_msg_id(t + 17_000),
            success=True,
        ),
    )

    # The last events: a failure whose retry is still due, and a delivery still running.
    end = START_MS + 14 * 60 * MINUTE
    waiting = msg("orders", end - 5 * MINUTE, keys="order-9001")
    sim.consume(g["order-service"], waiting, ["FAILED"], first_at_ms=end)
    running = msg("orders", end - 4 * MINUTE, keys="order-9002")
    sim.consume(g["order-service"], running, ["IN_FLIGHT"], first_at_ms=end + 100)
    return sim, sim.lifecycles


def write_sample(landing: Path) -> SampleSet:
    """Write the sample trace files under ``landing``, with the transport faults of real exports:
    a duplicated trace message, base64 and gzip variants, a malformed line, a bad record."""
    sim, lifecycles = build_sample()
    messages = sim.trace_messages()
    by_file: dict[str, list[str]] = {}
    bad_records = 0
    for index, (trace_msg_id, store_ms, body) in enumerate(messages):
        if index in BAD_RECORDS:
            body += BAD_RECORDS[index]
            bad_records += 1
        line = tf.landing_line(
            trace_msg_id=trace_msg_id,
            store_timestamp=store_ms,
            store_host=sim.store_host,
            body=body,
            as_base64=index % 5 == 0,
        )
        by_file.setdefault(hour_path(store_ms), []).append(line)
    # The trace topic is at-least-once: the first trace message lands again an hour later.
    first_hour = sorted(by_file)[0]
    later_hour = sorted(by_file)[1]
    by_file[later_hour].append(by_file[first_hour][0])
    by_file[later_hour].append('{"msgId": "broken", "storeTimestamp": ')  # a malformed line
    landing_lines = 0
    for number, (folder, lines) in enumerate(sorted(by_file.items())):
        gzipped = number % 3 == 1
        name = "part-0.jsonl.gz" if gzipped else "part-0.jsonl"
        write_lines(landing / folder / name, lines, gzipped=gzipped)
        landing_lines += len(lines)
    return SampleSet(
        landing,
        sim,
        lifecycles,
        landing_lines,
        malformed_lines=1,
        bad_records=bad_records,
        duplicate_lines=1,
    )


def write_seeds(seeds: Path) -> None:
    """Write the consumer-group and delay-level seeds matching the sample."""
    from retrylake.sim.engine import write_seed_files

    write_seed_files(seeds, list(GROUPS.values()), {"*": DEFAULT_DELAY_LEVELS, **DELAY_LEVELS})
