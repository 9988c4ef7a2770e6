"""`retrylake bench`: generate landing data of a given size (trace records, with the dlq/
export and the 5.x groups' spans, events and broker logs) and measure, in one run, the
generator's rate, the scan floor, a full build, the DuckDB peer of the same work (timed, and
compared with the marts row by row), a build with no new files, an incremental build of 1% new
records, and the same runs on a 10x larger history; then, for each history, a further 1% batch
built by `retrylake build` in a new process. A benchmark, not a test: it asserts nothing.

Each lakehouse has its own Derby metastore, and a process has one SparkSession, so the two
histories are measured in two child processes (`python -m retrylake.bench`).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import shutil
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from retrylake.bench import cpu
from retrylake.lakehouse import LANDING_FEEDS, Lakehouse
from retrylake.sim.engine import GeneratorConfig, generate

# Generated traffic averages about 4.6 trace records per published message.
RECORDS_PER_MESSAGE = 4.6
MESSAGES_PER_HOUR = 2_000_000 / 48  # the densest chunk: 3000 messages in 6 h (the default) is
# sparse; a busy cluster is denser, and density, not duration, is what a build pays for
NEW_SHARE = 0.01
BENCH_START = dt.datetime(2026, 3, 1, tzinfo=dt.UTC)
# The large history spans at least this many days (the small one a tenth), so that a run's cost
# is measured against a long history, not only a dense one.
HISTORY_DAYS = 30
# A consumer group that goes offline on day 3 and stays away: its retries waiting then stay
# overdue for the rest of the history, and a run must not pay for them again and again.
OFFLINE_GROUP = ("order-service", BENCH_START + dt.timedelta(days=2, hours=12))


def _generate(out: Path, messages: int, seed: int, start: dt.datetime, hours: float) -> dict:
    began = time.perf_counter()
    stats = generate(
        GeneratorConfig(
            out=out,
            messages=messages,
            seed=seed,
            start_ms=int(start.timestamp() * 1000),
            hours=hours,
            client_versions=("4.9", "4.8", "4.9.1"),
            dlq_export=True,
            grpc5_messages=messages // 5,  # the generator's default share of 5.x traffic
            offline_groups=((OFFLINE_GROUP[0], int(OFFLINE_GROUP[1].timestamp() * 1000)),),
        ),
        seeds_dir=Path.cwd() / "seeds",
    )
    grpc5_deliveries = int((stats.grpc5 or {}).get("deliveries", 0))
    return {
        "records": stats.records,
        "grpc5_deliveries": grpc5_deliveries,
        "seconds": round(time.perf_counter() - began, 1),
    }


HISTORY_FACTOR = 10
# A second 1% batch, built by `retrylake build` in a process of its own after the measured
# history's process ended: what a build run from cron pays (a JVM started and warmed each time).
NEW_PROCESS_BATCH = "new-process"


def _generate_chunk(job: tuple[Path, int, int, dt.datetime, float]) -> dict:
    out, messages, seed, start, hours = job
    if (out / "generation.json").exists():
        return json.loads((out / "generation.json").read_text())["stats"]
    shutil.rmtree(out, ignore_errors=True)
    return _generate(out, messages, seed, start, hours)


# Bumped when what the generator writes for the bench changes, so a cache is not reused.
DATA_VERSION = 5  # 5: two groups in a namespace; 4: publications shared, consumer draws keyed


def data_root(root: Path, records: int, seed: int) -> Path:
    return root / "data" / f"v{DATA_VERSION}-{records}-seed{seed}"


def prepare(root: Path, records: int, seed: int) -> dict:
    """Write the history in ten consecutive chunks, and the 1% batch that follows them.

    The small history is the first chunk; the large one is all ten, spanning `HISTORY_DAYS` or
    more. Chunks are generated two at a time (one process per core) and cached, so a rerun of
    the same size generates nothing.
    """
    messages = max(1000, int(records / RECORDS_PER_MESSAGE))
    hours = max(HISTORY_DAYS * 24 / HISTORY_FACTOR, messages / MESSAGES_PER_HOUR)
    data = data_root(root, records, seed)
    jobs = [
        (
            data / "history" / f"chunk-{index:02d}",
            messages,
            seed + index,
            BENCH_START + dt.timedelta(hours=index * hours),
            hours,
        )
        for index in range(HISTORY_FACTOR)
    ]
    later = BENCH_START + dt.timedelta(hours=HISTORY_FACTOR * hours)
    batch_hours = max(hours * NEW_SHARE, 0.1)
    # the 1% batch, then another after it for a build in a new process (NEW_PROCESS_BATCH)
    for number, batch in enumerate(("new", NEW_PROCESS_BATCH)):
        jobs.append(
            (
                data / batch,
                max(100, int(messages * NEW_SHARE)),
                seed + HISTORY_FACTOR + number,
                later + dt.timedelta(hours=number * batch_hours),
                batch_hours,
            )
        )
    began = time.perf_counter()
    with ProcessPoolExecutor(max_workers=2) as pool:
        chunks = list(pool.map(_generate_chunk, jobs))
    wall_seconds = time.perf_counter() - began
    return {
        "small": {"records": chunks[0]["records"]},
        "large": {"records": sum(chunk["records"] for chunk in chunks[:HISTORY_FACTOR])},
        "new": {"records": chunks[HISTORY_FACTOR]["records"]},
        NEW_PROCESS_BATCH: {"records": chunks[HISTORY_FACTOR + 1]["records"]},
        "generator": _generator_rate(chunks, wall_seconds),
    }


def _generator_rate(chunks: list[dict], wall_seconds: float) -> dict:
    """Records written per second over the chunks generated in this run (none when every chunk
    came from the cache): per second of one process's time (the chunks' seconds summed), and per
    second of wall time with both cores at work, given only when no chunk came from the cache."""
    timed = [chunk for chunk in chunks if "seconds" in chunk]
    seconds = sum(chunk["seconds"] for chunk in timed)
    records = sum(chunk["records"] for chunk in timed)
    all_generated = bool(timed) and len(timed) == len(chunks)
    return {
        "seconds": round(seconds, 1),
        "records": records,
        "records_per_second": round(records / seconds) if seconds else None,
        "wall_seconds": round(wall_seconds, 1) if all_generated else None,
        "records_per_wall_second": round(records / wall_seconds) if all_generated else None,
    }


def _history_chunks(data: Path, phase: str) -> list[Path]:
    chunks = sorted((data / "history").glob("chunk-*"))
    return chunks[:1] if phase == "small" else chunks


def _landing_with(lakehouse: Lakehouse, source: Path, batch: str) -> None:
    """Copy a generated chunk's feeds into the landing zone, each under its own batch folder."""
    for feed in LANDING_FEEDS:
        if (source / feed).is_dir():
            shutil.copytree(source / feed, lakehouse.landing / feed / batch)


