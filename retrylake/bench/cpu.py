"""Where a timed phase's CPU went, read from Linux's /proc: how busy the machine was, and the
driver JVM's CPU split into HotSpot's JIT compilers, its garbage collector and the rest (Spark's
tasks, planning, the metastore). On two cores a phase that keeps the machine busy is bound by
its total CPU, not by its slowest chain of models; the compilers' share goes to the code run,
not to the rows (docs/performance.md, "Where a warm batch's CPU goes")."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

PROC = Path("/proc")

# HotSpot's thread names, as Linux keeps them (15 characters at most).
JIT_THREADS = ("C1 CompilerThre", "C2 CompilerThre")
GC_THREADS = ("GC Thread", "G1 ")


def thread_kind(name: str) -> str:
    """'jit', 'gc' or 'other' for a JVM thread's name."""
    if name.startswith(JIT_THREADS):
        return "jit"
    if name.startswith(GC_THREADS):
        return "gc"
    return "other"


def parse_task_stat(text: str, ticks_per_second: float) -> tuple[str, float]:
    """A /proc/<pid>[/task/<tid>]/stat line as (name, user + system CPU seconds). The name is
    in parentheses and may hold spaces and parentheses itself, so fields count from the last
    ')'. For a process the times include its exited threads'."""
    name = text[text.index("(") + 1 : text.rindex(")")]
    fields = text[text.rindex(")") + 2 :].split()
    return name, (int(fields[11]) + int(fields[12])) / ticks_per_second


def parse_machine_stat(text: str) -> tuple[int, int]:
    """The first line of /proc/stat as (busy, total) jiffies over all CPUs; idle and iowait
    are not busy."""
    values = [int(value) for value in text.splitlines()[0].split()[1:]]
    idle = values[3] + (values[4] if len(values) > 4 else 0)
    return sum(values) - idle, sum(values)


@dataclass
class CpuSample:
    machine_busy: int = 0
    machine_total: int = 0
    python_seconds: float = 0.0
    jvm_seconds: float = 0.0
    jvm_by_kind: dict[str, float] = field(default_factory=dict)


def sample(jvm_pid: int | None) -> CpuSample | None:
    """The counters now, or None where there is no /proc (not Linux)."""
    if not (PROC / "stat").exists():
        return None
    ticks = os.sysconf("SC_CLK_TCK")
    busy, total = parse_machine_stat((PROC / "stat").read_text())
    own = os.times()
    taken = CpuSample(busy, total, own.user + own.system)
    if jvm_pid is None:
        return taken
    try:
        taken.jvm_seconds = parse_task_stat((PROC / str(jvm_pid) / "stat").read_text(), ticks)[1]
        for task in (PROC / str(jvm_pid) / "task").iterdir():
            try:
                name, seconds = parse_task_stat((task / "stat").read_text(), ticks)
            except OSError:  # the thread ended meanwhile
                continue
            kind = thread_kind(name)
            taken.jvm_by_kind[kind] = taken.jvm_by_kind.get(kind, 0.0) + seconds
    except OSError:
        pass
    return taken


def busy_seconds(before: CpuSample | None, after: CpuSample | None) -> float | None:
    """The machine's busy CPU seconds (all cores) between two samples: on a machine that runs
    nothing else, a process tree's CPU, JVM included, whoever reaps it."""
    if before is None or after is None:
        return None
    return round((after.machine_busy - before.machine_busy) / os.sysconf("SC_CLK_TCK"), 1)


def between(before: CpuSample | None, after: CpuSample | None) -> dict | None:
    """What the phase between two samples used. The JIT and GC threads live as long as the JVM,
    so their difference is theirs; what the JVM's other threads used is the rest of its total,
    which also counts threads that ended during the phase."""
    if before is None or after is None:
        return None
    jvm = after.jvm_seconds - before.jvm_seconds

    def kind(name: str) -> float:
        return after.jvm_by_kind.get(name, 0.0) - before.jvm_by_kind.get(name, 0.0)

    total = after.machine_total - before.machine_total
    return {
        "machine_busy_share": round((after.machine_busy - before.machine_busy) / total, 3)
        if total
        else None,
        "driver_jvm_cpu_seconds": round(jvm, 1),
        "jit_compiler_cpu_seconds": round(kind("jit"), 1),
        "gc_cpu_seconds": round(kind("gc"), 1),
        "other_jvm_cpu_seconds": round(jvm - kind("jit") - kind("gc"), 1),
        "python_cpu_seconds": round(after.python_seconds - before.python_seconds, 1),
    }
