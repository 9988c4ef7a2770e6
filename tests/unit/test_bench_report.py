"""What `retrylake bench` prints beside its timings: the generator's rate (per process-second,
and per wall-second only when every chunk was generated in this run), which code it ran, and
each dbt node's seconds."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from retrylake.bench.measure import (
    _code_figures,
    _generator_rate,
    _model_seconds,
    _node_seconds,
    code_state,
)
from retrylake.lakehouse import Lakehouse


def test_both_rates_when_every_chunk_was_generated():
    # two chunks of 3 s each, generated side by side on two cores in 3.2 s of wall time
    chunks = [{"records": 300_000, "seconds": 3.0}, {"records": 330_000, "seconds": 3.0}]
    rate = _generator_rate(chunks, wall_seconds=3.2)
    assert rate["records"] == 630_000
    assert rate["seconds"] == 6.0
    assert rate["records_per_second"] == 105_000
    assert rate["wall_seconds"] == 3.2
    assert rate["records_per_wall_second"] == 196_875


def test_no_wall_rate_when_a_chunk_came_from_the_cache():
    # a cached chunk has no seconds: the wall time covers only part of the work
    chunks = [{"records": 300_000, "seconds": 4.0}, {"records": 330_000}]
    rate = _generator_rate(chunks, wall_seconds=4.5)
    assert rate["records_per_second"] == 75_000
    assert rate["wall_seconds"] is None and rate["records_per_wall_second"] is None


def test_no_rate_when_every_chunk_came_from_the_cache():
    rate = _generator_rate([{"records": 300_000}, {"records": 330_000}], wall_seconds=0.1)
    assert rate["records"] == 0 and rate["records_per_second"] is None
    assert rate["records_per_wall_second"] is None


def _git(repo: Path, *args: str) -> None:
    identity = ["-c", "user.name=bench", "-c", "user.email=bench@example.org"]
    subprocess.run(["git", "-C", str(repo), *identity, *args], check=True, capture_output=True)


def test_the_code_state_names_the_commit_and_any_change(tmp_path: Path):
    repo = tmp_path / "project"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / "model.sql").write_text("select 1\n")
    _git(repo, "add", "model.sql")
    _git(repo, "commit", "-q", "-m", "first")
    head = subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()

    committed = code_state(repo)
    assert committed["commit"] == head and committed["clean"] is True
    assert _code_figures(committed, code_state(repo)) == {
        "commit": head,
        "clean": True,
        "unchanged_during_run": True,
    }

    (repo / "model.sql").write_text("select 2\n")  # edited while the bench runs
    edited = code_state(repo)
    assert edited["commit"] == head and edited["clean"] is False
    assert _code_figures(committed, edited)["unchanged_during_run"] is False
    (repo / "new_model.sql").write_text("select 3\n")  # a file dbt would read, not yet added
    assert code_state(repo)["fingerprint"] != edited["fingerprint"]


def test_no_code_state_outside_a_checkout(tmp_path: Path):
    assert code_state(tmp_path) == {"commit": None, "clean": None, "fingerprint": None}
    assert _code_figures(code_state(tmp_path), code_state(tmp_path)) == {
        "commit": None,
        "clean": None,
        "unchanged_during_run": None,
    }


def test_node_seconds_by_resource_type_keep_a_generic_tests_suffix(tmp_path: Path):
    lakehouse = Lakehouse(tmp_path, tmp_path / "landing")
    lakehouse.dbt_target.mkdir(parents=True)
    results = [
        {"unique_id": "model.retrylake.consume_attempts", "execution_time": 10.034},
        {"unique_id": "test.retrylake.landing_lines_accounted_for", "execution_time": 10.1},
        {"unique_id": "test.retrylake.not_null_redeliveries_msg_id.1a2b3c", "execution_time": 0.5},
        {"unique_id": "test.retrylake.not_null_redeliveries_msg_id.4d5e6f", "execution_time": 0.7},
        {"unique_id": "seed.retrylake.consumer_groups", "execution_time": 1.0},
    ]
    (lakehouse.dbt_target / "run_results.json").write_text(json.dumps({"results": results}))
    assert _model_seconds(lakehouse) == {"consume_attempts": 10.03}
    assert _node_seconds(lakehouse, "test") == {
        "landing_lines_accounted_for": 10.1,
        "not_null_redeliveries_msg_id.1a2b3c": 0.5,
        "not_null_redeliveries_msg_id.4d5e6f": 0.7,
    }