def _driver_pid() -> int:
    from pyspark.sql import SparkSession

    return SparkSession.getActiveSession()._jvm.java.lang.ProcessHandle.current().pid()


def _driver_peak_rss_mb() -> float:
    for line in Path(f"/proc/{_driver_pid()}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return round(int(line.split()[1]) / 1024, 1)
    return float("nan")


def _node_seconds(lakehouse: Lakehouse, resource_type: str) -> dict[str, float]:
    """dbt's seconds for each node of a resource type (model, test) in the last invocation's
    run results, by the name after the project's (a generic test keeps its hash suffix)."""
    results = json.loads((lakehouse.dbt_target / "run_results.json").read_text())
    return {
        result["unique_id"].split(".", 2)[2]: round(result["execution_time"], 2)
        for result in results["results"]
        if result["unique_id"].startswith(resource_type + ".")
    }


def _model_seconds(lakehouse: Lakehouse) -> dict[str, float]:
    return _node_seconds(lakehouse, "model")


def _parquet_files(lakehouse: Lakehouse) -> dict[str, int]:
    marts = lakehouse.warehouse / "retrylake_unpublished.db"  # the tables the build wrote
    return {
        table.name: sum(1 for _ in table.rglob("*.parquet"))
        for table in sorted(marts.iterdir())
        if table.is_dir()
    }


SCAN_FLOOR_SQL = """
select split_part(record, '\\u0001', 1) as kind, count(*) as records
from (
    select explode(split(coalesce(body, cast(unbase64(body_base64) as string)), '\\u0002'))
        as record
    from (
        select get_json_object(value, '$.body') as body,
            get_json_object(value, '$.bodyBase64') as body_base64
        from landing_lines
    )
)
where record != ''
group by 1
"""


def scan_floor(spark, landing: Path) -> tuple[float, int]:
    """The cheapest honest pass over the landing files: read, split, count by kind."""
    began = time.perf_counter()
    spark.read.option("recursiveFileLookup", "true").text(
        str(landing / "trace")
    ).createOrReplaceTempView("landing_lines")
    counted = spark.sql(SCAN_FLOOR_SQL).collect()
    return time.perf_counter() - began, sum(row.records for row in counted)


# Tests are selected with the models they test unless excluded.
NO_TESTS = ["resource_type:test", "resource_type:unit_test"]
# The data tests only: the dbt unit tests read fixtures, not the data, and are timed apart.
DATA_TESTS = ["test", "--exclude-resource-type", "unit_test"]


def _timed_build(
    project_dir: Path,
    lakehouse: Lakehouse,
    *,
    full_refresh: bool = False,
    tests: bool = True,
    force: bool = False,
) -> dict:
    """Seeds and models (the data), then the data tests, each timed. A build that found
    nothing changed (and so ran no dbt) has no model times."""
    from retrylake.commands import build, dbt

    driver = _driver_pid()
    began, cpu_began = time.perf_counter(), cpu.sample(driver)
    ran = build(project_dir, lakehouse, full_refresh=full_refresh, exclude=NO_TESTS, force=force)
    built, cpu_built = time.perf_counter(), cpu.sample(driver)
    models = _model_seconds(lakehouse) if ran else {}
    if tests:
        dbt(project_dir, lakehouse, DATA_TESTS)
    return {
        "seconds": round(built - began, 1),
        "ran_dbt": ran,
        "data_tests_seconds": round(time.perf_counter() - built, 1) if tests else None,
        "models": models,
        "data_tests": _node_seconds(lakehouse, "test") if tests else {},
        "cpu": cpu.between(cpu_began, cpu_built),
        "data_tests_cpu": cpu.between(cpu_built, cpu.sample(driver)) if tests else None,
    }


def _timed_unit_tests(project_dir: Path, lakehouse: Lakehouse) -> float:
    """The ledger's dbt unit tests, which a build runs only when the code changed."""
    from retrylake.commands import dbt

    began = time.perf_counter()
    dbt(project_dir, lakehouse, ["test", "--resource-type", "unit_test"])
    return round(time.perf_counter() - began, 1)


def _phase_lakehouse(root: Path, phase: str) -> Lakehouse:
    """A history's lakehouse, named alike by its process and the new-process build after it
    (the landing is recorded by path, so both must give the same one)."""
    house = root.resolve() / phase / "lakehouse"
    return Lakehouse(house, house / "landing")


def run_phase(phase: str, data: Path, root: Path, project_dir: Path, tests: bool = True) -> dict:
    """In this process: scan floor and full build of one history, then the 1% batch on top."""
    from retrylake.spark import start_session

    lakehouse = _phase_lakehouse(root, phase)
    shutil.rmtree(lakehouse.root, ignore_errors=True)
    for chunk in _history_chunks(data, phase):
        _landing_with(lakehouse, chunk, f"history/{chunk.name}")
    spark = start_session(lakehouse)
    scan_seconds, scanned = scan_floor(spark, lakehouse.landing)
    result: dict = {"scan_floor": {"seconds": round(scan_seconds, 1), "records": scanned}}
    result["full_build"] = _timed_build(project_dir, lakehouse, full_refresh=True, tests=tests)
    result["unit_tests_seconds"] = _timed_unit_tests(project_dir, lakehouse) if tests else None
    result["duckdb_peer"] = _peer(lakehouse, project_dir, root / phase / "peer")
    # with nothing new: the up-to-date check, then the same dbt build run anyway
    result["no_op_build"] = _timed_build(project_dir, lakehouse, tests=False)
    result["no_op_build_forced"] = _timed_build(project_dir, lakehouse, tests=False, force=True)
    _landing_with(lakehouse, data / "new", "new")
    result["incremental_build"] = _timed_build(project_dir, lakehouse, tests=tests)
    result["parquet_files_per_mart"] = _parquet_files(lakehouse)
    result["driver_peak_rss_mb"] = _driver_peak_rss_mb()
    return result


def new_process_batch(root: Path, phase: str, data: Path, project_dir: Path, tests: bool) -> dict:
    """`retrylake build` of the second 1% batch in a new process, as cron runs it: the batch's
    models and data tests (the dbt unit tests passed with this code already). Its CPU is the
    machine's busy time meanwhile: the JVM is not this process's child, and the bench runs alone."""
    lakehouse = _phase_lakehouse(root, phase)
    _landing_with(lakehouse, data / NEW_PROCESS_BATCH, NEW_PROCESS_BATCH)
    left_out = ["resource_type:unit_test"] if tests else NO_TESTS
    command = [sys.executable, "-m", "retrylake", "build", "--lakehouse", str(lakehouse.root),
               "--landing", str(lakehouse.landing), "--exclude", *left_out]  # fmt: skip
    began, cpu_began = time.perf_counter(), cpu.sample(None)
    done = subprocess.run(command, cwd=project_dir, capture_output=True, text=True, check=False)
    seconds, cpu_ended = time.perf_counter() - began, cpu.sample(None)
    if done.returncode != 0:
        raise RuntimeError(
            f"the {phase} history's new-process build failed:\n{done.stderr[-4000:]}"
        )
    return {
        "seconds": round(seconds, 1),
        "machine_cpu_seconds": cpu.busy_seconds(cpu_began, cpu_ended),
        "models": _model_seconds(lakehouse),
    }


def _peer(lakehouse: Lakehouse, project_dir: Path, workdir: Path) -> dict:
    """The DuckDB peer over the same landing files, timed; then compared with the marts."""
    from retrylake.bench.duckdb_peer import compare_with_marts, run_peer

    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True)
    ran = run_peer(lakehouse.landing, project_dir / "seeds", workdir, project_dir)
    compared = compare_with_marts(workdir, lakehouse.warehouse)
    return {
        "seconds": ran["seconds"],
        "cpu_seconds": ran["cpu_seconds"],
        "agrees_with_marts": compared["agree"],
        "disagreements": {
            table: {
                key: result[key]
                for key in ("only_in_peer", "only_in_marts", "disagreeing_rows")
                if result.get(key)
            }
            for table, result in compared["tables"].items()
            if result.get("missing_mart")
            or not all(
                result[key] == 0 for key in ("only_in_peer", "only_in_marts", "disagreeing_rows")
            )
        },
    }


