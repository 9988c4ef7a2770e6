"""Write RocketMQ trace data the way the remoting client's trace dispatcher does (spec §5, §6).

Used by the sample data, the tests and the traffic generator. The parsing side lives in the dbt
staging models; this module is its independent counterpart.
"""

from __future__ import annotations

import base64
import functools
import ipaddress
import struct
from dataclasses import dataclass

# the string escaping json.dumps(ensure_ascii=False) uses, for lines written by hand
from json.encoder import encode_basestring as _json_string

CONTENT_SPLITOR = "\u0001"  # between fields
FIELD_SPLITOR = "\u0002"  # after each record

# ConsumeReturnType ordinals, written as SubAfter contextCode (spec §4).
RETURN_TYPES = ("SUCCESS", "TIME_OUT", "EXCEPTION", "RETURNNULL", "FAILED")
_RETURN_TYPE_CODES = {name: str(code) for code, name in enumerate(RETURN_TYPES)}


def _text(value: object) -> str:
    # StringBuilder.append(null) writes the literal text "null" (spec §5.2).
    return "null" if value is None else str(value)


def _record(*fields: object) -> str:
    return CONTENT_SPLITOR.join(_text(field) for field in fields) + FIELD_SPLITOR


def _join(fields: list[str]) -> str:
    """A record of fields already written as text (`_text`): the hot path of the generator."""
    return CONTENT_SPLITOR.join(fields) + FIELD_SPLITOR


def _bool(value: bool) -> str:
    return "true" if value else "false"


@functools.lru_cache(maxsize=1024)
def _packed_ip(ip: str) -> bytes:
    return ipaddress.ip_address(ip).packed


# The ids are big-endian fields in upper-case hex; the leading fields of a host (ip, port; ip,
# pid, class-loader hash) repeat, so their hex is computed once and the rest formatted on.
@functools.lru_cache(maxsize=1024)
def _offset_prefix(store_ip: str, port: int) -> str:
    return (_packed_ip(store_ip) + struct.pack(">i", port)).hex().upper()


@functools.lru_cache(maxsize=1024)
def _uniq_prefix(ip: str, pid: int, class_loader_hash: int) -> str:
    fields = struct.pack(">HI", pid & 0xFFFF, class_loader_hash & 0xFFFFFFFF)
    return (_packed_ip(ip) + fields).hex().upper()


def offset_msg_id(store_ip: str, port: int, commit_log_offset: int) -> str:
    """The broker's offsetMsgId: store host, port and commit-log offset in upper-case hex."""
    if not -(2**63) <= commit_log_offset < 2**63:
        raise ValueError(f"commit log offset {commit_log_offset} does not fit in 8 bytes")
    # & 0xFF..: the two's complement that struct's ">q" writes
    return f"{_offset_prefix(store_ip, port)}{commit_log_offset & 0xFFFF_FFFF_FFFF_FFFF:016X}"


def uniq_msg_id(
    ip: str, pid: int, class_loader_hash: int, born_ms: int, month_start_ms: int, counter: int
) -> str:
    """The client's UNIQ_KEY (spec §6.2): ip, pid, class-loader hash, time in month, counter."""
    in_month = (born_ms - month_start_ms) & 0xFFFFFFFF
    return f"{_uniq_prefix(ip, pid, class_loader_hash)}{in_month:08X}{counter & 0xFFFF:04X}"


@dataclass(frozen=True)
class ClientVersion:
    """Field counts of one client version's trace encoder (spec §5.3)."""

    name: str
    pub_fields: int
    sub_before_fields: int
    sub_after_fields: int
    end_transaction: bool = True  # writes EndTransaction records (4.9.0 and later)


CLIENT_VERSIONS = {
    "4.7": ClientVersion("4.7", 14, 8, 7, end_transaction=False),
    "4.8": ClientVersion("4.8", 15, 9, 9, end_transaction=False),
    "4.9.1": ClientVersion("4.9.1", 14, 8, 7),
    "4.9": ClientVersion("4.9", 14, 8, 9),
    "old": ClientVersion("old", 13, 8, 7, end_transaction=False),
}
# MessageType ordinals of the Pub record's [11] (spec §5.1)
NORMAL_MSG, TRANS_MSG_HALF, TRANS_MSG_COMMIT, DELAY_MSG = 0, 1, 2, 3


