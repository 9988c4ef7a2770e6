"""Write RocketMQ trace data the way the remoting client's trace dispatcher does (spec §5, §6).

Used by the sample data, the tests and the traffic generator. The parsing side lives in the dbt
staging models; this module is its independent counterpart.
"""

from __future__ import annotations

import base64
import functools
import ipaddress
import json
import struct
from dataclasses import dataclass

CONTENT_SPLITOR = "\u0001"  # between fields
FIELD_SPLITOR = "\u0002"  # after each record

# ConsumeReturnType ordinals, written as SubAfter contextCode (spec §4).
RETURN_TYPES = ("SUCCESS", "TIME_OUT", "EXCEPTION", "RETURNNULL", "FAILED")


def _text(value: object) -> str:
    # StringBuilder.append(null) writes the literal text "null" (spec §5.2).
    return "null" if value is None else str(value)


def _record(*fields: object) -> str:
    return CONTENT_SPLITOR.join(_text(field) for field in fields) + FIELD_SPLITOR


def _bool(value: bool) -> str:
    return "true" if value else "false"


@functools.lru_cache(maxsize=1024)
def _packed_ip(ip: str) -> bytes:
    return ipaddress.ip_address(ip).packed


def offset_msg_id(store_ip: str, port: int, commit_log_offset: int) -> str:
    """The broker's offsetMsgId: store host, port and commit-log offset in upper-case hex."""
    return (_packed_ip(store_ip) + struct.pack(">iq", port, commit_log_offset)).hex().upper()


def uniq_msg_id(
    ip: str, pid: int, class_loader_hash: int, born_ms: int, month_start_ms: int, counter: int
) -> str:
    """The client's UNIQ_KEY (spec §6.2): ip, pid, class-loader hash, time in month, counter."""
    fields = struct.pack(
        ">HIIH",
        pid & 0xFFFF,
        class_loader_hash & 0xFFFFFFFF,
        (born_ms - month_start_ms) & 0xFFFFFFFF,
        counter & 0xFFFF,
    )
    return (_packed_ip(ip) + fields).hex().upper()


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
    fields: list[object] = [
        "Pub",
        timestamp,
        region,
        producer_group,
        topic,
        msg_id,
        tags,
        keys,
        store_host,
        body_length,
        cost_ms,
        message_type,
    ]
    if version.pub_fields >= 14:
        fields.append(offset_id)
    fields.append(_bool(success))
    if version.pub_fields >= 15:
        fields.append(client_host)
    return _record(*fields)


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
    client_host: str = "10.0.0.21",
) -> str:
    fields: list[object] = [
        "SubBefore",
        timestamp,
        region,
        group,
        request_id,
        msg_id,
        retry_times,
        keys,
    ]
    if version.sub_before_fields >= 9:
        fields.append(client_host)
    return _record(*fields)


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
    fields: list[object] = [
        "SubAfter",
        request_id,
        msg_id,
        cost_ms,
        _bool(success),
        keys,
        RETURN_TYPES.index(return_type),
    ]
    if version.sub_after_fields >= 9:
        fields += [timestamp, group]
    return _record(*fields)


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
    """One line of a trace landing file: a message read from the trace topic, as JSON."""
    message: dict[str, object] = {
        "msgId": trace_msg_id,
        "storeTimestamp": store_timestamp,
        "storeHost": store_host,
    }
    if keys is not None:
        message["keys"] = keys
    if as_base64:
        message["bodyBase64"] = base64.b64encode(body.encode("utf-8")).decode("ascii")
    else:
        message["body"] = body
    return json.dumps(message, ensure_ascii=False, separators=(",", ":"))
