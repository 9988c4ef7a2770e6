"""The DuckDB peer of the marts: the same work as the Spark build, as one plain SQL script
(``duckdb_peer.sql``, beside this file) run by a single DuckDB process over the same landing
files, so that the bench can time it against the build and check that both agree.

What it covers: every input the build reads.

- ``trace/`` (4.x and 5.x remoting clients): attempts from SubBefore and SubAfter records (both
  SubAfter layouts), the retry decisions of spec §11 (levels, delays from the cluster's table,
  the DLQ cut-off, orderly, broadcasting and dropping groups), the Pub records' origins;
- ``dlq/``: the exported dead-letter copies, as observed dead letters;
- ``otel/``, ``consume_events/`` and ``broker_logs/`` (5.x gRPC consumers, client lines
  ``grpc-5`` and ``cloud-5``): attempts from listener events, else process spans, the group
  retry policy's decisions, and the brokers' DLQ lines as observed dead letters.

It writes ``consume_attempts``, ``retry_decisions``, ``redeliveries`` (the redelivery causes
the lifecycles need: partial batch acks, overturned DLQ decisions), ``message_lifecycles`` and
``dlq_messages`` (with evidence, reasons and recoveries), as tables of ``peer.duckdb`` in the
work folder. It leaves out the marts that only aggregate these (``group_retry_stats_daily``,
``dlq_reconciliation``, ``schedule_fit``) and the bookkeeping ones (``landing_quarantine``,
``landing_ignored``): an unusable line or record is skipped, not listed.

"Now" is the data watermark, the latest time any landed record tells, never the clock, and the
settings come from the seeds with the defaults of dbt_project.yml's vars.

``run_peer`` is what the bench times; ``compare_with_marts`` is the check, run after it and
timed apart.
"""

from __future__ import annotations

import time
import zlib
from pathlib import Path

import duckdb

from retrylake.project import DEFAULT_PROJECT_DIR, project_vars
from spark_udfs.snapshots import PUBLISHED_FOLDER, published_marts

SQL_PATH = Path(__file__).with_name("duckdb_peer.sql")
DATABASE_NAME = "peer.duckdb"

# The landing feeds the build reads (macros/landing/register_landing_sources.sql): the folder,
# the variable the SQL reads its file list from, and the file names it reads.
FEEDS = {
    "trace": ("trace_files", (".jsonl", ".jsonl.gz")),
    "dlq": ("dlq_files", (".jsonl", ".jsonl.gz")),
    "otel": ("otel_files", (".json", ".jsonl", ".json.gz", ".jsonl.gz")),
    "consume_events": ("consume_event_files", (".jsonl", ".jsonl.gz")),
    "broker_logs": ("broker_log_files", (".log", ".log.gz")),
}

# The tables the peer computes, each compared with a mart on a key: every column the two share
# is compared, timestamps to the microsecond. The settings and delay tables the rules read come
# first, so that a difference there is told apart from one in the rules.
COMPARED = {
    "delay_levels": ("delay_levels", ("broker_cluster", "level")),
    "consumer_group_settings": ("consumer_groups", ("consumer_group",)),
    "consume_attempts": ("consume_attempts", ("consumer_group", "msg_id", "request_id")),
    "retry_decisions": ("retry_decisions", ("consumer_group", "msg_id", "delivery_number")),
    "redeliveries": ("redeliveries", ("consumer_group", "msg_id", "delivery_number")),
    "message_lifecycles": ("message_lifecycles", ("consumer_group", "msg_id")),
    "dlq_messages": ("dlq_messages", ("consumer_group", "msg_id", "dlq_entry_number")),
}

# The client lines the peer judges; a mart row of any other line is left out of the comparison.
COVERED_CLIENT_LINES = ("remoting-4.9", "remoting-5", "grpc-5", "cloud-5")

EXAMPLES = 5


class PeerError(RuntimeError):
    """A step of the peer's SQL script failed (a bad seed stops it, as it stops the build)."""


def landing_files(landing: Path, feed: str) -> tuple[list[Path], list[Path]]:
    """The files of a feed the build reads, readable and not (a truncated or corrupt gzip).

    Hidden names (starting with ``.``, or ``_`` without a ``=``, in the file or a folder under
    the feed) are files still being written or a writer's markers, which Spark's listing skips
    too.
    """
    _, suffixes = FEEDS[feed]
    root = landing / feed
    if not root.is_dir():
        return [], []
    readable, unreadable = [], []
    for path in sorted(root.rglob("*")):
        if not path.is_file() or any(map(_is_hidden, path.relative_to(root).parts)):
            continue
        # an empty file has no line to read (and an empty .gz is no gzip stream)
        if not path.name.endswith(suffixes) or path.stat().st_size == 0:
            continue
        if path.name.endswith(".gz") and not _gzip_is_whole(path):
            unreadable.append(path)
        else:
            readable.append(path)
    return readable, unreadable