def _phase_figures(records: int, phase: dict) -> dict:
    scan, full = phase["scan_floor"]["seconds"], phase["full_build"]["seconds"]
    return {
        "records": records,
        "seconds": {
            "scan_floor": scan,
            "full_build": full,
            "full_build_data_tests": phase["full_build"]["data_tests_seconds"],
            "duckdb_peer": phase["duckdb_peer"]["seconds"],
            "no_op_build": phase["no_op_build"]["seconds"],
            "no_op_build_forced": phase["no_op_build_forced"]["seconds"],
            "incremental_build": phase["incremental_build"]["seconds"],
            "incremental_build_data_tests": phase["incremental_build"]["data_tests_seconds"],
            "incremental_build_new_process": phase[NEW_PROCESS_BATCH]["seconds"],
            "unit_tests": phase["unit_tests_seconds"],
        },
        "records_per_second": {
            "scan_floor": round(records / scan),
            "full_build": round(records / full),
        },
        "ratio_full_to_scan_floor": round(full / scan, 2),
        "ratio_full_to_duckdb_peer": round(full / phase["duckdb_peer"]["seconds"], 2),
        "no_op_build_ran_dbt": phase["no_op_build"]["ran_dbt"],
        "duckdb_peer_agrees_with_marts": phase["duckdb_peer"]["agrees_with_marts"],
        "duckdb_peer_disagreements": phase["duckdb_peer"]["disagreements"],
        "driver_peak_rss_mb": phase["driver_peak_rss_mb"],
        "model_seconds": {
            "full_build": phase["full_build"]["models"],
            "no_op_build_forced": phase["no_op_build_forced"]["models"],
            "incremental_build": phase["incremental_build"]["models"],
            "incremental_build_new_process": phase[NEW_PROCESS_BATCH]["models"],
        },
        "data_test_seconds": {
            "full_build": phase["full_build"]["data_tests"],
            "incremental_build": phase["incremental_build"]["data_tests"],
        },
        "parquet_files_per_mart": phase["parquet_files_per_mart"],
        "cpu": {
            "full_build": phase["full_build"]["cpu"],
            "full_build_data_tests": phase["full_build"]["data_tests_cpu"],
            "no_op_build_forced": phase["no_op_build_forced"]["cpu"],
            "incremental_build": phase["incremental_build"]["cpu"],
            "incremental_build_data_tests": phase["incremental_build"]["data_tests_cpu"],
            # its models and data tests: the machine's busy CPU while it ran
            "incremental_build_new_process": {
                "machine_cpu_seconds": phase[NEW_PROCESS_BATCH]["machine_cpu_seconds"]
            },
        },
    }


