"""Register the pure decoders as Spark SQL functions so dbt models can call them by name.

pyspark is imported inside register_udfs so the pure modules and their tests stay Spark-free.
"""

from __future__ import annotations

import datetime as dt
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from spark_udfs.delay_levels import parse_delay_levels
from spark_udfs.message_ids import decode_offset_msg_id, decode_uniq_msg_id
from spark_udfs.properties import parse_message_properties
from spark_udfs.snapshots import point_readers_at, snapshot_marts

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

# Called once per publish by the `publish_marts` macro, not per record; they change files, so
# they are registered nondeterministic (never folded, cached or run twice by the optimizer).
PUBLISH_UDF_NAMES: tuple[str, ...] = ("retrylake_snapshot_marts", "retrylake_point_readers_at")

UDF_NAMES: tuple[str, ...] = (
    "parse_delay_levels",
    "decode_offset_msg_id",
    "decode_uniq_msg_id",
    "decode_uniq_msg_id_tz",
    "parse_message_properties",
    *PUBLISH_UDF_NAMES,
)


def _delay_levels_udf(s: str | None) -> list[tuple[int, str, int]] | None:
    # A bad broker config should fail the query loudly, naming the token.
    return None if s is None else parse_delay_levels(s)


def _offset_msg_id_udf(msg_id: str | None) -> tuple[str, int, int] | None:
    # One malformed id in a large table should yield null, not abort the model.
    try:
        return decode_offset_msg_id(msg_id)
    except ValueError:
        return None


def _uniq_msg_id_tz_udf(
    msg_id: str | None, reference_ts_ms: int | None, tz_offset_minutes: int | None
) -> tuple[str, int, str, int, int] | None:
    if msg_id is None or reference_ts_ms is None or tz_offset_minutes is None:
        return None
    try:
        return decode_uniq_msg_id(msg_id, reference_ts_ms, tz_offset_minutes)
    except ValueError:
        return None


def _uniq_msg_id_udf(
    msg_id: str | None, reference_ts_ms: int | None
) -> tuple[str, int, str, int, int] | None:
    return _uniq_msg_id_tz_udf(msg_id, reference_ts_ms, 0)


def _snapshot_marts_udf(folder: str, build: str, locations: str) -> str:
    return json.dumps(snapshot_marts(Path(folder), build, json.loads(locations)), sort_keys=True)


def _point_readers_at_udf(folder: str, manifest: str, kept: int) -> str:
    published = json.loads(manifest) | {
        # when it became visible: a log entry for "as of" questions, not an input of any mart
        "published_at": dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds")
    }
    return json.dumps(point_readers_at(Path(folder), published, kept))


def register_udfs(spark: SparkSession) -> None:
    """Register every name in UDF_NAMES on ``spark`` with explicit return types.

    The package is pickled by value so Python workers need not have spark_udfs importable
    (it is usually not installed, and workers may not share the driver's working directory).
    """
    from pyspark import cloudpickle
    from pyspark.sql.functions import udf
    from pyspark.sql.types import (
        ArrayType,
        IntegerType,
        LongType,
        MapType,
        StringType,
        StructField,
        StructType,
    )

    cloudpickle.register_pickle_by_value(sys.modules[__package__])

    delay_level = StructType(
        [
            StructField("level", IntegerType()),
            StructField("token", StringType()),
            StructField("delay_ms", LongType()),
        ]
    )
    offset_msg_id = StructType(
        [
            StructField("store_host", StringType()),
            StructField("port", IntegerType()),
            StructField("commit_log_offset", LongType()),
        ]
    )
    uniq_msg_id = StructType(
        [
            StructField("ip", StringType()),
            StructField("pid", IntegerType()),
            StructField("class_loader_hash", StringType()),
            StructField("counter", IntegerType()),
            StructField("born_ts_ms", LongType()),
        ]
    )

    spark.udf.register("parse_delay_levels", _delay_levels_udf, ArrayType(delay_level))
    spark.udf.register("decode_offset_msg_id", _offset_msg_id_udf, offset_msg_id)
    spark.udf.register("decode_uniq_msg_id", _uniq_msg_id_udf, uniq_msg_id)
    spark.udf.register("decode_uniq_msg_id_tz", _uniq_msg_id_tz_udf, uniq_msg_id)
    spark.udf.register(
        "parse_message_properties", parse_message_properties, MapType(StringType(), StringType())
    )
    for name, function in zip(
        PUBLISH_UDF_NAMES, (_snapshot_marts_udf, _point_readers_at_udf), strict=True
    ):
        spark.udf.register(name, udf(function, StringType()).asNondeterministic())