def _is_hidden(name: str) -> bool:
    return name.startswith(".") or (name.startswith("_") and "=" not in name)


def _gzip_is_whole(path: Path) -> bool:
    """Whether a gzip file decompresses to its end with a matching checksum.

    DuckDB reads a cut gzip up to the cut without complaint; the build skips such a file
    whole (and quarantines it), so the peer does too.
    """
    try:
        with path.open("rb") as handle:
            while True:
                decompressor = zlib.decompressobj(wbits=31)
                data = handle.read(1 << 20)
                if not data:
                    return True
                while data:
                    decompressor.decompress(data)
                    if decompressor.eof:
                        break
                    data = handle.read(1 << 20)
                if not decompressor.eof:
                    return False
                # another gzip member may follow: gzip -c a b > c is one file
                rest = decompressor.unused_data
                if rest:
                    handle.seek(-len(rest), 1)
    except (OSError, zlib.error):
        return False


def sql_steps(sql: str | None = None) -> list[tuple[str, str]]:
    """The script's steps, in order: (name, statements), split at each ``-- step: name`` line."""
    text = SQL_PATH.read_text(encoding="utf-8") if sql is None else sql
    steps: list[tuple[str, str]] = []
    for chunk in text.split("\n-- step: ")[1:]:
        name, _, body = chunk.partition("\n")
        steps.append((name.strip(), body))
    return steps


def _variables(seeds: Path, project_dir: Path) -> dict:
    """The values the SQL reads with getvariable(): file lists, seed files, project vars."""
    values = project_vars(project_dir)
    defaults = values["consumer_group_defaults"]
    exponential = values["exponential_retry_policy_default"]
    variables: dict[str, object] = {
        "consumer_groups_csv": str(seeds / "consumer_groups.csv"),
        "broker_delay_levels_csv": str(seeds / "broker_delay_levels.csv"),
        "retry_overdue_grace_ms": int(values["retry_overdue_grace_seconds"]) * 1000,
        "default_broker_version": str(values["default_broker_version"]),
        "cloud_fifo_retry_interval_millis": int(values["cloud_fifo_retry_interval_millis"]),
        "customized_retry_policy_default_millis": [
            int(ms) for ms in values["customized_retry_policy_default_millis"]
        ],
        "exponential_initial_ms": int(exponential["initial"]),
        "exponential_max_ms": int(exponential["max"]),
        "exponential_multiplier": int(exponential["multiplier"]),
        "delivery_attempt_attributes": [
            str(name) for name in values["delivery_attempt_attributes"]
        ],
    }
    for column in ("message_model", "consume_mode", "broker_cluster", "client_line"):
        variables[f"default_{column}"] = str(defaults[column])
    variables["default_consumer_kind"] = str(defaults["consumer_kind"])
    for column in ("max_reconsume_times", "retry_queue_nums", "delay_level_when_next_consume"):
        variables[f"default_{column}"] = int(defaults[column])
    variables["default_consume_timeout_minutes"] = int(defaults["consume_timeout_minutes"])
    variables["default_retry_max_times"] = int(defaults["retry_max_times"])
    variables["default_suspend_current_queue_time_millis"] = int(
        defaults["suspend_current_queue_time_millis"]
    )
    variables["default_dead_letter_enabled"] = bool(defaults["dead_letter_enabled"])
    return variables


def _set_variables(con: duckdb.DuckDBPyConnection, variables: dict) -> None:
    for name, value in variables.items():
        if isinstance(value, bool):
            con.execute(f"set variable {name} = {'true' if value else 'false'}")
        elif isinstance(value, int):
            con.execute(f"set variable {name} = cast({value} as bigint)")
        elif isinstance(value, list) and all(isinstance(item, int) for item in value):
            con.execute(f"set variable {name} = cast(? as bigint[])", [value])
        else:
            con.execute(f"set variable {name} = ?", [value])


