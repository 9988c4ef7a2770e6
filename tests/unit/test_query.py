"""`retrylake query` reads committed mart files only, and renders table, csv and json."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from retrylake.analyst.query import render, run_query
from retrylake.errors import NoMartsError, UsageError
from retrylake.lakehouse import Lakehouse


def _write(path: Path, sql: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    duckdb.execute(f"copy ({sql}) to '{path}' (format parquet)")


@pytest.fixture()
def lakehouse(tmp_path: Path) -> Lakehouse:
    lake = Lakehouse(tmp_path, tmp_path / "landing")
    marts = lake.warehouse / "retrylake.db"
    _write(
        marts / "dlq_messages" / "lifecycle_date=2026-03-01" / "part-0.parquet",
        "select 'g' as consumer_group, 'm1' as msg_id, 4 as reconsume_times",
    )
    _write(
        marts / "dlq_messages" / "lifecycle_date=2026-03-02" / "part-0.parquet",
        "select 'g' as consumer_group, 'm2' as msg_id, 17 as reconsume_times",
    )
    # an uncommitted write in progress, which must not be read
    _write(
        marts / "dlq_messages" / "_temporary" / "0" / "part-9.parquet",
        "select 'g' as consumer_group, 'ghost' as msg_id, 1 as reconsume_times, "
        "date '2026-03-03' as lifecycle_date",
    )
    _write(marts / "delay_levels" / "part-0.parquet", "select '*' as broker_cluster, 3 as level")
    return lake


def test_each_mart_is_a_view_and_only_committed_files_are_read(lakehouse: Lakehouse):
    columns, rows = run_query(
        lakehouse, "select msg_id, reconsume_times, lifecycle_date from dlq_messages order by 1"
    )
    assert columns == ["msg_id", "reconsume_times", "lifecycle_date"]
    assert [(row[0], row[1], str(row[2])) for row in rows] == [
        ("m1", 4, "2026-03-01"),
        ("m2", 17, "2026-03-02"),
    ]
    assert run_query(lakehouse, "select level from delay_levels")[1] == [(3,)]


def test_formats(lakehouse: Lakehouse):
    columns, rows = run_query(
        lakehouse, "select msg_id, reconsume_times from dlq_messages order by 1"
    )
    assert json.loads(render(columns, rows, "json")) == [
        {"msg_id": "m1", "reconsume_times": 4},
        {"msg_id": "m2", "reconsume_times": 17},
    ]
    assert render(columns, rows, "csv") == "msg_id,reconsume_times\nm1,4\nm2,17"
    table = render(columns, rows, "table").splitlines()
    assert table[0].split() == ["msg_id", "reconsume_times"] and table[-1] == "(2 rows)"


def test_a_lakehouse_without_marts_says_to_build_first(tmp_path: Path):
    with pytest.raises(NoMartsError, match="run `retrylake build` first"):
        run_query(Lakehouse(tmp_path, tmp_path / "landing"), "select 1")
    # a folder that is not there is named as such, not as a lakehouse to build
    typo = tmp_path / "lakehuose"
    with pytest.raises(NoMartsError, match=f"no lakehouse at {typo};"):
        run_query(Lakehouse(typo, typo / "landing"), "select 1")


def _publish(lakehouse: Lakehouse, build: str, published_at: str) -> None:
    from spark_udfs.snapshots import PUBLISHED_FOLDER, point_readers_at, snapshot_marts

    folder = lakehouse.warehouse / PUBLISHED_FOLDER
    location = lakehouse.warehouse / "retrylake_unpublished.db" / "dlq_messages"
    snapshot_marts(folder, build, {"dlq_messages": f"file:{location}"})
    manifest = {"build": build, "published_at": published_at, "marts": ["dlq_messages"]}
    manifest |= {"run_started_at": published_at, "dbt_command": "build", "invocation_id": build}
    point_readers_at(folder, manifest, kept=10)


def test_the_published_build_is_read_not_the_tables_being_built(lakehouse: Lakehouse):
    building = lakehouse.warehouse / "retrylake_unpublished.db" / "dlq_messages"
    _write(building / "part-0.parquet", "select 'g' as consumer_group, 'p1' as msg_id")
    _publish(lakehouse, "b1", "2026-03-01T09:00:00+00:00")
    # the next build rewrites the table; readers see b1 until b2 is published
    (building / "part-0.parquet").unlink()
    _write(building / "part-1.parquet", "select 'g' as consumer_group, 'p2' as msg_id")
    query = "select msg_id from dlq_messages"
    assert run_query(lakehouse, query)[1] == [("p1",)]
    with pytest.raises(Exception, match="delay_levels"):  # only the published marts are read
        run_query(lakehouse, "select level from delay_levels")
    _publish(lakehouse, "b2", "2026-03-01T10:00:00+00:00")
    assert run_query(lakehouse, query)[1] == [("p2",)]
    # as of an earlier build, by its name or by a time
    assert run_query(lakehouse, query, as_of="b1")[1] == [("p1",)]
    assert run_query(lakehouse, query, as_of="2026-03-01T09:30")[1] == [("p1",)]
    builds = "select build, published_at from published_builds order by 1"
    assert [(b, str(t)) for b, t in run_query(lakehouse, builds)[1]] == [
        ("b1", "2026-03-01 09:00:00"),
        ("b2", "2026-03-01 10:00:00"),
    ]
    with pytest.raises(UsageError, match="kept builds: b1, b2"):
        run_query(lakehouse, query, as_of="2026-02-28T00:00")
    with pytest.raises(UsageError, match="--as-of : no published build"):
        run_query(lakehouse, query, as_of="")  # an empty --as-of is no time, not "now"


def test_a_mart_of_no_rows_is_a_typed_view_of_no_rows(lakehouse: Lakehouse):
    """Spark writes no file for an empty mart (a system where no delivery failed has no retry
    decisions), so its snapshot is an empty folder; the manifest keeps its columns."""
    from spark_udfs.snapshots import PUBLISHED_FOLDER, point_readers_at, snapshot_marts

    building = lakehouse.warehouse / "retrylake_unpublished.db"
    _write(building / "dlq_messages" / "part-0.parquet", "select 'g' as consumer_group")
    (building / "retry_decisions").mkdir()
    folder = lakehouse.warehouse / PUBLISHED_FOLDER
    locations = {name: f"file:{building / name}" for name in ("dlq_messages", "retry_decisions")}
    assert snapshot_marts(folder, "b1", locations) == {"dlq_messages": 1, "retry_decisions": 0}
    columns = {
        "dlq_messages": [["consumer_group", "string"]],
        "retry_decisions": [
            ["consumer_group", "string"],
            ["reconsume_times", "int"],
            ["delay_ms", "bigint"],
            ["decided_at", "timestamp"],
            ["lifecycle_date", "date"],
            ["is_dlq", "boolean"],
            ["ratio", "decimal(10,2)"],
            ["keys", "array<string>"],
            ["props", "map<string,bigint>"],
            ["origin", "struct<msg_id:string,at:timestamp,pair:decimal(5,1)>"],
        ],
    }
    manifest = {
        "build": "b1",
        "published_at": "2026-03-01T09:00:00+00:00",
        "marts": sorted(columns),
    }
    manifest |= {"run_started_at": "x", "dbt_command": "build", "invocation_id": "b1"}
    point_readers_at(folder, manifest | {"columns": columns}, kept=10)

    assert run_query(lakehouse, "select count(*) from retry_decisions")[1] == [(0,)]
    described = run_query(
        lakehouse, "select column_name, column_type from (describe retry_decisions)"
    )
    assert described[1] == [
        ("consumer_group", "VARCHAR"),
        ("reconsume_times", "INTEGER"),
        ("delay_ms", "BIGINT"),
        ("decided_at", "TIMESTAMP"),
        ("lifecycle_date", "DATE"),
        ("is_dlq", "BOOLEAN"),
        ("ratio", "DECIMAL(10,2)"),
        ("keys", "VARCHAR[]"),
        ("props", "MAP(VARCHAR, BIGINT)"),
        ("origin", 'STRUCT(msg_id VARCHAR, "at" TIMESTAMP, pair DECIMAL(5,1))'),
    ]
    # it joins with the others like any mart
    joined = "select count(*) from dlq_messages left join retry_decisions using (consumer_group)"
    assert run_query(lakehouse, joined)[1] == [(1,)]


def test_json_holds_every_value_a_query_can_return(lakehouse: Lakehouse):
    sql = (
        "select interval 5 second + interval 500 millisecond as took,"
        " [timestamp '2026-03-01 09:00:00'] as times, '\\x01\\xff'::blob as raw,"
        " '00000000-0000-0000-0000-000000000005'::uuid as id"
    )
    columns, rows = run_query(lakehouse, sql)
    assert json.loads(render(columns, rows, "json")) == [
        {
            "took": "0:00:05.500000",
            "times": ["2026-03-01T09:00:00"],
            "raw": "01ff",
            "id": "00000000-0000-0000-0000-000000000005",
        }
    ]


def test_a_reader_that_goes_away_ends_the_query_quietly(lakehouse: Lakehouse):
    """`retrylake query ... | head -1`: no traceback, no error line, the exit code of SIGPIPE."""
    import subprocess
    import sys

    reader = subprocess.Popen(
        [sys.executable, "-m", "retrylake", "query", "--lakehouse", str(lakehouse.root),
         "select * from range(200000)"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    assert reader.stdout is not None and reader.stderr is not None
    assert reader.stdout.readline().split() == [b"range"]
    reader.stdout.close()  # more than a pipe's buffer is still to come
    assert reader.wait(timeout=60) == 141
    assert reader.stderr.read() == b""


@pytest.mark.parametrize("command", ["report", "dlq-export"])
def test_an_output_file_that_cannot_be_written_is_refused_first(
    lakehouse: Lakehouse, tmp_path: Path, capsys: pytest.CaptureFixture, command: str
):
    from retrylake.cli import main

    args = [command, "--lakehouse", str(lakehouse.root), "--out"]
    assert main([*args, str(tmp_path / "missing" / "out.txt")]) == 2
    error = capsys.readouterr().err
    assert f"--out {tmp_path / 'missing' / 'out.txt'}: the folder" in error
    assert "does not exist" in error
    assert main([*args, str(tmp_path)]) == 2
    assert f"--out {tmp_path} is a folder" in capsys.readouterr().err
