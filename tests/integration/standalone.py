"""A Spark standalone cluster on 127.0.0.1 from pyspark's own jars, for the scale-out test."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pyspark

from tests.integration.helpers import wait_for_log

SPARK_HOME = Path(pyspark.__file__).parent


def _spark_daemon(main_class: str, args: list[str], log: Path) -> subprocess.Popen:
    # What sbin/start-*.sh and load-spark-env.sh would set: workers build executor command
    # lines from SPARK_HOME's jars and need the Scala version to find them.
    environment = dict(
        os.environ,
        SPARK_HOME=str(SPARK_HOME),
        SPARK_SCALA_VERSION="2.13",
        SPARK_LOCAL_IP="127.0.0.1",
    )
    return subprocess.Popen(
        ["java", "-Xmx512m", "-cp", f"{SPARK_HOME / 'jars'}/*", main_class, *args],
        env=environment,
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def _alive_workers(web_url: str) -> int:
    try:
        with urllib.request.urlopen(f"{web_url}/json/", timeout=5) as answer:
            state = json.load(answer)
    except OSError:
        return 0
    return sum(worker["state"] == "ALIVE" for worker in state.get("workers", []))


@contextlib.contextmanager
def standalone_cluster(root: Path) -> Iterator[str]:
    """A standalone master and two one-core workers on 127.0.0.1; yields the master URL and
    stops every daemon afterwards, whatever happens."""
    # Ports chosen here and bound later by a JVM can be taken in between (another test's server
    # did, once, and the master moved to the next port); port 0 lets the master bind its own.
    deadline = time.monotonic() + 180
    master_log = root / "master.log"
    daemons = [
        _spark_daemon(
            "org.apache.spark.deploy.master.Master",
            ["--host", "127.0.0.1", "--port", "0", "--webui-port", "0"],
            master_log,
        )
    ]
    try:
        # the master picks its own free ports (port 0), so its log is where they are known
        master_url, web_port = (
            wait_for_log(master_log, pattern, daemons[0], timeout=deadline - time.monotonic())[1]
            for pattern in (
                r"Starting Spark master at (spark://\S+)",
                r"MasterWebUI: Bound .* started at http://[^:]+:(\d+)",
            )
        )
        web_url = f"http://127.0.0.1:{web_port}"
        for number in (1, 2):
            daemons.append(
                _spark_daemon(
                    "org.apache.spark.deploy.worker.Worker",
                    [
                        *("--host", "127.0.0.1", "--cores", "1", "--memory", "2g"),
                        *("--webui-port", "0", "--work-dir", str(root / f"work-{number}")),
                        master_url,
                    ],
                    root / f"worker-{number}.log",
                )
            )
        while _alive_workers(web_url) < 2:
            assert all(daemon.poll() is None for daemon in daemons), "a Spark daemon exited"
            assert time.monotonic() < deadline, "the standalone cluster did not come up"
            time.sleep(1)
        yield master_url
    finally:
        for daemon in daemons:
            if daemon.poll() is None:
                os.killpg(daemon.pid, 15)
        for daemon in daemons:
            try:
                daemon.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(daemon.pid, 9)
                daemon.wait()
