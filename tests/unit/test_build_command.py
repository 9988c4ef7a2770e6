"""Which dbt command `retrylake build` runs: the dbt unit tests are left out once a build of the
same code ran them all and succeeded. And which checks of `retrylake build --watch` build: the
real `build` runs (its fingerprint of the landing, seeds and project, its lock, its record of the
last build). dbt itself is not run here (the sample build's module runs the real thing, and the
CLI module a watching process); the command handed to it is what is checked."""

from __future__ import annotations

import dataclasses
import datetime
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from retrylake import cli, commands
from retrylake.build_inputs import UnitTestsPassed, code_fingerprint
from retrylake.errors import (
    ConfigError,
    DbtFailedError,
    LakehouseBusyError,
    LandingError,
    RuntimeChangedError,
    UsageError,
)
from retrylake.lakehouse import Lakehouse
from tests.conftest import PROJECT_DIR

LEFT_OUT = ["--exclude-resource-type", "unit_test"]


@pytest.fixture()
def session_starts(monkeypatch: pytest.MonkeyPatch) -> list[dict]:
    """The options each session was started with."""
    starts: list[dict] = []
    monkeypatch.setattr(commands, "start_session", lambda *args, **options: starts.append(options))
    return starts


class SessionStarted(Exception):
    """Raised in place of starting a session, to stop a command before it builds anything."""


@pytest.fixture()
def stopped_at_session_start(monkeypatch: pytest.MonkeyPatch) -> list[dict]:
    """The options each session was asked for; each request stops the command."""
    starts: list[dict] = []

    def starting(*args, **options):
        starts.append(options)
        raise SessionStarted

    monkeypatch.setattr(commands, "start_session", starting)
    return starts


@pytest.fixture()
def dbt_commands(monkeypatch: pytest.MonkeyPatch, session_starts) -> list[list[str]]:
    ran: list[list[str]] = []
    monkeypatch.setattr(commands, "run_dbt", lambda command, *args: ran.append(list(command)))
    return ran


@pytest.fixture()
def lakehouse(tmp_path: Path) -> Lakehouse:
    house = Lakehouse(tmp_path / "lakehouse", tmp_path / "landing")
    (house.landing / "trace").mkdir(parents=True)
    (house.landing / "trace" / "a.jsonl").write_text('{"msgId": "1"}\n')
    house.root.mkdir()
    return house


def _project_copy(tmp_path: Path) -> Path:
    """The project's dbt files in a folder of the test's own, to change."""
    project = tmp_path / "project"
    for name in ("models", "macros", "seeds", "profiles"):
        shutil.copytree(PROJECT_DIR / name, project / name)
    for name in ("dbt_project.yml", "selectors.yml"):
        shutil.copy(PROJECT_DIR / name, project / name)
    return project


def _left_out(command: list[str]) -> bool:
    return any(command[i : i + 2] == LEFT_OUT for i in range(len(command)))


def test_the_unit_tests_run_until_a_build_of_everything_passed_them(dbt_commands, lakehouse):
    commands.build(PROJECT_DIR, lakehouse, exclude=["resource_type:test"])
    commands.build(PROJECT_DIR, lakehouse, force=True)
    assert [_left_out(command) for command in dbt_commands] == [False, False]
    # the second build selected everything and succeeded: the unit tests passed on this code
    assert UnitTestsPassed(lakehouse).on(code_fingerprint(PROJECT_DIR))
    commands.build(PROJECT_DIR, lakehouse, force=True)
    commands.build(PROJECT_DIR, lakehouse, exclude=["resource_type:test"], force=True)
    commands.build(PROJECT_DIR, lakehouse, full_refresh=True)
    assert [_left_out(command) for command in dbt_commands[2:]] == [True, True, True]
    # a selection may name unit tests a build of the ledger never runs (the what-if's)
    commands.build(PROJECT_DIR, lakehouse, select=["tag:whatif"], force=True)
    assert not _left_out(dbt_commands[-1])


