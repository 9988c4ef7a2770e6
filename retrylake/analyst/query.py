"""`retrylake query`: DuckDB over the marts' parquet files, without starting Java.

Each mart of the `retrylake` schema is a view named like the table. Files are listed in Python
and only committed data files are read: Spark's in-progress folders (`_temporary`,
`.spark-staging-*`) start with `_` or `.`, as do its marker files.
"""

from __future__ import annotations

import csv
import datetime as dt
import decimal
import io
import json
from pathlib import Path
from typing import Any

from retrylake.errors import NoMartsError, UsageError
from retrylake.lakehouse import Lakehouse

MART_SCHEMA = "retrylake.db"


def mart_files(lakehouse: Lakehouse) -> dict[str, list[Path]]:
    """The committed parquet files of every mart table, by table name."""
    root = lakehouse.warehouse / MART_SCHEMA
    marts: dict[str, list[Path]] = {}
    if not root.is_dir():
        return marts
    for table in sorted(path for path in root.iterdir() if path.is_dir()):
        files = [
            path
            for path in sorted(table.rglob("*.parquet"))
            if not any(part.startswith(("_", ".")) for part in path.relative_to(table).parts)
        ]
        if files:
            marts[table.name] = files
    return marts


def connect(lakehouse: Lakehouse):
    """A DuckDB connection with one view per mart."""
    import duckdb

    marts = mart_files(lakehouse)
    if not marts:
        raise NoMartsError(
            f"no marts under {lakehouse.warehouse / MART_SCHEMA}; run `retrylake build` first"
        )
    connection = duckdb.connect()
    connection.execute("set TimeZone = 'UTC'")
    for name, files in marts.items():
        listed = ", ".join("'" + str(path).replace("'", "''") + "'" for path in files)
        source = f"read_parquet([{listed}], hive_partitioning = true, union_by_name = true)"
        # Spark writes UTC instants (TIMESTAMP_MICROS), which DuckDB reads as TIMESTAMPTZ; every
        # time in retrylake is UTC, so they are shown as plain UTC timestamps, as Spark shows them.
        instants = [
            column
            for column, kind, *_ in connection.execute(
                f"describe select * from {source}"
            ).fetchall()
            if kind == "TIMESTAMP WITH TIME ZONE"
        ]
        replaced = ", ".join(f'cast("{column}" as timestamp) as "{column}"' for column in instants)
        columns = f"* replace ({replaced})" if instants else "*"
        connection.execute(f'create view "{name}" as select {columns} from {source}')
    return connection


def run_query(lakehouse: Lakehouse, sql: str) -> tuple[list[str], list[tuple]]:
    import duckdb

    connection = connect(lakehouse)
    try:
        cursor = connection.execute(sql)
        columns = [column[0] for column in cursor.description]
        return columns, cursor.fetchall()
    except duckdb.Error as error:  # DuckDB's message says what is wrong with the SQL
        raise UsageError(f"query failed: {error}") from None
    finally:
        connection.close()


def _plain(value: Any) -> Any:
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return float(value)
    return value


def render(columns: list[str], rows: list[tuple], output: str) -> str:
    if output == "json":
        return json.dumps(
            [dict(zip(columns, map(_plain, row), strict=True)) for row in rows], indent=2
        )
    if output == "csv":
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(columns)
        writer.writerows([[_plain(value) for value in row] for row in rows])
        return buffer.getvalue().rstrip("\n")
    cells = [["" if value is None else str(_plain(value)) for value in row] for row in rows]
    widths = [
        max([len(column)] + [len(line[i]) for line in cells]) for i, column in enumerate(columns)
    ]
    lines = ["  ".join(column.ljust(width) for column, width in zip(columns, widths, strict=True))]
    lines.append("  ".join("-" * width for width in widths))
    lines += [
        "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True))
        for line in cells
    ]
    lines.append(f"({len(rows)} row{'s' if len(rows) != 1 else ''})")
    return "\n".join(lines)
