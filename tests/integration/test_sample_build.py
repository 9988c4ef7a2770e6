"""The sample landing set built on the real embedded Spark, checked mart by mart, row by row,
against the simulation's ground truth; then the same files built on a standalone cluster."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from retrylake.build_inputs import (
    JudgedWith,
    LastBuild,
    UnitTestsPassed,
    build_inputs_fingerprint,
    code_fingerprint,
    judgement_inputs,
)
from retrylake.commands import build
from retrylake.lakehouse import Lakehouse
from retrylake.sim.grpc5 import GRPC5_GROUPS
from retrylake.sim.sample import GROUPS, write_sample
from spark_udfs import DEFAULT_DELAY_LEVELS
from tests.conftest import PROJECT_DIR
from tests.integration.helpers import rows, table_snapshot
from tests.integration.standalone import standalone_cluster

pytestmark = [pytest.mark.integration, pytest.mark.spark]


@pytest.fixture(scope="module")
def sample(spark, lakehouse: Lakehouse, tmp_path_factory: pytest.TempPathFactory):
    landing = tmp_path_factory.mktemp("sample-landing")
    written = write_sample(landing)
    build(PROJECT_DIR, Lakehouse(lakehouse.root, landing), full_refresh=True)
    spark.catalog.setCurrentDatabase("retrylake")
    return written


def _landing_lines(landing: Path) -> int:
    count = 0
    for path in (landing / "trace").rglob("*.jsonl*"):  # not the ground truth beside it
        raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
        count += raw.decode("utf-8").count("\n")
    return count


def test_a_build_with_nothing_new_runs_no_dbt(spark, sample, lakehouse):
    """After the fixture's full build, `build` with the same landing, seeds and project does not
    start dbt (its run results stay as they were) and the marts stay as they were; a full
    refresh is never skipped, so the check is not taken for it."""
    results = lakehouse.dbt_target / "run_results.json"
    before = (results.read_bytes(), table_snapshot(spark, "retrylake.message_lifecycles"))
    assert build(PROJECT_DIR, Lakehouse(lakehouse.root, sample.landing)) is False
    after = (results.read_bytes(), table_snapshot(spark, "retrylake.message_lifecycles"))
    assert after == before
    # the same inputs built with another selection are another build
    other = Lakehouse(lakehouse.root, sample.landing)
    assert LastBuild(other).matches(build_inputs_fingerprint(PROJECT_DIR, other, ["build"]))
    assert not LastBuild(other).matches(
        build_inputs_fingerprint(PROJECT_DIR, other, ["build", "--select", "delay_levels"])
    )
    # and the full build recorded the seeds and rules it judged the history with
    judged = JudgedWith(lakehouse)
    assert judged.path.is_file() and judged.changed(judgement_inputs(PROJECT_DIR)) == []


def test_a_build_of_the_same_code_leaves_the_passed_unit_tests_out(spark, sample, lakehouse):
    """The fixture's build ran every unit test of the ledger and they passed; a later build of
    the same project and code runs its models without them (here the staging models, whose
    unit tests would run first, and no data tests: the cheapest such build), and with nothing
    new changes no table."""
    fixture_build = json.loads((lakehouse.dbt_target / "run_results.json").read_text())
    assert _run_ids(fixture_build, "unit_test") >= {"bodies_split_into_checked_records"}
    assert UnitTestsPassed(lakehouse).on(code_fingerprint(PROJECT_DIR))
    before = table_snapshot(spark, "retrylake_staging.stg_trace__records")
    on_sample = Lakehouse(lakehouse.root, sample.landing)
    exclude = ["resource_type:test", "path:models/marts", "path:models/intermediate"]
    assert build(PROJECT_DIR, on_sample, exclude=exclude, force=True)
    forced = json.loads((lakehouse.dbt_target / "run_results.json").read_text())
    assert forced["args"]["exclude_resource_types"] == ["unit_test"]
    assert "stg_trace__records" in _run_ids(forced, "model")
    assert not _run_ids(forced, "unit_test") | _run_ids(forced, "test")
    assert table_snapshot(spark, "retrylake_staging.stg_trace__records") == before


def _run_ids(run_results: dict, kind: str) -> set[str]:
    """The names of the nodes of one kind (model, test, unit_test) in a run's results."""
    ids = [result["unique_id"].split(".") for result in run_results["results"]]
    return {parts[-1] for parts in ids if parts[0] == kind}