def _grow_past_a_short_run(lakehouse: Lakehouse) -> Path:
    """A landing file one byte over what a short run may read whole: sparse, so no disk used."""
    large = lakehouse.landing / "trace" / "large.jsonl"
    with large.open("wb") as handle:
        handle.truncate(commands.SHORT_RUN_LANDING_BYTES + 1)
    return large


def test_a_process_of_one_build_is_a_short_run_unless_it_reads_a_large_landing_whole(
    dbt_commands, session_starts, lakehouse
):
    """A process that runs one build and ends (`retrylake build`, from cron) starts its JVM for
    a short run for an incremental build, and for a first build or a full refresh (each reads
    the whole landing) only while the landing is small; never a process that goes on
    (`--watch`, a caller of `build`)."""
    commands.build(PROJECT_DIR, lakehouse, process_ends_after=True)  # the first, small
    large = _grow_past_a_short_run(lakehouse)
    commands.build(PROJECT_DIR, lakehouse, process_ends_after=True)
    commands.build(PROJECT_DIR, lakehouse, force=True, process_ends_after=True)
    commands.build(PROJECT_DIR, lakehouse, full_refresh=True, process_ends_after=True)
    commands.build(PROJECT_DIR, lakehouse, force=True)
    _land(lakehouse, "c.jsonl")()
    commands.watch(PROJECT_DIR, lakehouse, 5, Checks(_nothing))  # type: ignore[arg-type]
    large.unlink()
    commands.build(PROJECT_DIR, lakehouse, full_refresh=True, process_ends_after=True)
    assert len(dbt_commands) == 7
    assert [start["short_run"] for start in session_starts] == [
        True, True, True, False, False, False, True
    ]  # fmt: skip
    # the first build of a large landing reads it whole
    first = Lakehouse(lakehouse.root.with_name("another-lakehouse"), lakehouse.landing)
    _grow_past_a_short_run(first)
    commands.build(PROJECT_DIR, first, process_ends_after=True)
    assert session_starts[-1]["short_run"] is False


def test_a_process_of_one_dbt_command_is_a_short_run_as_a_build_is(
    dbt_commands, session_starts, lakehouse
):
    """`retrylake dbt` alone in its process: an incremental `run` or `build` is a short run
    whatever the landing's size; a full refresh, the first run, and any other command (what a
    data test or docs read is not known) only while the landing is small."""

    def passthrough(*args: str, ends_after: bool = True) -> bool:
        commands.dbt(PROJECT_DIR, lakehouse, list(args), process_ends_after=ends_after)
        return session_starts[-1]["short_run"]

    assert passthrough("run")  # the first run, of a small landing
    assert passthrough("test")
    assert not passthrough("run", ends_after=False)
    large = _grow_past_a_short_run(lakehouse)
    assert passthrough("run")
    assert passthrough("build", "-s", "consume_attempts")
    assert not passthrough("run", "--full-refresh")
    assert not passthrough("test")
    assert not passthrough("docs", "generate")
    large.unlink()
    assert passthrough("run", "--full-refresh")
    assert len(dbt_commands) == 9
    # the first run of a large landing reads it whole
    first = Lakehouse(lakehouse.root.with_name("another-lakehouse"), lakehouse.landing)
    _grow_past_a_short_run(first)
    commands.dbt(PROJECT_DIR, first, ["run"], process_ends_after=True)
    assert session_starts[-1]["short_run"] is False


def test_the_whatif_in_a_process_of_its_own_is_a_short_run_on_a_small_landing(
    stopped_at_session_start, lakehouse
):
    """It reads the whole ledger: a short run only while the landing is small, and only in a
    process that ends after it."""
    for grow, ends_after in ((False, True), (False, False), (True, True)):
        if grow:
            _grow_past_a_short_run(lakehouse)
        with pytest.raises(SessionStarted):
            commands.whatif(PROJECT_DIR, lakehouse, process_ends_after=ends_after)
    assert [start["short_run"] for start in stopped_at_session_start] == [True, False, False]


