"""The embedded session's scheduler (dbt runs several models at once on two cores), its
listing of a table's folders, its cache of generated code, its refusal of a metastore whose
databases live elsewhere, and which session a process that already runs one is given."""

import shlex
from pathlib import Path
from types import SimpleNamespace

import pytest
from pyspark.sql import SparkSession

from retrylake.lakehouse import Lakehouse
from retrylake.metastore import MetastoreError
from retrylake.spark import (
    check_databases_in_warehouse,
    driver_java_options,
    java_option,
    local_warehouse_defaults,
    start_session,
)
from tests.conftest import USERS_JVM_OPTION

THRESHOLD = "spark.sql.sources.parallelPartitionDiscovery.threshold"


@pytest.mark.spark
def test_jobs_of_concurrent_models_share_the_cores(spark) -> None:
    # First in, first out, a small model's job waits for every task of a large one submitted
    # before it. Jobs with no pool of their own go to the default pool, which must share too.
    context = spark.sparkContext._jsc.sc()
    assert context.getSchedulingMode().toString() == "FAIR"
    default_pool = context.getPoolForName("default").get()
    assert default_pool.schedulingMode().toString() == "FAIR"


@pytest.mark.spark
def test_a_query_run_again_after_many_others_compiles_no_code(spark) -> None:
    """A run's few hundred statements generate more classes than Spark keeps by default (100):
    each run would compile the same code again. Janino's compilations are counted by Spark's
    codegen metrics; each distinct multiplier below is compiled into the generated code."""
    metrics = spark._jvm.org.apache.spark.metrics.source.CodegenMetrics
    compilations = metrics.METRIC_COMPILATION_TIME()

    def run(factor: int) -> None:
        spark.range(3).selectExpr(f"id * {factor} + {factor} as value").collect()

    run(7919)
    first = compilations.getCount()
    for factor in range(1, 151):
        run(factor)
    assert compilations.getCount() > first + 100  # the others were compiled, each
    again = compilations.getCount()
    run(7919)
    assert compilations.getCount() == again


@pytest.mark.spark
def test_a_local_session_lists_a_tables_folders_itself(spark) -> None:
    """A table of 40 partitions read after a write: the local session lists its folders on the
    driver; with Spark's default threshold (32) the same read starts one more job, the listing."""
    context = spark.sparkContext
    threshold = THRESHOLD
    assert context.master.startswith("local")
    configured = spark.conf.get(threshold)
    spark.sql("create table listing_probe (n bigint, hour int) using parquet partitioned by (hour)")
    try:
        spark.sql("insert into listing_probe select id, cast(id % 40 as int) from range(80)")

        def jobs_of_a_read(group: str) -> int:
            spark.sql("refresh table listing_probe")  # what a write does
            context.setJobGroup(group, "a read after a write")
            try:
                rows = spark.sql("select count(*) from listing_probe where n >= 0").first()[0]
            finally:
                context.setLocalProperty("spark.jobGroup.id", None)
            assert rows == 80
            return len(context.statusTracker().getJobIdsForGroup(group))

        listed_by_the_driver = jobs_of_a_read("probe-configured")
        spark.conf.set(threshold, "32")
        listed_by_a_job = jobs_of_a_read("probe-default")
    finally:
        spark.conf.set(threshold, configured)
        spark.sql("drop table if exists listing_probe")
    assert int(configured) >= 100_000
    assert listed_by_a_job == listed_by_the_driver + 1


@pytest.mark.parametrize(
    ("master", "warehouse", "listed_by_the_driver"),
    [
        ("local[2]", "/data/lakehouse/warehouse", True),
        ("local[*]", "file:/data/lakehouse/warehouse", True),
        ("local[2]", "hdfs://namenode:8020/retrylake/warehouse", False),
        ("local[2]", "s3a://bucket/warehouse", False),
        ("spark://master:7077", "/data/lakehouse/warehouse", False),
        ("yarn", "hdfs://namenode:8020/retrylake/warehouse", False),
        (None, "/data/lakehouse/warehouse", False),  # spark-submit's master: its own settings
    ],
)
def test_only_a_local_master_over_a_local_warehouse_lists_on_the_driver(
    master, warehouse, listed_by_the_driver
) -> None:
    settings = local_warehouse_defaults(master, warehouse)
    assert (THRESHOLD in settings) is listed_by_the_driver


@pytest.mark.spark
def test_a_database_outside_the_lakehouse_warehouse_is_refused(
    spark, lakehouse: Lakehouse, tmp_path: Path
) -> None:
    """What a copied lakehouse's metastore holds: databases whose folders are the original's.
    A database in the warehouse passes; one elsewhere stops the session before any build."""
    elsewhere = tmp_path / "original" / "warehouse" / "retrylake_probe_copied.db"
    spark.sql("create database retrylake_probe_in_place")
    try:
        check_databases_in_warehouse(spark, lakehouse)
        spark.sql(f"create database retrylake_probe_copied location '{elsewhere}'")
        with pytest.raises(MetastoreError) as refused:
            check_databases_in_warehouse(spark, lakehouse)
    finally:
        spark.sql("drop database if exists retrylake_probe_copied cascade")
        spark.sql("drop database if exists retrylake_probe_in_place cascade")
    message = str(refused.value)
    assert "copied or moved" in message and "retrylake_probe_copied" in message
    assert str(elsewhere) in message and str(lakehouse.warehouse.resolve()) in message
    check_databases_in_warehouse(spark, lakehouse)  # as before the probe


