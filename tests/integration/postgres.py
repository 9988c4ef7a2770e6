"""A real, throwaway PostgreSQL server on loopback for a test's Hive metastore.

Debian's server binaries (scripts/install-postgresql.sh installs them) run as the `postgres`
user when the tests run as root, since PostgreSQL refuses to run as root.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.integration.helpers import free_port

INSTALL_HINT = "run scripts/install-postgresql.sh (make test does) to install Debian's postgresql"


def _server_binaries() -> Path:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    located = Path(found[-1]).parent if found else None
    if located is None and shutil.which("initdb"):
        located = Path(shutil.which("initdb")).parent
    if located is None:
        raise AssertionError(f"PostgreSQL's server is not installed: {INSTALL_HINT}")
    return located


@contextmanager
def running_postgres(database: str = "metastore") -> Iterator[str]:
    """Start a PostgreSQL server in a new folder under the system's temp folder (which the
    server's user can reach); yield the metastore URL of a new, empty ``database`` (user
    `retrylake`, trusted on loopback); stop the server and remove its folder at the end."""
    binaries = _server_binaries()
    folder = Path(tempfile.mkdtemp(prefix="retrylake-postgres-"))
    as_server_user: list[str] = []
    if os.geteuid() == 0:
        shutil.chown(folder, user="postgres")
        as_server_user = ["runuser", "-u", "postgres", "--"]
    data, port = folder / "data", free_port()

    def run(*command: str) -> None:
        subprocess.run([*as_server_user, *command], check=True, capture_output=True, text=True)

    try:
        run(str(binaries / "initdb"), "-D", str(data), "-A", "trust", "-U", "retrylake",
            "--no-sync")  # fmt: skip
        options = f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 -c fsync=off"
        run(str(binaries / "pg_ctl"), "-D", str(data), "-o", options,
            "-l", str(folder / "server.log"), "-w", "start")  # fmt: skip
        try:
            run(str(binaries / "createdb"), "-h", "127.0.0.1", "-p", str(port),
                "-U", "retrylake", database)  # fmt: skip
            yield f"postgresql://retrylake@127.0.0.1:{port}/{database}"
        finally:
            run(str(binaries / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def metastore_tables(url: str) -> list[str]:
    """The Hive tables (database.table) the metastore at ``url`` lists, read with psql."""
    from retrylake.metastore import PostgresMetastore

    metastore = PostgresMetastore.parse(url)
    query = 'select d."NAME" || \'.\' || t."TBL_NAME" from "TBLS" t join "DBS" d using ("DB_ID")'
    psql = shutil.which("psql") or str(_server_binaries() / "psql")
    result = subprocess.run(
        [psql, "-h", metastore.host, "-p", str(metastore.port), "-U", metastore.user,
         "-d", metastore.database, "-At", "-c", query],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    return sorted(result.stdout.split())
