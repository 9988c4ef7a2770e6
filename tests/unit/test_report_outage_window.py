"""The report's flow-control verdicts use var `outage_window` of the dbt project the lakehouse was
built with, read when the report is made: the project `--project-dir` names, else the current
directory's if it has the var, else the installed one."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from retrylake.analyst.report import render_report
from retrylake.cli import main
from tests.conftest import PROJECT_DIR
from tests.unit.test_report_schedule_fit import SCHEDULE_FIT_ROWS, _lakehouse

# dbt_project.yml's outage_window: 3 buckets of 5 minutes
SHIPPED_RUN = "for 15 minutes or more"


def _project(root: Path, window: str | None) -> Path:
    """A copy of the project's dbt_project.yml with another outage_window, or none."""
    root.mkdir()
    text = (PROJECT_DIR / "dbt_project.yml").read_text(encoding="utf-8")
    shipped = re.search(r"  outage_window:\n(    .*\n)+", text)
    assert shipped is not None
    replaced = "" if window is None else f"  outage_window:\n{window}"
    (root / "dbt_project.yml").write_text(text.replace(shipped.group(0), replaced))
    return root


SEVEN_MINUTE_BUCKETS = (
    "    bucket_minutes: 7\n    min_failure_rate: 0.6\n    min_buckets: 4\n"
    "    min_failing_share: 0.9\n    min_failures_per_bucket: 5\n"
)


def test_the_window_is_the_named_projects(tmp_path: Path):
    lakehouse = _lakehouse(tmp_path / "lh", SCHEDULE_FIT_ROWS)
    assert SHIPPED_RUN in render_report(lakehouse)
    html = render_report(lakehouse, _project(tmp_path / "p", SEVEN_MINUTE_BUCKETS))
    assert "Failure rate per 7-minute bucket" in html
    assert "fails at least 60% of its deliveries for 28 minutes or more" in html
    assert "least 90% of the distinct messages" in html


def test_the_cli_reads_the_project_it_is_given_or_stands_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
):
    lakehouse = _lakehouse(tmp_path / "lh", SCHEDULE_FIT_ROWS)
    project = _project(tmp_path / "p", SEVEN_MINUTE_BUCKETS)
    out = tmp_path / "report.html"
    args = ["report", "--lakehouse", str(lakehouse.root), "--out", str(out)]

    assert main([*args, "--project-dir", str(project)]) == 0
    assert "for 28 minutes or more" in out.read_text()

    monkeypatch.chdir(project)  # a project folder: its dbt_project.yml
    assert main(args) == 0
    assert "for 28 minutes or more" in out.read_text()

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # no dbt project here: the installed one
    assert main(args) == 0
    assert SHIPPED_RUN in out.read_text()

    another = tmp_path / "another-dbt-project"
    another.mkdir()
    (another / "dbt_project.yml").write_text("name: other\nvars:\n  something: 1\n")
    monkeypatch.chdir(another)  # some other dbt project, without the var: the installed one
    assert main(args) == 0
    assert SHIPPED_RUN in out.read_text()

    without = _project(tmp_path / "without", None)
    out.unlink()
    assert main([*args, "--project-dir", str(without)]) != 0
    error = capsys.readouterr().err
    assert str(without / "dbt_project.yml") in error and "outage_window" in error
    assert not out.exists()
