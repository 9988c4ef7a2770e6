"""`retrylake serve` as users run it: a separate process, the plain dbt CLI against its
`server` target, a HiveServer2 client reading the marts, `retrylake build` beside the server
while readers query in a loop, and a clean stop on SIGTERM. The served landing holds the
sample's trace and a few 5.x gRPC groups' spans, events and broker logs. The served lakehouse
keeps its Hive metastore in a real PostgreSQL server (`--metastore`), which lets a build run
beside the server; every other test's lakehouse uses the embedded Derby."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from retrylake.analyst.query import run_query
from retrylake.lakehouse import Lakehouse
from retrylake.sim import grpc5
from retrylake.sim.engine import GeneratorConfig, generate
from retrylake.sim.sample import END_MS, START_MS, write_sample
from retrylake.spark import SHORT_RUN_JVM_OPTIONS
from tests.conftest import PROJECT_DIR
from tests.integration.helpers import free_port, wait_for_log
from tests.integration.postgres import metastore_tables, running_postgres

pytestmark = pytest.mark.integration

DBT = str(Path(sys.executable).with_name("dbt"))
RETRYLAKE = (sys.executable, "-m", "retrylake")


def _listeners(port: int) -> set[str]:
    """Local addresses (hex, as in /proc/net/tcp) listening on ``port``."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            address, hex_port = fields[1].split(":")
            if int(hex_port, 16) == port and fields[3] == "0A":  # 0A: LISTEN
                found.add(address)
    return found


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("served")
    landing = root / "lakehouse" / "landing"
    sample = write_sample(landing)
    # 5.x gRPC traffic over the same hours, nothing after the sample's watermark
    grpc = root / "grpc5"
    shutil.copytree(PROJECT_DIR / "seeds", grpc / "seeds")  # the generator adds its groups there
    result = grpc5.generate_grpc5(
        grpc,
        messages=150,
        seed=3,
        start_ms=START_MS,
        end_ms=END_MS,
        watermark_ms=sample.watermark_ms,
        compression="none",
    )
    assert result.stats["seed_rows_replaced"] == []  # the project's seed already lists them
    for feed in ("otel", "consume_events", "broker_logs"):
        shutil.copytree(grpc / feed, landing / feed, dirs_exist_ok=True)
    grpc_truth = [json.loads(line) for line in (grpc / "ground_truth.jsonl").open()]
    port = free_port()
    with running_postgres() as metastore:
        yield from _serving(root, port, metastore, sample, grpc_truth)


def _serving(root: Path, port: int, metastore: str, sample, grpc_truth):
    # Files, not pipes: a pipe nobody reads fills up and blocks the server's logging.
    out, err = (root / "serve.out").open("w"), (root / "serve.err").open("w")
    command = [*RETRYLAKE, "serve", "--lakehouse", str(root / "lakehouse"), "--port", str(port)]
    process = subprocess.Popen(
        [*command, "--metastore", metastore], stdout=out, stderr=err, text=True
    )
    try:
        wait_for_log(
            root / "serve.out", "Press Ctrl-C", process, timeout=300, errors=root / "serve.err"
        )
        yield {
            "root": root,
            "port": port,
            "sample": sample,
            "grpc_truth": grpc_truth,
            "process": process,
            "metastore": metastore,
        }
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        out.close()
        err.close()


def _dbt(server: dict, *command: str) -> subprocess.CompletedProcess:
    """The plain dbt CLI, as a user runs it from the project folder."""
    environment = dict(os.environ, RETRYLAKE_SERVER_PORT=str(server["port"]))
    environment.pop("RETRYLAKE_LANDING", None)  # the server's own landing folder is used
    artefacts = ["--target-path", str(server["root"] / "target")]
    artefacts += ["--log-path", str(server["root"] / "logs")]
    return subprocess.run(
        [DBT, *command, "--target", "server", "--profiles-dir", "profiles", *artefacts],
        cwd=PROJECT_DIR,
        env=environment,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )


def test_serve_listens_on_loopback_only(server):
    # 127.0.0.1, as IPv4 or as Java's IPv4-mapped IPv6 socket (::ffff:127.0.0.1)
    assert _listeners(server["port"]) <= {"0100007F", "0000000000000000FFFF00000100007F"}
    assert _listeners(server["port"])