def pub_record(
    version: ClientVersion,
    *,
    timestamp: int,
    region: str,
    producer_group: str,
    topic: str,
    msg_id: str,
    tags: str | None,
    keys: str | None,
    store_host: str,
    body_length: int,
    cost_ms: int,
    offset_id: str,
    success: bool = True,
    message_type: int = 0,
    client_host: str = "10.0.0.9",
) -> str:
    fields = [
        "Pub",
        str(timestamp),
        region,
        producer_group,
        topic,
        msg_id,
        _text(tags),
        _text(keys),
        store_host,
        str(body_length),
        str(cost_ms),
        str(message_type),
    ]
    if version.pub_fields >= 14:
        fields.append(offset_id)
    fields.append(_bool(success))
    if version.pub_fields >= 15:
        fields.append(client_host)
    return _join(fields)


def consumer_host(instance: int = 0) -> str:
    """The clientHost a 4.8.0 consumer writes in SubBefore: each instance of a group its own."""
    return f"10.0.0.{21 + instance}"


def sub_before_record(
    version: ClientVersion,
    *,
    timestamp: int,
    region: str,
    group: str,
    request_id: str,
    msg_id: str,
    retry_times: int,
    keys: str | None,
    client_host: str = consumer_host(),
) -> str:
    fields = [
        "SubBefore",
        str(timestamp),
        region,
        group,
        request_id,
        msg_id,
        str(retry_times),
        _text(keys),
    ]
    if version.sub_before_fields >= 9:
        fields.append(client_host)
    return _join(fields)


def sub_after_record(
    version: ClientVersion,
    *,
    request_id: str,
    msg_id: str,
    cost_ms: int,
    success: bool,
    keys: str | None,
    return_type: str,
    timestamp: int,
    group: str,
) -> str:
    fields = [
        "SubAfter",
        request_id,
        msg_id,
        str(cost_ms),
        _bool(success),
        _text(keys),
        _RETURN_TYPE_CODES[return_type],
    ]
    if version.sub_after_fields >= 9:
        fields += [str(timestamp), group]
    return _join(fields)


def end_transaction_record(
    *,
    timestamp: int,
    region: str,
    producer_group: str,
    topic: str,
    msg_id: str,
    tags: str | None,
    keys: str | None,
    store_host: str,
    transaction_id: str,
    state: str,
    from_check: bool,
) -> str:
    return _record(
        "EndTransaction",
        timestamp,
        region,
        producer_group,
        topic,
        msg_id,
        tags,
        keys,
        store_host,
        TRANS_MSG_COMMIT,
        transaction_id,
        state,
        _bool(from_check),
    )


def recall_record(
    *, timestamp: int, region: str, group: str, topic: str, msg_id: str, success: bool
) -> str:
    return _record("Recall", timestamp, region, group, topic, msg_id, _bool(success))


def landing_line(
    *,
    trace_msg_id: str,
    store_timestamp: int,
    store_host: str,
    body: str,
    keys: str | None = None,
    as_base64: bool = False,
) -> str:
    """One line of a trace landing file: a message read from the trace topic, as JSON.

    Written by hand as json.dumps(ensure_ascii=False, separators=(",", ":")) writes it (same
    escaping, same key order): the generator writes a line per trace message."""
    parts = [
        '{"msgId":',
        _json_string(trace_msg_id),
        ',"storeTimestamp":',
        str(store_timestamp),
        ',"storeHost":',
        _json_string(store_host),
    ]
    if keys is not None:
        parts += [',"keys":', _json_string(keys)]
    if as_base64:
        encoded = base64.b64encode(body.encode("utf-8")).decode("ascii")
        parts += [',"bodyBase64":', _json_string(encoded), "}"]
    else:
        parts += [',"body":', _json_string(body), "}"]
    return "".join(parts)
