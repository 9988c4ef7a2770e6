"""The generator's dead-letter side and lost trace messages, checked against the landing it
writes (trace/, dlq/, seeds/) and the spec's rules written out here, not the engine's own:
the export window and the unexported group, listener-requested DLQ entries, client-fallback
and consume-timeout copies, the recovery consumer, operator re-sends, lost trace messages,
and every truth row's dlq_evidence and reconciliation_reason."""

from __future__ import annotations

import base64
import csv
import json
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from retrylake.sim.engine import Engine, GeneratorConfig, Stats, generate, read_ground_truth
from spark_udfs import parse_message_properties
from tests.unit.test_engine import _lines

HOUR_MS = 3_600_000
MINUTE_MS = 60_000
TIMEOUT_MS = 15 * MINUTE_MS  # consumeTimeout's default (spec §3.1)
TIME_OUT = 1  # ConsumeReturnType ordinal (spec §4)


@dataclass
class Landing:
    """What a reader of the landing zone sees."""

    trace_ids: list[str] = field(default_factory=list)  # every landed trace message, once
    # (group, msgId) -> {request id: (timestamp, retryTimes)}
    sub_before: dict = field(default_factory=lambda: defaultdict(dict))
    sub_after: dict = field(default_factory=dict)  # (request id, msgId) -> success
    return_types: dict = field(default_factory=dict)  # (request id, msgId) -> contextCode
    pubs: Counter = field(default_factory=Counter)  # msgId -> Pub records
    copies: dict = field(default_factory=dict)  # (group, msgId) -> the dlq/ line


def _landing(root: Path) -> Landing:
    landing = Landing()
    seen = set()
    for line in _lines(root, "trace"):
        try:
            message = json.loads(line)
        except json.JSONDecodeError:
            continue  # a line cut short; its whole copy landed too
        if message["msgId"] in seen:
            continue  # a duplicate of a trace message
        seen.add(message["msgId"])
        landing.trace_ids.append(message["msgId"])
        body = message.get("body") or base64.b64decode(message["bodyBase64"]).decode("utf-8")
        for record in body.split("\u0002")[:-1]:
            fields = record.split("\u0001")
            if fields[0] == "Pub":
                landing.pubs[fields[5]] += 1
            elif fields[0] == "SubBefore":
                key = (fields[3], fields[5])
                landing.sub_before[key][fields[4]] = (int(fields[1]), int(fields[6]))
            elif fields[0] == "SubAfter":
                landing.sub_after[(fields[1], fields[2])] = fields[4] == "true"
                landing.return_types[(fields[1], fields[2])] = int(fields[6])
    for line in _lines(root, "dlq"):
        copy = json.loads(line)
        landing.copies[
            (copy["topic"].removeprefix("%DLQ%").removeprefix("MQ_INST_1_demo%"), copy["msgId"])
        ] = copy
    return landing


def _seed(root: Path) -> dict[str, dict[str, str]]:
    with (root / "seeds" / "consumer_groups.csv").open(newline="") as handle:
        return {row["consumer_group"]: row for row in csv.DictReader(handle)}


# RocketMQ's defaults (spec §3.1): what a group missing from the seed is judged with.
DEFAULT_GROUP = {
    "message_model": "CLUSTERING",
    "consume_mode": "CONCURRENTLY",
    "max_reconsume_times": "-1",
    "retry_queue_nums": "1",
    "delay_level_when_next_consume": "0",
    "client_line": "remoting-4.9",
}


def _seed_sends_to_dlq(seed: dict[str, str], r: int) -> bool:
    """Whether a delivery with reconsumeTimes ``r`` that fails goes to the DLQ, on the seed's
    settings (spec §1.2 steps 3 and 8, §3.3, §3.5)."""
    maximum = int(seed["max_reconsume_times"])
    if seed["consume_mode"] == "ORDERLY":
        return maximum != -1 and r >= maximum
    if seed["message_model"] == "BROADCASTING" or int(seed["retry_queue_nums"]) <= 0:
        return False
    limit = 16 if maximum == -1 else maximum
    return r >= limit or int(seed["delay_level_when_next_consume"]) < 0