def _git(project_dir: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", "-C", str(project_dir), *args], capture_output=True, check=False
        )
    except OSError:  # no git on this machine
        return None
    return done.stdout.decode(errors="replace") if done.returncode == 0 else None


def code_state(project_dir: Path) -> dict:
    """The commit the project's files are at and whether they differ from it (changes to
    tracked files, or files git does not ignore); all None outside a git checkout."""
    commit = _git(project_dir, "rev-parse", "HEAD")
    if commit is None:
        return {"commit": None, "clean": None, "fingerprint": None}
    changes = (_git(project_dir, "status", "--porcelain") or "") + (
        _git(project_dir, "diff", "HEAD", "--binary") or ""
    )
    return {
        "commit": commit.strip(),
        "clean": changes == "",
        "fingerprint": hashlib.sha256(changes.encode()).hexdigest()[:16],
    }


def _code_figures(before: dict, after: dict) -> dict:
    """What the bench ran: the commit, whether the files matched it, and whether they stayed
    the same from the first build to the last (the builds read the project's files as they go)."""
    return {
        "commit": before["commit"],
        "clean": before["clean"],
        "unchanged_during_run": None if before["commit"] is None else before == after,
    }


def bench(root: Path, records: int, seed: int, project_dir: Path, tests: bool = True) -> dict:
    root.mkdir(parents=True, exist_ok=True)
    code_before = code_state(project_dir)
    print(
        "retrylake bench: generating (cached after the first run) ...", file=sys.stderr, flush=True
    )
    generated = prepare(root, records, seed)
    data = data_root(root, records, seed)
    phases = {}
    for phase in ("small", "large"):
        print(f"retrylake bench: measuring the {phase} history ...", file=sys.stderr, flush=True)
        child = subprocess.run(
            [
                sys.executable,
                "-m",
                "retrylake.bench",
                phase,
                "--dir",
                str(root),
                "--data",
                str(data),
                "--project-dir",
                str(project_dir),
                *([] if tests else ["--skip-tests"]),
            ],
            cwd=project_dir,
            capture_output=True,
            text=True,
            check=False,
        )
        if child.returncode != 0:
            raise RuntimeError(f"bench phase {phase} failed:\n{child.stderr[-4000:]}")
        phases[phase] = json.loads(child.stdout.strip().splitlines()[-1])
        # its process has ended, and with it the JVM that held the lakehouse's Derby
        phases[phase][NEW_PROCESS_BATCH] = new_process_batch(root, phase, data, project_dir, tests)
    code = _code_figures(code_before, code_state(project_dir))
    small = _phase_figures(generated["small"]["records"], phases["small"])
    large = _phase_figures(generated["large"]["records"], phases["large"])
    return {
        "records": small["records"],
        "records_new": generated["new"]["records"],
        "records_new_process_batch": generated[NEW_PROCESS_BATCH]["records"],
        "history": small,
        "history_10x": large,
        "ratio_incremental_10x_to_1x": round(
            large["seconds"]["incremental_build"] / small["seconds"]["incremental_build"], 2
        ),
        "driver_peak_rss_mb": max(small["driver_peak_rss_mb"], large["driver_peak_rss_mb"]),
        "generator": generated["generator"],
        "code": code,
    }