def test_a_landing_on_shared_storage_is_not_known_to_be_small(tmp_path):
    lakehouse = Lakehouse.resolve(str(tmp_path / "lakehouse"), "hdfs://namenode/landing")
    assert not commands.is_short_run(lakehouse, reads_all=True)
    assert commands.is_short_run(lakehouse, reads_all=False)


def test_the_demo_in_a_process_of_its_own_is_a_short_run(stopped_at_session_start, tmp_path):
    """Its generated landing is small (3,000 messages by default): the session it starts,
    before anything is built, is asked for a short run; a caller that goes on is not."""
    demo_lakehouse = Lakehouse(tmp_path / "demo-lakehouse", tmp_path / "demo-lakehouse" / "landing")
    for ends_after in (True, False):
        with pytest.raises(SessionStarted):
            commands.demo(PROJECT_DIR, demo_lakehouse, messages=10, process_ends_after=ends_after)
    assert [start["short_run"] for start in stopped_at_session_start] == [True, False]


def test_a_failed_build_vouches_for_no_unit_test(dbt_commands, lakehouse, monkeypatch):
    def failing(command, *args):
        dbt_commands.append(list(command))
        raise RuntimeError("a unit test failed")

    monkeypatch.setattr(commands, "run_dbt", failing)
    with pytest.raises(RuntimeError):
        commands.build(PROJECT_DIR, lakehouse)
    assert not UnitTestsPassed(lakehouse).on(code_fingerprint(PROJECT_DIR))
    with pytest.raises(RuntimeError):
        commands.build(PROJECT_DIR, lakehouse)
    assert not _left_out(dbt_commands[-1])


def test_the_unit_tests_of_other_code_run_again(dbt_commands, lakehouse):
    UnitTestsPassed(lakehouse).record("0" * 64)  # passed on some other project or code
    commands.build(PROJECT_DIR, lakehouse)
    assert not _left_out(dbt_commands[-1])
    assert UnitTestsPassed(lakehouse).on(code_fingerprint(PROJECT_DIR))


class Checks:
    """Stands in for the stop event: each wait between two checks runs the next step (a change
    to the landing, say), and the watch stops once the steps are done."""

    def __init__(self, *steps: Callable[[], None]) -> None:
        self.steps = list(steps)
        self.waited: list[float] = []

    def is_set(self) -> bool:
        return not self.steps

    def wait(self, seconds: float) -> bool:
        self.waited.append(seconds)
        self.steps.pop(0)()
        return self.is_set()


def _land(lakehouse: Lakehouse, name: str) -> Callable[[], None]:
    return lambda: (lakehouse.landing / "trace" / name).write_text('{"msgId": "2"}\n')


def _nothing() -> None:
    pass


def test_it_builds_at_once_then_only_what_changed(dbt_commands, lakehouse):
    builds_so_far: list[int] = []

    def count() -> None:
        builds_so_far.append(len(dbt_commands))

    checks = Checks(count, count, _land(lakehouse, "b.jsonl"), count, count)
    commands.watch(PROJECT_DIR, lakehouse, 30, checks)  # type: ignore[arg-type]
    # the first check builds; two with nothing new do not; the new file is built once
    assert builds_so_far == [1, 1, 2, 2]
    assert len(dbt_commands) == 2 and all(command[0] == "build" for command in dbt_commands)
    assert checks.waited == [30] * 5


def _dbt_outcomes(
    dbt_commands: list[list[str]], monkeypatch: pytest.MonkeyPatch, *outcomes: str
) -> list[str]:
    """dbt fails or passes at each build in turn; the outcomes not yet used are returned."""
    left = list(outcomes)

    def run_dbt(command: list[str], *args: object) -> None:
        dbt_commands.append(list(command))
        if left.pop(0) == "fail":
            raise DbtFailedError("dbt build failed")

    monkeypatch.setattr(commands, "run_dbt", run_dbt)
    return left


