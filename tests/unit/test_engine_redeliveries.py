"""The generator's redelivery paths, checked on the landing it writes against the spec and
literal values, not the engine's own rules: the expiry cleaner's consume timeouts (§3.6), the
client's fallback and local re-consume (§3.3, §3.4, §1.3, §1.4), partial batch acks (§3.3),
listener levels (§1.2 step 9), duplicate deliveries, delayed and transactional publications
(§2.2, §2.4, §5.2), and the true cause of every redelivery in the ground truth."""

from __future__ import annotations

import csv
import json
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

import pytest

from retrylake.sim import trace_format as tf
from retrylake.sim.engine import (
    Behaviour,
    Copy,
    Engine,
    GeneratorConfig,
    Lifecycle,
    Stats,
    generate,
    read_ground_truth,
)
from retrylake.sim.rules import Group
from retrylake.sim.sample import ScriptedTraffic
from spark_udfs import DEFAULT_DELAY_LEVELS, parse_message_properties
from tests.unit.test_engine import _files, _lines, _records

SECOND = 1000
MINUTE = 60 * SECOND
TIMEOUT = 15 * MINUTE  # consumeTimeout's default (spec §3.1)
TIME_OUT = 1  # ConsumeReturnType ordinals (spec §4)
SUCCESS = 0
# messageDelayLevel (spec §2.1), and the demo's fast cluster ("5s 8s")
LEVELS = [1, 5, 10, 30, 60, 120, 180, 240, 300, 360, 420, 480, 540, 600, 1200, 1800, 3600, 7200]
DEFAULT_TABLE = [seconds * SECOND for seconds in LEVELS]
FAST_TABLE = [5 * SECOND, 8 * SECOND]
# a redelivery reaches the consumer after the schedule's polling, the pull and the consume
# request's gathering: well under a second
SLACK = SECOND
CAUSES = {
    "SCHEDULED",
    "LISTENER_LEVEL",
    "CONSUME_TIMEOUT",
    "CLIENT_FALLBACK",
    "LOCAL_RECONSUME",
    "PARTIAL_BATCH_ACK",
    "DUPLICATE_DELIVERY",
    "RESENT",
    "BROADCAST_COPY",
}


@dataclass
class Attempt:
    """One delivery, as the landing shows it."""

    start: int
    request: str
    r: int
    size: int = 0
    success: bool | None = None  # None: no SubAfter
    code: int | None = None
    end: int | None = None


@dataclass
class Landing:
    attempts: dict  # (group, msgId) -> [Attempt] in start order
    requests: dict  # request id -> [(group, msgId)]
    pubs: dict  # msgId -> Pub fields
    end_transactions: dict  # msgId -> EndTransaction fields
    copies: dict  # (group, msgId) -> dlq/ line


def _landing(root: Path) -> Landing:
    befores, afters = [], {}
    pubs, ends = {}, {}
    for fields in _records(root):
        if fields[0] == "Pub":
            pubs[fields[5]] = fields
        elif fields[0] == "EndTransaction":
            ends[fields[5]] = fields
        elif fields[0] == "SubBefore":
            befores.append(fields)
        elif fields[0] == "SubAfter":
            afters[(fields[1], fields[2])] = fields
    requests = defaultdict(list)
    for fields in befores:
        requests[fields[4]].append((fields[3], fields[5]))
    attempts = defaultdict(list)
    for fields in befores:
        attempt = Attempt(int(fields[1]), fields[4], int(fields[6]), len(requests[fields[4]]))
        after = afters.get((fields[4], fields[5]))
        if after is not None:
            attempt.success, attempt.code = after[4] == "true", int(after[6])
            # a 7-field SubAfter has no timestamp: its end is the start plus costTime x size
            attempt.end = (
                int(after[7]) if len(after) >= 9 else attempt.start + int(after[3]) * attempt.size
            )
        attempts[(fields[3], fields[5])].append(attempt)
    for found in attempts.values():
        found.sort(key=lambda attempt: (attempt.start, attempt.r))
    copies = {}
    for line in _lines(root, "dlq"):
        copy = json.loads(line)
        copies[
            (copy["topic"].removeprefix("%DLQ%").removeprefix("MQ_INST_1_demo%"), copy["msgId"])
        ] = copy
    return Landing(attempts, requests, pubs, ends, copies)


