"""The embedded SparkSession: Hive catalog (embedded Derby, or PostgreSQL) and warehouse inside
the lakehouse."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlsplit

from retrylake.errors import UsageError
from retrylake.lakehouse import Lakehouse
from retrylake.metastore import MetastoreError
from retrylake.metastore import spark_settings as metastore_settings
from spark_udfs.snapshots import on_local_disk

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

# Chosen for a 2-core machine and trace volumes of a few million records per run; see
# docs/spark-settings.md for the reasons.
SPARK_DEFAULTS = {
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.shuffle.partitions": "4",
    "spark.sql.adaptive.enabled": "true",
    "spark.sql.adaptive.coalescePartitions.enabled": "true",
    "spark.sql.sources.partitionOverwriteMode": "dynamic",
    "spark.sql.hive.convertMetastoreParquet": "true",
    # INT96 timestamps (the default) get no parquet filter pushdown; incremental runs rely on it
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.driver.memory": "4g",
    # dbt's threads run several models' jobs at once: share the cores between the jobs rather
    # than run each one's tasks only after those of the jobs submitted before it
    "spark.scheduler.mode": "FAIR",
    # Spark keeps the classes it compiled for each query's generated code; a run's few hundred
    # statements need more than the default 100, so each run compiled the same classes again
    # and HotSpot compiled them again to machine code
    "spark.sql.codegen.cache.maxEntries": "5000",
}

# Only where the driver runs the tasks (`local[...]`) and the warehouse is on its own disk.
# Spark lists more than 32 folders of a table with a job of one task per folder: run on the
# same two cores, those tasks cost more than listing a local folder, about 1.5 s for a fact
# mart's 721 hours each time it is read after a write. On a cluster, or with a remote store
# whose every listing waits on the network, Spark's default lists in parallel.
LOCAL_WAREHOUSE_DEFAULTS = {
    "spark.sql.sources.parallelPartitionDiscovery.threshold": "100000",
}

# The driver JVM of a short run (`is_short_run`: an incremental `retrylake build` or `dbt run`
# in a new process, as from cron, or one that reads a small landing whole) spends much of its CPU
# compiling Spark's planner, and C2's compilations cost more than their faster code saves
# before the run ends: C1 only. C1 alone gets a 48 MB code cache, which a build fills (then
# it compiles nothing more, or stops): keep tiered mode's 240 MB.
SHORT_RUN_JVM_OPTIONS = ("-XX:TieredStopAtLevel=1", "-XX:ReservedCodeCacheSize=240m")


def _runs_locally(master: str | None) -> bool:
    """The driver runs the tasks itself (``local``, ``local[2]``)."""
    return master is not None and master.startswith("local")


def local_warehouse_defaults(master: str | None, warehouse: str) -> dict[str, str]:
    """The settings for a local master over a warehouse on the local disk, else none."""
    if _runs_locally(master) and on_local_disk(warehouse):
        return dict(LOCAL_WAREHOUSE_DEFAULTS)
    return {}


def spark_settings(master: str | None, conf: list[str] | None) -> tuple[str | None, dict[str, str]]:
    """The master and extra Spark settings from the command line, else the environment.

    ``RETRYLAKE_MASTER`` and ``RETRYLAKE_SPARK_CONF`` (``key=value`` pairs separated by
    whitespace) are the environment's versions of ``--master`` and ``--conf``; the command line
    wins. Returns None for the master when neither gives one.
    """
    pairs = list(os.environ.get("RETRYLAKE_SPARK_CONF", "").split()) + list(conf or [])
    settings = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise UsageError(
                f"Spark setting {pair!r} is not KEY=VALUE (from --conf or RETRYLAKE_SPARK_CONF)"
            )
        settings[key.strip()] = value
    return master or os.environ.get("RETRYLAKE_MASTER") or None, settings


def _launched_by_spark_submit() -> bool:
    # spark-submit starts the JVM first and hands PySpark its gateway; its --master then holds.
    return "PYSPARK_GATEWAY_PORT" in os.environ


def start_session(
    lakehouse: Lakehouse,
    master: str | None = None,
    extra_conf: dict[str, str] | None = None,
    *,
    remove_unfinished: bool = True,
    short_run: bool = False,
) -> SparkSession:
    """Start (or return) this process's SparkSession on ``lakehouse`` with the UDFs registered.

    ``master`` is any Spark master URL (``spark://``, ``yarn``, ``k8s://``); None means
    ``local[2]``, or whatever spark-submit was given. ``extra_conf`` is applied last, so it
    overrides the defaults (a warehouse on HDFS, a PostgreSQL metastore, executor memory);
    its ``spark.driver.extraJavaOptions`` is added to the lakehouse's own JVM options.
    A process has one session and its metastore is fixed when it starts, so asking for another
    lakehouse in the same process is an error rather than a silent mix-up. ``remove_unfinished``
    is for a process that holds the lakehouse lock (remove_unfinished_tables). ``short_run``:
    the process runs one incremental build and ends, so a local driver JVM started here gets
    `SHORT_RUN_JVM_OPTIONS` (before the user's own, which win).
    """
    from pyspark.sql import SparkSession

    from spark_udfs import register_udfs

    warehouse = (extra_conf or {}).get("spark.sql.warehouse.dir", str(lakehouse.warehouse))
    active = SparkSession.getActiveSession()
    if active is not None:
        running = active.conf.get("spark.sql.warehouse.dir") or ""
        if _warehouse_key(running) != _warehouse_key(warehouse):
            raise RuntimeError(
                f"this process already runs Spark on {running}; one process serves one lakehouse"
            )
        lakehouse.prepare()
        check_databases_in_warehouse(active, lakehouse)
        if remove_unfinished:
            remove_unfinished_tables(active, lakehouse)
        return active

    lakehouse.prepare()
    # before the session starts: a PostgreSQL metastore is checked and its schema set up first
    metastore = metastore_settings(lakehouse)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    if master is None and not _launched_by_spark_submit():
        master = "local[2]"
    if _runs_locally(master):
        # The embedded session talks only to itself: keep it on loopback. On a cluster the
        # executors must reach the driver, so Spark picks the address.
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    extra_conf = dict(extra_conf or {})
    driver_options = driver_java_options(
        lakehouse,
        extra_conf.pop("spark.driver.extraJavaOptions", ""),
        short_run=short_run and _runs_locally(master),
    )
    builder = (
        SparkSession.builder.appName("retrylake")
        .config("spark.sql.warehouse.dir", str(lakehouse.warehouse))
        .config("spark.driver.extraJavaOptions", driver_options)
        .config("spark.ui.showConsoleProgress", str(sys.stderr.isatty()).lower())
        .enableHiveSupport()
    )
    for key, value in metastore.items():
        builder = builder.config(key, value)
    for key, value in SPARK_DEFAULTS.items():
        if key != "spark.ui.showConsoleProgress":
            builder = builder.config(key, value)
    if master is not None:
        builder = builder.master(master)
    for key, value in local_warehouse_defaults(master, warehouse).items():
        builder = builder.config(key, value)
    for key, value in extra_conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(os.environ.get("RETRYLAKE_SPARK_LOG_LEVEL", "WARN"))
    register_udfs(spark)
    check_databases_in_warehouse(spark, lakehouse)
    if remove_unfinished:
        remove_unfinished_tables(spark, lakehouse)
    return spark


def driver_java_options(
    lakehouse: Lakehouse, user_options: str = "", *, short_run: bool = False
) -> str:
    """The driver JVM's options: the lakehouse's Derby home and log and retrylake's log4j
    configuration, `SHORT_RUN_JVM_OPTIONS` for a ``short_run``, then ``user_options``
    (``spark.driver.extraJavaOptions`` from --conf or $RETRYLAKE_SPARK_CONF), which add to them
    rather than replace them (of two values of one JVM flag, the last holds)."""
    own = (
        java_option(name, value)
        for name, value in (
            ("derby.system.home", lakehouse.root),
            ("derby.stream.error.file", lakehouse.root / "derby.log"),
            ("log4j2.configurationFile", Path(__file__).with_name("log4j2.properties")),
        )
    )
    compilers = SHORT_RUN_JVM_OPTIONS if short_run else ()
    return " ".join([*own, *compilers, user_options]).strip()


def java_option(name: str, value: object) -> str:
    """``-Dname=value`` for ``spark.driver.extraJavaOptions``, which Spark splits at spaces
    outside quotes: quoted, so a lakehouse in a folder with a space starts its JVM."""
    text = str(value).replace("\\", "\\\\").replace('"', '\\"')
    return f'"-D{name}={text}"'


def _warehouse_key(warehouse: str) -> str:
    """A warehouse as Spark may name it (a path, a ``file:`` URL, ``hdfs://...``), comparable."""
    if on_local_disk(warehouse):
        # a path as given, not a URL: Spark keeps it unencoded
        return str(Path(warehouse.removeprefix("file:")).resolve())
    return warehouse.rstrip("/")


def _local_warehouse(spark: SparkSession, lakehouse: Lakehouse) -> bool:
    warehouse = spark.conf.get("spark.sql.warehouse.dir") or ""
    return _warehouse_key(warehouse) == _warehouse_key(str(lakehouse.warehouse))


def check_databases_in_warehouse(spark: SparkSession, lakehouse: Lakehouse) -> None:
    """Refuse a metastore that keeps retrylake's databases outside this lakehouse's warehouse.

    The metastore records every database's and table's folder as an absolute path, so a
    lakehouse folder copied or moved elsewhere still names the original's folders, and a build
    would write into them (into the original lakehouse, if it is still there). Only a local
    warehouse is checked; a metastore call per database, 0.12 to 0.18 s in all on the bench's
    10x lakehouse (Derby, eight databases).
    """
    if not _local_warehouse(spark, lakehouse):
        return
    warehouse = lakehouse.warehouse.resolve()
    for row in spark.sql("show databases").collect():
        name = row[0]
        if not name.startswith("retrylake"):
            continue
        location = spark.catalog.getDatabase(name).locationUri
        parts = urlsplit(location)
        local = parts.scheme in ("", "file") and not parts.netloc
        if local and Path(unquote(parts.path)).resolve().parent == warehouse:
            continue
        raise MetastoreError(
            f"the lakehouse {lakehouse.root} was copied or moved, or its metastore is another "
            f"lakehouse's: the metastore keeps the database {name} in {location}, outside "
            f"its warehouse {warehouse}, and a build would write there. Build a new lakehouse "
            "from the landing (retrylake build --lakehouse NEW_FOLDER --landing LANDING), or "
            "use this one where it was built"
        )


def remove_unfinished_tables(spark: SparkSession, lakehouse: Lakehouse) -> list[Path]:
    """Remove the folders that a build killed while it created a table left behind.

    Such a folder holds part of a table the metastore never registered, and Spark refuses to
    create a managed table over a folder that is not empty (LOCATION_ALREADY_EXISTS), so the
    next build would fail. One process owns a lakehouse, so a folder in one of retrylake's
    databases without a table of its name is such a leftover. Only a local warehouse is checked.
    """
    if not _local_warehouse(spark, lakehouse):
        return []
    removed = []
    for database_folder in sorted(lakehouse.warehouse.glob("retrylake*.db")):
        database = database_folder.name.removesuffix(".db")
        if not spark.catalog.databaseExists(database):
            continue
        # names only: catalog.listTables fetches every table's metadata, seconds per start
        shown = spark.sql(f"show tables in `{database}`").collect()
        tables = {row.tableName.lower() for row in shown}
        for folder in sorted(database_folder.iterdir()):
            unfinished = folder.is_dir() and folder.name.lower() not in tables
            if unfinished and not folder.name.startswith((".", "_")):
                shutil.rmtree(folder)
                removed.append(folder)
    for folder in removed:
        print(
            f"retrylake: removed {folder}, a table a killed build left unfinished",
            file=sys.stderr,
        )
    return removed