def run_peer(
    landing: Path, seeds: Path, workdir: Path, project_dir: Path = DEFAULT_PROJECT_DIR
) -> dict:
    """Run the peer over ``landing`` with the seeds in ``seeds`` (consumer_groups.csv,
    broker_delay_levels.csv), writing its tables to ``workdir/peer.duckdb``.

    Returns the seconds it took (in all, and per step: listing the files, then each step of the
    SQL script), the CPU seconds of this process (all DuckDB threads; less sensitive than the
    wall clock to other work on the machine), the DuckDB threads, the files it read per feed
    (and the unreadable ones it skipped), and the rows of each table it wrote.
    """
    began, cpu_began = time.perf_counter(), time.process_time()
    workdir.mkdir(parents=True, exist_ok=True)
    database = workdir / DATABASE_NAME
    for stale in (database, database.with_name(DATABASE_NAME + ".wal")):
        stale.unlink(missing_ok=True)
    # read_csv needs a file: a feed with none reads this empty one
    empty_file = workdir / "empty-feed.txt"
    empty_file.write_bytes(b"")

    files: dict[str, dict[str, int]] = {}
    variables = _variables(seeds, project_dir)
    for feed, (variable, _) in FEEDS.items():
        readable, unreadable = landing_files(landing, feed)
        variables[variable] = [str(path) for path in readable] or [str(empty_file)]
        files[feed] = {"read": len(readable), "unreadable": len(unreadable)}
        if unreadable:
            files[feed]["unreadable_files"] = [str(path) for path in unreadable]
    step_seconds = {"list_files": round(time.perf_counter() - began, 3)}

    con = duckdb.connect(str(database))
    try:
        con.execute("set TimeZone = 'UTC'")
        _set_variables(con, variables)
        for name, statements in sql_steps():
            step_began = time.perf_counter()
            try:
                con.execute(statements)
            except duckdb.Error as error:
                raise PeerError(f"duckdb peer: step {name!r} failed: {error}") from error
            step_seconds[name] = round(time.perf_counter() - step_began, 3)
        rows = {
            table: con.execute(f"select count(*) from {table}").fetchone()[0] for table in COMPARED
        }
        watermark = con.execute("select watermark_at from watermark").fetchone()[0]
        threads = con.execute("select current_setting('threads')").fetchone()[0]
    finally:
        con.close()
    return {
        "seconds": round(time.perf_counter() - began, 3),
        "cpu_seconds": round(time.process_time() - cpu_began, 3),
        "threads": threads,
        "steps": step_seconds,
        "files": files,
        "rows": rows,
        "watermark": watermark.isoformat() if watermark is not None else None,
        "database": str(database),
    }


def _scalar(con: duckdb.DuckDBPyConnection, sql: str, params: list | None = None) -> object:
    return con.execute(sql, params or []).fetchone()[0]