def test_a_failed_build_waits_for_a_change_before_it_is_tried_again(
    dbt_commands, lakehouse, monkeypatch, capsys
):
    outcomes = _dbt_outcomes(dbt_commands, monkeypatch, "fail", "fail", "pass")
    new_files = _land(lakehouse, "b.jsonl"), _land(lakehouse, "c.jsonl")
    checks = Checks(_nothing, _nothing, new_files[0], _nothing, new_files[1], _nothing)
    commands.watch(PROJECT_DIR, lakehouse, 5, checks)  # type: ignore[arg-type]
    # failed at the first check, not retried at the next two (nothing changed), failed again on
    # the new file, not retried, passed on the next file
    assert len(dbt_commands) == 3
    assert outcomes == []
    printed = capsys.readouterr().err
    assert printed.count("failing node. Building again when the landing") == 2
    assert printed.count("retrylake: built in ") == 1


def test_on_shared_storage_a_failed_build_is_tried_again_at_the_next_check(
    dbt_commands, lakehouse, monkeypatch, capsys
):
    """An hdfs:// or s3a:// landing is not listed, so no check can see it change: as every
    check builds there, a failed build must not wait for a change that never shows."""
    outcomes = _dbt_outcomes(dbt_commands, monkeypatch, "fail", "pass", "pass")
    shared = dataclasses.replace(lakehouse, landing_url="hdfs://namenode/rocketmq/landing")
    checks = Checks(_nothing, _nothing, _nothing)
    commands.watch(PROJECT_DIR, shared, 5, checks)  # type: ignore[arg-type]
    assert len(dbt_commands) == 3 and outcomes == []
    printed = capsys.readouterr().err
    assert printed.count("failing node. Building again in 5 s.") == 1
    assert printed.count("retrylake: built in ") == 2


def test_on_derby_the_watch_holds_the_lakehouse_throughout(dbt_commands, lakehouse):
    refused: list[str] = []

    def another_process() -> None:  # another handle on the lock file stands for it
        try:
            lakehouse.lock("another build").close()
        except LakehouseBusyError as error:
            refused.append(error.message())

    commands.watch(PROJECT_DIR, lakehouse, 5, Checks(another_process))  # type: ignore[arg-type]
    assert len(dbt_commands) == 1
    assert len(refused) == 1 and "in use by retrylake build --watch" in refused[0]
    lakehouse.lock("another build").close()  # and it let go when it stopped


def test_on_derby_a_lakehouse_in_use_is_refused_at_once(dbt_commands, lakehouse):
    held = lakehouse.lock("another build")
    try:
        with pytest.raises(LakehouseBusyError, match="in use by another build"):
            commands.watch(PROJECT_DIR, lakehouse, 5, Checks(_nothing))  # type: ignore[arg-type]
    finally:
        held.close()
    assert dbt_commands == []


def test_on_postgresql_a_busy_lakehouse_is_tried_again_at_the_next_check(
    dbt_commands, lakehouse, capsys
):
    # a shared metastore (only named here: the session is not started) lets other processes
    # build between the watch's builds
    shared = Lakehouse(
        lakehouse.root, lakehouse.landing, metastore_url="postgresql://hive@127.0.0.1:5432/meta"
    )
    held = shared.lock("another build")
    checks = Checks(held.close, _nothing)
    commands.watch(PROJECT_DIR, shared, 5, checks)  # type: ignore[arg-type]
    assert len(dbt_commands) == 1  # nothing changed, but the first check could not build
    printed = capsys.readouterr().err
    assert "in use by another build" in printed and "Trying again in 5 s." in printed


def test_a_stop_before_the_first_check_builds_nothing(dbt_commands, lakehouse):
    commands.watch(PROJECT_DIR, lakehouse, 5, Checks())  # type: ignore[arg-type]
    assert dbt_commands == []