@pytest.mark.parametrize(
    ("running", "asked", "same"),
    [
        ("hdfs://nn:8020/retrylake/warehouse", "hdfs://nn:8020/retrylake/warehouse/", True),
        ("hdfs://nn:8020/retrylake/warehouse", "hdfs://nn:8020/other/warehouse", False),
        ("s3a://bucket/warehouse", None, False),  # the lakehouse's own, local, warehouse
        ("file:{local}", None, True),
        ("{local}", "file://{local}", True),
    ],
)
def test_a_second_build_in_a_process_gets_its_session_on_the_same_warehouse(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, running: str, asked: str | None, same: bool
) -> None:
    """`retrylake build --watch` starts the session at its first build and asks for it again
    at each build, with the same settings: a warehouse on HDFS or S3 (`--conf
    spark.sql.warehouse.dir=...`) is the same one, not "another lakehouse"."""
    lakehouse = Lakehouse(tmp_path / "lakehouse", tmp_path / "lakehouse" / "landing")
    local = str(lakehouse.warehouse)
    conf = {"spark.sql.warehouse.dir": running.format(local=local)}
    no_databases = SimpleNamespace(collect=list)  # what the local warehouse's check reads
    session = SimpleNamespace(conf=SimpleNamespace(get=conf.get), sql=lambda _: no_databases)
    monkeypatch.setattr(SparkSession, "getActiveSession", lambda: session)
    extra = {"spark.sql.warehouse.dir": asked.format(local=local)} if asked else None
    if same:
        assert start_session(lakehouse, extra_conf=extra, remove_unfinished=False) is session
    else:
        with pytest.raises(RuntimeError, match="one process serves one lakehouse"):
            start_session(lakehouse, extra_conf=extra, remove_unfinished=False)


def test_a_driver_option_stays_one_argument_whatever_the_path() -> None:
    """Spark splits `spark.driver.extraJavaOptions` at spaces outside quotes, as a shell does:
    a lakehouse in "/data/RocketMQ exports" gave the JVM "exports/lakehouse" as its main class.
    (A session in such a folder, started by hand: Derby, the warehouse and the copy check.)"""
    values = ["/data/RocketMQ exports/lake", '/tmp/a "b"/c', "/tmp/back\\slash", "/tmp/a%20b#c"]
    options = " ".join(java_option("derby.system.home", value) for value in values)
    assert shlex.split(options) == [f"-Dderby.system.home={value}" for value in values]


def test_a_users_jvm_options_come_after_the_lakehouses_own(tmp_path: Path) -> None:
    lakehouse = Lakehouse(tmp_path / "my lake", tmp_path / "my lake" / "landing")
    options = shlex.split(driver_java_options(lakehouse, "-XX:TieredStopAtLevel=1 -Da=b"))
    assert options[0] == f"-Dderby.system.home={lakehouse.root}"
    assert options[-2:] == ["-XX:TieredStopAtLevel=1", "-Da=b"]
    assert len(options) == 5  # Derby's home and log, log4j's configuration, the user's two
    assert shlex.split(driver_java_options(lakehouse)) == options[:3]


def test_a_short_runs_compilers_come_before_the_users_options(tmp_path: Path) -> None:
    """C1 only, with tiered mode's 240 MB code cache rather than C1's 48 MB; a user's flag comes
    last, so a user who asks for C2 again (`-XX:TieredStopAtLevel=4`) gets it."""
    lakehouse = Lakehouse(tmp_path / "lake", tmp_path / "lake" / "landing")
    options = shlex.split(driver_java_options(lakehouse, "-XX:TieredStopAtLevel=4", short_run=True))
    assert options[3:] == [
        "-XX:TieredStopAtLevel=1",
        "-XX:ReservedCodeCacheSize=240m",
        "-XX:TieredStopAtLevel=4",
    ]
    assert shlex.split(driver_java_options(lakehouse, short_run=False)) == options[:3]


@pytest.mark.spark
def test_the_driver_jvm_runs_with_the_lakehouses_options_and_the_users(spark, lakehouse) -> None:
    """The suite's session is started with a user's `spark.driver.extraJavaOptions`
    (tests/conftest.py): it reaches the JVM beside the lakehouse's Derby home rather than
    replace it."""
    runtime = spark._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean()
    arguments = list(runtime.getInputArguments())
    assert f"-Dderby.system.home={lakehouse.root}" in arguments
    assert USERS_JVM_OPTION in arguments