def test_plain_dbt_runs_and_tests_against_the_server(server):
    for command in (["seed"], ["run"], ["test", "--select", "message_lifecycles dlq_messages"]):
        result = _dbt(server, *command)
        assert result.returncode == 0, result.stdout[-3000:]
        assert "Completed successfully" in result.stdout
    # the data tests of two marts (the full suite runs on the embedded session elsewhere): per
    # mart one scan for its column and key checks, and the two checks across marts; and 3 unit
    # tests
    passed = int(re.search(r"PASS=(\d+)", result.stdout).group(1))
    assert passed >= 7 and "ERROR=0" in result.stdout
    assert "message_lifecycles_table_checks" in result.stdout
    # the catalog is PostgreSQL's: the marts are registered there, and no Derby was made
    # (dbt builds the marts in retrylake_unpublished; `dbt run` published them as views)
    tables = metastore_tables(server["metastore"])
    published = {"retrylake.consume_attempts", "retrylake.dlq_messages"}
    assert published | {"retrylake_unpublished.consume_attempts"} <= set(tables)
    assert not (server["root"] / "lakehouse" / "metastore_db").exists()


def test_a_hiveserver2_client_reads_the_marts_and_the_udfs(server):
    from pyhive import hive

    sample = server["sample"]
    with hive.connect(host="127.0.0.1", port=server["port"], database="retrylake") as connection:
        cursor = connection.cursor()
        cursor.execute(
            "select consumer_group, msg_id, origin_msg_id, deliveries, final_state "
            "from message_lifecycles where client_line not in ('grpc-5', 'cloud-5')"
        )
        served = sorted(cursor.fetchall())
        cursor.execute(
            "select consumer_group, msg_id, deliveries, final_state from message_lifecycles "
            "where client_line in ('grpc-5', 'cloud-5')"
        )
        served_grpc = {(group, msg): (n, state) for group, msg, n, state in cursor.fetchall()}
        cursor.execute("select size(parse_delay_levels('1s 5s 2h'))")
        assert cursor.fetchall() == [(3,)]
    expected = sorted(
        (
            lifecycle.group,
            lifecycle.message.msg_id,
            lifecycle.message.origin_msg_id,
            len(lifecycle.history),
            lifecycle.state,
        )
        for lifecycle in sample.lifecycles
    )
    assert served == expected
    # the 5.x lifecycles whose every delivery landed, as the generator says they ended
    complete = {
        (row["consumer_group"], row["msg_id"]): (row["deliveries"], row["final_state"])
        for row in server["grpc_truth"]
        if row["trace_complete"]
    }
    assert len(complete) > 100
    assert {key: served_grpc.get(key) for key in complete} == complete


# What a reader sees of the marts: consume_attempts' rows per hour partition, so a missing
# table, a missing partition or a partition of another build shows; DuckDB's readers also count
# the lifecycles in the same query, so two marts of different builds show too.
SPARK_READ = (
    "select cast(lifecycle_date as string), lifecycle_hour, count(*) from consume_attempts "
    "group by 1, 2"
)
DUCKDB_READ = (
    "select cast(lifecycle_date as varchar), lifecycle_hour, count(*), "
    "(select count(*) from message_lifecycles) from consume_attempts group by all"
)


class PublishWatch:
    """Whether the build being watched has begun publishing: its dbt log shows the on-run-end
    hooks. Readers read seldom before that (each served read is a Spark job on the server that
    takes the two cores from the build) and often from then on, when views switch."""

    HOOKS = b"START hook: retrylake.on-run-end"

    def __init__(self, log: Path):
        self.log = log
        self.start = log.stat().st_size if log.exists() else 0  # earlier runs' lines
        self.seen = False

    def pause(self) -> float:
        if not self.seen and self.log.exists():
            if self.log.stat().st_size < self.start:  # dbt rotated its log
                self.start = 0
            with self.log.open("rb") as handle:
                handle.seek(self.start)
                self.seen = self.HOOKS in handle.read()
        return 0.1 if self.seen else 2.0


def _served_state(cursor) -> frozenset:
    cursor.execute(SPARK_READ)
    return frozenset(tuple(row) for row in cursor.fetchall())


