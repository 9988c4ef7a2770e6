"""`retrylake dlq-export`: the compensation work list of dead-lettered messages, with the
`mqadmin` commands that bring each one back and what each command does.

Reads the `dlq_messages` mart with DuckDB, so it needs no Java. Per dead letter it gives:

- `resend_command`: `mqadmin queryMsgById -i <offset id> -s true`. The admin tool reads the
  message stored at that offset id and sends it again with a plain producer to the topic the
  copy is stored in. So the id must name the copy consumers received in the original topic: a
  DLQ copy would go back to `%DLQ%<group>`, a delayed message's Pub copy lives in
  `SCHEDULE_TOPIC_XXXX` and a transactional one's is the half message, both topics the client
  refuses to send to. Every group subscribed to the topic receives the re-sent message. Null
  when no such id is known, or the message was already recovered.
- `lookup_command`: when there is no such id, `mqadmin queryMsgByUniqueKey -i <msg_id> -t
  <topic>`, which prints the copy stored in the topic under the message's msg_id.
- `group_command`: `mqadmin queryMsgById -i <offset id> -g <group> -d <clientId>` (or
  `queryMsgByUniqueKey ... -g -d` without an offset id): the broker hands the message to one
  client of the dead-lettered group, which runs its listener on it; other groups never see it.
- `resend_note` and `group_note`: what the commands do for this row, in words.

mqadmin 5.3.0 and later require `-t <topic>` on `queryMsgById`, which older tools reject;
`mqadmin_version` picks the form. In an instance with a namespace the commands name the group
and topic as the broker stores them, `<namespace>%<name>` (`broker_names`). docs/dlq-export.md
has the source behind each rule.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import re
import shlex
from collections.abc import Mapping

from retrylake.analyst.query import connect
from retrylake.errors import UsageError
from retrylake.lakehouse import Lakehouse

# The mart's columns in the export, in this order. A lakehouse built by an older model version
# lacks some of them; they are exported as nulls.
EXPORT_COLUMNS = (
    "consumer_group",
    "namespace",
    "dlq_topic",
    "msg_id",
    "origin_msg_id",
    "topic",
    "keys",
    "tags",
    "reconsume_times",
    "entered_dlq_at",
    "reason",
    "evidence",
    "origin_kind",
    "published_offset_msg_id",
    "reconciliation_reason",
    "observed_offset_msg_id",
    "observed_stored_at",
    "observed_reconsume_times",
    "recovered_at",
    "recovered_by",
    "recovery_consumer_group",
    "dlq_entry_number",
)

COMMAND_COLUMNS = (
    "resend_command",
    "lookup_command",
    "resend_note",
    "group_command",
    "group_note",
)

TIME_COLUMNS = ("entered_dlq_at", "observed_stored_at", "recovered_at")

# Offset ids are 32 (IPv4 store host) or 56 (IPv6) hex digits (spec §6.1).
OFFSET_ID_LENGTHS = (32, 56)
HEX = re.compile(r"[0-9A-Fa-f]+")

# The first mqadmin whose queryMsgById requires -t <topic> (commons-cli rejects it before).
TOPIC_REQUIRED_FROM = (5, 3)
DEFAULT_MQADMIN_VERSION = (4, 9)

CLIENT_ID = "<clientId>"


def parse_since(value: str) -> dt.datetime:
    """An ISO 8601 date or time; without a zone it is UTC, like every time in the marts."""
    try:
        parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(
            f"--since {value!r} is not a date or time; use ISO 8601, e.g. 2026-03-01 or "
            "2026-03-01T06:00:00Z"
        ) from None
    if parsed.tzinfo is not None:
        parsed = parsed.astimezone(dt.UTC).replace(tzinfo=None)
    return parsed


def parse_mqadmin_version(value: str) -> tuple[int, int]:
    """`4.9`, `5.3.3`, ...: the major and minor version of the mqadmin that runs the commands."""
    match = re.fullmatch(r"(\d+)\.(\d+)(\.\d+)*", value.strip())
    if not match:
        raise UsageError(
            f"--mqadmin-version {value!r} is not a version; use e.g. 4.9 or 5.3.3"
        ) from None
    return int(match.group(1)), int(match.group(2))


def offset_id(value: str | None, msg_id: str | None = None) -> str | None:
    """``value`` if it can be an offset id: 32 or 56 hex digits, and not the msgId (a
    client-path copy's ORIGIN_MESSAGE_ID is the UNIQ_KEY, spec §3.4, which has the same shape)."""
    if not value or len(value) not in OFFSET_ID_LENGTHS or not HEX.fullmatch(value):
        return None
    if msg_id and value.upper() == msg_id.upper():
        return None
    return value


def received_copy(row: Mapping) -> str | None:
    """The offset id of the copy consumers received in the original topic, if the row knows it.

    NORMAL: the Pub record's id is that copy. DELAYED and TRANSACTIONAL: the Pub record's id is
    the schedule-topic copy or the half message, so only an id that differs from it (taken from
    a DLQ copy's ORIGIN_MESSAGE_ID) names the copy consumers received. UNKNOWN (no Pub record)
    and a mart without origin_kind: origin_msg_id can only come from a DLQ copy."""
    origin = offset_id(row.get("origin_msg_id"), row.get("msg_id"))
    if origin is None:
        return None
    published = row.get("published_offset_msg_id") or ""
    if row.get("origin_kind") in ("DELAYED", "TRANSACTIONAL") and origin.upper() == (
        published.upper()
    ):
        return None
    return origin


def resend_command(
    origin_msg_id: str | None,
    namesrv: str | None,
    topic: str | None = None,
    mqadmin_version: tuple[int, int] = DEFAULT_MQADMIN_VERSION,
) -> str | None:
    """`mqadmin queryMsgById -i <offset id> -s true`: re-send the copy stored at that offset id
    to the topic it is stored in. None without a usable offset id (or without the topic that
    mqadmin 5.3+ requires)."""
    origin = offset_id(origin_msg_id)
    if origin is None:
        return None
    return _query_by_id(origin, topic, namesrv, mqadmin_version, "-s true")


def _quote(value: object) -> str:
    return shlex.quote(str(value))


def _namesrv_option(namesrv: str | None) -> str:
    return f"-n {_quote(namesrv)} " if namesrv else ""


def _query_by_id(
    offset: str,
    stored_topic: str | None,
    namesrv: str | None,
    mqadmin_version: tuple[int, int],
    action: str,
) -> str | None:
    topic_option = ""
    if mqadmin_version >= TOPIC_REQUIRED_FROM:
        if not stored_topic:
            return None
        topic_option = f"-t {_quote(stored_topic)} "
    return f"mqadmin queryMsgById {_namesrv_option(namesrv)}{topic_option}-i {offset} {action}"


def _query_by_unique_key(
    msg_id: str | None, topic: str | None, namesrv: str | None, action: str = ""
) -> str | None:
    if not msg_id or not topic:
        return None
    command = (
        f"mqadmin queryMsgByUniqueKey {_namesrv_option(namesrv)}-i {_quote(msg_id)} "
        f"-t {_quote(topic)}"
    )
    return f"{command} {action}" if action else command


def _group_action(group: str) -> str:
    return f"-g {_quote(group)} -d {CLIENT_ID}"


def _in_topic(topic: str | None) -> str:
    return topic if topic else "its original topic"


def _resend_notes(row: Mapping, origin: str | None, namesrv: str | None) -> tuple[str, str]:
    """What the re-send does (with an id) or why there is none and what to do instead."""
    kind = row.get("origin_kind")
    topic = _in_topic(row.get("topic"))
    group = row.get("consumer_group")
    published = row.get("published_offset_msg_id")
    everyone = (
        f"every consumer group subscribed to {topic} receives it again, not only {group}, with "
        "the same msg_id; consumers must be idempotent. The copy must still be in the commit "
        "log (fileReservedTime, 72 h by default)."
    )
    if origin is not None:
        if kind == "NORMAL":
            return (
                f"Re-sends the original message (offset id {origin}, stored in {topic}) to "
                f"{topic}: {everyone}"
            ), ""
        if kind == "DELAYED":
            return (
                f"Re-sends the copy consumers received ({origin}, named by the DLQ copy's "
                f"ORIGIN_MESSAGE_ID; the Pub record's {published} is the SCHEDULE_TOPIC_XXXX "
                f"copy) to {topic}: {everyone} That copy still carries its DELAY property, so "
                "the re-send waits its delay level again before it is delivered."
            ), ""
        if kind == "TRANSACTIONAL":
            return (
                f"Re-sends the committed copy consumers received ({origin}, named by the DLQ "
                f"copy's ORIGIN_MESSAGE_ID; the Pub record's {published} is the half message, "
                "never re-send it). That copy still carries TRAN_MSG=true, so mqadmin sends it "
                f"as a half message: it reaches {topic} only when the broker's transaction check "
                "asks the producer group in its PGROUP property and gets COMMIT. Then "
                f"{everyone} group_command does not depend on the check."
            ), ""
        if kind is None:
            return (
                f"Re-sends the message stored at {origin} to {topic}: {everyone} This lakehouse "
                "was built before dlq_messages had origin_kind: if the message was sent delayed "
                "or transactional, that id may name the SCHEDULE_TOPIC_XXXX copy or the half "
                "message, which mqadmin refuses to send; rebuild for checked commands."
            ), ""
        return (
            f"Re-sends the copy consumers received ({origin}, named by the DLQ copy's "
            f"ORIGIN_MESSAGE_ID; no Pub record was traced, so its kind is unknown) to {topic}: "
            f"{everyone} If it was sent delayed or transactional, the re-send is delayed again "
            "or held as a half message until the transaction check commits it."
        ), ""
    why = {
        "DELAYED": (
            f"The Pub record's offset id {published} is the SCHEDULE_TOPIC_XXXX copy (mqadmin "
            "refuses to send to that topic) and no DLQ copy names the copy consumers received."
        ),
        "TRANSACTIONAL": (
            f"The Pub record's offset id {published} is the half message, which must never be "
            "re-sent, and no DLQ copy names the committed copy consumers received."
        ),
        "NORMAL": "The Pub record carries no offset id (a 13-field record of an older client).",
    }.get(
        kind,
        "No Pub record was traced and no DLQ copy carries an ORIGIN_MESSAGE_ID offset id.",
    )
    if not row.get("msg_id") or not row.get("topic"):
        return f"No command. {why} The original topic is unknown, so it cannot be looked up.", ""
    return (
        f"No re-send command. {why} lookup_command prints the first copy stored in {topic} "
        "under this msg_id; its offset id is the Store Host and CommitLog Offset it prints, "
        "encoded as in docs/dlq-export.md. Re-send that copy with `mqadmin queryMsgById "
        f"{_namesrv_option(namesrv)}-i <offset id> -s true`: {everyone}"
    ), _query_by_unique_key(row.get("msg_id"), row.get("topic"), namesrv) or ""


def _group_parts(
    row: Mapping, origin: str | None, namesrv: str | None, mqadmin_version: tuple[int, int]
) -> tuple[str | None, str]:
    group = row.get("consumer_group")
    topic = row.get("topic")
    dlq_topic = row.get("dlq_topic")
    action = _group_action(group)
    command, copy = None, ""
    if origin is not None:
        command = _query_by_id(origin, topic, namesrv, mqadmin_version, action)
        copy = f"the copy consumers received ({origin}, in {_in_topic(topic)})"
    observed = offset_id(row.get("observed_offset_msg_id"))
    if command is None and observed is not None:
        command = _query_by_id(observed, dlq_topic, namesrv, mqadmin_version, action)
        copy = (
            f"the copy in {dlq_topic} ({observed}); its listener sees topic {dlq_topic}, not "
            f"{_in_topic(topic)}, and reconsumeTimes {row.get('observed_reconsume_times')}"
        )
    if command is None:
        command = _query_by_unique_key(row.get("msg_id"), topic, namesrv, action)
        copy = (
            f"the copy stored in {_in_topic(topic)} under this msg_id, found by msg_id (the "
            "only one unless it was re-sent before)"
        )
    if command is None:
        return None, "No command: neither an offset id nor the original topic is known."
    clients = f"mqadmin consumerConnection {_namesrv_option(namesrv)}-g {_quote(group)}"
    return command, (
        f"Has one client of {group} consume {copy}. Fill {CLIENT_ID} with a #ClientId from "
        f"`{clients}`. The broker passes the message to that client only, which runs its "
        "listener once and reports the result "
        "(CR_SUCCESS, CR_LATER, ...): no other client or group receives it, the group's "
        "offsets are untouched, and a failure is neither retried nor dead-lettered again. The "
        "listener runs without the consume hooks, so the trace records nothing of it. Push "
        "consumers only."
    )


def in_namespace(namespace: str, name: str) -> str:
    """``name`` as the broker stores it in ``namespace`` (NamespaceUtil.wrapNamespace): after a
    %RETRY% or %DLQ% prefix, and unchanged when it already carries the namespace."""
    prefix = next((p for p in ("%RETRY%", "%DLQ%") if name.startswith(p)), "")
    rest = name[len(prefix) :]
    if rest.startswith(f"{namespace}%"):
        return name
    return f"{prefix}{namespace}%{rest}"


def broker_names(row: Mapping) -> Mapping:
    """The row with its group and original topic as the broker stores them when the group lives
    in a namespace (spec §7: `ns%G`, `ns%T`). The mart names them as the trace does, without it;
    mqadmin talks to the broker, which knows only the wrapped names."""
    namespace = row.get("namespace")
    if not namespace:
        return row
    named = dict(row)
    for column in ("consumer_group", "topic"):
        name = named.get(column)
        if name:
            named[column] = in_namespace(namespace, str(name))
    return named


def commands_for(
    row: Mapping,
    namesrv: str | None = None,
    mqadmin_version: tuple[int, int] = DEFAULT_MQADMIN_VERSION,
) -> dict[str, str | None]:
    """The command columns of one work-list row (a mapping of mart columns)."""
    row = broker_names(row)
    if row.get("recovered_at") is not None:
        by = row.get("recovered_by")
        by_group = row.get("recovery_consumer_group")
        how = f" by {by}" if by else ""
        if by == "RECOVERY_CONSUMER" and by_group:
            how += f" ({by_group})"
        note = f"Already recovered at {_iso(row['recovered_at'])}{how}: no command."
        return {
            "resend_command": None,
            "lookup_command": None,
            "resend_note": note,
            "group_command": None,
            "group_note": note,
        }
    origin = received_copy(row)
    resend = None
    if origin is not None:
        resend = _query_by_id(origin, row.get("topic"), namesrv, mqadmin_version, "-s true")
    resend_note, lookup = _resend_notes(row, origin if resend else None, namesrv)
    if row.get("evidence") == "PREDICTED":
        resend_note += (
            f" Predicted only ({row.get('reconciliation_reason') or 'no reason'}): no DLQ "
            f"export shows it; check that {row.get('dlq_topic')} holds it before acting."
        )
    group_command, group_note = _group_parts(row, origin, namesrv, mqadmin_version)
    return {
        "resend_command": resend,
        "lookup_command": lookup or None,
        "resend_note": resend_note,
        "group_command": group_command,
        "group_note": group_note,
    }


def _iso(value: object) -> object:
    if isinstance(value, dt.datetime):
        return value.isoformat(timespec="milliseconds") + "Z"
    return value


def dlq_work_list(
    lakehouse: Lakehouse,
    *,
    groups: list[str] | None = None,
    since: dt.datetime | None = None,
    namesrv: str | None = None,
    mqadmin_version: tuple[int, int] = DEFAULT_MQADMIN_VERSION,
) -> tuple[list[str], list[dict]]:
    """Rows of the work list, oldest dead letter first; a fixed order for diffable exports."""
    connection = connect(lakehouse)
    try:
        present = {
            name
            for (name,) in connection.execute(
                "select column_name from information_schema.columns where table_name = ?",
                ["dlq_messages"],
            ).fetchall()
        }
        selected = ", ".join(
            f'"{column}"' if column in present else f'null as "{column}"'
            for column in EXPORT_COLUMNS
        )
        where, parameters = ["true"], []
        if groups:
            where.append(f"consumer_group in ({', '.join('?' * len(groups))})")
            parameters += groups
        if since is not None:
            where.append("entered_dlq_at >= ?")
            parameters.append(since)
        cursor = connection.execute(
            f"select {selected} from dlq_messages where {' and '.join(where)} "
            "order by entered_dlq_at, consumer_group, msg_id, dlq_entry_number",
            parameters,
        )
        rows = [dict(zip(EXPORT_COLUMNS, row, strict=True)) for row in cursor.fetchall()]
    finally:
        connection.close()
    for row in rows:
        row.update(commands_for(row, namesrv, mqadmin_version))
        for column in TIME_COLUMNS:
            row[column] = _iso(row[column])
    return [*EXPORT_COLUMNS, *COMMAND_COLUMNS], rows


def render_work_list(columns: list[str], rows: list[dict], output: str) -> str:
    if output == "jsonl":
        return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()
