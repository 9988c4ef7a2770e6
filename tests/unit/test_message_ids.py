"""Message id decoding against the vectors in spec §6 and hand-built edge cases."""

from datetime import UTC, datetime, timedelta, timezone

import pytest

from spark_udfs.message_ids import decode_offset_msg_id, decode_uniq_msg_id

UTC8 = timezone(timedelta(hours=8))


def _ms(dt: datetime) -> int:
    return int(dt.timestamp() * 1000)


def _offset_id(ip: bytes, port: int, offset: int) -> str:
    return (
        (ip + port.to_bytes(4, "big", signed=True) + offset.to_bytes(8, "big", signed=True))
        .hex()
        .upper()
    )


def _uniq_id(ip: bytes, pid: int, class_loader: bytes, span_ms: int, counter: int) -> str:
    return (
        (
            ip
            + pid.to_bytes(2, "big")
            + class_loader
            + span_ms.to_bytes(4, "big")
            + counter.to_bytes(2, "big")
        )
        .hex()
        .upper()
    )


@pytest.mark.parametrize(
    ("msg_id", "expected"),
    [
        ("7F0000010000238F000000000001E240", ("127.0.0.1", 9103, 123456)),
        ("0A00593B00002A9F000000000003AE7C", ("10.0.89.59", 10911, 241276)),
        ("0A9A002600002A9F0000000000002329", ("10.154.0.38", 10911, 9001)),
    ],
)
def test_offset_msg_id_vectors(msg_id: str, expected: tuple[str, int, int]) -> None:
    assert decode_offset_msg_id(msg_id) == expected


def test_offset_msg_id_ipv6_loopback() -> None:
    msg_id = _offset_id(bytes(15) + b"\x01", 0, 123456)
    assert len(msg_id) == 56
    assert decode_offset_msg_id(msg_id) == ("::1", 0, 123456)


def test_offset_msg_id_ipv6_full_address() -> None:
    ip = bytes.fromhex("20010db8000000000000000000000042")
    assert decode_offset_msg_id(_offset_id(ip, 10911, 7)) == ("2001:db8::42", 10911, 7)


def test_offset_msg_id_is_case_insensitive() -> None:
    assert decode_offset_msg_id("0a00593b00002a9f000000000003ae7c") == (
        "10.0.89.59",
        10911,
        241276,
    )


def test_offset_msg_id_reads_port_and_offset_signed_like_java() -> None:
    msg_id = "7F000001" + "FFFFFFFF" + "FFFFFFFFFFFFFFFE"
    assert decode_offset_msg_id(msg_id) == ("127.0.0.1", -1, -2)


def test_offset_msg_id_none() -> None:
    assert decode_offset_msg_id(None) is None


@pytest.mark.parametrize(
    ("msg_id", "reason"),
    [
        ("", "0 characters"),
        ("7F0000010000238F000000000001E24", "31 characters"),
        ("7F0000010000238F000000000001E2400", "33 characters"),
        ("7F0000010000238F000000000001E24G", "not hexadecimal"),
        ("7F000001 0000238F00000000001E240", "not hexadecimal"),
    ],
)
def test_offset_msg_id_malformed(msg_id: str, reason: str) -> None:
    with pytest.raises(ValueError, match=reason) as info:
        decode_offset_msg_id(msg_id)
    assert repr(msg_id) in str(info.value)


def test_uniq_vector_at_exact_born_time() -> None:
    assert decode_uniq_msg_id("7F00000175CC18B4AAC259C3E2040000", 1652840409604, 480) == (
        "127.0.0.1",
        30156,
        "18B4AAC2",
        0,
        1652840409604,
    )


def test_uniq_time_field_is_unsigned() -> None:
    decoded = decode_uniq_msg_id("AC100573068818B4AAC283F9AFB00000", 1653548578737, 480)
    assert decoded == ("172.16.5.115", 1672, "18B4AAC2", 0, 1653548578736)


def test_uniq_uses_previous_month_when_decoded_time_is_after_reference() -> None:
    # Born in May (UTC+8), read back early in June: June start + span would be in the future.
    june_reference = _ms(datetime(2022, 6, 1, 0, 0, 5, tzinfo=UTC8))
    decoded = decode_uniq_msg_id("7F00000175CC18B4AAC259C3E2040000", june_reference, 480)
    assert decoded is not None
    assert decoded[4] == 1652840409604


def test_uniq_previous_month_crosses_year_boundary() -> None:
    span_ms = 30 * 86_400_000
    msg_id = _uniq_id(bytes([10, 0, 0, 1]), 1, bytes(4), span_ms, 7)
    reference = _ms(datetime(2024, 1, 2, tzinfo=UTC))
    decoded = decode_uniq_msg_id(msg_id, reference)
    assert decoded == ("10.0.0.1", 1, "00000000", 7, _ms(datetime(2023, 12, 31, tzinfo=UTC)))


def test_uniq_time_zone_changes_month_start() -> None:
    # 2022-05-01T02:00 in UTC+8 is still April in UTC, so the month starts differ.
    msg_id = _uniq_id(bytes([127, 0, 0, 1]), 1, bytes(4), 3_600_000, 0)
    reference = _ms(datetime(2022, 5, 1, 2, 0, tzinfo=UTC8))
    utc8 = decode_uniq_msg_id(msg_id, reference, 480)
    utc = decode_uniq_msg_id(msg_id, reference)
    assert utc8 is not None and utc is not None
    assert utc8[4] == _ms(datetime(2022, 5, 1, 1, 0, tzinfo=UTC8))
    assert utc[4] == _ms(datetime(2022, 4, 1, 1, 0, tzinfo=UTC))


def test_uniq_unsigned_pid_and_counter_and_ipv6() -> None:
    ip = bytes(15) + b"\x01"
    msg_id = _uniq_id(ip, 0xFFFF, bytes.fromhex("18b4aac2"), 0, 0xFFFE)
    assert len(msg_id) == 56
    reference = _ms(datetime(2022, 5, 1, tzinfo=UTC))
    assert decode_uniq_msg_id(msg_id.lower(), reference) == (
        "::1",
        65535,
        "18B4AAC2",
        65534,
        reference,
    )


def test_uniq_none() -> None:
    assert decode_uniq_msg_id(None, 0) is None


def test_uniq_grpc_v1_id_is_not_a_remoting_uniq_key() -> None:
    assert decode_uniq_msg_id("01" + "00163E0A1B2C" + "75CC" + "0A1B2C3D" + "00000001", 0) is None


@pytest.mark.parametrize(
    ("msg_id", "reason"),
    [
        ("02" + "0" * 32, "34 characters"),
        ("7F00000175CC18B4AAC259C3E20400", "30 characters"),
        ("7F00000175CC18B4AAC259C3E204000Z", "not hexadecimal"),
    ],
)
def test_uniq_malformed(msg_id: str, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        decode_uniq_msg_id(msg_id, 1652840409604)


def test_uniq_rejects_impossible_tz_offset() -> None:
    with pytest.raises(ValueError, match="tz offset"):
        decode_uniq_msg_id("7F00000175CC18B4AAC259C3E2040000", 1652840409604, 24 * 60)


def test_uniq_rejects_out_of_range_reference() -> None:
    with pytest.raises(ValueError, match="out of range"):
        decode_uniq_msg_id("7F00000175CC18B4AAC259C3E2040000", 2**62)