def test_every_landing_line_is_parsed_or_quarantined(spark, sample, lakehouse):
    staged = spark.sql(
        "select count(*) as total, count_if(line_error is null) as parsed, "
        "count_if(line_error is not null) as rejected "
        "from retrylake_staging.stg_landing__trace_lines"
    ).first()
    assert staged.total == _landing_lines(sample.landing) == sample.landing_lines
    assert staged.parsed + staged.rejected == staged.total
    assert staged.rejected == sample.malformed_lines

    quarantine = rows(spark, "landing_quarantine", ["file", "line", "record_index", "reason"])
    reasons = sorted(row["reason"] for row in quarantine)
    assert reasons == [
        "Pub record with 5 fields (expected 13 or 14 or 15)",
        "SubBefore field 1 is not a number: yesterday",
        "not a valid JSON object",
        "unknown trace record kind: Bogus",
    ]
    assert len(quarantine) == sample.malformed_lines + sample.bad_records
    assert all(
        row["file"].endswith((".jsonl", ".jsonl.gz")) and row["line"] >= 1 for row in quarantine
    )


def test_duplicated_trace_message_is_read_once(spark, sample):
    trace_messages = sample.trace_messages
    staged = spark.sql(
        "select count(distinct trace_msg_id) as messages, "
        "count(distinct source_file, line_number) as lines "
        "from retrylake_staging.stg_trace__records"
    ).first()
    assert staged.messages == trace_messages
    # one parsed line is the duplicate copy, so it contributes no records
    assert staged.lines == sample.landing_lines - sample.malformed_lines - sample.duplicate_lines


def test_lifecycles_match_the_simulation(spark, sample):
    marts = {
        (row["consumer_group"], row["msg_id"]): row
        for row in rows(
            spark,
            "message_lifecycles",
            [
                "consumer_group",
                "msg_id",
                "origin_msg_id",
                "topic",
                "keys",
                "tags",
                "deliveries",
                "final_state",
                "first_consume_at",
                "consumed_at",
                "dlq_at",
                "next_delivery_expected_at",
                "time_to_success_ms",
                "broadcast_copies",
                "dropped_deliveries",
            ],
        )
    }
    assert len(marts) == len(sample.lifecycles)
    states = Counter()
    for lifecycle in sample.lifecycles:
        row = marts[(lifecycle.group, lifecycle.message.msg_id)]
        state = lifecycle.state
        states[state] += 1
        first, last = lifecycle.history[0], lifecycle.history[-1]
        consumed = last.ended_ms if state == "CONSUMED" else None
        assert row == {
            "consumer_group": lifecycle.group,
            "msg_id": lifecycle.message.msg_id,
            "origin_msg_id": lifecycle.message.origin_msg_id,
            "topic": lifecycle.message.topic if lifecycle.message.traced else None,
            "keys": lifecycle.message.keys,
            "tags": lifecycle.message.tags if lifecycle.message.traced else None,
            "deliveries": len(lifecycle.history),
            "final_state": state,
            "first_consume_at": first.started_ms,
            "consumed_at": consumed,
            "dlq_at": last.entered_dlq_ms if state == "DLQ" else None,
            "next_delivery_expected_at": (
                last.expected_redelivery_ms if state in ("WAITING_RETRY", "RETRY_OVERDUE") else None
            ),
            "time_to_success_ms": consumed - first.started_ms if consumed else None,
            "broadcast_copies": sum(d.cause == "BROADCAST_COPY" for d in lifecycle.history),
            "dropped_deliveries": sum(d.decision == "DROP" for d in lifecycle.history),
        }, lifecycle
    # the sample exercises every final state
    assert set(states) == {
        "CONSUMED",
        "DLQ",
        "WAITING_RETRY",
        "RETRY_OVERDUE",
        "IN_FLIGHT",
        "DROPPED",
    }


