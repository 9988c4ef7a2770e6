"""What a build killed with SIGKILL leaves behind is cleared by the next session. (A killed build
run again publishes the marts of a clean build: test_incremental_law.py, on its landing.)"""

from __future__ import annotations

import pytest

from retrylake.lakehouse import Lakehouse

pytestmark = [pytest.mark.integration, pytest.mark.spark]


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
