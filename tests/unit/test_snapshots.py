"""Published builds' snapshots and manifests (spark_udfs/snapshots.py): what a snapshot holds,
that it survives the table's rewrite, the switch readers see whole, pruning, and "as of"."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from spark_udfs.snapshots import (
    CURRENT,
    MANIFESTS,
    build_as_of,
    committed_files,
    current_build,
    link_snapshot,
    point_readers_at,
    published_builds,
    published_marts,
    snapshot_marts,
    table_folder,
)


def _table(root: Path) -> Path:
    table = root / "consume_attempts"
    for relative, text in {
        "lifecycle_date=2026-03-01/lifecycle_hour=0/part-0.parquet": "hour 0",
        "lifecycle_date=2026-03-01/lifecycle_hour=1/part-0.parquet": "hour 1",
        "lifecycle_date=2026-03-01/lifecycle_hour=1/.part-0.parquet.crc": "checksum",
        "_temporary/0/part-9.parquet": "a write in progress",
        ".spark-staging-1/lifecycle_date=2026-03-02/part-9.parquet": "staged",
        "_SUCCESS": "",
    }.items():
        (table / relative).parent.mkdir(parents=True, exist_ok=True)
        (table / relative).write_text(text)
    return table


def _publish(folder: Path, build: str, published_at: str, marts=("dlq_messages",)) -> None:
    for mart in marts:
        (folder / build / mart).mkdir(parents=True, exist_ok=True)
    manifest = {"build": build, "published_at": published_at, "marts": list(marts)}
    point_readers_at(folder, manifest, kept=3)


def test_only_committed_files_are_snapshotted_in_their_partition_folders(tmp_path):
    table = _table(tmp_path / "work")
    assert [str(path) for path in committed_files(table)] == [
        "lifecycle_date=2026-03-01/lifecycle_hour=0/part-0.parquet",
        "lifecycle_date=2026-03-01/lifecycle_hour=1/part-0.parquet",
    ]
    folder = tmp_path / "published"
    assert snapshot_marts(folder, "b1", {"consume_attempts": f"file:{table}"}) == {
        "consume_attempts": 2
    }
    snapshot = folder / "b1" / "consume_attempts"
    assert sorted(str(p.relative_to(snapshot)) for p in snapshot.rglob("*") if p.is_file()) == [
        "lifecycle_date=2026-03-01/lifecycle_hour=0/part-0.parquet",
        "lifecycle_date=2026-03-01/lifecycle_hour=1/part-0.parquet",
    ]


def test_a_snapshot_keeps_its_files_when_the_table_is_rewritten(tmp_path):
    table = _table(tmp_path / "work")
    snapshot = tmp_path / "published" / "b1" / "consume_attempts"
    link_snapshot(table, snapshot)
    # what Spark's partition overwrite does: delete the partition's files, write new ones
    hour = table / "lifecycle_date=2026-03-01" / "lifecycle_hour=1"
    (hour / "part-0.parquet").unlink()
    (hour / "part-7.parquet").write_text("hour 1, rewritten")
    kept = snapshot / "lifecycle_date=2026-03-01" / "lifecycle_hour=1"
    assert [path.name for path in kept.iterdir()] == ["part-0.parquet"]
    assert (kept / "part-0.parquet").read_text() == "hour 1"


def test_an_empty_mart_is_an_empty_folder_and_a_retry_starts_over(tmp_path):
    empty = tmp_path / "work" / "dlq_messages"
    empty.mkdir(parents=True)
    snapshot = tmp_path / "published" / "b1" / "dlq_messages"
    (snapshot / "leftover").mkdir(parents=True)  # an interrupted publish of the same build
    assert link_snapshot(empty, snapshot) == 0
    assert snapshot.is_dir() and list(snapshot.iterdir()) == []


def test_only_a_local_warehouse_can_be_snapshotted(tmp_path):
    assert table_folder("file:/w/unpublished.db/t") == Path("/w/unpublished.db/t")
    assert table_folder("/w/t") == Path("/w/t")
    with pytest.raises(ValueError, match="local warehouse, not hdfs://nn/w/t"):
        table_folder("hdfs://nn/w/t")


def test_readers_follow_the_build_pointed_at_and_old_builds_are_pruned(tmp_path):
    folder = tmp_path / "published"
    assert published_marts(folder) == {}  # nothing published yet
    _publish(folder, "b1", "2026-03-01T09:00:00+00:00")
    assert published_marts(folder) == {"dlq_messages": folder / "b1" / "dlq_messages"}
    (folder / "b0-unfinished" / "dlq_messages").mkdir(parents=True)  # a publish that died
    _publish(folder, "b2", "2026-03-01T10:00:00+00:00")
    assert published_marts(folder) == {"dlq_messages": folder / "b2" / "dlq_messages"}
    assert published_marts(folder, "b1") == {"dlq_messages": folder / "b1" / "dlq_messages"}
    assert not (folder / "b0-unfinished").exists()
    for build, hour in (("b3", 11), ("b4", 12)):
        _publish(folder, build, f"2026-03-01T{hour}:00:00+00:00")
    # three kept: the oldest build goes, folder and manifest
    assert [manifest["build"] for manifest in published_builds(folder)] == ["b2", "b3", "b4"]
    assert sorted(path.name for path in folder.iterdir()) == [
        "b2", "b3", "b4", CURRENT, MANIFESTS,
    ]  # fmt: skip
    assert json.loads((folder / CURRENT).read_text())["build"] == current_build(folder) == "b4"


def test_as_of_names_a_build_or_the_last_one_published_by_then(tmp_path):
    folder = tmp_path / "published"
    _publish(folder, "b1", "2026-03-01T09:00:00+00:00")
    _publish(folder, "b2", "2026-03-01T10:00:00.500+00:00")
    assert build_as_of(folder, "b1") == "b1"
    assert build_as_of(folder, "2026-03-01T09:59") == "b1"  # no zone: UTC
    assert build_as_of(folder, "2026-03-01T10:00:00.500Z") == "b2"
    assert build_as_of(folder, "2026-03-01T12:00:00+02:00") == "b1"  # 10:00:00 UTC, before b2
    assert build_as_of(folder, "2026-03-01T12:00:01+02:00") == "b2"
    assert build_as_of(folder, "2026-03-01T08:00") is None
    with pytest.raises(ValueError):
        build_as_of(folder, "yesterday")


def test_a_reader_never_sees_current_half_written(tmp_path):
    folder = tmp_path / "published"
    marts = [f"mart_{index}" for index in range(200)]
    _publish(folder, "b1", "2026-03-01T09:00:00+00:00", marts)
    _publish(folder, "b2", "2026-03-01T10:00:00+00:00", marts)
    seen, done = set(), threading.Event()

    errors: list[Exception] = []

    def read() -> None:
        while not done.is_set():
            try:
                current = json.loads((folder / CURRENT).read_text())  # fails if partial
                seen.add((current["build"], len(current["marts"])))
                # and the manifests, as `retrylake query`'s published_builds view lists them
                for manifest in (folder / "manifests").glob("*.json"):
                    seen.add((json.loads(manifest.read_text())["build"], 0))
            except ValueError as error:  # a file read half-written
                errors.append(error)

    reader = threading.Thread(target=read)
    reader.start()
    for index in range(200):
        _publish(folder, "b1" if index % 2 else "b2", "2026-03-01T11:00:00+00:00", marts)
    done.set()
    reader.join()
    assert errors == []
    assert seen <= {("b1", 200), ("b2", 200), ("b1", 0), ("b2", 0)} and ("b1", 0) in seen