def test_attempts_match_the_simulation(spark, sample):
    marts = {
        (row["consumer_group"], row["msg_id"], row["delivery_number"]): row
        for row in rows(
            spark,
            "consume_attempts",
            [
                "consumer_group",
                "msg_id",
                "delivery_number",
                "request_id",
                "reconsume_times",
                "consume_started_at",
                "consume_ended_at",
                "return_type",
                "is_success",
            ],
        )
    }
    expected = {}
    for lifecycle in sample.lifecycles:
        for number, delivery in enumerate(lifecycle.history, start=1):
            expected[(lifecycle.group, lifecycle.message.msg_id, number)] = {
                "consumer_group": lifecycle.group,
                "msg_id": lifecycle.message.msg_id,
                "delivery_number": number,
                "request_id": delivery.request_id,
                "reconsume_times": delivery.reconsume_times,
                "consume_started_at": delivery.started_ms,
                "consume_ended_at": delivery.ended_ms,
                "return_type": delivery.return_type,
                "is_success": delivery.success,
            }
    assert marts == expected
    # a slow success keeps its TIME_OUT label and still counts as consumed
    assert any(row["return_type"] == "TIME_OUT" and row["is_success"] for row in marts.values())


def _next_count(group_name: str, delivery) -> int | None:
    """The count of the copy a decision makes, from the spec: r + 1 (§1.2 step 10), none for a
    drop, and r for the DLQ copy an orderly 4.9.x client sends itself (§3.5)."""
    group = GROUPS[group_name]
    if delivery.decision == "DROP":
        return None
    orderly_4_9 = group.consume_mode == "ORDERLY" and group.client_line == "remoting-4.9"
    return delivery.reconsume_times + (0 if delivery.decision == "DLQ" and orderly_4_9 else 1)


def test_retry_decisions_match_the_simulation(spark, sample):
    marts = {
        (row["consumer_group"], row["msg_id"], row["delivery_number"]): row
        for row in rows(
            spark,
            "retry_decisions",
            [
                "consumer_group",
                "msg_id",
                "origin_msg_id",
                "delivery_number",
                "reconsume_times",
                "failed_at",
                "decision",
                "delay_level",
                "delay_ms",
                "schedule_queue_id",
                "target_topic",
                "next_reconsume_times",
                "expected_redelivery_at",
                "observed_redelivery_at",
                "redelivery_lag_ms",
                "entered_dlq_at",
            ],
        )
    }
    expected = {}
    for lifecycle in sample.lifecycles:
        deliveries = lifecycle.history
        for number, delivery in enumerate(deliveries, start=1):
            if delivery.success is not False:
                continue
            following = deliveries[number] if number < len(deliveries) else None
            redelivers = delivery.decision in ("RETRY", "LOCAL_RETRY")
            observed = following.started_ms if following and redelivers else None
            topic_prefix = {"RETRY": "%RETRY%", "DLQ": "%DLQ%"}.get(delivery.decision)
            expected[(lifecycle.group, lifecycle.message.msg_id, number)] = {
                "consumer_group": lifecycle.group,
                "msg_id": lifecycle.message.msg_id,
                "origin_msg_id": lifecycle.message.origin_msg_id,
                "delivery_number": number,
                "reconsume_times": delivery.reconsume_times,
                "failed_at": delivery.ended_ms,
                "decision": delivery.decision,
                "delay_level": delivery.delay_level,
                "delay_ms": delivery.delay_ms,
                "schedule_queue_id": delivery.delay_level - 1 if delivery.delay_level else None,
                "target_topic": topic_prefix + lifecycle.group if topic_prefix else None,
                "next_reconsume_times": _next_count(lifecycle.group, delivery),
                "expected_redelivery_at": delivery.expected_redelivery_ms,
                "observed_redelivery_at": observed,
                "redelivery_lag_ms": (
                    observed - delivery.expected_redelivery_ms if observed is not None else None
                ),
                "entered_dlq_at": delivery.entered_dlq_ms,
            }
    assert marts == expected
    decisions = Counter(row["decision"] for row in marts.values())
    assert set(decisions) == {"RETRY", "DLQ", "LOCAL_RETRY", "DROP"}


