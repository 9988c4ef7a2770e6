"""The bench's CPU figures (retrylake/bench/cpu.py): /proc's lines parsed as Linux writes them,
the JVM's threads sorted by kind, and a phase's share of the machine and of the JVM's threads."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from retrylake.bench import cpu

# A JVM thread's stat line (fields 14 and 15: 2,500 and 430 ticks of user and system time).
C2_THREAD = (
    "4242 (C2 CompilerThre) S 4200 4200 4200 0 -1 1077936192 1200 0 0 0 2500 430 0 0 20 0 "
    "48 0 5000 10000000000 60000 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 -1 1 0 0 0 0 0"
)


def test_a_thread_stat_line_gives_its_name_and_cpu_seconds():
    assert cpu.parse_task_stat(C2_THREAD, 100) == ("C2 CompilerThre", 29.3)


def test_a_name_with_spaces_and_parentheses_is_read_to_its_last_parenthesis():
    line = C2_THREAD.replace("(C2 CompilerThre)", "(a (b) c)")
    assert cpu.parse_task_stat(line, 100) == ("a (b) c", 29.3)


def test_hotspots_threads_by_kind():
    assert cpu.thread_kind("C1 CompilerThre") == "jit"
    assert cpu.thread_kind("C2 CompilerThre") == "jit"
    assert cpu.thread_kind("GC Thread#1") == "gc"
    assert cpu.thread_kind("G1 Conc#0") == "gc"
    assert cpu.thread_kind("Executor task l") == "other"
    assert cpu.thread_kind("Thread-7") == "other"


def test_idle_and_iowait_are_not_busy():
    # user nice system idle iowait irq softirq steal
    assert cpu.parse_machine_stat("cpu  100 5 50 800 40 3 2 0 0 0\ncpu0 1 2 3 4\n") == (160, 1000)


def test_a_phase_is_the_difference_and_the_rest_of_the_jvm_is_what_its_kinds_leave():
    before = cpu.CpuSample(1000, 4000, 10.0, 100.0, {"jit": 30.0, "gc": 5.0, "other": 65.0})
    # a task thread that ended during the phase is in the JVM's total, not in its kinds
    after = cpu.CpuSample(2900, 6000, 12.5, 290.0, {"jit": 90.0, "gc": 15.0, "other": 120.0})
    assert cpu.between(before, after) == {
        "machine_busy_share": 0.95,
        "driver_jvm_cpu_seconds": 190.0,
        "jit_compiler_cpu_seconds": 60.0,
        "gc_cpu_seconds": 10.0,
        "other_jvm_cpu_seconds": 120.0,
        "python_cpu_seconds": 2.5,
    }
    assert cpu.between(None, after) is None


@pytest.mark.skipif(not cpu.PROC.joinpath("stat").exists(), reason="needs Linux's /proc")
def test_a_real_process_cpu_is_counted_with_its_ended_threads():
    # a child that spins one thread for about a second, which then ends, then sleeps
    spin = (
        "import threading, time\n"
        "def work():\n"
        "    end = time.process_time() + 1.0\n"
        "    while time.process_time() < end: pass\n"
        "t = threading.Thread(target=work); t.start(); t.join()\n"
        "print('spun', flush=True); time.sleep(30)\n"
    )
    child = subprocess.Popen([sys.executable, "-c", spin], stdout=subprocess.PIPE, text=True)
    try:
        before = cpu.sample(child.pid)
        assert child.stdout.readline().strip() == "spun"
        time.sleep(0.1)
        used = cpu.between(before, cpu.sample(child.pid))
    finally:
        child.kill()
        child.wait()
    assert 0.8 <= used["driver_jvm_cpu_seconds"] <= 2.0  # the ended thread's second counts
    assert used["jit_compiler_cpu_seconds"] == used["gc_cpu_seconds"] == 0.0
    assert used["other_jvm_cpu_seconds"] == used["driver_jvm_cpu_seconds"]
    assert 0 < used["machine_busy_share"] <= 1