def _queried_state(lakehouse: Lakehouse) -> frozenset:
    return frozenset(run_query(lakehouse, DUCKDB_READ)[1])


def _add_trace_batch(server: dict, seed: int) -> None:
    """New trace files over the sample's hours, so a build rewrites partitions readers see."""
    out = server["root"] / f"batch-{seed}"
    shutil.copytree(PROJECT_DIR / "seeds", out / "project-seeds")
    config = GeneratorConfig(out=out, messages=300, seed=seed, start_ms=START_MS, hours=3)
    generate(config, seeds_dir=out / "project-seeds")
    trace = server["root"] / "lakehouse" / "landing" / "trace"
    for path in sorted((out / "trace").rglob("*.jsonl*")):
        shutil.copy(path, trace / f"batch-{seed}-{path.name}")


def _lakehouse_jvms(lakehouse: Lakehouse) -> dict[int, list[str]]:
    """The arguments of each running JVM started on ``lakehouse`` (the server's, a build's)."""
    own = f"-Dderby.system.home={lakehouse.root}"
    found = {}
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            arguments = cmdline.read_bytes().decode(errors="replace").split("\0")
        except OSError:  # the process ended
            continue
        if own in arguments and Path(arguments[0]).name == "java":
            found[int(cmdline.parent.name)] = arguments
    return found


def _build_while_reading(server: dict, *build_args: str) -> dict:
    """`retrylake build` in its own process beside the server, while one reader queries the
    server and another `retrylake query`'s DuckDB, each in a loop, until the build ends; and
    the JVM options the build's driver started with."""
    from pyhive import hive

    lakehouse = Lakehouse(server["root"] / "lakehouse", server["root"] / "lakehouse" / "landing")
    seen: dict[str, list] = {"served": [], "queried": []}
    errors: list[str] = []
    stop = threading.Event()
    watch = PublishWatch(lakehouse.dbt_logs / "dbt.log")
    servers = set(_lakehouse_jvms(lakehouse))
    build_jvms: dict[int, list[str]] = {}

    def find_build_jvm() -> None:
        while not stop.is_set() and not build_jvms:
            found = _lakehouse_jvms(lakehouse)
            build_jvms.update({pid: found[pid] for pid in set(found) - servers})
            stop.wait(0.5)

    def read_served() -> None:
        with hive.connect(host="127.0.0.1", port=server["port"], database="retrylake") as link:
            cursor = link.cursor()
            while not stop.is_set():
                try:
                    seen["served"].append(_served_state(cursor))
                except Exception as error:  # a missing table or file: the test fails
                    errors.append(f"served: {error}")
                stop.wait(watch.pause())

    def read_queried() -> None:
        while not stop.is_set():
            try:
                seen["queried"].append(_queried_state(lakehouse))
            except Exception as error:
                errors.append(f"queried: {error}")
            stop.wait(watch.pause())

    with hive.connect(host="127.0.0.1", port=server["port"], database="retrylake") as link:
        before = {"served": _served_state(link.cursor()), "queried": _queried_state(lakehouse)}
    threads = [
        threading.Thread(target=task) for task in (read_served, read_queried, find_build_jvm)
    ]
    for thread in threads:
        thread.start()
    try:
        build = subprocess.run(
            [*RETRYLAKE, "build", "--lakehouse", str(lakehouse.root),
             "--metastore", server["metastore"], *build_args],
            cwd=PROJECT_DIR, capture_output=True, text=True, timeout=1200, check=False,
        )  # fmt: skip
    finally:
        stop.set()
        for thread in threads:
            thread.join()
    with hive.connect(host="127.0.0.1", port=server["port"], database="retrylake") as link:
        cursor = link.cursor()
        after = {"served": _served_state(cursor), "queried": _queried_state(lakehouse)}
        # the build's own table, which this server cached as it was when it last read it
        cursor.execute("refresh table retrylake_unpublished.consume_attempts")
        cursor.execute("select count(*) from retrylake_unpublished.consume_attempts")
        unpublished = cursor.fetchall()[0][0]
    return {"build": build, "before": before, "after": after, "seen": seen, "errors": errors,
            "unpublished_attempts": unpublished,
            "jvm_options": [{arg for arg in jvm if arg.startswith("-XX:")}
                            for jvm in build_jvms.values()]}  # fmt: skip