def _deciding_r(seed: dict[str, str], stored: int) -> int:
    """The reconsumeTimes of the delivery that sent a copy storing ``stored`` to the DLQ: r + 1
    by the broker (§1.2 step 10), r by an orderly client of the 4.9.x line (§3.5)."""
    orderly_4_9 = seed["consume_mode"] == "ORDERLY" and seed["client_line"] == "remoting-4.9"
    return stored if orderly_4_9 else stored - 1


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[GeneratorConfig, Stats]:
    """The defaults, with the dlq/ export."""
    config = GeneratorConfig(
        out=tmp_path_factory.mktemp("dead-letters"),
        messages=4000,
        seed=8,
        client_versions=("4.9", "4.8", "4.9.1"),
        dlq_export=True,
    )
    return config, generate(config)


@pytest.fixture(scope="module")
def lossy(tmp_path_factory: pytest.TempPathFactory) -> tuple[GeneratorConfig, Stats]:
    """A tenth of the trace messages lost and the export taken half-way: every evidence and
    every reconciliation reason occurs."""
    config = GeneratorConfig(
        out=tmp_path_factory.mktemp("lossy"),
        messages=3000,
        seed=5,
        client_versions=("4.9", "4.9.1"),
        dlq_export=True,
        lost_share=0.1,
        dlq_export_end_fraction=0.5,
    )
    return config, generate(config)


@pytest.fixture(params=["run", "lossy"])
def any_run(request: pytest.FixtureRequest) -> tuple[GeneratorConfig, Stats]:
    return request.getfixturevalue(request.param)


def _truth(config: GeneratorConfig) -> dict[tuple[str, str], dict]:
    return {(row["consumer_group"], row["msg_id"]): row for row in read_ground_truth(config.out)}


def test_the_export_holds_the_copies_stored_before_it_was_taken(any_run):
    config, stats = any_run
    landing = _landing(config.out)
    truth = _truth(config)
    taken = config.start_ms + config.dlq_export_end_fraction * config.hours * HOUR_MS
    assert landing.copies and all(c["storeTimestamp"] <= taken for c in landing.copies.values())
    assert not any(group == "fraud-check" for group, _ in landing.copies)  # never exported
    assert any(row["in_dlq"] for key, row in truth.items() if key[0] == "fraud-check")
    dead = {key for key, row in truth.items() if row["in_dlq"]}
    assert set(landing.copies) <= dead
    missing = dead - set(landing.copies)
    assert missing == {
        key
        for key in dead
        if key[0] in config.dlq_unexported_groups or truth[key]["dlq_entered_ms"] > taken
    }
    assert len(landing.copies) == stats.dlq_exported and len(dead) == stats.dlq_messages


def _properties(copy: dict) -> dict[str, str]:
    return copy.get("properties") or parse_message_properties(copy["propertiesString"])


def test_listener_requested_copies_skip_the_retries(run):
    """A copy with fewer reconsumeTimes than the broker's cut-off (max + 1) on a concurrent
    group whose seed asks for no DLQ, with DELAY 0 (the broker's send-back), was requested by
    the listener: the last traced retryTimes + 1, and no redelivery after it (only an
    operator's re-send, with 0). One with another DELAY came from the client's fallback."""
    config, stats = run
    landing, seed, truth = _landing(config.out), _seed(config.out), _truth(config)
    requested = 0
    for key, copy in landing.copies.items():
        group = seed.get(key[0], DEFAULT_GROUP)
        if group["consume_mode"] != "CONCURRENTLY" or _seed_sends_to_dlq(
            group, copy["reconsumeTimes"] - 1
        ):
            continue
        if _properties(copy)["DELAY"] != "0":
            assert truth[key]["reconciliation_reason"] == "CLIENT_FALLBACK"
            continue
        requested += 1
        stored = copy["storeTimestamp"]
        deliveries = landing.sub_before[key].values()
        before = [retry for at, retry in deliveries if at <= stored]
        assert copy["reconsumeTimes"] == max(before) + 1
        later = sorted((at, retry) for at, retry in deliveries if at > stored)
        if truth[key]["recovered_ms"] is None:
            assert later == [] and truth[key]["final_state"] == "DLQ"
        else:  # re-sent by an operator
            assert later[0][1] == 0 and later[0][0] >= stored + 20 * MINUTE_MS
        assert truth[key]["reconciliation_reason"] == "LISTENER_REQUESTED_DLQ"
    assert requested == stats.listener_dlq - sum(
        1
        for row in truth.values()
        if row["dlq_evidence"] == "NONE"
        and row["reconciliation_reason"] == "LISTENER_REQUESTED_DLQ"
    )
    assert requested >= 3


