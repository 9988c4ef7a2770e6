"""Pure-Python RocketMQ decoders (delay levels, message ids, properties) and their Spark UDFs.

The decoders import nothing from Spark, so they can be unit-tested quickly; register_udfs
exposes them to Spark SQL.
"""

from spark_udfs.delay_levels import DEFAULT_DELAY_LEVELS, DelayLevelError, parse_delay_levels
from spark_udfs.message_ids import decode_offset_msg_id, decode_uniq_msg_id
from spark_udfs.properties import parse_message_properties
from spark_udfs.registration import UDF_NAMES, register_udfs

__all__ = [
    "DEFAULT_DELAY_LEVELS",
    "UDF_NAMES",
    "DelayLevelError",
    "decode_offset_msg_id",
    "decode_uniq_msg_id",
    "parse_delay_levels",
    "parse_message_properties",
    "register_udfs",
]