def _assert_seen_whole(run: dict) -> None:
    assert run["build"].returncode == 0, run["build"].stdout[-3000:] + run["build"].stderr
    assert run["errors"] == [], run["errors"][:5]
    for reader in ("served", "queried"):
        before, after, seen = run["before"][reader], run["after"][reader], run["seen"][reader]
        assert before != after, reader  # the build changed what readers see
        assert len(seen) >= 5 and before in seen, (reader, len(seen))
        assert set(seen) <= {before, after}, reader  # never a state between the two builds


def test_builds_beside_the_server_publish_whole_and_only_after_their_tests(server):
    """With a PostgreSQL metastore `retrylake build` runs while the server serves. Readers
    through the server and through `retrylake query` see the last published build or the new
    one, never a missing table, a missing partition or a mix, during a full refresh and during
    an incremental build; a build whose data test fails publishes nothing."""
    _add_trace_batch(server, seed=41)
    full_refresh = _build_while_reading(
        server, "--full-refresh", "--exclude", "resource_type:test", "resource_type:unit_test"
    )
    _assert_seen_whole(full_refresh)
    assert "published build" in full_refresh["build"].stdout
    # the build's driver, seen while it ran: a process of one build reading so small a landing,
    # even whole, ends before C2's compilations pay (SHORT_RUN_JVM_OPTIONS, below)
    assert len(full_refresh["jvm_options"]) == 1

    # audit: a data test fails, so the new rows stay in the unpublished schema
    project = server["root"] / "project-with-a-failing-test"
    for part in ("dbt_project.yml", "models", "macros", "seeds", "profiles", "tests/dbt"):
        copy = shutil.copytree if (PROJECT_DIR / part).is_dir() else shutil.copy
        (project / part).parent.mkdir(parents=True, exist_ok=True)
        copy(PROJECT_DIR / part, project / part)
    (project / "tests" / "dbt" / "no_attempt_is_kept.sql").write_text(
        "select * from {{ ref('consume_attempts') }}\n"
    )
    _add_trace_batch(server, seed=42)
    audited = _build_while_reading(
        server, "--project-dir", str(project), "--select", "+consume_attempts",
        "--exclude", "resource_type:unit_test",
    )  # fmt: skip
    assert audited["build"].returncode == 1
    # (the cross-mart test of attempts and lifecycles fails too: only one of them was rebuilt)
    refused = re.search(r"retrylake: not published \(\d+ failed: ([^;]*);", audited["build"].stdout)
    assert refused and "no_attempt_is_kept" in refused.group(1), audited["build"].stdout[-3000:]
    # the what-if's check, picked up through the settings the selection builds, has no what-if
    # table to read here: it checks nothing rather than fail the build
    assert "whatif_settings_apply_to_their_groups" not in refused.group(1), refused.group(1)
    shown = re.search(r"Readers still see build (\S+?)\.", audited["build"].stderr).group(1)
    assert f"published build {shown}:" in full_refresh["build"].stdout
    assert audited["errors"] == []
    for reader in ("served", "queried"):
        assert audited["after"][reader] == full_refresh["after"][reader], reader
        assert set(audited["seen"][reader]) == {full_refresh["after"][reader]}, reader
    published_attempts = sum(count for *_, count in full_refresh["after"]["served"])
    assert audited["unpublished_attempts"] > published_attempts

    incremental = _build_while_reading(
        server, "--exclude", "resource_type:test", "resource_type:unit_test"
    )
    _assert_seen_whole(incremental)
    assert incremental["before"] == full_refresh["after"]
    for run in (full_refresh, audited, incremental):
        assert [set(SHORT_RUN_JVM_OPTIONS) <= options for options in run["jvm_options"]] == [True]
    # and the readers agree with each other on what was published
    served = sorted(incremental["after"]["served"])
    assert served == sorted(row[:3] for row in incremental["after"]["queried"])


def test_sigterm_stops_the_server_and_frees_the_port(server):
    process = server["process"]
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=120) == 0
    assert "stopped" in (server["root"] / "serve.err").read_text()
    assert not _listeners(server["port"])
