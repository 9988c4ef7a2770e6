"""The incremental law on the real embedded Spark: for any split of a landing set into batches,
building after each batch gives marts identical, row for row, to one full-refresh build of all
of it, building again with no new data changes nothing, and a build killed in the middle of a
model, then run again, publishes those same marts too; a copy of the lakehouse it leaves is
refused rather than built into the original's folders.

Batches are made of landing *lines*, re-packed into new files, so a split can cut through a
file, deliver a lifecycle's records in reverse order, hold a Pub back until after its message
was consumed, hold SubAfters back for a later batch, and replay old trace messages a day late.
The dlq/ export's lines ride in the same batches, into dlq/ files: before or after the trace of
their messages; so do the 5.x gRPC groups' span batches, listener events and broker log lines,
into otel/, consume_events/ and broker_logs/ files. A trace file cut short lands with the second
batch."""

from __future__ import annotations

import gzip
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from retrylake.commands import build, dbt
from retrylake.errors import DbtFailedError
from retrylake.lakehouse import Lakehouse
from retrylake.sim.engine import GeneratorConfig, generate
from spark_udfs.snapshots import PUBLISHED_FOLDER, published_marts
from tests.conftest import PROJECT_DIR
from tests.integration.helpers import (
    fact_marts,
    retrylake_tables,
    table_snapshot,
    unpublished_fact_marts,
    wait_for_log,
)

pytestmark = [pytest.mark.integration, pytest.mark.spark]

# Compared besides the fact marts: the effective configuration (and the quarantine, below).
CONFIG_MARTS = ("consumer_groups", "delay_levels")
# rebuilt whole on every run, from the fact marts and the dlq/ copies
DLQ_MARTS = ("dlq_messages", "dlq_reconciliation", "schedule_fit")
# the quarantine's columns that a landing line decides (its file and line numbers depend on
# how the lines were batched)
QUARANTINE_COLUMNS = ("raw_text", "reason", "record_index")
DAY_MS = 86_400_000
_DAY_BEFORE_MS = 1_772_236_800_000  # 2026-02-28T00:00Z
_MIDNIGHT_MS = _DAY_BEFORE_MS + DAY_MS
# The 5.x gRPC feeds; their lines travel in the batches as "<feed>\0<line>".
GRPC_FEEDS = {"otel": ".jsonl", "consume_events": ".jsonl", "broker_logs": ".log"}


def _read_lines(landing: Path, feed: str = "trace", pattern: str = "*.jsonl*") -> list[str]:
    lines = []
    for path in sorted((landing / feed).rglob(pattern)):
        raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
        lines += raw.decode("utf-8").splitlines()
    return lines


def _grpc_feed(line: str) -> str | None:
    feed = line.split("\0", 1)[0]
    return feed if feed in GRPC_FEEDS and "\0" in line else None


def _grpc_ms(line: str) -> int:
    """A 5.x line's time: a span batch's first start, an event's end, a log line's store time."""
    feed, text = line.split("\0", 1)
    if feed == "broker_logs":
        found = re.search(r"storeTimestamp=([0-9]+)", text)
        return int(found.group(1)) if found else 0
    found = re.search(r'"(?:startTimeUnixNano|ts_end)":"?([0-9]+)', text)
    if not found:
        return 0
    value = int(found.group(1))
    return value // 1_000_000 if feed == "otel" else value


def _kinds(line: str) -> set[str]:
    try:
        message = json.loads(line)
    except json.JSONDecodeError:
        return set()
    body = message.get("body", "")
    return {record.split("\u0001", 1)[0] for record in body.split("\u0002") if record}


def _store_ms(line: str) -> int:
    if _grpc_feed(line):
        return _grpc_ms(line)
    try:
        return int(json.loads(line)["storeTimestamp"])
    except (json.JSONDecodeError, KeyError, ValueError):
        return 0


def _is_dlq_copy(line: str) -> bool:
    return '"offsetMsgId"' in line and not _grpc_feed(line)


# A trace file cut short, as an exporter killed mid-write leaves it: the text reader skips it and
# the lines model's post-hook records it as line 0 (the full landing's one build, and a split's
# second batch, an incremental run).
_NUMBERED = "".join(f'{{"n": {n}}}\n' for n in range(3000)).encode()
BROKEN_TRACE_FILE = gzip.compress(_NUMBERED, mtime=0)[:3000]
UNREADABLE = "file could not be read: truncated or corrupt"