# RocketMQ's defaults (spec §3.1): the settings of a group missing from the seed
DEFAULT_GROUP = {
    "message_model": "CLUSTERING",
    "consume_mode": "CONCURRENTLY",
    "max_reconsume_times": "-1",
    "delay_level_when_next_consume": "0",
    "broker_cluster": "*",
}


def _seed(root: Path) -> dict[str, dict[str, str]]:
    """Each group's settings, as the written seed says or by default."""
    with (root / "seeds" / "consumer_groups.csv").open(newline="") as handle:
        return defaultdict(
            lambda: DEFAULT_GROUP, {row["consumer_group"]: row for row in csv.DictReader(handle)}
        )


def _max(settings: dict[str, str]) -> int:
    maximum = int(settings["max_reconsume_times"])
    return 16 if maximum == -1 else maximum  # a concurrent consumer's -1 (§3.1)


def _delay(seed: dict[str, str] | None, level: int) -> int:
    """The delay of ``level`` on the group's cluster, clamped to its highest level (§2.2)."""
    table = FAST_TABLE if seed and seed["broker_cluster"] == "fast-cluster" else DEFAULT_TABLE
    return table[min(level, len(table)) - 1]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[GeneratorConfig, Stats]:
    config = GeneratorConfig(
        out=tmp_path_factory.mktemp("redeliveries"),
        messages=10_000,
        seed=3,
        client_versions=("4.9", "4.8", "4.9.1", "old"),
        dlq_export=True,
    )
    return config, generate(config)


@pytest.fixture(scope="module")
def seen(run) -> tuple[Landing, dict, list[dict]]:
    config, _ = run
    return _landing(config.out), _seed(config.out), list(read_ground_truth(config.out))


def _redeliveries(landing: Landing, truth: list[dict], cause: str):
    """(group, row, previous attempt, attempt) for each redelivery with the true ``cause`` of a
    lifecycle whose trace landed whole."""
    found = []
    for row in truth:
        if not row["trace_complete"]:
            continue
        key = (row["consumer_group"], row["msg_id"])
        attempts = landing.attempts[key]
        for index, true_cause in enumerate(row["redelivery_causes"], start=1):
            if true_cause == cause:
                found.append((key[0], row, attempts[index - 1], attempts[index]))
    return found


def _broker_count(row: dict, previous: Attempt, attempt: Attempt) -> bool:
    """Whether ``attempt`` carries the count of the copy the broker stored when ``previous``
    was sent back: the stored count + 1 (§1.2 step 10), previous's r + 1; but a local
    re-consume's r was counted in memory only (§3.3), and the broker reads the stored copy's:
    after one, the count may stay."""
    if attempt.r == previous.r + 1:
        return True
    return attempt.r <= previous.r and "LOCAL_RECONSUME" in row["redelivery_causes"]


def test_every_redelivery_has_its_true_cause(run, seen):
    config, stats = run
    landing, seed, truth = seen
    counted = Counter()
    for row in truth:
        assert len(row["redelivery_causes"]) == row["deliveries"] - 1, row
        assert set(row["redelivery_causes"]) <= CAUSES, row
        counted.update(row["redelivery_causes"])
        if not row["trace_complete"]:
            continue
        attempts = landing.attempts[(row["consumer_group"], row["msg_id"])]
        assert len(attempts) == row["deliveries"], row
        orderly = seed.get(row["consumer_group"], {}).get("consume_mode") == "ORDERLY"
        # a success as the SubAfter says it, or an orderly ROLLBACK (success false, SUCCESS)
        successes = sum(
            1 for a in attempts if a.success or (orderly and a.success is False and a.code == 0)
        )
        assert row["successful_deliveries"] == successes, row
    assert counted == Counter(stats.redelivery_causes)
    assert set(counted) == CAUSES and min(counted.values()) >= 3, counted
    written = json.loads((config.out / "generation.json").read_text())["stats"]
    for name in (
        "delayed_messages",
        "transactional_messages",
        "time_out_labels",
        "listener_levels",
        "consume_timeouts",
        "fallback_sends",
        "local_reconsumes",
        "partial_acks",
        "partial_ack_messages",
        "dropped_results",
        "duplicate_deliveries",
    ):
        assert written[name] > 0, name
    assert written["redelivery_causes"] == dict(stats.redelivery_causes)