def test_the_recovery_consumer_reads_order_service_dead_letters(run):
    config, stats = run
    landing, truth = _landing(config.out), _truth(config)
    end = config.start_ms + config.hours * HOUR_MS
    recoveries = {key: row for key, row in truth.items() if row["recovery_of"] is not None}
    assert recoveries and all(
        key[0] == "order-service-dlq" and row["recovery_of"] == "order-service"
        for key, row in recoveries.items()
    )
    assert stats.recovery_lifecycles == len(recoveries)
    for (_, msg_id), row in recoveries.items():
        dead = truth[("order-service", msg_id)]
        first_at, first_retry = min(landing.sub_before[("order-service-dlq", msg_id)].values())
        assert first_retry == dead["dlq_reconsume_times"] >= 1  # e.g. 17
        copy = landing.copies.get(("order-service", msg_id))
        assert copy is None or copy["reconsumeTimes"] == first_retry
        assert MINUTE_MS <= first_at - dead["dlq_entered_ms"] <= 10 * MINUTE_MS + 1000
        assert row["deliveries"] == len(landing.sub_before[("order-service-dlq", msg_id)])
    # every copy stored early enough is delivered, exported or not
    for (group, msg_id), row in truth.items():
        if group == "order-service" and row["in_dlq"] and row["dlq_entered_ms"] < end - HOUR_MS:
            assert ("order-service-dlq", msg_id) in recoveries


def test_resent_dead_letters_continue_their_lifecycle(run):
    config, stats = run
    landing, truth = _landing(config.out), _truth(config)
    resent = {key: row for key, row in truth.items() if row["in_dlq"] and row["recovered_ms"]}
    assert len(resent) == stats.resent == stats.recovered >= 1
    for key, row in resent.items():
        assert key[0] == "bulk-importer" and row["final_state"] == "CONSUMED"
        assert row["recovered_ms"] > row["dlq_entered_ms"]
        assert landing.pubs[key[1]] <= 1  # mqadmin's re-send writes no Pub
        deliveries = sorted(landing.sub_before[key].values())
        after = [(at, retry) for at, retry in deliveries if at > row["dlq_entered_ms"]]
        assert after[0][1] == 0 and after[0][0] >= row["dlq_entered_ms"] + 20 * MINUTE_MS
        if row["trace_complete"]:
            assert row["deliveries"] == len(deliveries) > len(after)


def test_lost_trace_messages_never_land(any_run):
    """A lost trace message leaves a gap in its dispatcher's counter (the last 2 bytes of the
    trace message's msgId, spec §6.2), and its lifecycles miss records: trace_complete false.
    Every lifecycle whose trace is complete has all its records in the landing."""
    config, stats = any_run
    landing, truth = _landing(config.out), _truth(config)
    counters = defaultdict(list)
    for trace_id in landing.trace_ids:
        counters[trace_id[:12]].append(int(trace_id[-4:], 16))  # ip + pid: one dispatcher
    gaps = sum(max(seen) - len(seen) for seen in counters.values())
    assert gaps <= stats.lost_trace_messages and gaps > 0
    assert stats.lost_records > 0
    incomplete = 0
    # a delivery may still run when the run ends: one that just started, or a listener stuck
    # past the consume timeout (up to 35 minutes)
    running_from = config.start_ms + config.hours * HOUR_MS - 35 * MINUTE_MS
    for key, row in truth.items():
        befores = landing.sub_before.get(key, {})
        afters = sum(1 for request_id in befores if (request_id, key[1]) in landing.sub_after)
        if row["trace_complete"]:
            assert len(befores) == row["deliveries"], row
            assert all(
                at >= running_from
                for request_id, (at, _) in befores.items()
                if (request_id, key[1]) not in landing.sub_after
            ), row
        else:
            incomplete += 1
            assert len(befores) + afters < 2 * row["deliveries"], row
    assert incomplete == stats.trace_incomplete_lifecycles > 0