def test_it_stops_when_retrylakes_own_code_changes(dbt_commands, lakehouse, monkeypatch):
    # what the process loaded, then the first check, then a check after an upgrade on disk
    on_disk = iter(["loaded", "loaded", "upgraded"])
    monkeypatch.setattr(commands, "runtime_fingerprint", lambda: next(on_disk))
    with pytest.raises(RuntimeChangedError, match="start it again"):
        commands.watch(PROJECT_DIR, lakehouse, 5, Checks(_nothing, _nothing))  # type: ignore[arg-type]
    assert len(dbt_commands) == 1


@pytest.mark.parametrize("seconds", ["0", "-5", "nan", "inf", "1e300"])
def test_a_watch_period_that_cannot_be_waited_is_a_usage_error(
    seconds, dbt_commands, lakehouse, capsys
):
    argv = ["build", "--lakehouse", str(lakehouse.root), "--landing", str(lakehouse.landing)]
    assert cli.main([*argv, "--watch", seconds]) == UsageError.exit_code
    assert f"--watch takes a number of seconds above 0, not {float(seconds):g}" in (
        capsys.readouterr().err
    )
    assert dbt_commands == []


def test_the_demo_summary_table_prints_with_and_without_rows():
    """`demo --messages 0` builds a ledger with no lifecycle: its summary is a header alone."""
    columns = ["consumer_group", "messages"]
    assert commands.format_table([], columns).splitlines() == [
        "consumer_group  messages",
        "--------------  --------",
    ]
    rows = [{"consumer_group": "order-service", "messages": 12}]
    assert commands.format_table(rows, columns).splitlines()[2] == "order-service         12"


def test_a_build_after_the_seeds_changed_says_so_until_a_full_build(
    dbt_commands, lakehouse, tmp_path, capsys
):
    """The history keeps the judgements it was built with: after a seed of the ledger changes,
    every build that runs and is not a full build of the whole ledger, seeds included, says what
    changed."""
    project = _project_copy(tmp_path)
    groups = project / "seeds" / "consumer_groups.csv"
    was, now = (
        "inventory-sync,CLUSTERING,CONCURRENTLY,3,",
        "inventory-sync,CLUSTERING,CONCURRENTLY,5,",
    )

    def warned() -> bool:
        return "seeds/consumer_groups.csv (inventory-sync) changed since" in capsys.readouterr().err

    commands.build(project, lakehouse)
    assert not warned()
    assert was in groups.read_text()
    groups.write_text(groups.read_text().replace(was, now))
    commands.build(project, lakehouse)
    assert warned()
    commands.build(project, lakehouse, force=True, exclude=["resource_type:test"])
    assert warned()
    # none of these judges the whole ledger with the new seeds: each says so, and records nothing
    commands.build(project, lakehouse, full_refresh=True, select=["consume_attempts"])
    assert warned()
    commands.build(project, lakehouse, full_refresh=True, exclude=["resource_type:seed"])
    assert warned()
    commands.dbt(project, lakehouse, ["run", "--full-refresh"])  # `run` loads no seed
    assert warned()
    commands.dbt(project, lakehouse, ["build", "-f", "-s", "consume_attempts"])
    assert warned()
    commands.dbt(project, lakehouse, ["build", "-f", "--model=consume_attempts"])
    assert warned()
    commands.build(project, lakehouse, force=True)
    assert warned()
    commands.dbt(project, lakehouse, ["build", "-f"])
    assert not warned()
    commands.build(project, lakehouse, force=True)
    assert not warned()
    # a description is not a rule
    (project / "macros" / "_macros.yml").write_text("version: 2\n")
    commands.build(project, lakehouse, force=True)
    assert "changed since" not in capsys.readouterr().err