def test_the_default_ladder_and_the_clamp(spark, sample):
    ladder = [
        row["delay_ms"] // 1000
        for row in rows(
            spark,
            "retry_decisions",
            ["delay_ms", "reconsume_times"],
            "consumer_group = 'order-service' and msg_id in "
            "(select msg_id from dlq_messages where consumer_group = 'order-service')",
        )
        if row["delay_ms"] is not None
    ]
    assert sorted(ladder) == [
        10,
        30,
        60,
        120,
        180,
        240,
        300,
        360,
        420,
        480,
        540,
        600,
        1200,
        1800,
        3600,
        7200,
    ]
    clamped = rows(
        spark,
        "retry_decisions",
        ["reconsume_times", "delay_level", "delay_ms"],
        "consumer_group = 'bulk-importer' and reconsume_times >= 15 and decision = 'RETRY'",
    )
    assert {(row["delay_level"], row["delay_ms"]) for row in clamped} == {(18, 7_200_000)}
    assert len(clamped) == 5


def test_dlq_messages_match_the_simulation(spark, sample):
    marts = {
        (row["consumer_group"], row["msg_id"]): row
        for row in rows(
            spark,
            "dlq_messages",
            [
                "consumer_group",
                "dlq_topic",
                "msg_id",
                "origin_msg_id",
                "reconsume_times",
                "entered_dlq_at",
                "reason",
                "evidence",
            ],
        )
    }
    expected = {}
    for lifecycle in sample.lifecycles:
        if lifecycle.state != "DLQ":
            continue
        last = lifecycle.history[-1]
        group = GROUPS[lifecycle.group]
        client_requested = group.delay_level_when_next_consume < 0
        # The DLQ copy stores r + 1 (§1.2 step 10), but an orderly 4.9.x client sends its own
        # copy with RECONSUME_TIME = r (§3.5).
        orderly_4_9 = group.consume_mode == "ORDERLY" and group.client_line == "remoting-4.9"
        expected[(lifecycle.group, lifecycle.message.msg_id)] = {
            "consumer_group": lifecycle.group,
            "dlq_topic": f"%DLQ%{lifecycle.group}",
            "msg_id": lifecycle.message.msg_id,
            "origin_msg_id": lifecycle.message.origin_msg_id,
            "reconsume_times": last.reconsume_times + (0 if orderly_4_9 else 1),
            "entered_dlq_at": last.entered_dlq_ms,
            "reason": "CLIENT_REQUESTED" if client_requested else "MAX_RECONSUME_EXCEEDED",
            "evidence": "PREDICTED",
        }
    assert marts == expected
    assert len(expected) == 5


def test_consumer_groups_and_delay_levels(spark, sample):
    groups = {
        row["consumer_group"]: row
        for row in rows(
            spark,
            "consumer_groups",
            [
                "consumer_group",
                "effective_max_reconsume_times",
                "settings_source",
                "delay_cluster",
                "effective_suspend_millis",
            ],
        )
    }
    assert set(groups) == set(GROUPS) | {group.name for group in GRPC5_GROUPS}
    assert groups["notification-push"]["settings_source"] == "default"
    assert [name for name, row in groups.items() if row["settings_source"] == "default"] == [
        "notification-push"
    ]
    assert groups["order-service"]["effective_max_reconsume_times"] == 16
    assert groups["payment-ledger"]["effective_max_reconsume_times"] == 3
    assert groups["search-indexer"]["delay_cluster"] == "fast-cluster"
    assert groups["order-service"]["delay_cluster"] == "*"  # DefaultCluster has no row of its own

    levels = rows(
        spark,
        "delay_levels",
        ["broker_cluster", "level", "token", "delay_ms", "schedule_queue_id", "is_max_level"],
    )
    default = sorted(
        (row for row in levels if row["broker_cluster"] == "*"), key=lambda row: row["level"]
    )
    assert " ".join(row["token"] for row in default) == DEFAULT_DELAY_LEVELS
    assert default[2]["delay_ms"] == 10_000 and default[2]["schedule_queue_id"] == 2
    assert [row["level"] for row in default if row["is_max_level"]] == [18]
    fast = sorted(
        (row["level"], row["delay_ms"]) for row in levels if row["broker_cluster"] == "fast-cluster"
    )
    assert fast == [(1, 5000), (2, 8000)]