def test_one_seed_gives_the_same_redeliveries(run, tmp_path: Path):
    config, _ = run
    again = GeneratorConfig(**{**config.__dict__, "out": tmp_path / "again"})
    generate(again)
    assert _files(config.out) == _files(again.out)


def test_consume_timeouts_come_back_between_one_and_two_timeouts(seen):
    """The expiry cleaner runs every consumeTimeout: it catches a listener between one and two
    timeouts after its start and sends the message back at level 3, redelivered with r + 1
    about 10 s later; the stuck listener ends later, labelled TIME_OUT (§3.2, §3.6)."""
    landing, seed, truth = seen
    found = _redeliveries(landing, truth, "CONSUME_TIMEOUT")
    assert len(found) >= 5
    for group, row, stuck, attempt in found:
        assert seed[group]["consume_mode"] == "CONCURRENTLY", row
        assert _broker_count(row, stuck, attempt), row
        level_3 = _delay(seed[group], 3)
        assert TIMEOUT + level_3 < attempt.start - stuck.start <= 2 * TIMEOUT + level_3 + SLACK
        if stuck.success is None:
            continue  # still running when the run ended
        assert stuck.code == TIME_OUT and stuck.end - stuck.start >= TIMEOUT, row
        # it was still running when the cleaner ran, 10 s before the redelivery
        assert stuck.end > attempt.start - level_3 - SLACK, row
        if stuck.success:
            assert row["final_state"] == "CONSUMED", row  # acked when it returned
    assert any(stuck.success is False for *_, stuck, _ in found)  # sent back once more
    assert any(stuck.success for *_, stuck, _ in found)


def test_the_cleaner_dead_letters_at_the_max(run, seen):
    """At r >= max the cleaner's send-back stores a DLQ copy with r + 1 and DELAY 0, between
    one and two timeouts after the consume started; the listener then succeeds, TIME_OUT."""
    _, stats = run
    landing, seed, truth = seen
    caught = [row for row in truth if row["reconciliation_reason"] == "CONSUME_TIMEOUT"]
    assert stats.consume_timeout_dlq >= len(caught) and stats.consume_timeout_dlq > 0
    for row in caught:
        key = (row["consumer_group"], row["msg_id"])
        copy = landing.copies[key]
        properties = copy.get("properties") or parse_message_properties(copy["propertiesString"])
        assert properties["DELAY"] == "0"
        stuck = [
            a
            for a in landing.attempts[key]
            if a.r == copy["reconsumeTimes"] - 1
            and TIMEOUT < copy["storeTimestamp"] - a.start <= 2 * TIMEOUT
        ]
        assert stuck and stuck[-1].r >= _max(seed[key[0]]), row
        assert stuck[-1].success in (True, None) and stuck[-1].code in (TIME_OUT, None), row


def test_local_reconsumes_come_five_seconds_after_the_failure(seen):
    """The send-back and the client's fallback both failed: the message is consumed again
    5000 ms later with r + 1 counted in memory (§3.3)."""
    landing, seed, truth = seen
    found = _redeliveries(landing, truth, "LOCAL_RECONSUME")
    assert len(found) >= 3
    for group, row, failed, attempt in found:
        assert seed[group]["consume_mode"] == "CONCURRENTLY", row
        assert seed[group]["message_model"] == "CLUSTERING", row
        assert failed.success is False and attempt.r == failed.r + 1, row
        assert 5 * SECOND <= attempt.start - failed.end <= 5 * SECOND + SLACK, row