def test_every_dead_letter_has_its_evidence_and_reason(any_run):
    config, _ = any_run
    landing, seed, truth = _landing(config.out), _seed(config.out), _truth(config)
    taken = config.start_ms + config.dlq_export_end_fraction * config.hours * HOUR_MS
    seen = Counter()
    for key, row in truth.items():
        group, msg_id = key
        evidence, reason = row["dlq_evidence"], row["reconciliation_reason"]
        seen[(evidence, reason)] += 1
        if not row["in_dlq"]:
            assert evidence is None and reason is None and key not in landing.copies
            continue
        settings = seed.get(group, DEFAULT_GROUP)
        r = _deciding_r(settings, row["dlq_reconsume_times"])
        entered = row["dlq_entered_ms"]
        befores = landing.sub_before.get(key, {})
        shown = any(
            landing.sub_after.get((request_id, msg_id)) is False
            for request_id, (at, retry) in befores.items()
            if retry == r and at <= entered
        )
        rules = _seed_sends_to_dlq(settings, r)
        observed, predicted = key in landing.copies, shown and rules
        expected = {
            (True, True): "BOTH",
            (True, False): "OBSERVED",
            (False, True): "PREDICTED",
            (False, False): "NONE",
        }[(observed, predicted)]
        assert evidence == expected, row
        if evidence == "BOTH":
            assert reason is None
        elif not predicted:  # the trace side is missing: its cause comes first
            if shown and observed and _properties(landing.copies[key])["DELAY"] != "0":
                # the client's fallback: 4.9.x dead-letters it at r + 1 >= max (§3.4)
                assert reason == "CLIENT_FALLBACK" and not rules, row
            elif shown:
                assert reason in ("LISTENER_REQUESTED_DLQ", "CLIENT_FALLBACK") and not rules, row
            elif reason == "CONSUME_TIMEOUT":
                # the expiry cleaner caught the delivery with that count: it had run more than
                # consumeTimeout (up to twice) when the copy was stored, and it succeeded with
                # the TIME_OUT label or was still running (§3.6)
                stuck = [
                    request_id
                    for request_id, (at, retry) in befores.items()
                    if retry == r and TIMEOUT_MS < entered - at <= 2 * TIMEOUT_MS
                ]
                assert stuck and rules, row
                for request_id in stuck:
                    assert landing.sub_after.get((request_id, msg_id)) in (True, None), row
                    code = landing.return_types.get((request_id, msg_id), TIME_OUT)
                    assert code == TIME_OUT, row
            elif reason == "NOT_IN_TRACE":
                assert not any(at <= entered for at, _ in befores.values()), row
            else:
                assert reason == "LAST_DELIVERY_NOT_IN_TRACE", row
        elif group in config.dlq_unexported_groups:
            assert reason == "GROUP_NOT_EXPORTED", row
        else:
            assert reason == "AFTER_EXPORT_WINDOW" and entered > taken, row
    if config.lost_share >= 0.1:
        assert {evidence for evidence, _ in seen} == {None, "BOTH", "OBSERVED", "PREDICTED", "NONE"}
        assert {reason for _, reason in seen} >= {
            None,
            "NOT_IN_TRACE",
            "LAST_DELIVERY_NOT_IN_TRACE",
            "LISTENER_REQUESTED_DLQ",
            "GROUP_NOT_EXPORTED",
            "AFTER_EXPORT_WINDOW",
        }
    assert {reason for _, reason in seen} <= {None, *Engine.REASONS}
