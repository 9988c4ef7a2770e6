"""The lakehouse folder: where the metastore, warehouse, landing zone and dbt artefacts live.

Everything a build writes stays inside one folder, so two lakehouses never interfere.
"""

from __future__ import annotations

import fcntl
import os
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from retrylake.errors import LakehouseBusyError, LandingError

# The landing zone's folders (macros/landing/register_landing_sources.sql): the trace topic,
# dead-letter exports, and the 5.x gRPC consumers' spans, listener events and broker logs.
LANDING_FEEDS = ("trace", "dlq", "otel", "consume_events", "broker_logs")


@dataclass(frozen=True)
class Lakehouse:
    root: Path
    landing: Path
    # A landing zone on shared storage (hdfs://, s3a://, ...) that Spark reads; `landing` is then
    # unused, since Python cannot list such a folder.
    landing_url: str | None = None
    # A PostgreSQL metastore asked for on the command line (retrylake/metastore.py); None: the
    # environment's, the one the lakehouse recorded, or its embedded Derby.
    metastore_url: str | None = None

    @classmethod
    def resolve(
        cls, lakehouse: str | None, landing: str | None, metastore: str | None = None
    ) -> Lakehouse:
        root = Path(lakehouse or os.environ.get("RETRYLAKE_LAKEHOUSE") or "lakehouse").resolve()
        landing_dir = landing or os.environ.get("RETRYLAKE_LANDING")
        if landing_dir and "://" in landing_dir:
            landing_path, landing_url = root / "landing", landing_dir.rstrip("/")
        else:
            landing_path = Path(landing_dir).resolve() if landing_dir else root / "landing"
            landing_url = None
        return cls(root, landing_path, landing_url=landing_url, metastore_url=metastore)

    @property
    def landing_location(self) -> str:
        """The landing zone as Spark is given it: a URL, or an absolute local path."""
        return self.landing_url or str(self.landing)

    @property
    def warehouse(self) -> Path:
        return self.root / "warehouse"

    @property
    def metastore(self) -> Path:
        """The embedded Derby metastore's folder (unused with a PostgreSQL metastore)."""
        return self.root / "metastore_db"

    @property
    def metastore_record(self) -> Path:
        """The PostgreSQL metastore the lakehouse uses, if any (retrylake/metastore.py)."""
        return self.root / "metastore.txt"

    @property
    def dbt_target(self) -> Path:
        return self.root / "dbt" / "target"

    @property
    def dbt_logs(self) -> Path:
        return self.root / "dbt" / "logs"

    @property
    def landing_record(self) -> Path:
        """Which landing the lakehouse is built from: its staging tables hold that folder's
        files by name, so another folder would be read as new data on top of them."""
        return self.root / "landing-source.txt"

    def check_landing_exists(self) -> None:
        """A landing folder that was named must exist; only the default one is created."""
        named = self.landing_url is None and self.landing != self.root / "landing"
        if named and not self.landing.is_dir():
            raise LandingError(
                f"the landing folder {self.landing} does not exist; check --landing "
                "(or $RETRYLAKE_LANDING)"
            )

    @property
    def built_from(self) -> str:
        """The landing the lakehouse's record names ("" before its first build)."""
        record = self.landing_record
        return record.read_text().strip() if record.exists() else ""

    @property
    def landing_switch_record(self) -> Path:
        """Present while a full refresh that moved the lakehouse to another landing has not
        finished: until one does, its tables may hold files of both landings."""
        return self.root / "landing-switch-pending.txt"

    def claim_landing(self, *, full_refresh: bool) -> None:
        """Record this run's landing, refusing a different one unless the run rebuilds everything.

        ``full_refresh``: the run is a full refresh of every model (no selection), the only run
        that may move the lakehouse to another landing; once it succeeds, call
        `landing_settled`. Call this holding the lock, before the run starts. A lakehouse
        without a record takes the landing it is given.
        """
        record = self.landing_record
        built_from = self.built_from
        moving = bool(built_from) and built_from != self.landing_location
        if not full_refresh and self.landing_switch_record.exists():
            raise LandingError(
                f"the full refresh that moved the lakehouse {self.root} to the landing "
                f"{built_from} did not finish, so its tables may hold files of both landings; "
                f"run it again: retrylake build --full-refresh --landing {built_from}"
            )
        if moving and not full_refresh:
            raise LandingError(
                f"the lakehouse {self.root} was built from the landing {built_from}, not "
                f"{self.landing_location}; pass --landing {built_from} to build on it, or "
                "--full-refresh (of everything, no --select) to rebuild it from the new landing"
            )
        self.root.mkdir(parents=True, exist_ok=True)
        if moving:
            self.landing_switch_record.write_text(self.landing_location + "\n")
        record.write_text(self.landing_location + "\n")

    def landing_settled(self) -> None:
        """A full refresh of every model succeeded: every table holds this landing's files."""
        self.landing_switch_record.unlink(missing_ok=True)

    def prepare(self) -> None:
        folders = [self.root, self.warehouse]
        if self.landing_url is None:
            folders += [self.landing / feed for feed in LANDING_FEEDS]
        for folder in folders:
            folder.mkdir(parents=True, exist_ok=True)

    def lock(self, holder: str = "retrylake") -> IO[str]:
        """Take the lakehouse for this process, or fail at once if another process has it.

        ``holder`` is what a refused process is told is using the lakehouse.
        """
        self.root.mkdir(parents=True, exist_ok=True)
        handle = (self.root / ".lock").open("a+")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            handle.close()
            raise LakehouseBusyError(
                f"the lakehouse {self.root} is in use by {holder}; wait for it to finish, "
                "or connect through `retrylake serve` to share it"
            ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"{holder} (pid {os.getpid()})\n")
        handle.flush()
        return handle