def _plain(value: object) -> object:
    """A value as JSON holds it."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return str(value)


def _rows(con: duckdb.DuckDBPyConnection, sql: str) -> list[list]:
    return [[_plain(value) for value in row] for row in con.execute(sql).fetchall()]


def _column_types(con: duckdb.DuckDBPyConnection, relation: str) -> dict[str, str]:
    return dict(
        con.execute(f"select column_name, column_type from (describe {relation})").fetchall()
    )


def _comparable(side: str, column: str, column_type: str) -> str:
    """A column as both sides compare it: a timestamp (the marts' with the UTC zone, the peer's
    without) as epoch microseconds."""
    reference = f'{side}."{column}"'
    return f"epoch_us({reference})" if column_type.startswith("TIMESTAMP") else reference


def _compare_table(
    con: duckdb.DuckDBPyConnection, table: str, warehouse: Path, uncovered_groups: list[str]
) -> dict:
    """One peer table against its mart: rows on one side only, and rows that disagree."""
    mart_table, key = COMPARED[table]
    folder = published_marts(warehouse / PUBLISHED_FOLDER).get(mart_table)
    if folder is None or not any(folder.rglob("*.parquet")):
        return {"missing_mart": True}
    pattern = str(folder / "**" / "*.parquet").replace("'", "''")
    con.execute(
        f"create or replace temp view mart as"
        f" select * from read_parquet('{pattern}', hive_partitioning = true)"
    )
    peer_types, mart_types = _column_types(con, table), _column_types(con, "mart")
    columns = [column for column in peer_types if column in mart_types and column not in key]

    # The rows the peer covers: of its client lines (where the mart names the line), of groups
    # it does not judge under another line (elsewhere).
    if "client_line" in mart_types:
        scope, values = "client_line in (select unnest(?))", [list(COVERED_CLIENT_LINES)]
    elif "consumer_group" not in mart_types:
        scope, values = "true", []
    else:
        scope, values = "consumer_group not in (select unnest(?))", [uncovered_groups]
    con.execute(
        f"create or replace temp table scoped_mart as select * from mart where {scope}", values
    )
    mart_rows = _scalar(con, "select count(*) from mart")
    scoped_rows = _scalar(con, "select count(*) from scoped_mart")

    on = " and ".join(f"p.{k} is not distinct from m.{k}" for k in key)
    peer_key, mart_key = ", ".join(f"p.{k}" for k in key), ", ".join(f"m.{k}" for k in key)
    only_in_peer = f"select {peer_key} from {table} as p anti join scoped_mart as m on {on}"
    only_in_marts = f"select {mart_key} from scoped_mart as m anti join {table} as p on {on}"
    differs = [
        f"{_comparable('p', c, peer_types[c])} is distinct from"
        f' {_comparable("m", c, mart_types[c])} as "differs_{c}",'
        f' p."{c}" as "peer_{c}", m."{c}" as "mart_{c}"'
        for c in columns
    ]
    con.execute(
        "create or replace temp table compared as select "
        + ", ".join([*(f"p.{k}" for k in key), *differs])
        + f" from {table} as p inner join scoped_mart as m on {on}"
    )
    any_differs = " or ".join(f'"differs_{c}"' for c in columns) or "false"
    by_column = {
        column: _scalar(con, f'select count(*) from compared where "differs_{column}"')
        for column in columns
    }
    disagreeing = []
    for column, count in by_column.items():
        if not count:
            continue
        sample = con.execute(
            f'select {", ".join(key)}, "peer_{column}", "mart_{column}" from compared'
            f' where "differs_{column}" order by all limit {EXAMPLES}'
        ).fetchall()
        disagreeing += [
            {
                "key": {k: _plain(v) for k, v in zip(key, row, strict=False)},
                "column": column,
                "peer": _plain(row[-2]),
                "mart": _plain(row[-1]),
            }
            for row in sample
        ]
    return {
        "key": list(key),
        "columns": columns,
        "peer_rows": _scalar(con, f"select count(*) from {table}"),
        "mart_rows": mart_rows,
        "mart_rows_left_out": mart_rows - scoped_rows,
        "compared_rows": _scalar(con, "select count(*) from compared"),
        "only_in_peer": _scalar(con, f"select count(*) from ({only_in_peer})"),
        "only_in_marts": _scalar(con, f"select count(*) from ({only_in_marts})"),
        "disagreeing_rows": _scalar(con, f"select count(*) from compared where {any_differs}"),
        "disagreeing_by_column": {column: count for column, count in by_column.items() if count},
        "examples": {
            "only_in_peer": _rows(con, f"{only_in_peer} order by all limit {EXAMPLES}"),
            "only_in_marts": _rows(con, f"{only_in_marts} order by all limit {EXAMPLES}"),
            "disagreeing": disagreeing,
        },
    }


def compare_with_marts(workdir: Path, warehouse: Path) -> dict:
    """Compare the peer's tables in ``workdir`` with the marts a build published (their
    snapshot folders under ``warehouse/_published/``), key by key and column by column.

    Per table: the rows of each side, the mart rows left out (of a client line the peer does not
    cover), the rows on one side only, the rows that disagree and on which columns, and a few
    examples of each. ``agree`` is true when nothing differs. Timed apart from the peer.
    """
    began = time.perf_counter()
    # read only: the comparison writes its work tables to the temporary schema
    con = duckdb.connect(str(workdir / DATABASE_NAME), read_only=True)
    try:
        con.execute("set TimeZone = 'UTC'")
        uncovered_groups = [
            row[0]
            for row in con.execute(
                "select consumer_group from consumer_group_settings"
                " where client_line not in (select unnest(?))",
                [list(COVERED_CLIENT_LINES)],
            ).fetchall()
        ]
        tables = {
            table: _compare_table(con, table, warehouse, uncovered_groups) for table in COMPARED
        }
    finally:
        con.close()
    agree = all(
        not result.get("missing_mart")
        and result["only_in_peer"] == result["only_in_marts"] == result["disagreeing_rows"] == 0
        for result in tables.values()
    )
    return {"agree": agree, "seconds": round(time.perf_counter() - began, 3), "tables": tables}
