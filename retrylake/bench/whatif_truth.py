"""The what-if checked against ground truth (issue 16), at any size: `retrylake bench --whatif`.

Run A is generated under the shipped seeds and built; each scenario's seeds generate run B from
the same seed and options (the generator draws every delivery's outcome by group, message and
attempt, so the traffic is the same). The what-if of A for the scenario is compared with B's
`ground_truth.jsonl`, per group, on dead letters (entered the DLQ) and deliveries, over the
lifecycles A's landing tells exactly. The CI test (test_generated_build) asserts the same
comparison on a small set.
"""

from __future__ import annotations

import contextlib
import shutil
import sys
import time
from dataclasses import replace
from pathlib import Path

from retrylake.lakehouse import Lakehouse
from retrylake.sim.engine import GeneratorConfig, generate, read_ground_truth

# The bound: within 5% or 3 messages, whichever is larger.
RELATIVE_TOLERANCE = 0.05
ABSOLUTE_TOLERANCE = 3

PREDICTIONS_SQL = (
    "select scenario, consumer_group, msg_id, predicted_entered_dlq, predicted_deliveries "
    "from whatif_lifecycles"
)


def landing_tells_exactly(row: dict) -> bool:
    """Whether the landing can tell this ground-truth lifecycle exactly: all of its trace
    records landed, and a DLQ entry it has is seen on one side at least."""
    return row["trace_complete"] and row["dlq_evidence"] != "NONE"


def within_tolerance(predicted: int, true: int) -> bool:
    return abs(predicted - true) <= max(ABSOLUTE_TOLERANCE, RELATIVE_TOLERANCE * true)


def compared_lifecycles(truth_a: list[dict]) -> set[tuple[str, str]]:
    """The lifecycles of A compared: told exactly by A's landing, and not of a recovery group
    (its traffic is another group's dead letters, whose number the scenario changes)."""
    recovery_groups = {row["consumer_group"] for row in truth_a if row.get("recovery_of")}
    return {
        (row["consumer_group"], row["msg_id"])
        for row in truth_a
        if landing_tells_exactly(row) and row["consumer_group"] not in recovery_groups
    }


def compare_scenario(
    scenario: str,
    predictions: list[tuple],
    compared: set[tuple[str, str]],
    truth_b: dict[tuple[str, str], dict],
) -> list[dict]:
    """Per group: the scenario's predicted dead letters and deliveries beside B's truth."""
    sums: dict[str, list[int]] = {}
    for name, group, msg_id, entered_dlq, deliveries in predictions:
        key = (group, msg_id)
        if name != scenario or key not in compared or key not in truth_b:
            continue
        totals = sums.setdefault(group, [0, 0, 0, 0])
        totals[0] += entered_dlq
        totals[1] += truth_b[key]["in_dlq"]
        totals[2] += deliveries
        totals[3] += truth_b[key]["deliveries"]
    return [
        {
            "scenario": scenario,
            "consumer_group": group,
            "predicted_dlq": dlq,
            "true_dlq": true_dlq,
            "predicted_deliveries": deliveries,
            "true_deliveries": true_deliveries,
            "dlq_within": within_tolerance(dlq, true_dlq),
            "deliveries_within": within_tolerance(deliveries, true_deliveries),
        }
        for group, (dlq, true_dlq, deliveries, true_deliveries) in sorted(sums.items())
    ]


def generator_config(out: Path, messages: int, seed: int) -> GeneratorConfig:
    """Run A's options (those of the CI test, at another size)."""
    return GeneratorConfig(
        out=out,
        messages=messages,
        seed=seed,
        client_versions=("4.9", "4.8", "4.9.1", "old"),
        dlq_export=True,
        lost_share=0.01,  # enough lost trace messages to hide some dead letters' deliveries
        grpc5_messages=messages // 10,  # the 5.x groups: spans, listener events, DLQ log lines
        grpc5_settings_from_seeds=True,  # so that run B's seeds set the 5.x groups' retries
    )