def test_fallbacks_retry_at_three_plus_r_whatever_the_group_asks(seen):
    """The client's fallback sends DELAY = 3 + r, ignoring the listener's level, -1 included:
    fraud-check's seed would dead-letter every failure (§3.4)."""
    landing, seed, truth = seen
    found = _redeliveries(landing, truth, "CLIENT_FALLBACK")
    assert len(found) >= 5
    for group, row, failed, attempt in found:
        assert failed.success is False and attempt.r == failed.r + 1, row
        gap = attempt.start - failed.end
        assert 0 <= gap - _delay(seed[group], 3 + failed.r) <= SLACK, row
    assert any(seed[group]["delay_level_when_next_consume"] == "-1" for group, *_ in found)


def test_listener_levels_are_used_as_they_are(seen):
    """A positive delayLevelWhenNextConsume: redelivered with r + 1 after that level's delay,
    which differs by more than 3 s from level 3 + r's and from 5 s (§1.2 step 9)."""
    landing, seed, truth = seen
    found = _redeliveries(landing, truth, "LISTENER_LEVEL")
    assert len(found) >= 3
    for group, row, failed, attempt in found:
        assert failed.success is False and _broker_count(row, failed, attempt), row
        gap = attempt.start - failed.end
        levels = [
            level
            for level in range(1, len(DEFAULT_TABLE) + 1)
            if 0 <= gap - _delay(seed[group], level) <= SLACK
        ]
        assert levels, row
        for level in levels:
            delay = _delay(seed[group], level)
            assert abs(delay - _delay(seed[group], 3 + failed.r)) > 3 * SECOND, row
            assert abs(delay - 5 * SECOND) > 3 * SECOND, row


def test_partial_acks_say_success_and_send_the_rest_back(seen):
    """A batch returned CONSUME_SUCCESS with an ackIndex below its last message: every SubAfter
    of the request says success, and the messages after the ackIndex come back with r + 1
    after level 3 + r, only while r + 1 < max (§3.3)."""
    landing, seed, truth = seen
    found = _redeliveries(landing, truth, "PARTIAL_BATCH_ACK")
    assert len(found) >= 5
    partial = defaultdict(set)
    for group, row, acked, attempt in found:
        assert acked.success is True and acked.code == SUCCESS and acked.size > 1, row
        assert _broker_count(row, acked, attempt), row
        assert 0 <= attempt.start - acked.end - _delay(seed[group], 3 + acked.r) <= SLACK, row
        assert acked.r + 1 < _max(seed[group]), row
        assert row["successful_deliveries"] >= 1
        partial[acked.request].add(row["msg_id"])
    consumed_in_partial = 0
    for request in partial:
        for key in landing.requests[request]:
            attempts = landing.attempts[key]
            attempt = next(a for a in attempts if a.request == request)
            # the hook's success is the status, for every message (None: its SubAfter was lost)
            assert attempt.success in (True, None), request
            consumed_in_partial += attempt is attempts[-1]
    assert consumed_in_partial > 0  # the messages up to the ackIndex were consumed


def test_duplicates_come_again_with_the_same_count(seen):
    """A rebalance dropped a finished request's result: the new owner delivers the same copy
    again 1-60 s later, with the same reconsume count; it may be consumed twice."""
    landing, _, truth = seen
    found = _redeliveries(landing, truth, "DUPLICATE_DELIVERY")
    assert len(found) >= 5
    for _, row, first, attempt in found:
        assert attempt.r == first.r, row
        assert SECOND <= attempt.start - first.end <= 60 * SECOND + SLACK, row
    twice = [
        row for _, row, first, _ in found if first.success and row["successful_deliveries"] > 1
    ]
    assert twice and all(row["final_state"] == "CONSUMED" for row in twice)


