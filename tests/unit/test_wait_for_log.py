"""`wait_for_log`, which the tests that start a build, a watch, a server or a Spark master use to
wait for a line of its log: it returns the match it waited for, and it fails (rather than
waiting on) when the process ends first or the time is up, showing the log's end."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.helpers import wait_for_log


def _writer(log: Path, script: str) -> subprocess.Popen:
    """A process that writes ``log`` as ``script`` says (``line(text)`` appends a line)."""
    prelude = (
        "import sys, time\n"
        "def line(text):\n"
        "    with open(sys.argv[1], 'a') as out:\n"
        "        out.write(text + '\\n')\n"
    )
    return subprocess.Popen([sys.executable, "-c", prelude + script, str(log)])


def test_it_returns_the_match_it_waited_for(tmp_path: Path):
    log = tmp_path / "built.log"  # not there yet when the wait starts
    process = _writer(
        log, "time.sleep(0.3)\nline('built in 1 s')\nline('built in 22 s')\ntime.sleep(30)"
    )
    try:
        first = wait_for_log(log, r"built in (\d+) s", process, timeout=30)
        second = wait_for_log(log, r"built in (\d+) s", process, timeout=30, times=2)
    finally:
        process.kill()
        process.wait()
    assert first.group(1) == "1" and second.group(1) == "22"


def test_a_process_that_ends_first_fails_at_once_with_its_errors(tmp_path: Path):
    log, errors = tmp_path / "out.log", tmp_path / "err.log"
    errors.write_text("Traceback: the port is taken\n")
    process = _writer(log, "line('starting')\nsys.exit(3)")
    with pytest.raises(AssertionError) as failure:
        wait_for_log(log, "Press Ctrl-C", process, timeout=300, errors=errors)
    assert "exited (3)" in str(failure.value) and "the port is taken" in str(failure.value)


def test_a_line_that_never_comes_fails_after_the_timeout(tmp_path: Path):
    log = tmp_path / "out.log"
    process = _writer(log, "line('still starting')\ntime.sleep(30)")
    try:
        with pytest.raises(AssertionError) as failure:
            wait_for_log(log, "Press Ctrl-C", process, timeout=1)
    finally:
        process.kill()
        process.wait()
    assert "ran 1 s" in str(failure.value) and "still starting" in str(failure.value)
