"""`retrylake query`: DuckDB over the marts' parquet files, without starting Java.

Each mart is a view named like its table, over the files of the build last published (or of an
earlier kept build, `--as-of`; docs/publishing.md). Files are listed in Python and only
committed data files are read: Spark's in-progress folders (`_temporary`, `.spark-staging-*`)
start with `_` or `.`, as do its marker files.
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
from spark_udfs.snapshots import (
    MANIFESTS,
    PUBLISHED_FOLDER,
    build_as_of,
    committed_files,
    published_columns,
    published_marts,
)

MART_SCHEMA = "retrylake.db"


def mart_files(lakehouse: Lakehouse, build: str | None = None) -> dict[str, list[Path]]:
    """The committed parquet files of every mart, by name: those of the published build (or of
    ``build``, an earlier one still kept), else, in a lakehouse built before publishing, of the
    mart tables' own folders."""
    published = published_marts(lakehouse.warehouse / PUBLISHED_FOLDER, build)
    if published or build:
        tables = [published[name] for name in sorted(published)]
    else:
        root = lakehouse.warehouse / MART_SCHEMA
        tables = sorted(path for path in root.iterdir() if path.is_dir()) if root.is_dir() else []
    marts: dict[str, list[Path]] = {}
    for table in tables:
        files = [table / relative for relative in committed_files(table)]
        if files:
            marts[table.name] = files
    return marts


def published_build(lakehouse: Lakehouse, as_of: str) -> str:
    """The kept build ``as_of`` names (a build id, or a UTC time: the last build published by
    then); a usage error naming the kept builds otherwise."""
    folder = lakehouse.warehouse / PUBLISHED_FOLDER
    try:
        build = build_as_of(folder, as_of)
    except ValueError:
        build = None
    if build is None:
        kept = sorted(path.stem for path in (folder / MANIFESTS).glob("*.json"))
        raise UsageError(
            f"--as-of {as_of}: no published build by that name or at or before that time; "
            f"kept builds: {', '.join(kept) or 'none'} (published_builds lists them)"
        )
    return build


def connect(lakehouse: Lakehouse, as_of: str | None = None):
    """A DuckDB connection with one view per mart, of the published build or of the build
    ``as_of`` names, and `published_builds`, the builds kept for such questions."""
    import duckdb

    build = published_build(lakehouse, as_of) if as_of is not None else None
    marts = mart_files(lakehouse, build)
    # a mart of no rows has no file to read its columns from: its manifest keeps them
    empty = {
        name: columns
        for name, columns in published_columns(
            lakehouse.warehouse / PUBLISHED_FOLDER, build
        ).items()
        if name not in marts
    }
    if not marts and not empty and not lakehouse.root.is_dir():
        raise NoMartsError(
            f"no lakehouse at {lakehouse.root}; give the folder `retrylake build` built with "
            "--lakehouse (or $RETRYLAKE_LAKEHOUSE)"
        )
    if not marts and not empty:
        raise NoMartsError(
            f"no published marts in {lakehouse.warehouse / PUBLISHED_FOLDER}; "
            "run `retrylake build` first"
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
    for name, columns in empty.items():
        typed = ", ".join(
            f'cast(null as {duckdb_type(spark_type)}) as "{column}"'
            for column, spark_type in columns
        )
        connection.execute(f'create view "{name}" as select {typed} where false')
    manifests = lakehouse.warehouse / PUBLISHED_FOLDER / MANIFESTS
    if any(manifests.glob("*.json")):
        pattern = str(manifests / "*.json").replace("'", "''")
        connection.execute(
            "create view published_builds as select build,"
            " cast(cast(published_at as timestamptz) as timestamp) as published_at,"
            " cast(cast(run_started_at as timestamptz) as timestamp) as run_started_at,"
            f" dbt_command, invocation_id, marts from read_json('{pattern}', format = 'auto')"
        )
    return connection


# Spark's names of the types a mart's columns have, as DuckDB names them.
_SCALAR_TYPES = {
    "string": "VARCHAR",
    "boolean": "BOOLEAN",
    "tinyint": "TINYINT",
    "smallint": "SMALLINT",
    "int": "INTEGER",
    "integer": "INTEGER",
    "bigint": "BIGINT",
    "float": "FLOAT",
    "double": "DOUBLE",
    "date": "DATE",
    "timestamp": "TIMESTAMP",  # UTC instants, shown as plain UTC timestamps (see connect)
    "timestamp_ntz": "TIMESTAMP",
    "binary": "BLOB",
}


def duckdb_type(spark_type: str) -> str:
    """DuckDB's name of a Spark column type as `describe` prints it (``array<string>``,
    ``decimal(10,2)``, ``struct<a:int>``, ``map<string,bigint>``)."""
    text = spark_type.strip()
    kind = text.lower()
    if kind in _SCALAR_TYPES:
        return _SCALAR_TYPES[kind]
    if kind.startswith(("decimal", "char", "varchar")):
        return "VARCHAR" if "char" in kind else kind.upper()
    if kind.startswith("array<") and kind.endswith(">"):
        return duckdb_type(text[6:-1]) + "[]"
    if kind.startswith("map<") and kind.endswith(">"):
        key, value = _top_level_parts(text[4:-1])
        return f"MAP({duckdb_type(key)}, {duckdb_type(value)})"
    if kind.startswith("struct<") and kind.endswith(">"):
        fields = []
        for field in _top_level_parts(text[7:-1]):
            name, _, field_type = field.partition(":")
            fields.append(f'"{name.strip().strip("`")}" {duckdb_type(field_type)}')
        return f"STRUCT({', '.join(fields)})"
    raise ValueError(f"a column type DuckDB readers do not know: {spark_type}")


def _top_level_parts(text: str) -> list[str]:
    """``text`` split at the commas outside any ``<...>`` or ``(...)``."""
    parts, depth, start = [], 0, 0
    for index, char in enumerate(text):
        if char in "<(":
            depth += 1
        elif char in ">)":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append(text[start:index])
            start = index + 1
    return [*parts, text[start:]]


def run_query(
    lakehouse: Lakehouse, sql: str, as_of: str | None = None
) -> tuple[list[str], list[tuple]]:
    import duckdb

    connection = connect(lakehouse, as_of)
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


def _json_value(value: Any) -> Any:
    """What JSON cannot hold as such, as the table and CSV forms print it (a duration, a UUID,
    a time inside a list); bytes as hex."""
    if isinstance(value, bytes | bytearray):
        return value.hex()
    plain = _plain(value)
    return plain if plain is not value else str(value)


def render(columns: list[str], rows: list[tuple], output: str) -> str:
    if output == "json":
        return json.dumps(
            [dict(zip(columns, map(_plain, row), strict=True)) for row in rows],
            indent=2,
            default=_json_value,
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
