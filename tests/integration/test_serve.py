"""`retrylake serve` as users run it: a separate process, the plain dbt CLI against its
`server` target, a HiveServer2 client reading the marts, and a clean stop on SIGTERM. The served
landing holds the sample's trace and a few 5.x gRPC groups' spans, events and broker logs. The
served lakehouse keeps its Hive metastore in a real PostgreSQL server (`--metastore`); every
other test's lakehouse uses the embedded Derby."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from retrylake.sim import grpc5
from retrylake.sim.sample import END_MS, START_MS, write_sample
from tests.conftest import PROJECT_DIR
from tests.integration.helpers import free_port
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
        deadline = time.monotonic() + 300
        while "Press Ctrl-C" not in (root / "serve.out").read_text():
            assert process.poll() is None, (root / "serve.err").read_text()
            assert time.monotonic() < deadline, "the server did not start in 5 minutes"
            time.sleep(0.5)
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


def test_serve_listens_on_loopback_only_and_holds_the_lakehouse(server):
    # 127.0.0.1, as IPv4 or as Java's IPv4-mapped IPv6 socket (::ffff:127.0.0.1)
    assert _listeners(server["port"]) <= {"0100007F", "0000000000000000FFFF00000100007F"}
    assert _listeners(server["port"])
    refused = subprocess.run(
        [*RETRYLAKE, "build", "--lakehouse", str(server["root"] / "lakehouse")],
        cwd=PROJECT_DIR,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert refused.returncode == 3
    assert f"in use by retrylake serve on 127.0.0.1:{server['port']}" in refused.stderr


def test_plain_dbt_runs_and_tests_against_the_server(server):
    for command in (["seed"], ["run"], ["test", "--select", "message_lifecycles dlq_messages"]):
        result = _dbt(server, *command)
        assert result.returncode == 0, result.stdout[-3000:]
        assert "Completed successfully" in result.stdout
    # the data tests of two marts (the full suite runs on the embedded session elsewhere)
    passed = int(re.search(r"PASS=(\d+)", result.stdout).group(1))
    assert passed >= 10 and "ERROR=0" in result.stdout
    # the catalog is PostgreSQL's: the marts are registered there, and no Derby was made
    tables = metastore_tables(server["metastore"])
    assert {"retrylake.consume_attempts", "retrylake.dlq_messages"} <= set(tables)
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


def test_sigterm_stops_the_server_and_frees_the_port(server):
    process = server["process"]
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=120) == 0
    assert "stopped" in (server["root"] / "serve.err").read_text()
    assert not _listeners(server["port"])
