"""The `retrylake` command as a user runs it: separate processes, their own lakehouses."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from retrylake.analyst.query import run_query
from retrylake.build_inputs import JudgedWith, judgement_inputs
from retrylake.lakehouse import Lakehouse
from retrylake.sim.engine import GeneratorConfig, generate, read_ground_truth
from retrylake.sim.sample import START_MS, write_sample
from tests.conftest import PROJECT_DIR
from tests.integration.helpers import free_port, wait_for_log

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
    counts = [
        (int(agreeing.replace(",", "")), int(total.replace(",", "")))
        for agreeing, total in re.findall(r"([\d,]+) of ([\d,]+)", agreement)
    ]
    (all_agreeing, all_total), (grpc5_agreeing, grpc5_total) = counts
    # the 4.x groups agree exactly; a 5.x lifecycle may lose its spans or events on purpose, and
    # one 5.x group's seed misnames its retry policy on purpose
    assert all_agreeing - grpc5_agreeing == all_total - grpc5_total > 400
    assert grpc5_total > 0 and grpc5_agreeing >= 0.9 * grpc5_total
    # a full build: it recorded the seeds and rules it judged with, so a later build is quiet
    judged = JudgedWith(Lakehouse(lakehouse, lakehouse / "landing"))
    assert judged.path.is_file() and judged.changed(judgement_inputs(project)) == []


def _java_children(pid: int) -> set[int]:
    """The JVMs ``pid`` started (PySpark's gateway runs Java as a child of the Python process)."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)
        except OSError:  # ended meanwhile
            continue
        if fields[0].endswith("(java") and int(fields[1].split()[1]) == pid:
            found.add(int(stat.parent.name))
    return found


BUILT = "retrylake: built in"  # the watch's line after each build


def _lifecycle_keys(lakehouse: Lakehouse) -> set[tuple[str, str]]:
    rows = run_query(lakehouse, "select consumer_group, msg_id from message_lifecycles")[1]
    return {(group, msg) for group, msg in rows}


def test_build_watch_builds_what_lands_in_one_process_until_sigterm(project: Path, tmp_path: Path):
    """`retrylake build --watch` builds at once, then builds a batch that lands later in the
    same process and the same JVM, and stops cleanly on SIGTERM."""
    landing = tmp_path / "landing"
    write_sample(landing)
    lakehouse = Lakehouse(tmp_path / "watched", landing)
    errors = tmp_path / "watch.err"
    no_tests = ("--exclude", "resource_type:test", "resource_type:unit_test")
    with errors.open("w") as err, (tmp_path / "watch.out").open("w") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "retrylake", "build", "--watch", "1",
             "--lakehouse", str(lakehouse.root), "--landing", str(landing), *no_tests],
            cwd=project, stdout=out, stderr=err,
        )  # fmt: skip
        try:
            wait_for_log(errors, BUILT, process, timeout=600)
            jvm = _java_children(process.pid)
            assert len(jvm) == 1
            before = _lifecycle_keys(lakehouse)
            # a batch over the sample's hours, generated aside and moved in whole
            batch = tmp_path / "batch"
            generate(
                GeneratorConfig(out=batch, messages=200, seed=5, start_ms=START_MS, hours=3),
                seeds_dir=project / "seeds",
            )
            (batch / "trace").rename(landing / "trace" / "batch")
            wait_for_log(errors, BUILT, process, timeout=600, times=2)
            assert _java_children(process.pid) == jvm  # the second build reused the first's JVM
            process.send_signal(signal.SIGTERM)
            assert process.wait(timeout=120) == 0, errors.read_text()[-3000:]
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
    log = errors.read_text()
    assert log.count(BUILT) == 2 and "retrylake: stopped watching" in log
    landed = {
        (row["consumer_group"], row["msg_id"])
        for row in read_ground_truth(batch)
        if row["trace_complete"]
    }
    assert landed and not landed & before
    assert landed <= _lifecycle_keys(lakehouse)


# Day-one mistakes stop before dbt or Spark starts: one line, no traceback, seconds not minutes.


def _one_line_failure(result: subprocess.CompletedProcess, code: int = 1) -> str:
    assert result.returncode == code, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("retrylake: "), result.stderr
    return lines[0]


def test_a_landing_folder_that_does_not_exist_is_named(project: Path, tmp_path: Path):
    lakehouse = tmp_path / "lakehouse"
    missing = tmp_path / "no-such-landing"
    result = retrylake(
        "build", "--lakehouse", str(lakehouse), "--landing", str(missing), cwd=project, timeout=60
    )
    line = _one_line_failure(result)
    assert str(missing) in line and "--landing" in line
    assert not (lakehouse / "metastore_db").exists()


def test_a_missing_landing_from_the_environment_stops_dbt_too(project: Path, tmp_path: Path):
    missing = tmp_path / "gone"
    result = subprocess.run(
        [sys.executable, "-m", "retrylake", "dbt", "--lakehouse", str(tmp_path / "l"), "--", "run"],
        cwd=project,
        env={**os.environ, "RETRYLAKE_LANDING": str(missing)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert str(missing) in _one_line_failure(result)


@pytest.mark.parametrize("command", [["build"], ["dbt", "--", "run"]])
def test_another_landing_than_the_lakehouse_was_built_from_is_refused(
    project: Path, tmp_path: Path, command: list[str]
):
    built_from, other = tmp_path / "landing-a", tmp_path / "landing-b"
    built_from.mkdir()
    other.mkdir()
    lakehouse = Lakehouse(tmp_path / "lakehouse", built_from)
    lakehouse.claim_landing(full_refresh=True)  # what the first build recorded
    where = ["--lakehouse", str(lakehouse.root), "--landing", str(other)]
    result = retrylake(command[0], *where, *command[1:], cwd=project, timeout=60)
    line = _one_line_failure(result)
    assert str(built_from) in line and str(other) in line and "--full-refresh" in line
    assert not lakehouse.metastore.exists()
    assert lakehouse.landing_record.read_text().strip() == str(built_from)


def test_a_usage_error_is_one_line_with_code_2(project: Path, tmp_path: Path):
    result = retrylake("dbt", "--lakehouse", str(tmp_path / "l"), cwd=project, timeout=60)
    assert "retrylake dbt -- test" in _one_line_failure(result, code=2)
    result = retrylake("query", "--lakehouse", str(tmp_path / "l"), "select 1", cwd=project)
    assert "retrylake build" in _one_line_failure(result, code=1)


def test_a_metastore_that_cannot_be_used_stops_the_build_in_one_line(project: Path, tmp_path: Path):
    lakehouse = tmp_path / "lakehouse"
    build = ("build", "--lakehouse", str(lakehouse), "--metastore")
    result = retrylake(*build, "postgresql://hive:secret@db/meta", cwd=project, timeout=60)
    assert "RETRYLAKE_METASTORE_PASSWORD" in _one_line_failure(result, code=2)
    unreachable = f"postgresql://hive@127.0.0.1:{free_port()}/meta"
    line = _one_line_failure(retrylake(*build, unreachable, cwd=project, timeout=120))
    assert f"could not create the Hive metastore schema in {unreachable}" in line
    assert "refused" in line
    assert not (lakehouse / "metastore.txt").exists()  # nothing recorded: the next try sets up
    assert not (lakehouse / "metastore_db").exists()  # and no Derby instead
