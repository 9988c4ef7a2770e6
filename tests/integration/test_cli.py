"""The `retrylake` command as a user runs it: separate processes, their own lakehouses."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from retrylake.lakehouse import Lakehouse
from tests.conftest import PROJECT_DIR

pytestmark = pytest.mark.integration

PROJECT_PARTS = ("dbt_project.yml", "profiles", "models", "macros", "seeds", "tests/dbt")


def retrylake(*args: str, cwd: Path, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "retrylake", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    copy = tmp_path / "project"
    for part in PROJECT_PARTS:
        source = PROJECT_DIR / part
        if source.is_dir():
            shutil.copytree(source, copy / part)
        else:
            copy.mkdir(parents=True, exist_ok=True)
            shutil.copy(source, copy / part)
    return copy


def test_bad_configuration_stops_the_build_before_anything_changes(project: Path, tmp_path: Path):
    seed = project / "seeds" / "broker_delay_levels.csv"
    seed.write_text(seed.read_text().replace("fast-cluster,5s 8s", "fast-cluster,5s 5x"))
    lakehouse = tmp_path / "lakehouse"
    result = retrylake("build", "--lakehouse", str(lakehouse), cwd=project)
    assert result.returncode == 1
    assert "broker_delay_levels.csv, row 3" in result.stderr and "'5x'" in result.stderr
    assert not lakehouse.exists()


def test_a_busy_lakehouse_is_refused_at_once(project: Path, tmp_path: Path):
    lakehouse = Lakehouse(tmp_path / "lakehouse", tmp_path / "landing")
    with lakehouse.lock():
        result = retrylake("build", "--lakehouse", str(lakehouse.root), cwd=project, timeout=120)
    assert result.returncode == 3
    assert "in use" in result.stderr and "retrylake serve" in result.stderr
    assert not lakehouse.metastore.exists()


def test_dbt_passthrough_keeps_everything_inside_its_lakehouse(project: Path, tmp_path: Path):
    lakehouse = tmp_path / "elsewhere"
    result = retrylake("dbt", "--lakehouse", str(lakehouse), "--", "seed", cwd=project)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert (lakehouse / "metastore_db").is_dir()
    assert (lakehouse / "warehouse" / "retrylake_config.db" / "consumer_groups").is_dir()
    assert (lakehouse / "dbt" / "target" / "run_results.json").is_file()
    # nothing is written next to the project: no metastore, warehouse, logs or target there
    leftovers = {"metastore_db", "spark-warehouse", "derby.log", "logs", "target"}
    assert not leftovers & {path.name for path in project.iterdir()}


def test_demo_generates_builds_and_agrees_with_its_ground_truth(project: Path, tmp_path: Path):
    lakehouse = tmp_path / "demo-lakehouse"
    result = retrylake("demo", "--messages", "400", "--lakehouse", str(lakehouse), cwd=project)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    summary = result.stdout[result.stdout.index("consumer_group") :]
    for group in ("order-service", "payment-ledger", "notification-push"):
        assert group in summary
    agreement = next(
        line for line in result.stdout.splitlines() if "agreeing with the generator" in line
    )
    agreeing, total = agreement.split(": ")[1].split(" of ")
    assert agreeing == total.split()[0] and int(agreeing.replace(",", "")) > 400
