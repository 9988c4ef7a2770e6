"""The what-if's comparison with ground truth (retrylake/bench/whatif_truth.py): which
lifecycles are compared, and the issue's bound (within 5% or 3 messages)."""

from __future__ import annotations

from retrylake.bench.whatif_truth import compare_scenario, compared_lifecycles, within_tolerance


def _truth(group, msg_id, **fields):
    row = {
        "consumer_group": group,
        "msg_id": msg_id,
        "trace_complete": True,
        "dlq_evidence": None,
        "recovery_of": None,
        "in_dlq": False,
        "deliveries": 1,
    }
    return row | fields


def test_the_bound_is_five_percent_or_three_whichever_is_larger():
    assert within_tolerance(3, 0) and not within_tolerance(4, 0)
    assert within_tolerance(105, 100) and not within_tolerance(106, 100)
    assert within_tolerance(95, 100) and not within_tolerance(94, 100)
    assert within_tolerance(63, 60) and not within_tolerance(64, 60)  # 5% of 60 is under 3


def test_only_lifecycles_the_landing_tells_exactly_are_compared():
    truth = [
        _truth("g", "told"),
        _truth("g", "lost-trace", trace_complete=False),
        _truth("g", "unseen-dead-letter", in_dlq=True, dlq_evidence="NONE"),
        _truth("g-dlq", "recovered", recovery_of="g"),
        _truth("g-dlq", "other"),
    ]
    assert compared_lifecycles(truth) == {("g", "told")}


def test_a_scenario_is_summed_per_group_over_compared_lifecycles_in_both_runs():
    predictions = [
        ("s", "g", "a", True, 5),
        ("s", "g", "b", False, 2),
        ("s", "g", "not-compared", True, 100),
        ("s", "g", "not-in-b", True, 100),
        ("other", "g", "a", False, 1),
    ]
    compared = {("g", "a"), ("g", "b"), ("g", "not-in-b")}
    truth_b = {
        ("g", "a"): {"in_dlq": True, "deliveries": 5},
        ("g", "b"): {"in_dlq": True, "deliveries": 9},
        ("g", "not-compared"): {"in_dlq": False, "deliveries": 1},
    }
    assert compare_scenario("s", predictions, compared, truth_b) == [
        {
            "scenario": "s",
            "consumer_group": "g",
            "predicted_dlq": 1,
            "true_dlq": 2,
            "predicted_deliveries": 7,
            "true_deliveries": 14,
            "dlq_within": True,
            "deliveries_within": False,
        }
    ]