def test_daily_stats_match_the_simulation(spark, sample):
    import datetime as dt

    expected: dict = defaultdict(lambda: Counter())
    for lifecycle in sample.lifecycles:
        day = dt.datetime.fromtimestamp(lifecycle.history[0].started_ms / 1000, tz=dt.UTC).date()
        totals = expected[(lifecycle.group, day)]
        state = lifecycle.state
        totals["messages"] += 1
        totals["deliveries"] += len(lifecycle.history)
        totals["first_try_failures"] += lifecycle.history[0].success is False
        totals["consumed"] += state == "CONSUMED"
        totals["dlq"] += state == "DLQ"
        totals["dropped"] += state == "DROPPED"
        # a broadcasting group's copies to its other instances are no retries
        copies = sum(delivery.cause == "BROADCAST_COPY" for delivery in lifecycle.history)
        totals["broadcast_copies"] += copies
        totals["retries"] += len(lifecycle.history) - 1 - copies
        totals["retried_messages"] += len(lifecycle.history) - copies > 1
        totals["partly_dropped"] += state == "CONSUMED" and any(
            delivery.decision == "DROP" for delivery in lifecycle.history
        )
    assert sum(totals["partly_dropped"] for totals in expected.values()) == 1
    marts = {
        (row["consumer_group"], row["stat_date"]): Counter(
            {
                key: row[key]
                for key in (
                    "messages",
                    "deliveries",
                    "first_try_failures",
                    "consumed",
                    "dlq",
                    "dropped",
                    "broadcast_copies",
                    "retries",
                    "retried_messages",
                    "partly_dropped",
                )
                if row[key]
            }
        )
        for row in rows(
            spark,
            "group_retry_stats_daily",
            [
                "consumer_group",
                "stat_date",
                "messages",
                "deliveries",
                "first_try_failures",
                "consumed",
                "dlq",
                "dropped",
                "broadcast_copies",
                "retries",
                "retried_messages",
                "partly_dropped",
            ],
        )
    }
    assert marts == {key: +value for key, value in expected.items()}
    assert len({day for _, day in marts}) == 2  # the sample crosses midnight


def test_watermark_is_the_latest_trace_time(spark, sample):
    watermark = spark.sql(
        "select unix_millis(watermark_at) from retrylake_intermediate.int_trace_watermark"
    ).first()[0]
    assert watermark == sample.watermark_ms


def test_query_reads_the_marts_with_duckdb_and_without_java(spark, sample, lakehouse):
    import json
    import subprocess
    import sys

    sql = (
        "select consumer_group, final_state, count(*) as n, sum(deliveries) as deliveries "
        "from message_lifecycles group by all order by all"
    )
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "retrylake",
            "query",
            "--lakehouse",
            str(lakehouse.root),
            "--format",
            "json",
            sql,
        ],
        env={"PATH": ""},  # no java on the PATH: the query must not need it
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    by_duckdb = [tuple(row.values()) for row in json.loads(result.stdout)]
    by_spark = [
        tuple(row)
        for row in spark.sql(
            "select consumer_group, final_state, count(*), sum(deliveries) "
            "from retrylake.message_lifecycles group by 1, 2 order by 1, 2"
        ).collect()
    ]
    assert by_duckdb == by_spark and len(by_spark) > 5
    # the build's manifest keeps every mart's columns, the types a mart of no rows is read with
    from retrylake.analyst.query import duckdb_type
    from spark_udfs.snapshots import PUBLISHED_FOLDER, published_columns

    columns = published_columns(lakehouse.warehouse / PUBLISHED_FOLDER)
    assert {"message_lifecycles", "retry_decisions", "dlq_messages"} <= set(columns)
    for mart, pairs in columns.items():
        assert [name for name, _ in pairs] == spark.table(f"retrylake.{mart}").columns, mart
        assert all(duckdb_type(spark_type) for _, spark_type in pairs), mart


# The same landing files built by `retrylake build --master spark://...` on a standalone cluster
# (a master and two workers on 127.0.0.1): the executors do the work, and every table equals the
# local build above. Compared on the run-independent columns of the marts and staging tables.

COMPARED_SCHEMAS = ("retrylake_unpublished", "retrylake_staging")  # the tables dbt built
RUN_SPECIFIC_COLUMNS = ("load_id",)  # a load id counts this lakehouse's runs


