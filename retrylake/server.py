"""`retrylake serve`: Spark's Thrift JDBC/ODBC server (HiveServer2 protocol) on the lakehouse.

The server runs inside this process on the same SparkSession as `retrylake build`, with the
Python UDFs registered. `singleSession` makes every JDBC connection share that session, so the
UDFs (session-scoped temporary functions) are visible to the plain dbt CLI and to BI tools.
"""

from __future__ import annotations

import contextlib
import signal
import socket
import sys
import threading

from retrylake.build_inputs import LastBuild
from retrylake.errors import PortInUseError
from retrylake.lakehouse import Lakehouse
from retrylake.metastore import lakehouse_metastore
from retrylake.spark import start_session

# The session conf key `register_landing_sources` reads when dbt is given no landing path.
LANDING_CONF_KEY = "retrylake.landing_path"


def check_port_free(host: str, port: int) -> None:
    """Fail before starting Java when the port is taken, with what to do about it."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as error:
            raise PortInUseError(
                f"cannot listen on {host}:{port} ({error.strerror}); another server may be "
                "running there: stop it or choose another port with --port"
            ) from None


def serve(
    lakehouse: Lakehouse,
    *,
    host: str = "127.0.0.1",
    port: int = 10000,
    master: str | None = None,
    spark_conf: dict[str, str] | None = None,
) -> None:
    """Run the Thrift server until Ctrl-C or SIGTERM.

    On embedded Derby, which admits one process, the server holds the lakehouse throughout. On
    a PostgreSQL metastore it does not: `retrylake build` runs beside it, and the server's
    readers see each build's marts once it is published (docs/publishing.md).
    """
    lakehouse.check_landing_exists()
    check_port_free(host, port)
    stop = threading.Event()
    previous = {
        signum: signal.signal(signum, lambda *_: stop.set())
        for signum in (signal.SIGINT, signal.SIGTERM)
    }
    try:
        shared = lakehouse_metastore(lakehouse, lakehouse.metastore_url) is not None
        holder = f"retrylake serve on {host}:{port}"
        with contextlib.nullcontext() if shared else lakehouse.lock(holder=holder):
            LastBuild(lakehouse).forget()  # its clients may change the tables
            print(f"Starting Spark on {lakehouse.root} ...", file=sys.stderr, flush=True)
            spark = start_session(
                lakehouse,
                master,
                # a build beside it may be writing a table the catalog does not list yet
                remove_unfinished=not shared,
                extra_conf=(spark_conf or {})
                | {
                    "spark.sql.hive.thriftServer.singleSession": "true",
                    "spark.hadoop.hive.server2.thrift.bind.host": host,
                    "spark.hadoop.hive.server2.thrift.port": str(port),
                    "spark.hadoop.hive.server2.transport.mode": "binary",
                },
            )
            spark.conf.set(LANDING_CONF_KEY, lakehouse.landing_location)
            thrift = spark._jvm.org.apache.spark.sql.hive.thriftserver.HiveThriftServer2
            server = thrift.startWithContext(spark._jsparkSession.sqlContext())
            try:
                print(
                    f"retrylake serve: HiveServer2 (Thrift, binary) listening on {host}:{port} "
                    f"for lakehouse {lakehouse.root}\n"
                    f"  dbt:     dbt run --target server --profiles-dir profiles\n"
                    f"  beeline: beeline -u jdbc:hive2://{host}:{port}/retrylake\n"
                    "Press Ctrl-C to stop.",
                    flush=True,
                )
                while not stop.wait(0.5):
                    pass
                print("retrylake serve: stopping ...", file=sys.stderr, flush=True)
            finally:
                server.stop()
                spark.stop()
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    print("retrylake serve: stopped", file=sys.stderr, flush=True)