def truth_under_scenario(
    config: GeneratorConfig, project_dir: Path, scenario: str, workdir: Path
) -> dict[tuple[str, str], dict]:
    """Run B: run A's traffic (``config``) generated under ``scenario``'s settings in
    ``workdir``; its ground truth by (group, msgId)."""
    from retrylake.scenarios import write_scenario_seeds

    write_scenario_seeds(project_dir, scenario, workdir / "seeds")
    run_b = replace(config, out=workdir / "landing")
    generate(run_b, seeds_dir=workdir / "seeds")
    return {(row["consumer_group"], row["msg_id"]): row for row in read_ground_truth(run_b.out)}


def _log(message: str) -> None:
    print(f"retrylake bench --whatif: {message}", file=sys.stderr, flush=True)


def measure(root: Path, messages: int, seed: int, project_dir: Path) -> dict:
    """Generate A, build it and its what-if, generate B per scenario, compare. Figures only:
    a benchmark asserts nothing."""
    from retrylake.analyst.query import run_query
    from retrylake.commands import build, whatif
    from retrylake.scenarios import scenario_names

    shutil.rmtree(root, ignore_errors=True)
    config = generator_config(root / "a" / "landing", messages, seed)
    seconds: dict[str, float] = {}
    _log(f"generating run A ({messages} messages) ...")
    began = time.perf_counter()
    stats = generate(config, seeds_dir=project_dir / "seeds")
    seconds["generate_a"] = round(time.perf_counter() - began, 1)
    lakehouse = Lakehouse(root / "a" / "lakehouse", config.out)
    # dbt's log goes to stderr: stdout carries the figures only
    with contextlib.redirect_stdout(sys.stderr):
        _log("building the ledger ...")
        began = time.perf_counter()
        build(
            project_dir,
            lakehouse,
            full_refresh=True,
            exclude=["resource_type:test", "resource_type:unit_test"],
        )
        seconds["build"] = round(time.perf_counter() - began, 1)
        _log("building the what-if ...")
        began = time.perf_counter()
        whatif(project_dir, lakehouse, output="json")
        seconds["whatif"] = round(time.perf_counter() - began, 1)
    _, predictions = run_query(lakehouse, PREDICTIONS_SQL)
    truth_a = list(read_ground_truth(config.out))
    compared = compared_lifecycles(truth_a)
    groups = []
    for scenario in sorted(scenario_names(project_dir / "seeds")):
        _log(f"generating run B under {scenario} ...")
        truth_b = truth_under_scenario(config, project_dir, scenario, root / scenario)
        groups += compare_scenario(scenario, predictions, compared, truth_b)
        shutil.rmtree(root / scenario)
    observed = _observed_in_a(truth_a, compared)
    for row in groups:
        row["a_dlq"], row["a_deliveries"], row["lifecycles"] = observed[row["consumer_group"]]
    return {
        "messages": messages,
        "records": stats.records,
        "seed": seed,
        "lifecycles_compared": len(compared),
        "seconds": seconds,
        "groups_a_scenario_changes": [
            f"{row['scenario']}/{row['consumer_group']}"
            for row in groups
            if (row["true_dlq"], row["true_deliveries"]) != (row["a_dlq"], row["a_deliveries"])
        ],
        "groups_outside_tolerance": [
            row for row in groups if not (row["dlq_within"] and row["deliveries_within"])
        ],
        "groups": groups,
    }


def _observed_in_a(truth_a: list[dict], compared: set[tuple[str, str]]) -> dict:
    """Per group, over the compared lifecycles: A's dead letters, deliveries and lifecycles."""
    totals: dict[str, list[int]] = {}
    for row in truth_a:
        if (row["consumer_group"], row["msg_id"]) in compared:
            group = totals.setdefault(row["consumer_group"], [0, 0, 0])
            group[0] += row["in_dlq"]
            group[1] += row["deliveries"]
            group[2] += 1
    return {group: tuple(values) for group, values in totals.items()}


def run(root: Path, records: int, seed: int, project_dir: Path) -> dict:
    """`retrylake bench --whatif`: run A of about ``records`` trace records."""
    from retrylake.bench.measure import RECORDS_PER_MESSAGE

    return measure(root, max(1000, int(records / RECORDS_PER_MESSAGE)), seed, project_dir)
