"""`retrylake bench`: generate trace data of a given size and measure, in one run, the scan
floor, a full build, an incremental build of 1% new records, and the same incremental build on a
10x larger history. Prints one JSON object. A benchmark, not a test: it asserts nothing.

Each lakehouse has its own Derby metastore, and a process has one SparkSession, so the two
histories are measured in two child processes (`retrylake bench --phase ...`).
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

from retrylake.generator import GeneratorConfig, generate
from retrylake.lakehouse import Lakehouse

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


def prepare(root: Path, records: int, seed: int) -> dict:
    """Write the small history, the 10x history and the 1% batch that follows both."""
    messages = max(1000, int(records / RECORDS_PER_MESSAGE))
    hours = max(1.0, messages / MESSAGES_PER_HOUR)
    later = BENCH_START + dt.timedelta(hours=10 * hours)
    plan = {
        "small": (messages, seed, BENCH_START, hours),
        "large": (10 * messages, seed + 1, BENCH_START, 10 * hours),
        "new": (max(100, int(messages * NEW_SHARE)), seed + 2, later, max(hours * NEW_SHARE, 0.1)),
    }
    generated = {}
    for name, (count, run_seed, start, span) in plan.items():
        out = root / "data" / name
        if not (out / "generation.json").exists():
            shutil.rmtree(out, ignore_errors=True)
            generated[name] = _generate(out, count, run_seed, start, span)
        else:
            generated[name] = json.loads((out / "generation.json").read_text())["stats"]
    return generated


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


def run_phase(phase: str, root: Path, project_dir: Path) -> dict:
    """In this process: full build of one history, then the 1% incremental build on top."""
    from retrylake.commands import build
    from retrylake.spark import start_session

    lakehouse = Lakehouse(root / phase / "lakehouse", root / phase / "lakehouse" / "landing")
    shutil.rmtree(lakehouse.root, ignore_errors=True)
    _landing_with(lakehouse, root / "data" / phase, "history")
    spark = start_session(lakehouse)
    result: dict = {}
    if phase == "small":
        scan_seconds, scanned = scan_floor(spark, lakehouse.landing)
        result["scan_floor"] = {"seconds": round(scan_seconds, 1), "records": scanned}
    began = time.perf_counter()
    build(project_dir, lakehouse, full_refresh=True)
    result["full_build"] = {
        "seconds": round(time.perf_counter() - began, 1),
        "models": _model_seconds(lakehouse),
    }
    _landing_with(lakehouse, root / "data" / "new", "new")
    began = time.perf_counter()
    build(project_dir, lakehouse)
    result["incremental_build"] = {
        "seconds": round(time.perf_counter() - began, 1),
        "models": _model_seconds(lakehouse),
    }
    result["parquet_files_per_mart"] = _parquet_files(lakehouse)
    result["driver_peak_rss_mb"] = _driver_peak_rss_mb(spark)
    return result


def bench(root: Path, records: int, seed: int, project_dir: Path) -> dict:
    root.mkdir(parents=True, exist_ok=True)
    generated = prepare(root, records, seed)
    phases = {}
    for phase in ("small", "large"):
        print(f"retrylake bench: measuring the {phase} history ...", file=sys.stderr, flush=True)
        child = subprocess.run(
            [sys.executable, "-m", "retrylake", "bench", "--phase", phase, "--dir", str(root)],
            cwd=project_dir,
            capture_output=True,
            text=True,
            check=False,
        )
        if child.returncode != 0:
            raise RuntimeError(f"bench phase {phase} failed:\n{child.stderr[-4000:]}")
        phases[phase] = json.loads(child.stdout.strip().splitlines()[-1])
    small, large = phases["small"], phases["large"]
    records_small = generated["small"]["records"]
    full = small["full_build"]["seconds"]
    scan = small["scan_floor"]["seconds"]
    return {
        "records": records_small,
        "records_large_history": generated["large"]["records"],
        "records_new": generated["new"]["records"],
        "seconds": {
            "scan_floor": scan,
            "full_build": full,
            "incremental_build": small["incremental_build"]["seconds"],
            "incremental_build_large_history": large["incremental_build"]["seconds"],
            "full_build_large_history": large["full_build"]["seconds"],
        },
        "records_per_second": {
            "scan_floor": round(records_small / scan),
            "full_build": round(records_small / full),
        },
        "ratio_full_to_scan_floor": round(full / scan, 2),
        "ratio_incremental_large_to_small": round(
            large["incremental_build"]["seconds"] / small["incremental_build"]["seconds"], 2
        ),
        "driver_peak_rss_mb": max(small["driver_peak_rss_mb"], large["driver_peak_rss_mb"]),
        "model_seconds": {
            "full_build": small["full_build"]["models"],
            "incremental_build": small["incremental_build"]["models"],
            "incremental_build_large_history": large["incremental_build"]["models"],
        },
        "parquet_files_per_mart": small["parquet_files_per_mart"],
        "parquet_files_per_mart_large_history": large["parquet_files_per_mart"],
        "generation": generated,
    }
