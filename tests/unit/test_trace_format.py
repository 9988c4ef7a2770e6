"""The trace writer produces the exact strings of the client's encoder (spec §5.5) and ids that
the decoders read back."""

from __future__ import annotations

from retrylake.sim import trace_format as tf
from spark_udfs import decode_offset_msg_id, decode_uniq_msg_id


def test_pub_record_matches_the_encoder_test_vector():
    record = tf.pub_record(
        tf.CLIENT_VERSIONS["4.9"],
        timestamp=1,
        region="DefaultRegion",
        producer_group="PID-test",
        topic="topic-test",
        msg_id="AC1415116D1418B4AAC217FE1B4E0000",
        tags="Tags",
        keys="Keys",
        store_host="127.0.0.1:10911",
        body_length=26,
        cost_ms=245,
        offset_id="0A9A002600002A9F0000000000002329",
    )
    assert record == (
        "Pub\u00011\u0001DefaultRegion\u0001PID-test\u0001topic-test\u0001"
        "AC1415116D1418B4AAC217FE1B4E0000\u0001Tags\u0001Keys\u0001127.0.0.1:10911\u000126"
        "\u0001245\u00010\u00010A9A002600002A9F0000000000002329\u0001true\u0002"
    )


def test_sub_after_field_counts_follow_the_client_version():
    common = dict(
        request_id="r",
        msg_id="m",
        cost_ms=20,
        success=True,
        keys=None,
        return_type="TIME_OUT",
        timestamp=5,
        group="g",
    )
    seven = tf.sub_after_record(tf.CLIENT_VERSIONS["4.9.1"], **common)
    nine = tf.sub_after_record(tf.CLIENT_VERSIONS["4.9"], **common)
    assert seven.rstrip("\u0002").split("\u0001") == [
        "SubAfter",
        "r",
        "m",
        "20",
        "true",
        "null",
        "1",
    ]
    assert len(nine.rstrip("\u0002").split("\u0001")) == 9


def test_ids_round_trip_through_the_decoders():
    offset_id = tf.offset_msg_id("10.0.89.59", 10911, 241276)
    assert offset_id == "0A00593B00002A9F000000000003AE7C"
    assert decode_offset_msg_id(offset_id) == ("10.0.89.59", 10911, 241276)

    month_start = 1_651_334_400_000  # 2022-05-01T00:00:00+08:00 as UTC ms
    born = 1_652_840_409_604
    uniq = tf.uniq_msg_id("127.0.0.1", 30156, 0x18B4AAC2, born, month_start, 0)
    assert uniq == "7F00000175CC18B4AAC259C3E2040000"
    assert decode_uniq_msg_id(uniq, born, 480) == ("127.0.0.1", 30156, "18B4AAC2", 0, born)