@pytest.fixture(scope="module")
def cluster_build(sample, tmp_path_factory: pytest.TempPathFactory):
    """`retrylake build --master spark://...` as a user runs it, on its own lakehouse and the
    sample's landing files."""
    root = tmp_path_factory.mktemp("cluster")
    landing = sample.landing
    events = root / "events"
    events.mkdir()
    with standalone_cluster(root) as master:
        result = _build_on_cluster(master, root, landing, events)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return {"lakehouse": Lakehouse(root / "lakehouse", landing), "events": events}


def _build_on_cluster(master: str, root: Path, landing: Path, events: Path):
    return subprocess.run(
        [
            *(sys.executable, "-m", "retrylake", "build", "--master", master),
            # seeds and models: the data tests write nothing and ran on the local build
            *("--exclude", "resource_type:test", "resource_type:unit_test"),
            *("--lakehouse", str(root / "lakehouse"), "--landing", str(landing)),
            *("--conf", "spark.executor.memory=1g", "--conf", "spark.eventLog.enabled=true"),
            *("--conf", f"spark.eventLog.dir={events.as_uri()}"),
            # one plain JSON file to read back (Spark 4 rolls and compresses by default)
            *("--conf", "spark.eventLog.rolling.enabled=false"),
            *("--conf", "spark.eventLog.compress=false"),
        ],
        cwd=PROJECT_DIR,
        capture_output=True,
        text=True,
        timeout=1200,
        check=False,
    )


def _event_log(folder: Path) -> list[dict]:
    logs = [path for path in folder.iterdir() if path.is_file()]
    assert len(logs) == 1, list(folder.iterdir())
    return [json.loads(line) for line in logs[0].read_text().splitlines()]


def test_on_a_cluster_the_executors_did_the_work(cluster_build):
    events = _event_log(cluster_build["events"])
    assert events[0]["Event"] == "SparkListenerLogStart"
    environment = next(e for e in events if e["Event"] == "SparkListenerEnvironmentUpdate")
    assert environment["Spark Properties"]["spark.master"].startswith("spark://127.0.0.1:")
    executors = {e["Executor ID"] for e in events if e["Event"] == "SparkListenerExecutorAdded"}
    tasks = Counter(
        e["Task Info"]["Executor ID"] for e in events if e["Event"] == "SparkListenerTaskEnd"
    )
    assert len(executors) == 2 and set(tasks) == executors, (executors, tasks)
    assert min(tasks.values()) > 10
    # the Python UDFs ran there too, shipped inside the job rather than installed on the workers
    plans = [
        e["physicalPlanDescription"]
        for e in events
        if e["Event"].endswith("SparkListenerSQLExecutionStart")
    ]
    assert any("BatchEvalPython" in plan or "ArrowEvalPython" in plan for plan in plans)


def test_every_table_built_on_the_cluster_equals_the_local_build(spark, sample, cluster_build):
    compared = []
    for schema in COMPARED_SCHEMAS:
        folder = cluster_build["lakehouse"].warehouse / f"{schema}.db"
        for table in sorted(path.name for path in folder.iterdir() if path.is_dir()):
            on_cluster = spark.read.parquet(str(folder / table))
            drop = tuple(c for c in on_cluster.columns if c in RUN_SPECIFIC_COLUMNS)
            columns = sorted(c for c in on_cluster.columns if c not in drop)
            local_table = spark.table(f"{schema}.{table}")
            assert sorted(c for c in local_table.columns if c not in drop) == columns, table
            assert table_snapshot(spark, on_cluster.select(*columns)) == table_snapshot(
                spark, local_table.select(*columns)
            ), f"{schema}.{table}"
            compared.append(f"{schema}.{table}")
    assert {
        "retrylake_unpublished.message_lifecycles",
        "retrylake_unpublished.dlq_messages",
        "retrylake_unpublished.consume_attempts",
        "retrylake_unpublished.retry_decisions",
        "retrylake_unpublished.group_retry_stats_daily",
        "retrylake_unpublished.delay_levels",
        "retrylake_staging.stg_landing__trace_lines",
    } <= set(compared)
