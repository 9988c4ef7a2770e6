"""Two runs with one seed and other retry settings simulate the same traffic (issue 16): the same
publications, and the same outcome at the same attempt of the same message, so that the
ground truth of run B checks a what-if prediction made from run A's landing.

Run B changes order-service's maxReconsumeTimes (16 -> 5), the default cluster's delay ladder
(18 levels -> 8) and checkout-push's retryMaxTimes (16 -> 4). Expected values come from the
spec: a concurrent group's failed delivery at r >= max goes to the DLQ with reconsumeTimes r + 1
(§11); a 5.x group gets retryMaxTimes + 1 delivery attempts (§8.2), and its DLQ copy counts one
more than its last attempt (§8.3: 17 attempts, copy 18).
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest

from retrylake.sim.engine import GeneratorConfig, generate, read_ground_truth
from retrylake.sim.sample import write_seeds
from tests.unit.test_engine import _records
from tests.unit.test_engine_redeliveries import _landing

SEED = 5  # a seed whose order-service traffic has messages that fail six times and more
MESSAGES = 1500
SHORT_LADDER = "1s 5s 10s 30s 1m 2m 3m 4m"
ORDER_SERVICE_A = "order-service,CLUSTERING,CONCURRENTLY,-1,"
ORDER_SERVICE_B = "order-service,CLUSTERING,CONCURRENTLY,5,"
CHECKOUT_A = "checkout-push,CLUSTERING,CONCURRENTLY,,,,,DefaultCluster,grpc-5,,,16,PUSH,true"
CHECKOUT_B = "checkout-push,CLUSTERING,CONCURRENTLY,,,,,DefaultCluster,grpc-5,,,4,PUSH,true"
# 4.x groups whose outcomes no setting of run B can move: single-message requests or batches of
# first deliveries only (audit-archiver drops its failures; search-indexer's cluster keeps its
# ladder), and no outage window. A changed delay still moves their retries in time.
UNMOVED_4X = (
    "payment-ledger",
    "cache-invalidator",
    "audit-archiver",
    "search-indexer",
    "fraud-check",
    "notification-push",
    "order-service-dlq",
)
UNCHANGED_5X = (
    "notify-exp",
    "ledger-fifo",
    "report-simple",
    "cloud-orders",
    "cloud-fifo",
    "mislabeled-push",
    "mislabeled-exp",
)


def _seeds(folder: Path, *, b: bool) -> Path:
    write_seeds(folder)
    if b:
        groups = folder / "consumer_groups.csv"
        text = groups.read_text()
        assert text.count(ORDER_SERVICE_A) == 1 and text.count(CHECKOUT_A) == 1
        groups.write_text(
            text.replace(ORDER_SERVICE_A, ORDER_SERVICE_B).replace(CHECKOUT_A, CHECKOUT_B)
        )
        levels = folder / "broker_delay_levels.csv"
        lines = levels.read_text().splitlines()
        assert lines[1].startswith("*,1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h,")
        lines[1] = f"*,{SHORT_LADDER},{lines[1].rsplit(',', 1)[1]}"
        levels.write_text("\n".join(lines) + "\n")
    return folder


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("whatif")
    outs = {}
    for name in ("a", "b"):
        config = GeneratorConfig(
            out=root / name,
            messages=MESSAGES,
            seed=SEED,
            grpc5_messages=600,
            dlq_export=True,
            grpc5_settings_from_seeds=True,
        )
        generate(config, seeds_dir=_seeds(root / f"seeds-{name}", b=name == "b"))
        outs[name] = config.out
    return outs


def _truth(out: Path) -> dict[tuple[str, str], dict]:
    return {(row["consumer_group"], row["msg_id"]): row for row in read_ground_truth(out)}


def _outcomes(attempts) -> dict[int, tuple[bool | None, int | None]]:
    """Attempt index k (reconsumeTimes - the first delivery's) -> the (success, return type)
    of the first delivery at k, as the trace shows it."""
    found: dict[int, tuple[bool | None, int | None]] = {}
    for attempt in attempts:
        found.setdefault(attempt.r - attempts[0].r, (attempt.success, attempt.code))
    return found


def test_both_runs_publish_the_same_messages(runs):
    pubs = {
        name: [f for f in _records(out) if f[0] in ("Pub", "EndTransaction")]
        for name, out in runs.items()
    }
    assert len(pubs["a"]) >= MESSAGES * 0.99  # a few trace messages are lost: the same ones
    assert sorted(pubs["a"]) == sorted(pubs["b"])
    assert len({fields[5] for fields in pubs["a"] if fields[0] == "Pub"}) == len(
        [fields for fields in pubs["a"] if fields[0] == "Pub"]
    )
    # every group but the recovery group (which reads each run's own dead letters) has a
    # lifecycle for the same messages
    truths = {name: _truth(out) for name, out in runs.items()}
    groups = {group for group, _ in truths["a"]} - {"order-service-dlq"}
    assert len(groups) == 17
    for group in groups:
        ids = {name: {m for g, m in truth if g == group} for name, truth in truths.items()}
        assert ids["a"] and ids["a"] == ids["b"], group


def test_unchanged_4x_groups_see_the_same_outcome_at_each_attempt(runs):
    landings = {name: _landing(out) for name, out in runs.items()}
    a, b = landings["a"].attempts, landings["b"].attempts
    compared = defaultdict(int)
    for key in a.keys() & b.keys():
        group = key[0]
        outcomes_a, outcomes_b = _outcomes(a[key]), _outcomes(b[key])
        common = outcomes_a.keys() & outcomes_b.keys()
        if group == "order-service":  # the same rules below B's max, 5
            common = {k for k in common if k < 5}
        elif group not in UNMOVED_4X:
            continue
        for k in common:
            assert outcomes_a[k] == outcomes_b[k], (key, k)
            compared[group] += 1
    # every group (the recovery group only where both runs dead-lettered the same message)
    assert set(compared) >= {"order-service", *UNMOVED_4X} - {"order-service-dlq"}
    assert sum(compared.values()) > 1500


def test_a_lower_max_dead_letters_order_service_earlier(runs):
    truth_a, truth_b = _truth(runs["a"]), _truth(runs["b"])
    rows_a = {m: row for (g, m), row in truth_a.items() if g == "order-service"}
    rows_b = {m: row for (g, m), row in truth_b.items() if g == "order-service"}
    assert rows_a.keys() == rows_b.keys()
    assert sum(row["deliveries"] for row in rows_b.values()) < sum(
        row["deliveries"] for row in rows_a.values()
    )
    dead_b = [row for row in rows_b.values() if row["in_dlq"]]
    # r >= max (5) sends the delivery at r = 5 to the DLQ with reconsumeTimes 6 (spec §11)
    assert max(row["dlq_reconsume_times"] for row in dead_b) == 6
    at_max = [row for row in dead_b if row["dlq_reconsume_times"] == 6]
    assert at_max
    landing_a = _landing(runs["a"]).attempts
    for row in at_max:
        if set(row["redelivery_causes"]) == {"SCHEDULED"}:
            assert row["deliveries"] == 6, row  # r = 0 to 5
        # run A saw the same first six attempts fail, and retried on (max 16)
        outcomes = _outcomes(landing_a[("order-service", row["msg_id"])])
        assert all(outcomes[k][0] is False for k in range(6)), row
        row_a = rows_a[row["msg_id"]]
        assert row_a["deliveries"] > 6 and row_a["dlq_reconsume_times"] in (None, 17), row_a


def test_a_lower_retry_max_times_dead_letters_checkout_push_earlier(runs):
    truth_a, truth_b = _truth(runs["a"]), _truth(runs["b"])
    rows_a = {m: row for (g, m), row in truth_a.items() if g == "checkout-push"}
    rows_b = {m: row for (g, m), row in truth_b.items() if g == "checkout-push"}
    # retryMaxTimes 4: 5 attempts (§8.2), then the DLQ copy counts 6 (§8.3)
    assert max(len(row["attempts"]) for row in rows_b.values()) == 5
    dead_b = [row for row in rows_b.values() if row["in_dlq"]]
    assert dead_b and all(
        row["attempts"] == [1, 2, 3, 4, 5] and row["dlq_reconsume_times"] == 6 for row in dead_b
    )
    assert max(len(row["attempts"]) for row in rows_a.values()) == 17
    assert {row["dlq_reconsume_times"] for row in rows_a.values() if row["in_dlq"]} == {18}
    for msg_id, row_b in rows_b.items():
        row_a = rows_a[msg_id]
        if row_b["final_state"] == "CONSUMED":  # consumed at the same attempt in run A
            assert row_a["final_state"] == "CONSUMED" and row_a["attempts"] == row_b["attempts"]
        elif row_b["in_dlq"]:  # its five attempts failed in run A too
            assert row_a["attempts"][:5] == [1, 2, 3, 4, 5], row_a
            assert row_a["successful_deliveries"] == 0 or row_a["final_state"] == "CONSUMED"
            assert len(row_a["attempts"]) > 5 or row_a["final_state"] != "CONSUMED"


def test_unchanged_5x_groups_run_the_same(runs):
    truth_a, truth_b = _truth(runs["a"]), _truth(runs["b"])
    same = (
        "final_state",
        "attempts",
        "successful_deliveries",
        "redelivery_gaps_ms",
        "dlq_reconsume_times",
        "dlq_entered_ms",
    )
    compared = 0
    for key, row_a in truth_a.items():
        if key[0] not in UNCHANGED_5X:
            continue
        row_b = truth_b[key]
        assert {c: row_a[c] for c in same} == {c: row_b[c] for c in same}, key
        compared += 1
    assert compared > 400


def test_the_written_seed_keeps_the_5x_settings_it_ran(runs):
    text = (runs["b"] / "seeds" / "consumer_groups.csv").read_text()
    assert CHECKOUT_B in text and CHECKOUT_A not in text
    generation = json.loads((runs["b"] / "generation.json").read_text())
    assert generation["config"]["grpc5_settings_from_seeds"] is True
    assert generation["stats"]["grpc5"]["seed_rows_replaced"] == []
