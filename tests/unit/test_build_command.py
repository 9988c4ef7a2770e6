"""Which dbt command `retrylake build` runs: the dbt unit tests are left out once a build of the
same code ran them all and succeeded. dbt itself is not run here (the sample build's module runs
the real thing); the command handed to it is what is checked."""

from __future__ import annotations

from pathlib import Path

import pytest

from retrylake import commands
from retrylake.build_inputs import UnitTestsPassed, code_fingerprint
from retrylake.lakehouse import Lakehouse
from tests.conftest import PROJECT_DIR

LEFT_OUT = ["--exclude-resource-type", "unit_test"]


@pytest.fixture()
def dbt_commands(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    ran: list[list[str]] = []
    monkeypatch.setattr(commands, "start_session", lambda *args: None)
    monkeypatch.setattr(commands, "run_dbt", lambda command, *args: ran.append(list(command)))
    return ran


@pytest.fixture()
def lakehouse(tmp_path: Path) -> Lakehouse:
    house = Lakehouse(tmp_path / "lakehouse", tmp_path / "landing")
    (house.landing / "trace").mkdir(parents=True)
    (house.landing / "trace" / "a.jsonl").write_text('{"msgId": "1"}\n')
    house.root.mkdir()
    return house


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
