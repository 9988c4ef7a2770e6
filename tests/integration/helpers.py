"""Reading marts back for assertions: plain Python values, timestamps as epoch milliseconds;
and what the tests that start processes share (a free port, waiting for a line of a log)."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

from retrylake.lakehouse import Lakehouse


def _fact_mart_nodes(lakehouse: Lakehouse) -> list[dict]:
    """The models tagged `fact_mart`, from the manifest of the lakehouse's last dbt run."""
    manifest = json.loads((lakehouse.dbt_target / "manifest.json").read_text())
    return [
        node
        for node in manifest["nodes"].values()
        if node["resource_type"] == "model" and "fact_mart" in node["tags"]
    ]


def fact_marts(lakehouse: Lakehouse) -> list[str]:
    """The project's published fact marts: the models tagged `fact_mart` in the marts schema.
    A new fact mart is compared without a test listing it."""
    names = sorted(
        node.get("alias") or node["name"]
        for node in _fact_mart_nodes(lakehouse)
        if node["config"].get("schema") == "marts"
    )
    assert "message_lifecycles" in names, names  # the tag is there, and read right
    return names


def unpublished_fact_marts(lakehouse: Lakehouse) -> list[str]:
    """The fact marts kept outside the marts schema (the dead letters' narrowed lifecycles and
    decisions, schedule_fit's counted sample), as `schema.table`."""
    names = sorted(
        f"{node['schema']}.{node.get('alias') or node['name']}"
        for node in _fact_mart_nodes(lakehouse)
        if node["config"].get("schema") != "marts"
    )
    assert "retrylake_intermediate.int_dlq__lifecycles" in names, names
    return names


def rows(spark: Any, table: str, columns: list[str], where: str = "true") -> list[dict]:
    """Rows of ``table`` as dicts; timestamp columns are converted to epoch ms in SQL so the
    comparison does not depend on the Python process's time zone."""
    schema = {field.name: field.dataType.typeName() for field in spark.table(table).schema}
    select = ", ".join(
        f"unix_millis({column}) as {column}" if schema[column] == "timestamp" else column
        for column in columns
    )
    return [
        row.asDict() for row in spark.sql(f"select {select} from {table} where {where}").collect()
    ]


def table_snapshot(spark: Any, table: Any, drop: tuple[str, ...] = ()) -> list[tuple]:
    """Every row of a table (a name or a DataFrame), sorted, for comparing two builds."""
    frame = spark.table(table) if isinstance(table, str) else table
    columns = [column for column in frame.columns if column not in drop]
    return sorted(
        (tuple(row) for row in frame.select(*columns).collect()),
        key=lambda values: tuple((value is None, str(value)) for value in values),
    )


def retrylake_tables(spark: Any) -> list[str]:
    """Every table and view retrylake keeps, across its schemas."""
    names = []
    for database in spark.catalog.listDatabases():
        if database.name == "retrylake" or database.name.startswith("retrylake_"):
            # SHOW TABLES: names only (catalog.listTables fetches each table's metadata)
            names += [
                f"{database.name}.{row.tableName}"
                for row in spark.sql(f"show tables in `{database.name}`").collect()
                if not row.isTemporary  # dbt-spark's session-scoped __dbt_tmp views
            ]
    return sorted(names)


def free_port() -> int:
    """A loopback port nothing listens on now, for a server a test starts."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for_log(
    log: Path,
    pattern: str,
    process: subprocess.Popen,
    *,
    timeout: float,
    times: int = 1,
    errors: Path | None = None,
) -> re.Match[str]:
    """Wait until ``log`` holds ``times`` matches of the regular expression ``pattern``, and
    return the last of them. Fails at once if ``process`` ends first, and after ``timeout``
    seconds, showing the end of ``errors`` (the process's stderr, if apart) or of the log."""
    deadline = time.monotonic() + timeout
    while True:
        text = log.read_text(errors="replace") if log.exists() else ""
        found = list(re.finditer(pattern, text))
        if len(found) >= times:
            return found[times - 1]
        ended = process.poll() is not None
        if ended or time.monotonic() >= deadline:
            shown = errors or log
            tail = shown.read_text(errors="replace")[-3000:] if shown.exists() else "(none)"
            what = f"exited ({process.returncode})" if ended else f"ran {timeout:.0f} s"
            raise AssertionError(
                f"the process {what} before {log} showed {pattern!r} {times} time(s); "
                f"the end of {shown}:\n{tail}"
            )
        time.sleep(0.2)