def test_each_broadcasting_instance_gets_every_message_and_drops_its_failures(seen):
    """cache-invalidator broadcasts to three instances: each delivery has the count 0 (a
    broadcasting client never retries, §3.3), and the message is consumed when one instance
    consumed it, dropped when none did; a drop behind another instance's success happens."""
    landing, seed, truth = seen
    assert seed["cache-invalidator"]["message_model"] == "BROADCASTING"
    rows = [row for row in truth if row["consumer_group"] == "cache-invalidator"]
    whole = [row for row in rows if row["trace_complete"] and row["deliveries"] == 3]
    assert len(whole) > 0.9 * len(rows) > 1000
    hidden_drops = 0
    for row in whole:
        assert row["redelivery_causes"] == ["BROADCAST_COPY"] * 2, row
        attempts = landing.attempts[("cache-invalidator", row["msg_id"])]
        assert [attempt.r for attempt in attempts] == [0, 0, 0], row
        outcomes = [attempt.success for attempt in attempts]
        if None in outcomes:
            continue  # still running at the end of the run
        consumed = any(outcomes)
        assert row["final_state"] == ("CONSUMED" if consumed else "DROPPED"), row
        assert row["successful_deliveries"] == sum(outcomes), row
        hidden_drops += consumed and not all(outcomes)
    assert hidden_drops >= 3


def test_each_broadcasting_instance_names_its_own_host_on_a_4_8_client(tmp_path: Path):
    """A 4.8.0 SubBefore carries the consumer's clientHost (spec §5.2, 9 fields): each of
    cache-invalidator's three instances writes its own, which is how a reader tells another
    instance's copy from a duplicate."""
    # the groups take the client versions in turn: cache-invalidator, the fourth, gets 4.8
    generate(GeneratorConfig(out=tmp_path, messages=300, seed=5, client_versions=("4.9", "4.8")))
    hosts = defaultdict(list)
    for fields in _records(tmp_path):
        if fields[0] == "SubBefore" and fields[3] == "cache-invalidator":
            assert len(fields) == 9, fields
            hosts[fields[5]].append(fields[8])
    assert len(hosts) > 50
    assert all(len(set(named)) == len(named) == 3 for named in hosts.values() if len(named) == 3)
    assert sum(len(named) == 3 for named in hosts.values()) > 0.9 * len(hosts)


def test_delayed_and_transactional_messages_arrive_as_new_copies(run, seen):
    """A delayed message's Pub (msgType 3) names its SCHEDULE_TOPIC_XXXX copy and a
    transactional one's (msgType 1) the half message, which a 4.9.0+ producer commits with an
    EndTransaction record (msgType 2, COMMIT_MESSAGE); consumers receive another copy, later,
    whose offset id the broker's DLQ copies carry as ORIGIN_MESSAGE_ID (§1.2, §2.2, §5.2)."""
    landing, _, truth = seen
    by_msg = defaultdict(list)
    for row in truth:
        by_msg[row["msg_id"]].append(row)
    types = Counter(fields[11] for fields in landing.pubs.values())
    assert types["3"] > 0 and types["1"] > 0 and types["0"] > types["1"] + types["3"]
    committed = 0
    for msg_id, pub in landing.pubs.items():
        if pub[11] == "0":
            continue
        published = int(pub[1])
        first = min(
            (
                attempts[0].start
                for (group, key), attempts in landing.attempts.items()
                if key == msg_id and group != "order-service-dlq"
            ),
            default=None,
        )
        for row in by_msg[msg_id]:
            assert row["origin_msg_id"] is None, row
            assert row["origin_kind"] == {"1": "TRANSACTIONAL", "3": "DELAYED"}[pub[11]]
            if len(pub) >= 14:
                assert row["received_offset_msg_id"] != pub[12], row
        if pub[11] == "3":
            assert first is None or first - published >= 5 * SECOND  # DELAY level 2 or more
            assert msg_id not in landing.end_transactions
            continue
        end = landing.end_transactions.get(msg_id)
        if len(pub) == 15:  # a 4.8 producer writes no EndTransaction record
            assert end is None
            continue
        if end is None:
            continue  # its trace message was lost
        committed += 1
        assert end[9] == "2" and end[10] == msg_id and end[11] == "COMMIT_MESSAGE"
        assert end[12] == "false" and end[4] == pub[4] and len(end) == 13
        assert published <= int(end[1]) <= (first or int(end[1]))
    assert committed > 0
    for (group, msg_id), copy in landing.copies.items():
        pub = landing.pubs.get(msg_id)
        properties = copy.get("properties") or parse_message_properties(copy["propertiesString"])
        if pub is None or pub[11] == "0" or properties.get("DELAY") != "0":
            continue
        (row,) = [row for row in by_msg[msg_id] if row["consumer_group"] == group]
        assert properties["ORIGIN_MESSAGE_ID"] == row["received_offset_msg_id"]
        assert len(pub) < 14 or properties["ORIGIN_MESSAGE_ID"] != pub[12]


