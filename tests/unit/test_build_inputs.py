"""A build's inputs fingerprint changes with each input the marts depend on, and only then."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from retrylake import build_inputs
from retrylake.build_inputs import (
    RULES,
    JudgedWith,
    LastBuild,
    UnitTestsPassed,
    build_inputs_fingerprint,
    code_fingerprint,
    judged_with_other_warning,
    judgement_inputs,
)
from retrylake.lakehouse import Lakehouse

COMMAND = ["build"]


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    (folder / "models" / "marts").mkdir(parents=True)
    (folder / "seeds").mkdir()
    (folder / "dbt_project.yml").write_text("name: retrylake\n")
    (folder / "models" / "marts" / "a.sql").write_text("select 1 as a\n")
    (folder / "seeds" / "consumer_groups.csv").write_text("consumer_group\ng1\n")
    return folder


@pytest.fixture()
def lakehouse(tmp_path: Path) -> Lakehouse:
    house = Lakehouse(tmp_path / "lakehouse", tmp_path / "landing")
    (house.landing / "trace" / "2026").mkdir(parents=True)
    (house.landing / "trace" / "2026" / "a.jsonl").write_text('{"msgId": "1"}\n')
    house.root.mkdir()
    return house


def test_the_same_inputs_give_the_same_fingerprint(project, lakehouse):
    first = build_inputs_fingerprint(project, lakehouse, COMMAND)
    assert build_inputs_fingerprint(project, lakehouse, COMMAND) == first
    # outputs beside the project are not inputs
    (project / "target").mkdir()
    (project / "target" / "manifest.json").write_text("{}")
    (project / "logs").mkdir()
    assert build_inputs_fingerprint(project, lakehouse, COMMAND) == first


@pytest.mark.parametrize(
    "change",
    [
        "new landing file",
        "hidden landing file renamed into place",
        "landing file grown",
        "new file in a feed folder that is a symlink",
        "seed edited",
        "model edited",
        "model added",
        "dbt_project.yml edited",
        "command",
    ],
)
def test_each_input_changes_the_fingerprint(project, lakehouse, change):
    before = build_inputs_fingerprint(project, lakehouse, COMMAND)
    command = COMMAND
    trace = lakehouse.landing / "trace" / "2026"
    if change == "new landing file":
        (lakehouse.landing / "dlq").mkdir()
        (lakehouse.landing / "dlq" / "b.jsonl").write_text("{}\n")
    elif change == "hidden landing file renamed into place":
        (trace / ".b.jsonl.tmp").write_text("{}\n")
        before = build_inputs_fingerprint(project, lakehouse, COMMAND)
        (trace / ".b.jsonl.tmp").rename(trace / "b.jsonl")
    elif change == "landing file grown":
        with (trace / "a.jsonl").open("a") as handle:
            handle.write('{"msgId": "2"}\n')
    elif change == "new file in a feed folder that is a symlink":
        exported = lakehouse.root.parent / "exporter" / "otel" / "2026"  # where an exporter writes
        exported.mkdir(parents=True)
        (exported / "a.jsonl").write_text("{}\n")
        (lakehouse.landing / "otel").symlink_to(exported.parent, target_is_directory=True)
        before = build_inputs_fingerprint(project, lakehouse, COMMAND)
        (exported / "b.jsonl").write_text("{}\n")
    elif change == "seed edited":
        (project / "seeds" / "consumer_groups.csv").write_text("consumer_group\ng2\n")
    elif change == "model edited":
        (project / "models" / "marts" / "a.sql").write_text("select 2 as a\n")
    elif change == "model added":
        (project / "models" / "marts" / "b.sql").write_text("select 1 as b\n")
    elif change == "dbt_project.yml edited":
        (project / "dbt_project.yml").write_text("name: retrylake\nvars: {x: 1}\n")
    elif change == "command":
        command = ["build", "--exclude", "resource_type:test"]
    assert build_inputs_fingerprint(project, lakehouse, command) != before


def test_a_rewritten_landing_file_of_the_same_size_changes_the_fingerprint(project, lakehouse):
    path = lakehouse.landing / "trace" / "2026" / "a.jsonl"
    before = build_inputs_fingerprint(project, lakehouse, COMMAND)
    status = path.stat()
    path.write_text('{"msgId": "9"}\n')
    os.utime(path, ns=(status.st_atime_ns, status.st_mtime_ns + 1_000_000))
    assert build_inputs_fingerprint(project, lakehouse, COMMAND) != before


@pytest.mark.parametrize(
    "written",
    [
        "trace/2026/.b.jsonl.tmp",  # an exporter's file before its rename into place
        "trace/2026/_b.jsonl",
        "trace/2026/b.jsonl._COPYING_",  # `hdfs dfs -put` on its way
        "trace/.staging/b.jsonl",
        "exporter-offsets.json",  # beside the feeds, not in one
        "lakehouse/warehouse/retrylake.db/a.parquet",  # a lakehouse kept inside its landing
    ],
)
def test_what_spark_does_not_read_leaves_the_fingerprint_alone(project, lakehouse, written):
    """Each feed's folder is read, less the names Spark skips: a hidden file written or grown
    there, or anything outside the feed folders, starts no build that would find nothing."""
    before = build_inputs_fingerprint(project, lakehouse, COMMAND)
    path = lakehouse.landing / written
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("{}\n")
    assert build_inputs_fingerprint(project, lakehouse, COMMAND) == before
    # while a file Spark reads beside it counts, in a partition-style folder too
    (lakehouse.landing / "trace" / "_hour=1").mkdir(exist_ok=True)
    (lakehouse.landing / "trace" / "_hour=1" / "c.jsonl").write_text("{}\n")
    assert build_inputs_fingerprint(project, lakehouse, COMMAND) != before


def test_a_link_back_up_the_landing_is_listed_once(project, lakehouse):
    before = build_inputs_fingerprint(project, lakehouse, COMMAND)
    (lakehouse.landing / "trace" / "2026" / "up").symlink_to(lakehouse.landing)
    assert build_inputs_fingerprint(project, lakehouse, COMMAND) == before


def test_a_file_gone_between_the_listing_and_its_status_is_left_out(
    project, lakehouse, monkeypatch
):
    """An exporter renames a file into place, or retention removes one, while a check lists
    the landing: the check goes on, and the next one sees the landing as it is then."""
    before = build_inputs_fingerprint(project, lakehouse, COMMAND)
    listed = build_inputs._files
    gone = lakehouse.landing / "trace" / "2026" / ".a.jsonl.tmp"

    def listed_then_renamed(folder: Path) -> list[Path]:
        return sorted([*listed(folder), gone]) if folder == lakehouse.landing else listed(folder)

    monkeypatch.setattr(build_inputs, "_files", listed_then_renamed)
    assert build_inputs_fingerprint(project, lakehouse, COMMAND) == before


def test_the_last_build_is_matched_recorded_and_forgotten(project, lakehouse, tmp_path):
    fingerprint = build_inputs_fingerprint(project, lakehouse, COMMAND)
    last = LastBuild(lakehouse)
    assert not last.matches(fingerprint)
    last.record(fingerprint)
    assert last.matches(fingerprint)
    assert not last.matches("0" * 64)
    last.forget()
    assert not last.matches(fingerprint)
    last.path.write_text("not json")
    assert not last.matches(fingerprint)
    # a landing on shared storage cannot be listed from Python: never taken as up to date
    remote = Lakehouse(lakehouse.root, lakehouse.landing, landing_url="hdfs://nn/landing")
    LastBuild(remote).record(fingerprint)
    last.record(fingerprint)
    assert not LastBuild(remote).matches(fingerprint)


def test_the_unit_tests_code_is_the_project_and_code_not_the_landing(project, lakehouse):
    """The dbt unit tests read fixtures: new landing files leave their fingerprint alone, while
    an edited model, seed or unit test fixture (model YAML) changes it."""
    before = code_fingerprint(project)
    (lakehouse.landing / "trace" / "2026" / "b.jsonl").write_text('{"msgId": "2"}\n')
    (project / "target").mkdir()
    (project / "target" / "run_results.json").write_text("{}")
    assert code_fingerprint(project) == before
    (project / "models" / "marts" / "_unit_tests.yml").write_text("unit_tests: []\n")
    edited = code_fingerprint(project)
    assert edited != before
    (project / "seeds" / "consumer_groups.csv").write_text("consumer_group\ng2\n")
    assert code_fingerprint(project) not in (before, edited)


def test_passed_unit_tests_are_recorded_per_code_and_outlive_a_forgotten_build(project, lakehouse):
    code = code_fingerprint(project)
    passed = UnitTestsPassed(lakehouse)
    assert not passed.on(code)
    passed.record(code)
    assert passed.on(code)
    assert not passed.on("0" * 64)
    # a dbt command that changes tables forgets the last build, not what the unit tests proved
    LastBuild(lakehouse).forget()
    assert UnitTestsPassed(lakehouse).on(code)
    passed.path.write_text("{}")
    assert not passed.on(code)


def test_what_the_history_was_judged_with_is_recorded_at_a_full_build_and_compared_after(
    project, lakehouse
):
    judged = JudgedWith(lakehouse)
    first = judgement_inputs(project)
    assert judged.changed(first) == []  # nothing recorded: nothing to compare
    judged.after_build(first, full=False)  # the first build this record sees is taken as full
    assert JudgedWith(lakehouse).changed(first) == []

    # a changed configuration seed, and a changed model, are named (a description is no rule)
    (project / "models" / "marts" / "_a.yml").write_text("version: 2\n")
    assert judged.changed(judgement_inputs(project)) == []
    (project / "seeds" / "consumer_groups.csv").write_text("consumer_group\ng2\n")
    assert judged.changed(judgement_inputs(project)) == ["seeds/consumer_groups.csv (g1, g2)"]
    (project / "models" / "marts" / "a.sql").write_text("select 2 as a\n")
    (project / "seeds" / "broker_delay_levels.csv").write_text("broker_cluster\n*\n")
    changed = judged.changed(judgement_inputs(project))
    assert changed == [
        "seeds/broker_delay_levels.csv",
        "seeds/consumer_groups.csv (g1, g2)",
        RULES,
    ]
    assert "seeds/consumer_groups.csv" in judged_with_other_warning(changed)
    assert "--full-refresh" in judged_with_other_warning(changed)

    # an incremental build keeps the old record, so every later one warns until a full one
    judged.after_build(judgement_inputs(project), full=False)
    assert judged.changed(judgement_inputs(project)) == changed
    judged.after_build(judgement_inputs(project), full=True)
    assert judged.changed(judgement_inputs(project)) == []


def test_the_what_if_and_the_landing_are_not_what_the_ledger_was_judged_with(project, lakehouse):
    judged = JudgedWith(lakehouse)
    judged.after_build(judgement_inputs(project), full=True)
    (project / "seeds" / "whatif_consumer_groups.csv").write_text("scenario\nmax-5\n")
    (project / "models" / "marts" / "whatif").mkdir()
    (project / "models" / "marts" / "whatif" / "w.sql").write_text("select 1 as w\n")
    (lakehouse.landing / "trace" / "2026" / "b.jsonl").write_text('{"msgId": "2"}\n')
    assert judged.changed(judgement_inputs(project)) == []
    judged.path.write_text("not json")  # unreadable: as if none, on a lakehouse with no tables
    assert JudgedWith(lakehouse).changed(judgement_inputs(project)) == []


def test_a_changed_seed_names_the_rows_that_changed_came_or_went(project, lakehouse):
    groups = project / "seeds" / "consumer_groups.csv"
    groups.write_text("consumer_group,max\n" + "".join(f"g{n},16\n" for n in range(9)))
    judged = JudgedWith(lakehouse)
    judged.after_build(judgement_inputs(project), full=True)
    groups.write_text("consumer_group,max\ng0,5\n" + "".join(f"g{n},16\n" for n in range(1, 9)))
    assert judged.changed(judgement_inputs(project)) == ["seeds/consumer_groups.csv (g0)"]
    groups.write_text("consumer_group,max\n" + "".join(f"g{n},3\n" for n in range(2, 10)))
    assert judged.changed(judgement_inputs(project)) == [
        "seeds/consumer_groups.csv (g0, g1, g2, g3, g4 and 5 more)"
    ]
    groups.write_text("consumer_group,max,mode\n" + "".join(f"g{n},16,\n" for n in range(9)))
    assert judged.changed(judgement_inputs(project)) == ["seeds/consumer_groups.csv (its columns)"]
    groups.write_bytes(b"consumer_group,max\n\xff,16\n")  # the seed check refuses it; no crash
    assert judged.changed(judgement_inputs(project))[0].startswith("seeds/consumer_groups.csv")
