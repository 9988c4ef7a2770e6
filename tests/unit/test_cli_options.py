"""Options and configurations the CLI cannot use stop it in one line, before anything runs or is
written: a usage error exits 2, a bad configuration names its file, row and value."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import pytest

from retrylake import cli, commands
from retrylake.lakehouse import Lakehouse
from tests.conftest import PROJECT_DIR


def _project(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    shutil.copytree(PROJECT_DIR / "seeds", project / "seeds")
    shutil.copy(PROJECT_DIR / "dbt_project.yml", project / "dbt_project.yml")
    return project


def _failure(argv: list[str], capsys: pytest.CaptureFixture, code: int) -> str:
    assert cli.main(argv) == code
    line = capsys.readouterr().err
    assert line.count("\n") == 1 and "internal error" not in line, line
    return line


@pytest.mark.parametrize("port", ["70000", "0", "-1"])
def test_a_port_that_is_no_tcp_port_is_a_usage_error(port: str, tmp_path: Path, capsys):
    line = _failure(["serve", "--lakehouse", str(tmp_path), "--port", port], capsys, 2)
    assert f"--port {port}" in line


@pytest.mark.parametrize(
    ("option", "named"),
    [
        (["--hours", "inf"], "--hours"),
        (["--hours", "nan"], "--hours"),
        (["--client-versions", ","], "--client-versions: none named"),
    ],
)
def test_a_generator_option_it_cannot_use_is_a_usage_error(
    option: list[str], named: str, tmp_path: Path, capsys
):
    line = _failure(["generate", "--out", str(tmp_path / "out"), *option], capsys, 2)
    assert named in line
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("seed", "old", "new", "named"),
    [
        ("broker_delay_levels.csv", "fast-cluster,5s 8s", "fast-cluster,5x 8s", "row 3"),
        (
            "consumer_groups.csv",
            "inventory-sync,CLUSTERING,CONCURRENTLY,3,",
            "inventory-sync,CLUSTERING,CONCURRENTLY,three,",
            "'three'",
        ),
        (
            "consumer_groups.csv",
            "order-service,CLUSTERING,CONCURRENTLY",
            "order-service,CLUSTERING,CONCURENTLY",
            "'CONCURENTLY'",
        ),
    ],
)
def test_the_generator_checks_the_seeds_it_simulates(
    seed: str, old: str, new: str, named: str, tmp_path: Path, capsys
):
    project = _project(tmp_path)
    path = project / "seeds" / seed
    assert old in path.read_text()
    path.write_text(path.read_text().replace(old, new, 1))
    argv = ["generate", "--out", str(tmp_path / "out"), "--seeds", str(project / "seeds")]
    line = _failure([*argv, "--messages", "10"], capsys, 1)
    assert f"{path}, " in line and named in line
    assert not (tmp_path / "out").exists()


def test_outside_a_dbt_project_the_check_says_so(tmp_path: Path, capsys):
    line = _failure(["check", "--project-dir", str(tmp_path)], capsys, 1)
    assert "dbt_project.yml not found" in line and "--project-dir" in line


def test_an_unknown_scenario_is_refused_before_the_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    ran: list[list[str]] = []
    monkeypatch.setattr(commands, "start_session", lambda *args, **options: None)
    monkeypatch.setattr(commands, "run_dbt", lambda command, *args: ran.append(command))
    lakehouse = Lakehouse(tmp_path / "lakehouse", tmp_path / "lakehouse" / "landing")
    for name in ("max-6", "observed"):
        with pytest.raises(commands.UsageError, match=f"no scenario '{name}'"):
            commands.whatif(PROJECT_DIR, lakehouse, scenarios=["max-5", name])
    assert ran == []


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


def test_a_scenarios_seeds_carry_its_settings_into_a_column_the_seed_left_out(
    tmp_path: Path, capsys
):
    """retry_max_times is optional in consumer_groups.csv: scenario max-5 sets it for
    checkout-push, so the written seed gains the column rather than losing the setting."""
    project = _project(tmp_path)
    groups = project / "seeds" / "consumer_groups.csv"
    rows = _rows(groups)
    columns = [column for column in rows[0] if column != "retry_max_times"]
    with groups.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, columns, extrasaction="ignore", lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    out = tmp_path / "scenario-seeds"
    argv = ["whatif", "--project-dir", str(project), "--write-seeds", "max-5", str(out)]
    assert cli.main(argv) == 0
    written = {row["consumer_group"]: row for row in _rows(out / "consumer_groups.csv")}
    assert written["checkout-push"]["retry_max_times"] == "5"
    assert written["order-service"]["max_reconsume_times"] == "5"
    assert written["inventory-sync"]["retry_max_times"] == ""
    # a seed the build would refuse is refused here too, and nothing is written
    groups.write_text(
        groups.read_text().replace("CLUSTERING,CONCURRENTLY,3,", "CLUSTERING,CONCURRENTLY,five,", 1)
    )
    capsys.readouterr()
    line = _failure([*argv[:-1], str(tmp_path / "other")], capsys, 1)
    assert f"{groups}, " in line and "'five'" in line
    assert not (tmp_path / "other").exists()