def _write_batch(landing: Path, number: int, lines: list[str], *, broken_file=False) -> None:
    if broken_file:
        folder = landing / "trace" / f"batch-{number:02d}"
        folder.mkdir(parents=True)
        (folder / "part-broken.jsonl.gz").write_bytes(BROKEN_TRACE_FILE)
    plain = [line for line in lines if not _grpc_feed(line)]
    feeds = [
        ("trace", ".jsonl", [line for line in plain if not _is_dlq_copy(line)]),
        ("dlq", ".jsonl", [line for line in plain if _is_dlq_copy(line)]),
    ]
    feeds += [
        (feed, suffix, [line.split("\0", 1)[1] for line in lines if _grpc_feed(line) == feed])
        for feed, suffix in GRPC_FEEDS.items()
    ]
    for feed, suffix, feed_lines in feeds:
        folder = landing / feed / f"batch-{number:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        half = len(feed_lines) // 2  # one plain and one gzipped file per batch
        (folder / f"part-0{suffix}").write_text("".join(line + "\n" for line in feed_lines[:half]))
        (folder / f"part-1{suffix}.gz").write_bytes(
            gzip.compress("".join(line + "\n" for line in feed_lines[half:]).encode(), mtime=0)
        )


def _by_name(spark, table: str):
    """The table with its columns in name order: a column an upgrade added comes last in an
    older lakehouse's table, and where the model puts it in a new one's."""
    frame = spark.table(table)
    return frame.select(*sorted(frame.columns))


def _marts(spark, lakehouse: Lakehouse) -> dict[str, list[tuple]]:
    names = [*fact_marts(lakehouse), *CONFIG_MARTS, *DLQ_MARTS]
    snapshot = {name: table_snapshot(spark, _by_name(spark, f"retrylake.{name}")) for name in names}
    # the fact marts outside the marts schema: an incremental build keeps them equal too
    for name in unpublished_fact_marts(lakehouse):
        snapshot[name] = table_snapshot(spark, _by_name(spark, name))
    # the dead-letter copies the exports hold, whichever batch and file brought them
    snapshot["stg_dlq__messages"] = table_snapshot(
        spark,
        "retrylake_staging.stg_dlq__messages",
        drop=("load_id", "source_file", "line_number"),
    )
    snapshot["landing_quarantine"] = table_snapshot(
        spark, spark.table("retrylake.landing_quarantine").select(*QUARANTINE_COLUMNS)
    )
    snapshot["landing_ignored"] = table_snapshot(
        spark, _set_aside(spark.table("retrylake.landing_ignored"))
    )
    return snapshot


def _set_aside(frame):
    """landing_ignored's records per feed and reason: which file holds a line (and so which
    file a copy landed again counts in) depends on how the lines were batched."""
    return frame.groupBy("source", "reason").sum("records")