def test_a_lakehouse_built_before_the_record_existed_is_told_to_build_in_full(
    dbt_commands, lakehouse, capsys
):
    (lakehouse.warehouse / "retrylake.db").mkdir(parents=True)  # built, by an earlier version
    commands.build(PROJECT_DIR, lakehouse)
    commands.build(PROJECT_DIR, lakehouse, force=True)
    assert capsys.readouterr().err.count("built before retrylake recorded the seeds") == 2
    commands.build(PROJECT_DIR, lakehouse, full_refresh=True)
    commands.build(PROJECT_DIR, lakehouse, force=True)
    assert "retrylake: " not in capsys.readouterr().err.replace(commands.UNIT_TESTS_SKIPPED, "")


def test_a_build_refused_before_dbt_says_only_why(dbt_commands, lakehouse, tmp_path, capsys):
    (lakehouse.warehouse / "retrylake.db").mkdir(parents=True)  # its builds would be told
    Lakehouse(lakehouse.root, tmp_path / "elsewhere").claim_landing(full_refresh=True)
    with pytest.raises(LandingError):
        commands.build(PROJECT_DIR, lakehouse)
    with pytest.raises(LandingError):
        commands.dbt(PROJECT_DIR, lakehouse, ["run"])
    assert capsys.readouterr().err == "" and not dbt_commands


def test_only_a_full_refresh_of_everything_moves_a_lakehouse_to_another_landing(
    dbt_commands, lakehouse, tmp_path, monkeypatch
):
    """A selection rebuilds some tables only: the rest would keep the first landing's files and
    read the new one's as new data on top of them."""
    commands.build(PROJECT_DIR, lakehouse)
    other = Lakehouse(lakehouse.root, tmp_path / "other-landing")
    (other.landing / "trace").mkdir(parents=True)
    with pytest.raises(LandingError):
        commands.build(PROJECT_DIR, other, full_refresh=True, select=["consumer_group_settings"])
    with pytest.raises(LandingError):
        commands.dbt(PROJECT_DIR, other, ["build", "-f", "-s", "consumer_group_settings"])
    with pytest.raises(LandingError):
        commands.build(PROJECT_DIR, other)
    assert lakehouse.landing_record.read_text().strip() == str(lakehouse.landing)

    def failing(command, *args):
        raise DbtFailedError("a model failed")

    monkeypatch.setattr(commands, "run_dbt", failing)
    with pytest.raises(DbtFailedError):
        commands.build(PROJECT_DIR, other, full_refresh=True, exclude=["resource_type:test"])
    monkeypatch.setattr(commands, "run_dbt", lambda command, *args: dbt_commands.append(command))
    for house in (lakehouse, other):  # the failed move leaves both landings refused
        with pytest.raises(LandingError, match="did not finish"):
            commands.build(PROJECT_DIR, house, force=True)
    # every model, from the new landing: options that select nothing narrow nothing
    commands.dbt(PROJECT_DIR, other, ["run", "--full-refresh", "--threads", "4"])
    commands.build(PROJECT_DIR, other, force=True)
    assert dbt_commands[-1][0] == "build"


def _project_with_a_bad_seed(tmp_path: Path) -> Path:
    project = _project_copy(tmp_path)
    levels = project / "seeds" / "broker_delay_levels.csv"
    levels.write_text(levels.read_text().replace(" 5s ", " 5x ", 1))
    return project


