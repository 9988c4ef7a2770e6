"""`retrylake bench`: generate trace data of a given size and measure, in one run, the scan
floor, a full build, an incremental build of 1% new records, and the same incremental build on a
10x larger history. A benchmark, not a test: it asserts nothing.

Each lakehouse has its own Derby metastore, and a process has one SparkSession, so the two
histories are measured in two child processes (`python -m retrylake.bench`).
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from retrylake.lakehouse import Lakehouse
from retrylake.sim.engine import GeneratorConfig, generate

# Generated traffic averages about 4.6 trace records per published message.
RECORDS_PER_MESSAGE = 4.6
MESSAGES_PER_HOUR = 2_000_000 / 48  # the generator's default density: 3000 messages in 6 h is
# sparse; a busy cluster is denser, and density, not duration, is what a build pays for
NEW_SHARE = 0.01
BENCH_START = dt.datetime(2026, 3, 1, tzinfo=dt.UTC)


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
        ),
        seeds_dir=Path.cwd() / "seeds",
    )
    return {"records": stats.records, "seconds": round(time.perf_counter() - began, 1)}


HISTORY_FACTOR = 10


def _generate_chunk(job: tuple[Path, int, int, dt.datetime, float]) -> dict:
    out, messages, seed, start, hours = job
    if (out / "generation.json").exists():
        return json.loads((out / "generation.json").read_text())["stats"]
    shutil.rmtree(out, ignore_errors=True)
    return _generate(out, messages, seed, start, hours)


def data_root(root: Path, records: int, seed: int) -> Path:
    return root / "data" / f"{records}-seed{seed}"


def prepare(root: Path, records: int, seed: int) -> dict:
    """Write the history in ten consecutive chunks, and the 1% batch that follows them.

    The small history is the first chunk; the large one is all ten. Chunks are generated two at
    a time (one process per core) and cached, so a rerun of the same size generates nothing.
    """
    messages = max(1000, int(records / RECORDS_PER_MESSAGE))
    hours = max(1.0, messages / MESSAGES_PER_HOUR)
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
    jobs.append(
        (
            data / "new",
            max(100, int(messages * NEW_SHARE)),
            seed + HISTORY_FACTOR,
            later,
            max(hours * NEW_SHARE, 0.1),
        )
    )
    with ProcessPoolExecutor(max_workers=2) as pool:
        chunks = list(pool.map(_generate_chunk, jobs))
    return {
        "small": {"records": chunks[0]["records"]},
        "large": {"records": sum(chunk["records"] for chunk in chunks[:HISTORY_FACTOR])},
        "new": {"records": chunks[-1]["records"]},
        "generator_seconds": round(sum(chunk.get("seconds", 0) for chunk in chunks), 1),
    }


def _history_chunks(data: Path, phase: str) -> list[Path]:
    chunks = sorted((data / "history").glob("chunk-*"))
    return chunks[:1] if phase == "small" else chunks


def _landing_with(lakehouse: Lakehouse, source: Path, batch: str) -> None:
    """Copy a generated trace/ folder into the landing zone under its own batch folder."""
    shutil.copytree(source / "trace", lakehouse.landing / "trace" / batch)


def _driver_peak_rss_mb(spark) -> float:
    pid = spark._jvm.java.lang.ProcessHandle.current().pid()
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return round(int(line.split()[1]) / 1024, 1)
    return float("nan")


def _model_seconds(lakehouse: Lakehouse) -> dict[str, float]:
    results = json.loads((lakehouse.dbt_target / "run_results.json").read_text())
    return {
        result["unique_id"].split(".")[-1]: round(result["execution_time"], 2)
        for result in results["results"]
        if result["unique_id"].startswith("model.")
    }


def _parquet_files(lakehouse: Lakehouse) -> dict[str, int]:
    marts = lakehouse.warehouse / "retrylake.db"
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


def _timed_build(
    project_dir: Path, lakehouse: Lakehouse, *, full_refresh: bool = False, tests: bool = True
) -> dict:
    """Seeds and models (the data), then the data tests, each timed."""
    from retrylake.commands import build, dbt

    began = time.perf_counter()
    build(project_dir, lakehouse, full_refresh=full_refresh, exclude=NO_TESTS)
    built = time.perf_counter()
    models = _model_seconds(lakehouse)
    if tests:
        dbt(project_dir, lakehouse, ["test"])
    return {
        "seconds": round(built - began, 1),
        "data_tests_seconds": round(time.perf_counter() - built, 1) if tests else None,
        "models": models,
    }


def run_phase(phase: str, data: Path, root: Path, project_dir: Path, tests: bool = True) -> dict:
    """In this process: scan floor and full build of one history, then the 1% batch on top."""
    from retrylake.spark import start_session

    lakehouse = Lakehouse(root / phase / "lakehouse", root / phase / "lakehouse" / "landing")
    shutil.rmtree(lakehouse.root, ignore_errors=True)
    for chunk in _history_chunks(data, phase):
        _landing_with(lakehouse, chunk, f"history/{chunk.name}")
    spark = start_session(lakehouse)
    scan_seconds, scanned = scan_floor(spark, lakehouse.landing)
    result: dict = {"scan_floor": {"seconds": round(scan_seconds, 1), "records": scanned}}
    result["full_build"] = _timed_build(project_dir, lakehouse, full_refresh=True, tests=tests)
    _landing_with(lakehouse, data / "new", "new")
    result["incremental_build"] = _timed_build(project_dir, lakehouse, tests=tests)
    result["parquet_files_per_mart"] = _parquet_files(lakehouse)
    result["driver_peak_rss_mb"] = _driver_peak_rss_mb(spark)
    return result


def _phase_figures(records: int, phase: dict) -> dict:
    scan, full = phase["scan_floor"]["seconds"], phase["full_build"]["seconds"]
    return {
        "records": records,
        "seconds": {
            "scan_floor": scan,
            "full_build": full,
            "full_build_data_tests": phase["full_build"]["data_tests_seconds"],
            "incremental_build": phase["incremental_build"]["seconds"],
            "incremental_build_data_tests": phase["incremental_build"]["data_tests_seconds"],
        },
        "records_per_second": {
            "scan_floor": round(records / scan),
            "full_build": round(records / full),
        },
        "ratio_full_to_scan_floor": round(full / scan, 2),
        "driver_peak_rss_mb": phase["driver_peak_rss_mb"],
        "model_seconds": {
            "full_build": phase["full_build"]["models"],
            "incremental_build": phase["incremental_build"]["models"],
        },
        "parquet_files_per_mart": phase["parquet_files_per_mart"],
    }


def bench(root: Path, records: int, seed: int, project_dir: Path, tests: bool = True) -> dict:
    root.mkdir(parents=True, exist_ok=True)
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
    small = _phase_figures(generated["small"]["records"], phases["small"])
    large = _phase_figures(generated["large"]["records"], phases["large"])
    return {
        "records": small["records"],
        "records_new": generated["new"]["records"],
        "history": small,
        "history_10x": large,
        "ratio_incremental_10x_to_1x": round(
            large["seconds"]["incremental_build"] / small["seconds"]["incremental_build"], 2
        ),
        "driver_peak_rss_mb": max(small["driver_peak_rss_mb"], large["driver_peak_rss_mb"]),
        "generator_seconds": generated["generator_seconds"],
    }
