"""The embedded SparkSession: Hive catalog, Derby metastore and warehouse inside the lakehouse."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from retrylake.lakehouse import Lakehouse

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

# Chosen for a 2-core machine and trace volumes of a few million records per run; see
# docs/spark-settings.md for the reasons.
SPARK_DEFAULTS = {
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.shuffle.partitions": "8",
    "spark.sql.adaptive.enabled": "true",
    "spark.sql.adaptive.coalescePartitions.enabled": "true",
    "spark.sql.sources.partitionOverwriteMode": "dynamic",
    "spark.sql.hive.convertMetastoreParquet": "true",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.driver.memory": "4g",
}


def start_session(
    lakehouse: Lakehouse, master: str | None = None, extra_conf: dict[str, str] | None = None
) -> SparkSession:
    """Start (or return) this process's SparkSession on ``lakehouse`` with the UDFs registered.

    A process has one session and its metastore is fixed when it starts, so asking for another
    lakehouse in the same process is an error rather than a silent mix-up.
    """
    from pyspark.sql import SparkSession

    from spark_udfs import register_udfs

    active = SparkSession.getActiveSession()
    if active is not None:
        warehouse = active.conf.get("spark.sql.warehouse.dir")
        if Path(warehouse.removeprefix("file:")).resolve() != lakehouse.warehouse.resolve():
            raise RuntimeError(
                f"this process already runs Spark on {warehouse}; one process serves one lakehouse"
            )
        lakehouse.prepare()
        return active

    lakehouse.prepare()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    # The embedded session talks only to itself: keep it on loopback.
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    log_config = Path(__file__).with_name("log4j2.properties")
    driver_options = (
        f"-Dderby.system.home={lakehouse.root} "
        f"-Dderby.stream.error.file={lakehouse.root / 'derby.log'} "
        f"-Dlog4j2.configurationFile={log_config}"
    )
    builder = (
        SparkSession.builder.master(master or os.environ.get("RETRYLAKE_MASTER", "local[2]"))
        .appName("retrylake")
        .config("spark.sql.warehouse.dir", str(lakehouse.warehouse))
        .config(
            "spark.hadoop.javax.jdo.option.ConnectionURL",
            f"jdbc:derby:;databaseName={lakehouse.metastore};create=true",
        )
        .config("spark.driver.extraJavaOptions", driver_options)
        .config("spark.ui.showConsoleProgress", str(sys.stderr.isatty()).lower())
        .enableHiveSupport()
    )
    for key, value in SPARK_DEFAULTS.items():
        if key != "spark.ui.showConsoleProgress":
            builder = builder.config(key, value)
    for key, value in (extra_conf or {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(os.environ.get("RETRYLAKE_SPARK_LOG_LEVEL", "WARN"))
    register_udfs(spark)
    return spark