def test_the_dbt_passthrough_checks_the_seeds_of_every_command_that_builds(
    dbt_commands, lakehouse, tmp_path, monkeypatch
):
    project = _project_with_a_bad_seed(tmp_path)
    for command in (["build", "--debug"], ["run", "--log-level", "debug"], ["retry"], ["seed"]):
        with pytest.raises(ConfigError, match="5x"):
            commands.dbt(project, lakehouse, command)
    # options before the command would hide it; another project than the one checked
    for command in (["--debug", "build"], ["--log-level", "debug", "run"]):
        with pytest.raises(UsageError, match="give the dbt command first"):
            commands.dbt(project, lakehouse, command)
    for command in (["build", "--project-dir", "."], ["run", "--project-dir=elsewhere"]):
        with pytest.raises(UsageError, match="--project-dir"):
            commands.dbt(PROJECT_DIR, lakehouse, command)
    # a --vars dbt cannot be given is refused before Spark starts or the last build is forgotten
    started: list[object] = []
    monkeypatch.setattr(commands, "start_session", lambda *args, **options: started.append(args))
    for command in (["run", "--vars", "[1, 2]"], ["run", "--vars={landing_path: /x}"]):
        with pytest.raises(UsageError, match="--vars"):
            commands.dbt(PROJECT_DIR, lakehouse, command)
    # and so is a value the rules cannot read, whichever command it is given to
    for command in (
        ["run", "--vars", "{whatif_max_tries: 0}"],
        ["test", "--vars={whatif_max_tries: x}"],
    ):
        with pytest.raises(ConfigError, match="--vars, whatif_max_tries: "):
            commands.dbt(PROJECT_DIR, lakehouse, command)
    assert not dbt_commands and not started
    commands.dbt(project, lakehouse, ["test", "--debug"])  # reads no seed
    commands.dbt(project, lakehouse, ["--version"])  # dbt's own options alone pass
    assert dbt_commands == [["test", "--debug"], ["--version"]]


def test_a_users_vars_are_passed_on_beside_the_landing(lakehouse):
    """dbt takes one --vars: the user's are kept and the lakehouse's landing added, in either
    spelling, so --landing is never dropped for $RETRYLAKE_LANDING, nor the user's vars."""
    from retrylake.dbt_runner import dbt_args

    def passed_vars(command: list[str]) -> dict:
        args = dbt_args(command, PROJECT_DIR, lakehouse)
        assert args.count("--vars") == 1 and not any(a.startswith("--vars=") for a in args)
        return yaml.safe_load(args[args.index("--vars") + 1])

    landing = str(lakehouse.landing)
    assert passed_vars(["run", "--vars", "{max_days: 3, day: 2026-03-01}"]) == {
        "landing_path": landing,
        "max_days": 3,
        "day": datetime.date(2026, 3, 1),
    }
    assert passed_vars(["run", '--vars={"a": "x y"}', "-s", "m"]) == {
        "landing_path": landing,
        "a": "x y",
    }
    assert set(passed_vars(["build"])) == {"landing_path", "checks_code"}
    for bad in (["--vars", "[1, 2]"], ["--vars", "{landing_path: /x}"], ["--vars"]):
        with pytest.raises(UsageError, match="--vars"):
            dbt_args(["run", *bad], PROJECT_DIR, lakehouse)


def test_the_demo_replaces_only_a_landing_and_lakehouse_of_its_own(
    dbt_commands, lakehouse, tmp_path
):
    """The demo deletes its landing folder and rebuilds the lakehouse in full: a folder with
    other files, or a lakehouse built from one, is refused before anything changes."""
    real = tmp_path / "operations-landing"
    (real / "trace").mkdir(parents=True)
    (real / "trace" / "prod-000.jsonl").write_text('{"msgId": "1"}\n')
    with pytest.raises(LandingError, match="did not generate"):
        commands.demo(PROJECT_DIR, Lakehouse(tmp_path / "demo-lakehouse", real), messages=10)
    assert (real / "trace" / "prod-000.jsonl").is_file()
    commands.build(PROJECT_DIR, lakehouse)  # a lakehouse built from a real landing
    demo_landing = Lakehouse(lakehouse.root, tmp_path / "demo-landing")
    with pytest.raises(LandingError, match="lakehouse of its own"):
        commands.demo(PROJECT_DIR, demo_landing, messages=10)
    assert lakehouse.landing_record.read_text().strip() == str(lakehouse.landing)
    with pytest.raises(UsageError, match="landing URL"):
        commands.demo(PROJECT_DIR, Lakehouse.resolve(str(tmp_path / "x"), "hdfs://nn/l"))
