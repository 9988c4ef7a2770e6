"""Decode RocketMQ message ids (spec §6) so SQL can join hops without a broker.

The offsetMsgId changes on every hop but names the store host and CommitLog offset;
the UNIQ_KEY survives retries and carries the producer's born time relative to a month start.
"""

import ipaddress
import re
from datetime import UTC, datetime, timedelta

_HEX_RE = re.compile(r"[0-9A-Fa-f]+")
_IPV4_HEX_LEN = 32
_IPV6_HEX_LEN = 56
_V1_UNIQ_HEX_LEN = 34
_MAX_TZ_OFFSET_MINUTES = 18 * 60
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _id_bytes(msg_id: str, kind: str) -> bytes:
    """Hex-decode an IPv4 (32) or IPv6 (56) length id; bytes.fromhex alone would allow spaces."""
    if len(msg_id) not in (_IPV4_HEX_LEN, _IPV6_HEX_LEN):
        raise ValueError(
            f"{kind} {msg_id!r} has {len(msg_id)} characters; expected 32 (IPv4) or 56 (IPv6)"
        )
    if not _HEX_RE.fullmatch(msg_id):
        raise ValueError(f"{kind} {msg_id!r} is not hexadecimal")
    return bytes.fromhex(msg_id)


def _ip_str(raw: bytes) -> str:
    """IPv4 dotted quad, or the compressed IPv6 form such as '::1'."""
    if len(raw) == 4:
        return str(ipaddress.IPv4Address(raw))
    return ipaddress.IPv6Address(raw).compressed


def decode_offset_msg_id(msg_id: str | None) -> tuple[str, int, int] | None:
    """Split an offsetMsgId into ``(store_host, port, commit_log_offset)``.

    Layout: ip (4 or 16 bytes), port as int32, offset as int64, both big-endian and
    signed as Java reads them. Raises ValueError for a wrong length or non-hex id.
    """
    if msg_id is None:
        return None
    raw = _id_bytes(msg_id, "offsetMsgId")
    ip_len = 4 if len(raw) == 16 else 16
    port = int.from_bytes(raw[ip_len : ip_len + 4], "big", signed=True)
    offset = int.from_bytes(raw[ip_len + 4 : ip_len + 12], "big", signed=True)
    return _ip_str(raw[:ip_len]), port, offset


def _month_start_ms(ts_ms: int, tz_offset_minutes: int, months_back: int) -> int:
    """Epoch ms of 00:00:00.000 on day 1 of the month holding ``ts_ms``, minus ``months_back``."""
    offset_ms = tz_offset_minutes * 60_000
    try:
        local = _EPOCH + timedelta(milliseconds=ts_ms + offset_ms)
    except OverflowError as exc:
        raise ValueError(f"reference timestamp {ts_ms} is out of range") from exc
    month_index = local.year * 12 + local.month - 1 - months_back
    start = datetime(month_index // 12, month_index % 12 + 1, 1, tzinfo=UTC)
    return (start - _EPOCH) // timedelta(milliseconds=1) - offset_ms


def decode_uniq_msg_id(
    msg_id: str | None, reference_ts_ms: int, tz_offset_minutes: int = 0
) -> tuple[str, int, str, int, int] | None:
    """Split a remoting UNIQ_KEY into ``(ip, pid, class_loader_hash, counter, born_ts_ms)``.

    Layout: ip (4 or 16 bytes), pid (uint16), classloader hash (4 bytes), ms since the
    producer's month start (uint32: it passes 2^31 after ~24.9 days), counter (uint16).
    The month start is taken in the fixed UTC offset ``tz_offset_minutes``, which must
    match the producer JVM's zone. If ``reference_ts_ms`` (e.g. the stored born or store
    timestamp) is earlier than the decoded time, the previous month is used; an equal
    time counts as the current month, so decoding against the exact born time round-trips.

    Returns None for None and for a 34-character id starting with "01": that is the
    5.x gRPC client's v1 id, not a remoting UNIQ_KEY, and carries no month-relative time.
    Raises ValueError for any other wrong length or non-hex id.
    """
    if msg_id is None:
        return None
    if abs(tz_offset_minutes) > _MAX_TZ_OFFSET_MINUTES:
        raise ValueError(f"tz offset {tz_offset_minutes} minutes is outside +/-18 hours")
    if len(msg_id) == _V1_UNIQ_HEX_LEN and msg_id.startswith("01") and _HEX_RE.fullmatch(msg_id):
        return None
    raw = _id_bytes(msg_id, "UNIQ_KEY")
    ip_len = 4 if len(raw) == 16 else 16
    pid = int.from_bytes(raw[ip_len : ip_len + 2], "big")
    class_loader_hash = raw[ip_len + 2 : ip_len + 6].hex().upper()
    span_ms = int.from_bytes(raw[ip_len + 6 : ip_len + 10], "big")
    counter = int.from_bytes(raw[ip_len + 10 : ip_len + 12], "big")

    born_ts_ms = _month_start_ms(reference_ts_ms, tz_offset_minutes, 0) + span_ms
    if born_ts_ms > reference_ts_ms:
        born_ts_ms = _month_start_ms(reference_ts_ms, tz_offset_minutes, 1) + span_ms
    return _ip_str(raw[:ip_len]), pid, class_loader_hash, counter, born_ts_ms