# A tiny deployment of one group, scripted: the fallback's broker-side rules, exactly.


class _Broker(ScriptedTraffic):
    """``failure`` None: every send-back reaches the broker. FALLBACK: every send-back RPC
    fails after 100 ms and the fallback is stored; LOCAL: the fallback fails too, 50 ms later.
    Trace messages land as they are."""

    def __init__(self, failure: str | None) -> None:
        super().__init__()
        self.failure = failure

    def send_back_failure(
        self, engine: Engine, at: int, lifecycle: Lifecycle, copy: Copy
    ) -> tuple[str, int] | None:
        return {"FALLBACK": ("FALLBACK", 100), "LOCAL": ("LOCAL", 150)}.get(self.failure or "")

    def land(
        self, engine: Engine, client: str, store_ms: int, trace_id: str, keys: str, body: str
    ) -> None:
        line = tf.landing_line(
            trace_msg_id=trace_id, store_timestamp=store_ms, store_host="h:1", body=body
        )
        engine.write_line(store_ms // 3_600_000, line, store_ms)


START = 1_772_323_200_000  # 2026-03-01T00:00:00Z


def _scripted(
    tmp_path: Path,
    broker: str,
    script: tuple[str, ...],
    failure: str | None = "FALLBACK",
    maximum: int = 1,
    **publication: object,
):
    group = Group("g", max_reconsume_times=maximum, broker_cluster="c")
    engine = Engine(
        out=tmp_path,
        groups=[group],
        delay_levels={"*": DEFAULT_DELAY_LEVELS, "c": DEFAULT_DELAY_LEVELS},
        broker_versions={"c": broker},
        behaviours=[Behaviour((), cost_ms=25, request_window_ms=0)],
        client_versions=[tf.CLIENT_VERSIONS["4.9"]],
        traffic=_Broker(failure),
        start_ms=START,
        end_ms=START + 3_600_000,
        dlq_export=True,
    )
    message = engine.publish(
        START + 1000,
        topic="t",
        producer_group="p",
        pid=1,
        version=tf.CLIENT_VERSIONS["4.9"],
        tags=None,
        keys=None,
        offset_step=100,
        body_length=10,
        cost_ms=1,
        **publication,  # type: ignore[arg-type]
    )
    lifecycle = engine.subscribe(0, message, script=script)
    engine.deliver_at(message.available_ms + 1000, lifecycle)
    engine.run()
    (row,) = read_ground_truth(tmp_path)
    copies = [json.loads(line) for line in _lines(tmp_path, "dlq")]
    return row, copies, _landing(tmp_path).attempts[("g", message.msg_id)]


def test_a_4_9_broker_dead_letters_a_fallback_at_r_plus_1_through_the_schedule(tmp_path):
    """max 1, r = 0: r + 1 >= max, so handleRetryAndDLQ writes %DLQ%g, but keeps DELAY = 3 + r:
    stored 10 s later, with REAL_TOPIC %DLQ%g and no ORIGIN_MESSAGE_ID (§1.3, §3.4)."""
    row, (copy,), (attempt,) = _scripted(tmp_path, "4.9", ("FAILED",))
    properties = copy["properties"]
    assert copy["reconsumeTimes"] == 1 and properties["DELAY"] == "3"
    assert properties["REAL_TOPIC"] == "%DLQ%g" and properties["REAL_QID"] == "0"
    assert "ORIGIN_MESSAGE_ID" not in properties
    assert copy["storeTimestamp"] == attempt.end + 100 + 10 * SECOND
    assert row["final_state"] == "DLQ" and row["deliveries"] == 1
    # the seed's rules retry r = 0 < max 1: only the copy tells, and why
    assert (row["dlq_evidence"], row["reconciliation_reason"]) == ("OBSERVED", "CLIENT_FALLBACK")


def test_a_5_broker_retries_a_fallback_up_to_the_max_then_dead_letters_it_at_once(tmp_path):
    """On 5.x the cut-off is r + 1 > max: r = 0 is retried (level 3, 10 s after the send), and
    r = 1 goes to the DLQ at once with DELAY = -1 (§1.4)."""
    row, (copy,), (first, second) = _scripted(tmp_path, "5.3", ("FAILED", "FAILED"))
    assert row["redelivery_causes"] == ["CLIENT_FALLBACK"]
    assert second.r == 1 and 10 * SECOND + 100 <= second.start - first.end <= 10 * SECOND + SLACK
    properties = copy["properties"]
    assert copy["reconsumeTimes"] == 2 and properties["DELAY"] == "-1"
    assert copy["storeTimestamp"] == second.end + 100
    assert properties["REAL_TOPIC"] == "%RETRY%g"  # left over from the retry's schedule hop
    assert "ORIGIN_MESSAGE_ID" not in properties  # the first fallback lost it
    assert row["dlq_evidence"] == "BOTH" and row["dlq_reconsume_times"] == 2


def test_a_failed_fallback_is_consumed_again_locally(tmp_path):
    row, copies, (first, second) = _scripted(tmp_path, "4.9", ("FAILED", "SUCCESS"), "LOCAL")
    assert copies == [] and row["final_state"] == "CONSUMED"
    assert row["redelivery_causes"] == ["LOCAL_RECONSUME"] and second.r == 1
    assert 5 * SECOND + 150 <= second.start - first.end <= 5 * SECOND + SLACK


@pytest.mark.parametrize(("kind", "message_type"), [("DELAYED", "3"), ("TRANSACTIONAL", "1")])
def test_a_delayed_or_transactional_dead_letter_names_the_copy_consumers_received(
    tmp_path: Path, kind: str, message_type: str
):
    """max 0: the first failure goes to the DLQ through the broker, whose copy's
    ORIGIN_MESSAGE_ID is the offset id of the copy consumed (§1.2 step 10): the re-put or
    committed copy, not the one the Pub names; REAL_TOPIC is left over from that copy."""
    publication = {"kind": kind, "delay_level": 3, "commit_after_ms": 700, "copy_step": 300}
    row, (copy,), (attempt,) = _scripted(
        tmp_path, "4.9", ("FAILED",), None, maximum=0, **publication
    )
    (pub,) = [fields for fields in _records(tmp_path) if fields[0] == "Pub"]
    assert pub[11] == message_type and len(pub) == 14
    properties = copy["properties"]
    assert properties["ORIGIN_MESSAGE_ID"] == row["received_offset_msg_id"] != pub[12]
    assert properties["DELAY"] == "0" and properties["REAL_TOPIC"] == "t"
    assert row["origin_msg_id"] is None and row["origin_kind"] == kind
    ends = [fields for fields in _records(tmp_path) if fields[0] == "EndTransaction"]
    if kind == "DELAYED":
        assert ends == [] and attempt.start - int(pub[1]) >= 10 * SECOND  # level 3
        assert "TRAN_MSG" not in properties
    else:
        (end,) = ends
        assert int(end[1]) == int(pub[1]) + 700 < attempt.start
        assert properties["TRAN_MSG"] == "true" and properties["PGROUP"] == "p"
