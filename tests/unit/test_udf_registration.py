"""The UDFs are callable from Spark SQL with the declared result shapes."""

import pytest

from spark_udfs import UDF_NAMES, register_udfs

pytestmark = pytest.mark.spark


@pytest.fixture
def udf_spark(spark):
    register_udfs(spark)
    return spark


def test_all_names_registered(udf_spark) -> None:
    registered = {f.name for f in udf_spark.catalog.listFunctions()}
    assert set(UDF_NAMES) <= registered


def test_parse_delay_levels(udf_spark) -> None:
    row = udf_spark.sql("select parse_delay_levels('1s 5s') as levels").first()
    assert [tuple(level) for level in row.levels] == [(1, "1s", 1000), (2, "5s", 5000)]
    assert row.levels[1].delay_ms == 5000
    assert udf_spark.sql("select parse_delay_levels(null) as levels").first().levels is None


def test_parse_delay_levels_bad_token_fails_query(udf_spark) -> None:
    with pytest.raises(Exception, match="5x"):
        udf_spark.sql("select parse_delay_levels('1s 5x')").collect()


def test_decode_offset_msg_id(udf_spark) -> None:
    row = udf_spark.sql(
        "select decode_offset_msg_id('0A00593B00002A9F000000000003AE7C') as good,"
        " decode_offset_msg_id('not-an-id') as bad"
    ).first()
    assert row.good.asDict() == {
        "store_host": "10.0.89.59",
        "port": 10911,
        "commit_log_offset": 241276,
    }
    assert row.bad is None


def test_decode_uniq_msg_id(udf_spark) -> None:
    row = udf_spark.sql(
        "select decode_uniq_msg_id_tz('7F00000175CC18B4AAC259C3E2040000',"
        " 1652840409604, 480) as utc8,"
        " decode_uniq_msg_id('7F00000175CC18B4AAC259C3E2040000', 1652840409604) as utc,"
        " decode_uniq_msg_id('0123', 1652840409604) as bad"
    ).first()
    assert row.utc8.asDict() == {
        "ip": "127.0.0.1",
        "pid": 30156,
        "class_loader_hash": "18B4AAC2",
        "counter": 0,
        "born_ts_ms": 1652840409604,
    }
    # In UTC the May month start is 8 hours later, pushing the result past the reference.
    assert row.utc.born_ts_ms == 1652840409604 + 8 * 3_600_000 - 30 * 86_400_000
    assert row.bad is None


def test_parse_message_properties(udf_spark) -> None:
    row = udf_spark.sql(
        "select parse_message_properties("
        "concat('DELAY', char(1), '3', char(2), 'WAIT', char(1), 'false', char(2))) as props"
    ).first()
    assert row.props == {"DELAY": "3", "WAIT": "false"}
