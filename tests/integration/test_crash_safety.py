"""A build killed with SIGKILL in the middle of a model, then run again, ends with marts equal
to those of a clean build of the same landing data."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from retrylake.commands import build
from retrylake.lakehouse import Lakehouse
from retrylake.sim.engine import GeneratorConfig, generate
from spark_udfs.snapshots import PUBLISHED_FOLDER, published_marts
from tests.conftest import PROJECT_DIR
from tests.integration.helpers import fact_marts, table_snapshot

pytestmark = [pytest.mark.integration, pytest.mark.spark]

KILL_WHEN = "START sql incremental model retrylake_unpublished.message_lifecycles"


def _published_rows(spark, warehouse: Path, name: str, columns: list[str]) -> list[tuple]:
    """A mart's rows as the other lakehouse published them, read from its snapshot's files."""
    snapshot = published_marts(warehouse / PUBLISHED_FOLDER)[name]
    frame = spark.read.parquet(str(snapshot)).select(*columns)
    return sorted(
        (tuple(row) for row in frame.collect()),
        key=lambda values: tuple((value is None, str(value)) for value in values),
    )


def test_a_killed_build_recovers_to_a_clean_build(spark, lakehouse: Lakehouse, tmp_path: Path):
    landing = tmp_path / "landing"
    generate(GeneratorConfig(out=landing, messages=1500, seed=5), seeds_dir=PROJECT_DIR / "seeds")
    crashed = tmp_path / "crashed-lakehouse"
    command = [
        sys.executable,
        "-m",
        "retrylake",
        "build",
        "--lakehouse",
        str(crashed),
        "--landing",
        str(landing),
    ]
    log = crashed / "dbt" / "logs" / "dbt.log"

    victim = subprocess.Popen(
        # the data and unit tests run in other modules; here they would only delay the kill
        [*command, "--exclude", "resource_type:test", "resource_type:unit_test"],
        cwd=PROJECT_DIR,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 600
    while not (log.exists() and KILL_WHEN in log.read_text(errors="replace")):
        assert victim.poll() is None, "the build ended before the model to interrupt started"
        assert time.monotonic() < deadline
        time.sleep(0.2)
    time.sleep(1.5)  # inside the model's write
    os.killpg(victim.pid, signal.SIGKILL)
    victim.wait()
    assert victim.returncode == -signal.SIGKILL

    # Run again: `dbt run` is the recovery; data tests write nothing.
    rerun = subprocess.run(
        [*command[:3], "dbt", *command[4:], "--", "run"],
        cwd=PROJECT_DIR,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert rerun.returncode == 0, rerun.stdout[-4000:] + rerun.stderr[-2000:]

    # seeds and models only: data tests write nothing, and other modules run them
    build(
        PROJECT_DIR,
        Lakehouse(lakehouse.root, landing),
        full_refresh=True,
        exclude=["resource_type:test", "resource_type:unit_test"],
    )
    for name in fact_marts(lakehouse):
        clean = spark.table(f"retrylake.{name}")
        expected = table_snapshot(spark, f"retrylake.{name}")
        recovered = _published_rows(spark, crashed / "warehouse", name, clean.columns)
        assert recovered == expected, name


def test_the_folder_of_a_table_killed_while_created_is_removed(spark, lakehouse: Lakehouse):
    """A kill inside a table's first write leaves its folder, which Spark refuses to create a
    table over; starting the session on the lakehouse removes it and nothing else."""
    from retrylake.spark import start_session

    spark.sql("create database if not exists retrylake")
    spark.sql("create table if not exists retrylake.kept_table (n int) using parquet")
    spark.sql("insert overwrite table retrylake.kept_table select 1")
    unfinished = lakehouse.warehouse / "retrylake.db" / "unfinished_table" / "_temporary" / "0"
    unfinished.mkdir(parents=True)
    (unfinished / "part-00000.parquet").write_bytes(b"half a file")

    start_session(lakehouse)

    assert not (lakehouse.warehouse / "retrylake.db" / "unfinished_table").exists()
    assert spark.table("retrylake.kept_table").collect()[0].n == 1
    spark.sql("create table retrylake.unfinished_table using parquet as select 2 as n")
    assert spark.table("retrylake.unfinished_table").collect()[0].n == 2
    spark.sql("drop table retrylake.unfinished_table")
    spark.sql("drop table retrylake.kept_table")