@pytest.fixture(scope="module")
def landing_lines(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    out = tmp_path_factory.mktemp("law-generated")
    generate(
        GeneratorConfig(
            out=out,
            messages=2500,
            seed=23,
            # across midnight: a lifecycle whose first delivery arrives late moves to another day
            start_ms=_DAY_BEFORE_MS + 21 * 3_600_000,
            hours=6,
            client_versions=("4.9", "4.9.1", "4.8"),
            malformed_share=0.002,
            duplicate_share=0.01,
            dlq_export=True,
            grpc5_messages=500,
        ),
        seeds_dir=PROJECT_DIR / "seeds",
    )
    lines = _read_lines(out)
    dlq_lines = _read_lines(out, "dlq")
    assert dlq_lines and all(_is_dlq_copy(line) for line in dlq_lines)
    grpc_lines = [
        f"{feed}\0{line}"
        for feed, suffix in GRPC_FEEDS.items()
        for line in _read_lines(out, feed, f"*{suffix}*")
    ]
    assert {_grpc_feed(line) for line in grpc_lines} == set(GRPC_FEEDS)
    # Late duplicates of old trace messages: the first consumer trace messages again, a day on.
    replayed = [
        json.dumps({**json.loads(line), "storeTimestamp": _store_ms(line) + DAY_MS})
        for line in lines[:400]
        if "SubBefore" in _kinds(line)
    ][:20]
    # Records landed again, in whichever batch: span batches exported again, listener events
    # and broker DLQ lines shipped twice (landing_ignored counts each copy after the first).
    shipped_again = [
        line
        for feed, text in (("otel", ""), ("consume_events", ""), ("broker_logs", "to DLQ"))
        for line in [line for line in grpc_lines if _grpc_feed(line) == feed and text in line][:4]
    ]
    return lines + dlq_lines + grpc_lines + replayed + shipped_again


@pytest.fixture(scope="module")
def full_landing(landing_lines, tmp_path_factory) -> Path:
    landing = tmp_path_factory.mktemp("law-full")
    _write_batch(landing, 0, landing_lines, broken_file=True)
    return landing


@pytest.fixture(scope="module")
def full_build(spark, lakehouse: Lakehouse, full_landing: Path):
    # with every data test; the dbt unit tests run with the sample build
    build(
        PROJECT_DIR,
        Lakehouse(lakehouse.root, full_landing),
        full_refresh=True,
        exclude=["resource_type:unit_test"],
    )
    return _marts(spark, lakehouse)


def _build_in_batches(
    spark,
    lakehouse: Lakehouse,
    batches: list[list[str]],
    landing: Path,
    *,
    partly: int = -1,
):
    """One run after each batch. After batch ``partly``, first a run of the ledger's first
    marts only (as a run killed once message_lifecycles is written leaves them) and a run of
    no fact mart, which publish nothing; then a whole run with nothing new, which must mend
    what the first left: the days lifecycles moved from."""
    assert sum(len(batch) for batch in batches) > 0
    for number, batch in enumerate(batches):
        _write_batch(landing, number, batch, broken_file=number == 1)
        # `run` rather than `build`: the seeds are loaded and the data tests ran in the full build
        command = ["run", "--full-refresh"] if number == 0 else ["run"]
        if number == partly:
            shown = _published_build(spark, "message_lifecycles")
            dbt(
                PROJECT_DIR,
                Lakehouse(lakehouse.root, landing),
                ["run", "-s", "+message_lifecycles"],
            )
            # (the consumer_groups mart's model)
            settings_only = ["run", "-s", "consumer_group_settings"]
            dbt(PROJECT_DIR, Lakehouse(lakehouse.root, landing), settings_only)
            ran = json.loads((lakehouse.dbt_target / "run_results.json").read_text())["results"]
            models = [result for result in ran if result["unique_id"].startswith("model.")]
            assert [result["status"] for result in models] == ["success"]
            # readers keep the last whole build: the marts after message_lifecycles are stale
            assert _published_build(spark, "group_retry_stats_daily") == shown
            assert _published_build(spark, "message_lifecycles") == shown
            assert _published_build(spark, "consumer_groups") == shown
            command = ["run"]
        dbt(PROJECT_DIR, Lakehouse(lakehouse.root, landing), command)
        # between batches too, where a later batch could mend what this run left behind
        _assert_stats_count_the_lifecycles(spark)
        # (after the partial runs, this batch's files were read before this run)
        unread = [] if number in (0, partly) else _landed_files(landing / "trace", number)
        _assert_run_left_its_reads(spark, lakehouse, unread)
    return _marts(spark, lakehouse)


def _assert_stats_count_the_lifecycles(spark) -> None:
    """Each day's stats count that day's lifecycles and their deliveries, by definition."""
    counted = spark.sql(
        "select consumer_group, stat_date, messages, deliveries"
        " from retrylake_unpublished.group_retry_stats_daily"
    )
    lifecycles = spark.sql(
        "select consumer_group, lifecycle_date, count(*), sum(deliveries)"
        " from retrylake_unpublished.message_lifecycles group by 1, 2"
    )
    assert sorted(map(tuple, counted.collect())) == sorted(map(tuple, lifecycles.collect()))


def _landed_files(feed: Path, number: int) -> list[str]:
    """The files of batch ``number`` in a feed's folder that hold bytes, as Spark names them."""
    folder = feed / f"batch-{number:02d}"
    return sorted(f"file:{path}" for path in folder.iterdir() if path.stat().st_size > 0)


def _assert_run_left_its_reads(spark, lakehouse: Lakehouse, unread_trace: list[str]) -> None:
    """What the last run left in the session for its later nodes, under its invocation id and
    the relation it was read for (macros/incremental/remembered_for_run.sql): its scope's
    partitions, as its table holds them, and the trace files it found unread (none on a full
    refresh, which reads every file)."""
    run = json.loads((lakehouse.dbt_target / "run_results.json").read_text())
    invocation = run["metadata"]["invocation_id"]
    hours: dict[str, set[int]] = {}
    for day, hour in spark.table("retrylake_meta.int_run__refresh_partitions").collect():
        if day is not None:
            hours.setdefault(str(day), set()).add(hour)
    expected = [[day, ", ".join(map(str, sorted(hours[day])))] for day in sorted(hours)]
    scope = spark.conf.get("retrylake.refresh_partitions")
    prefix = f"{invocation} retrylake_meta.int_run__refresh_partitions "
    assert scope.startswith(prefix), scope[:200]
    assert json.loads(scope[len(prefix) :]) == expected
    found = spark.conf.get("retrylake.unread_files.trace_file_list", "")
    prefix = f"{invocation} retrylake_staging.stg_landing__trace_lines "
    if unread_trace:
        assert found.startswith(prefix), found[:200]
        assert sorted(json.loads(found[len(prefix) :])) == unread_trace
    else:  # a full refresh lists none; a run after the batch's files were read finds none
        assert not found.startswith(prefix) or json.loads(found[len(prefix) :]) == []


def _assert_same(built: dict, full: dict) -> None:
    for name in full:
        assert built[name] == full[name], name


def _as_judged_by_an_earlier_release(spark, table: str) -> None:
    """Make the first day of ``table`` (a mart partitioned by day) count other numbers, as
    a release with other rules would have: its `messages` less one."""
    first_day = spark.sql(f"select min(stat_date) from {table}").collect()[0][0]
    rows = spark.table(table).where(f"stat_date = date'{first_day}'")
    changed = rows.withColumn("messages", rows["messages"] - 1).select(*rows.columns)
    # held in memory: Spark refuses to overwrite a table it reads in the same query
    spark.createDataFrame(changed.collect(), changed.schema).write.insertInto(table, overwrite=True)
    assert spark.table(table).where(f"stat_date = date'{first_day}'").count() == rows.count()


def _published_build(spark, mart: str) -> str:
    shown = spark.sql(f"show tblproperties retrylake.{mart} ('retrylake.published_build')")
    return shown.collect()[0][-1]


def _as_before_the_column(spark, table: str, column: str) -> None:
    """Make ``table`` (a partitioned fact mart) what a lakehouse built before ``column`` existed
    holds: the table and every one of its files without it."""
    kept = [name for name in spark.table(table).columns if name != column]
    assert len(kept) < len(spark.table(table).columns)
    spark.sql(f"alter table {table} rename to {table}_before")
    spark.sql(
        f"create table {table} using parquet partitioned by (lifecycle_date, lifecycle_hour) "
        f"as select {', '.join(f'`{name}`' for name in kept)} from {table}_before"
    )
    spark.sql(f"drop table {table}_before")


def test_a_random_split_builds_the_same_marts(
    spark, lakehouse, landing_lines, full_build, tmp_path
):
    rng = random.Random(1)
    batches: list[list[str]] = [[], []]
    for line in landing_lines:
        batches[rng.randrange(2)].append(line)
    landing = Lakehouse(lakehouse.root, tmp_path / "landing")
    built = _build_in_batches(spark, lakehouse, batches, landing.landing)
    _assert_same(built, full_build)
    # of each 5.x feed, a copy landed in the second batch after one in the first: the second
    # run found the first copy among the loads counted before
    spread = {_grpc_feed(line) for line in set(batches[0]) & set(batches[1])}
    assert spread >= set(GRPC_FEEDS), spread
    again = {"listener event landed again", "DLQ log line landed again"}
    assert again <= {reason for _, reason, _ in full_build["landing_ignored"]}
    # the cut-short file, recorded by the full build and by the second batch's run alike
    assert [row for row in full_build["landing_quarantine"] if UNREADABLE in row] != []

    # An upgrade that adds a column to a fact mart: the next run writes the whole history
    # again, so that every file has the column and the build publishes (a published view
    # reads the files), and the marts are still the full build's. Its first run stops once
    # message_lifecycles is written, and the marts after it hold what the release before
    # judged (here a day of stats that disagrees with its lifecycles): the next run, with
    # nothing new, takes the whole history again and mends them.
    _as_before_the_column(spark, "retrylake_unpublished.message_lifecycles", "dropped_deliveries")
    _as_judged_by_an_earlier_release(spark, "retrylake_unpublished.group_retry_stats_daily")
    shown = _published_build(spark, "message_lifecycles")
    dbt(PROJECT_DIR, landing, ["run", "-s", "+message_lifecycles"])
    assert _published_build(spark, "message_lifecycles") == shown
    dbt(PROJECT_DIR, landing, ["run"])
    assert _published_build(spark, "message_lifecycles") != shown
    assert "dropped_deliveries" in spark.table("retrylake.message_lifecycles").columns
    _assert_stats_count_the_lifecycles(spark)
    _assert_same(_marts(spark, lakehouse), full_build)
    # complete: the runs after it are incremental again
    assert not spark.catalog.tableExists("retrylake_meta.history_unsettled")

    # A full refresh of a staging table alone (as one stopped after it leaves them) started its
    # load ids again: a run that is not a full refresh is refused before it changes anything,
    # until a full refresh of every model completes (the next module's first build, or the
    # adversarial split's, is one). A full refresh of a fact mart alone restarts no load id.
    dbt(PROJECT_DIR, landing, ["run", "--full-refresh", "-s", "group_retry_stats_daily"])
    assert not spark.catalog.tableExists("retrylake_meta.full_refresh_pending")
    dbt(PROJECT_DIR, landing, ["run", "--full-refresh", "-s", "stg_landing__broker_log_lines"])
    files = {path: path.stat().st_mtime_ns for path in lakehouse.warehouse.rglob("*")}
    with pytest.raises(DbtFailedError, match="did not rebuild every incremental model"):
        dbt(PROJECT_DIR, landing, ["run", "-s", "group_retry_stats_daily"])
    assert {path: path.stat().st_mtime_ns for path in lakehouse.warehouse.rglob("*")} == files


def test_adversarial_split_builds_the_same_marts(
    spark, lakehouse, landing_lines, full_build, tmp_path
):
    """The hours after midnight first, then those before, which move lifecycles to the day
    before; Pubs only at the end; the SubAfter-only trace messages of the earlier hours held
    back to the end; the day-late replays last of all. The earlier hours' run stops after
    message_lifecycles, so the next run must rewrite the day the moved lifecycles left in the
    marts after it, though nothing new names that day."""
    originals, replays = landing_lines[:-20], landing_lines[-20:]
    producer = [line for line in originals if _kinds(line) == {"Pub"}]
    consumer = [line for line in originals if _kinds(line) != {"Pub"}]
    # cut at midnight: the earlier batch names no lifecycle of the later day
    early = [line for line in consumer if _store_ms(line) < _MIDNIGHT_MS]
    late = [line for line in consumer if _store_ms(line) >= _MIDNIGHT_MS]
    held_back = [line for line in early if _kinds(line) == {"SubAfter"}]
    early = [line for line in early if line not in set(held_back)]
    batches = [late, early, producer + held_back, replays]
    assert held_back and producer and replays
    built = _build_in_batches(spark, lakehouse, batches, tmp_path / "landing", partly=1)
    _assert_same(built, full_build)
    # its first run, a full refresh of every model, settled the one the random split left
    assert not spark.catalog.tableExists("retrylake_meta.full_refresh_pending")

    # and building again with no new data changes nothing: not the marts, not a table behind
    # them. The last run's bookkeeping (its refresh scope, the load ids it processed, the
    # builds it published) is not data, and the intermediate views show that run's scope.
    run_scoped = ("retrylake_meta.", "retrylake_intermediate.")
    tables = [name for name in retrylake_tables(spark) if not name.startswith(run_scoped)]
    assert {"retrylake_staging.stg_trace__records", "retrylake.consume_attempts"} <= set(tables)
    before = {name: table_snapshot(spark, name) for name in tables}
    dbt(PROJECT_DIR, Lakehouse(lakehouse.root, tmp_path / "landing"), ["run"])
    assert [name for name in retrylake_tables(spark) if not name.startswith(run_scoped)] == tables
    for name in tables:
        assert table_snapshot(spark, name) == before[name], name
    _assert_same(_marts(spark, lakehouse), full_build)


# The crash: SIGKILL once the build has begun writing this model, late in the graph.
KILL_WHEN = "START sql incremental model retrylake_unpublished.message_lifecycles"


@pytest.fixture(scope="module")
def recovered_lakehouse(full_landing, tmp_path_factory) -> Path:
    """`retrylake build` in its own process and lakehouse, killed with SIGKILL inside a model's
    write, then `retrylake dbt -- run`, the recovery, in another process."""
    crashed = tmp_path_factory.mktemp("law-crash") / "crashed-lakehouse"
    where = ("--lakehouse", str(crashed), "--landing", str(full_landing))
    log = crashed / "dbt" / "logs" / "dbt.log"
    # its console and the JVM's own messages, shown if it ends before the kill
    output = crashed.parent / "killed-build.out"
    with output.open("w") as sink:
        victim = subprocess.Popen(
            # no data or unit tests: they would only delay the kill, and the full build ran them
            [sys.executable, "-m", "retrylake", "build", *where,
             "--exclude", "resource_type:test", "resource_type:unit_test"],
            cwd=PROJECT_DIR,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
    wait_for_log(log, re.escape(KILL_WHEN), victim, timeout=600, errors=output)
    time.sleep(1.5)  # inside the model's write
    os.killpg(victim.pid, signal.SIGKILL)
    victim.wait()
    assert victim.returncode == -signal.SIGKILL

    # Run again: `dbt run` is the recovery; data tests write nothing.
    rerun = subprocess.run(
        [sys.executable, "-m", "retrylake", "dbt", *where, "--", "run"],
        cwd=PROJECT_DIR,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert rerun.returncode == 0, rerun.stdout[-4000:] + rerun.stderr[-2000:]
    return crashed


def test_a_killed_build_recovers_to_the_full_build(
    spark, lakehouse, recovered_lakehouse, full_build
):
    """What the recovery publishes equals the full build of the same landing, mart for mart."""
    crashed = recovered_lakehouse
    published = set(published_marts(crashed / "warehouse" / PUBLISHED_FOLDER))
    compared = sorted(published & set(full_build))
    assert {*fact_marts(lakehouse), *CONFIG_MARTS, *DLQ_MARTS} <= set(compared), compared
    assert "landing_ignored" in compared
    for name in compared:
        files = published_marts(crashed / "warehouse" / PUBLISHED_FOLDER)[name]
        frame = spark.read.parquet(str(files))
        if name == "landing_ignored":  # as full_build read them (`_marts`)
            frame = _set_aside(frame)
        elif name == "landing_quarantine":
            frame = frame.select(*QUARANTINE_COLUMNS)
        else:
            frame = frame.select(*sorted(spark.table(f"retrylake.{name}").columns))
        assert table_snapshot(spark, frame) == full_build[name], name


def test_a_copied_lakehouse_is_refused_before_it_writes(
    recovered_lakehouse, full_landing, tmp_path
):
    """Its metastore still names the original's folders: a build of the copy stops at the
    session's start, naming them, and the original's warehouse is left as it was."""
    original = recovered_lakehouse / "warehouse"
    copied = tmp_path / "copied-lakehouse"
    shutil.copytree(recovered_lakehouse, copied, symlinks=True)
    before = {path: path.stat().st_mtime_ns for path in original.rglob("*")}
    result = subprocess.run(
        [sys.executable, "-m", "retrylake", "build", "--force", "--lakehouse", str(copied),
         "--landing", str(full_landing)],
        cwd=PROJECT_DIR,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )  # fmt: skip
    assert result.returncode == 1, result.stderr[-2000:]
    assert "was copied or moved" in result.stderr, result.stderr[-2000:]
    assert str(original) in result.stderr and str(copied / "warehouse") in result.stderr
    assert {path: path.stat().st_mtime_ns for path in original.rglob("*")} == before
