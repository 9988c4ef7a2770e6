"""A what-if scenario applied to the configuration seeds: the seeds a deployment would have with
the scenario's settings, for `retrylake generate --seeds` (the ground-truth check of the
replay, docs/whatif.md) or to review before changing the settings in production."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

from retrylake.config_check import (
    GROUP_COLUMNS,
    OBSERVED_SCENARIO,
    check_configuration,
    check_consumer_groups,
    check_delay_levels,
)
from retrylake.errors import UsageError

# The group settings a scenario may change, by their names in consumer_groups.csv.
GROUP_SETTINGS = ("max_reconsume_times", "retry_max_times", "group_retry_policy")


def _read(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    # utf-8-sig: a byte-order mark is skipped, as dbt's seed loader and the checks skip it
    with path.open(newline="", encoding="utf-8-sig") as handle:
        reader = csv.DictReader(handle)
        return list(reader.fieldnames or ()), list(reader)


def _write(path: Path, columns: list[str], rows: list[dict[str, str]]) -> None:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, columns, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


def scenario_names(seeds: Path) -> list[str]:
    names: set[str] = set()
    for name in ("whatif_delay_levels.csv", "whatif_consumer_groups.csv"):
        if (seeds / name).exists():
            names |= {row["scenario"] for row in _read(seeds / name)[1]}
    return sorted(names)


def write_scenario_seeds(project_dir: Path, scenario: str, out: Path) -> None:
    """Copy the project's seeds folder to ``out`` with ``scenario``'s settings in
    consumer_groups.csv and broker_delay_levels.csv (a cluster the delay table lacks gets a row
    of its own, with the default row's broker version). The project's seeds are checked first,
    as a build checks them, and so is what is written."""
    check_configuration(project_dir)
    seeds = project_dir / "seeds"
    known = scenario_names(seeds)
    if scenario != OBSERVED_SCENARIO and scenario not in known:
        raise UsageError(
            f"no scenario {scenario!r} in {seeds}/whatif_*.csv; "
            f"scenarios: {', '.join(known) or 'none'}"
        )
    out.mkdir(parents=True, exist_ok=True)
    for path in seeds.glob("*.csv"):
        shutil.copy(path, out / path.name)
    if scenario == OBSERVED_SCENARIO:
        return
    group_columns, groups = _read(seeds / "consumer_groups.csv")
    changes = {
        row["consumer_group"]: row
        for row in _read(seeds / "whatif_consumer_groups.csv")[1]
        if row["scenario"] == scenario
    }
    # a setting in a column the seed was written without (an optional one): the column is added
    changed_columns = {
        column for row in changes.values() for column in GROUP_SETTINGS if row[column]
    }
    group_columns = [c for c in GROUP_COLUMNS if c in group_columns or c in changed_columns]
    for row in groups:
        change = changes.pop(row["consumer_group"], None)
        for column in GROUP_SETTINGS:
            if change and change.get(column):
                row[column] = change[column]
    if changes:
        raise UsageError(
            f"scenario {scenario!r} changes {', '.join(sorted(changes))}, which "
            f"consumer_groups.csv does not list; add their rows first"
        )
    _write(out / "consumer_groups.csv", group_columns, groups)

    delay_columns, clusters = _read(seeds / "broker_delay_levels.csv")
    ladders = {
        row["broker_cluster"]: row["message_delay_level"]
        for row in _read(seeds / "whatif_delay_levels.csv")[1]
        if row["scenario"] == scenario
    }
    default_version = next(
        (row.get("broker_version", "") for row in clusters if row["broker_cluster"] == "*"), ""
    )
    for row in clusters:
        if row["broker_cluster"] in ladders:
            row["message_delay_level"] = ladders.pop(row["broker_cluster"])
    for cluster, ladder in sorted(ladders.items()):
        added = {"broker_cluster": cluster, "message_delay_level": ladder}
        if "broker_version" in delay_columns:
            added["broker_version"] = default_version
        clusters.append(added)
    _write(out / "broker_delay_levels.csv", delay_columns, clusters)
    check_delay_levels(out / "broker_delay_levels.csv")
    check_consumer_groups(out / "consumer_groups.csv")
