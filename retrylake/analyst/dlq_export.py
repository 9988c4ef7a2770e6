"""`retrylake dlq-export`: the compensation work list of dead-lettered messages, with a
ready-to-run `mqadmin` command that re-sends each one.

Reads the `dlq_messages` mart with DuckDB, so it needs no Java. The re-send goes through
`mqadmin queryMsgById -i <offset id> -s true`: the admin tool looks the message up by its
offset id (`viewMessage`) and sends it again to the topic it was stored in. The origin id is the
offset id of the original message in its own topic, so the copy goes back to the consumers
rather than into `%DLQ%` again. Every group subscribed to that topic receives it.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import shlex

from retrylake.analyst.query import connect
from retrylake.errors import UsageError
from retrylake.lakehouse import Lakehouse

EXPORT_COLUMNS = (
    "consumer_group",
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
)

# Offset ids are 32 (IPv4 store host) or 56 (IPv6) hex digits (spec §6.1).
OFFSET_ID_LENGTHS = (32, 56)


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


def resend_command(origin_msg_id: str | None, namesrv: str | None) -> str | None:
    """The `mqadmin` command that re-sends the original message, or None when its offset id is
    unknown (no Pub record was traced): then `queryMsgByUniqueKey` must find it first."""
    if not origin_msg_id or len(origin_msg_id) not in OFFSET_ID_LENGTHS:
        return None
    namesrv_option = f"-n {shlex.quote(namesrv)} " if namesrv else ""
    return f"mqadmin queryMsgById {namesrv_option}-i {shlex.quote(origin_msg_id)} -s true"


def dlq_work_list(
    lakehouse: Lakehouse,
    *,
    groups: list[str] | None = None,
    since: dt.datetime | None = None,
    namesrv: str | None = None,
) -> tuple[list[str], list[dict]]:
    """Rows of the work list, oldest dead letter first; a fixed order for diffable exports."""
    connection = connect(lakehouse)
    try:
        where, parameters = ["true"], []
        if groups:
            where.append(f"consumer_group in ({', '.join('?' * len(groups))})")
            parameters += groups
        if since is not None:
            where.append("entered_dlq_at >= ?")
            parameters.append(since)
        cursor = connection.execute(
            f"select {', '.join(EXPORT_COLUMNS)} from dlq_messages "
            f"where {' and '.join(where)} order by entered_dlq_at, consumer_group, msg_id",
            parameters,
        )
        rows = [dict(zip(EXPORT_COLUMNS, row, strict=True)) for row in cursor.fetchall()]
    finally:
        connection.close()
    for row in rows:
        row["entered_dlq_at"] = row["entered_dlq_at"].isoformat(timespec="milliseconds") + "Z"
        row["resend_command"] = resend_command(row["origin_msg_id"], namesrv)
    return [*EXPORT_COLUMNS, "resend_command"], rows


def render_work_list(columns: list[str], rows: list[dict], output: str) -> str:
    if output == "jsonl":
        return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()
