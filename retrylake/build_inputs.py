"""What a build's marts are a function of, fingerprinted, so a build with nothing new is skipped.

The marts depend on the landing files, the seeds, the dbt project, retrylake's own code (the
UDFs, the runtime) and the dbt command; "now" is the data watermark, never the wall clock. When
none of these changed since a build that succeeded, building again would rewrite the marts with
what they already hold, so `retrylake build` says so and stops (``--force`` builds anyway).

Landing files are immutable once landed (docs/incremental.md), so a file's name, size and
modification time stand for its content; everything else is hashed by content. Of the landing,
only what Spark reads counts: each feed's folder, without the hidden files Spark skips.

The dbt unit tests read fixtures, not the landing: their outcome is a function of the project,
retrylake's code and the pinned tools alone. A build runs them only when that code differs from
the code of a build that ran and passed them all (``UnitTestsPassed``).

An incremental build judges only what its new data touches, so the seeds and rules the history
was last built in full with are kept too (``JudgedWith``): a build after either changed says so.
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import io
import json
import os
from importlib import metadata
from pathlib import Path

import retrylake
from retrylake.lakehouse import LANDING_FEEDS, Lakehouse

# The parts of the dbt project a build reads; target/, logs/ and the lakehouse are outputs.
PROJECT_INPUTS = (
    "dbt_project.yml",
    "packages.yml",
    "profiles",
    "models",
    "macros",
    "seeds",
    "tests/dbt",
    "analyses",
)
# retrylake's code that runs in a build: the runtime and the UDFs it registers on the session.
CODE_PACKAGES = ("retrylake", "spark_udfs")
# The tools that compile and run the unit tests (pinned in pyproject.toml; an upgrade reruns them).
TOOL_DISTRIBUTIONS = ("dbt-core", "dbt-spark", "pyspark")


def _files(folder: Path) -> list[Path]:
    """Every file under ``folder``, sorted. Symlinked folders are followed, as Spark reads
    through them (a feed folder is often a link to where an exporter writes; `Path.rglob` does
    not enter one), each real folder once, so a link back up the tree ends. A folder removed
    while it is listed is left out: the next check lists what replaced it."""
    if folder.is_file():
        return [folder]
    if not folder.is_dir():
        return []
    found = []
    listed = set()
    for directory, subdirectories, names in os.walk(folder, followlinks=True):
        real = os.path.realpath(directory)
        if real in listed:
            subdirectories.clear()
            continue
        listed.add(real)
        found += [path for name in names if (path := Path(directory, name)).is_file()]
    return sorted(found)


def _read_by_spark(name: str) -> bool:
    """Whether Spark lists a file or folder of this name: it skips names starting with "." or
    "_" (but not "_" with "=", a partition) and copies in progress ("._COPYING_"), keeping
    Parquet's "_metadata" files (Spark 4.0's HadoopFSUtils.shouldFilterOutPathName)."""
    skipped = (
        (name.startswith("_") and "=" not in name)
        or name.startswith(".")
        or name.endswith("._COPYING_")
    )
    return not skipped or name.startswith(("_common_metadata", "_metadata"))


def _landing_files(landing: Path) -> list[Path]:
    """The files a build reads from the landing: those under each feed's folder, less the names
    Spark skips, so that an exporter's hidden file, written or grown in place, starts no build
    (its rename into place does). Each feed's file pattern is left to Spark: a file it would
    not match only makes a build that finds nothing new."""
    found = []
    for feed in LANDING_FEEDS:
        folder = landing / feed
        found += [
            path
            for path in _files(folder)
            if all(_read_by_spark(part) for part in path.relative_to(folder).parts)
        ]
    return sorted(found)


def landing_bytes(landing: Path) -> int:
    """The size of what a build reads from the landing: its feeds' files, as Spark lists them."""
    total = 0
    for path in _landing_files(landing):
        with contextlib.suppress(FileNotFoundError):  # renamed or removed since it was listed
            total += path.stat().st_size
    return total


def _hash_contents(digest: hashlib._Hash, root: Path, paths: list[Path]) -> None:
    for path in paths:
        digest.update(str(path.relative_to(root)).encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())


def _hash_code(digest: hashlib._Hash, project_dir: Path) -> None:
    for name in PROJECT_INPUTS:
        _hash_contents(digest, project_dir, _files(project_dir / name))
    _hash_runtime(digest)


def _hash_runtime(digest: hashlib._Hash) -> None:
    for package in CODE_PACKAGES:
        _hash_package(digest, package)


def _hash_package(digest: hashlib._Hash, package: str) -> None:
    """The Python and SQL of one of retrylake's packages (CODE_PACKAGES)."""
    code_root = Path(retrylake.__file__).resolve().parents[1]
    sources = [path for path in _files(code_root / package) if path.suffix in (".py", ".sql")]
    _hash_contents(digest, code_root, sources)


def runtime_fingerprint() -> str:
    """A digest of what a running retrylake process loaded once and keeps: its Python and SQL
    (the runtime, the UDFs registered on the session) and the versions of the tools it runs.
    The dbt project is not part of it: every dbt command reads that again."""
    digest = hashlib.sha256()
    _hash_runtime(digest)
    for distribution in TOOL_DISTRIBUTIONS:
        digest.update(f"{distribution}=={metadata.version(distribution)}\0".encode())
    return digest.hexdigest()


def code_fingerprint(project_dir: Path) -> str:
    """A digest of what the dbt unit tests' outcome depends on: the dbt project (models, macros,
    seeds, the tests' fixtures), retrylake's code and the versions of the tools that run them."""
    digest = hashlib.sha256()
    _hash_code(digest, project_dir)
    for distribution in TOOL_DISTRIBUTIONS:
        digest.update(f"{distribution}=={metadata.version(distribution)}\0".encode())
    return digest.hexdigest()


def build_inputs_fingerprint(project_dir: Path, lakehouse: Lakehouse, command: list[str]) -> str:
    """A digest of everything a build with ``command`` reads; equal digests, equal marts."""
    digest = hashlib.sha256()
    digest.update(json.dumps(command).encode() + b"\0")
    digest.update(lakehouse.landing_location.encode() + b"\0")
    _hash_code(digest, project_dir)
    for path in _landing_files(lakehouse.landing):
        try:
            status = path.stat()
        except FileNotFoundError:
            continue  # renamed or removed since it was listed; the next check sees where it went
        relative = str(path.relative_to(lakehouse.landing))
        digest.update(f"{relative}\0{status.st_size}\0{status.st_mtime_ns}\0".encode())
    return digest.hexdigest()


def _recorded(path: Path, key: str) -> str | None:
    """The fingerprint a record file holds under ``key``; None when missing or unreadable."""
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text())[key]
    except (ValueError, KeyError):
        return None


class LastBuild:
    """The fingerprint of the last build that succeeded, kept in the lakehouse.

    It is removed before any build or dbt command starts, so a build that fails, is killed, or a
    dbt command that changes tables some other way, never leaves the lakehouse looking up to date.
    """

    def __init__(self, lakehouse: Lakehouse) -> None:
        self.path = lakehouse.root / "last-build.json"
        self.lakehouse = lakehouse

    def matches(self, fingerprint: str) -> bool:
        if self.lakehouse.landing_url is not None:
            return False  # a landing on shared storage cannot be listed from Python
        return _recorded(self.path, "fingerprint") == fingerprint

    def forget(self) -> None:
        self.path.unlink(missing_ok=True)

    def record(self, fingerprint: str) -> None:
        if self.lakehouse.landing_url is None:
            self.path.write_text(json.dumps({"fingerprint": fingerprint}) + "\n")


class UnitTestsPassed:
    """The code fingerprint of the last build that ran every dbt unit test and succeeded, kept in
    the lakehouse. Unlike ``LastBuild`` it outlives commands that change tables: the unit tests
    read only their fixtures, so no table can change their outcome."""

    def __init__(self, lakehouse: Lakehouse) -> None:
        self.path = lakehouse.root / "unit-tests-passed.json"

    def on(self, code: str) -> bool:
        return _recorded(self.path, "code") == code

    def record(self, code: str) -> None:
        self.path.write_text(json.dumps({"code": code}) + "\n")


# What the ledger's past judgements depend on besides the landing: the configuration seeds and
# the rules' code, its SQL (descriptions and the what-if's own models and seeds judge nothing in
# the ledger).
LEDGER_SEEDS = ("seeds/broker_delay_levels.csv", "seeds/consumer_groups.csv")
RULES_CODE = ("models", "macros")
RULES = "the rules (retrylake's models, macros, dbt_project.yml or UDFs)"
# what a lakehouse built before the record existed was judged with
UNRECORDED = "unrecorded"


# the key under which a seed's digests keep its header row
HEADER = "<header>"


def _seed_row_digests(path: Path) -> dict[str, str]:
    """A digest of each row of a seed, by its first field (the group or the cluster), and of its
    header; none for a missing file. The build's seed check has refused a seed listing a key
    twice; text that is not UTF-8 is read with replacements rather than failing here."""
    if not path.is_file():
        return {}
    rows = list(csv.reader(io.StringIO(path.read_bytes().decode("utf-8-sig", "replace"))))
    digests = {}
    for number, row in enumerate(rows):
        key = HEADER if number == 0 else (row[0] if row else "")
        digests[key] = hashlib.sha256("\0".join(row).encode()).hexdigest()
    return digests


def judgement_inputs(project_dir: Path) -> dict[str, str | dict[str, str]]:
    """Each ledger seed's row digests (`_seed_row_digests`), by the seed's path in the project,
    and one digest of the rules' code."""
    inputs: dict[str, str | dict[str, str]] = {
        name: _seed_row_digests(project_dir / name) for name in LEDGER_SEEDS
    }
    digest = hashlib.sha256()
    _hash_contents(digest, project_dir, _files(project_dir / "dbt_project.yml"))
    for name in RULES_CODE:
        paths = [
            path
            for path in _files(project_dir / name)
            if path.suffix == ".sql" and "whatif" not in path.relative_to(project_dir).parts
        ]
        _hash_contents(digest, project_dir, paths)
    _hash_package(digest, "spark_udfs")
    inputs[RULES] = digest.hexdigest()
    return inputs


class JudgedWith:
    """The seeds and rules the lakehouse's history was last built in full with, kept in the
    lakehouse. An incremental build judges only the lifecycles its new data touches, so after a
    change to either the marts mix old and new judgements (docs/incremental.md) until a full
    build; `changed` names what differs, for each build that runs to say so.

    Taken when the build starts: a lakehouse's first build is a full one, and is recorded
    whatever it was asked; one whose warehouse holds tables but no record was built before the
    record existed, so what it was judged with is unknown until a full build."""

    def __init__(self, lakehouse: Lakehouse) -> None:
        self.path = lakehouse.root / "judged-with.json"
        self.recorded = self._read()
        warehouse = lakehouse.warehouse
        self.built_unrecorded = (
            self.recorded is None and warehouse.is_dir() and any(warehouse.iterdir())
        )

    def _read(self) -> dict | None:
        if not self.path.is_file():
            return None
        try:
            recorded = json.loads(self.path.read_text())
        except ValueError:
            return None
        return recorded if isinstance(recorded, dict) else None

    def changed(self, inputs: dict) -> list[str]:
        """What in ``inputs`` differs from the record, a seed with the keys of its rows that
        changed, came or went: none without a record on a new lakehouse, ``[UNRECORDED]``
        without one on a built lakehouse."""
        if self.recorded is None:
            return [UNRECORDED] if self.built_unrecorded else []
        changed = []
        for name, digests in inputs.items():
            was = self.recorded.get(name)
            if was == digests:
                continue
            if not (isinstance(was, dict) and isinstance(digests, dict)) or not (was and digests):
                changed.append(name)  # the seed came or went
                continue
            if was.get(HEADER) != digests.get(HEADER):
                changed.append(f"{name} (its columns)")
                continue
            keys = sorted(key for key in {*was, *digests} if was.get(key) != digests.get(key))
            shown = ", ".join(keys[:5]) + (f" and {len(keys) - 5} more" if len(keys) > 5 else "")
            changed.append(f"{name} ({shown})")
        return changed

    def after_build(self, inputs: dict, *, full: bool) -> None:
        """Record ``inputs`` after a build of the whole ledger, seeds included, that succeeded:
        a full one, or a lakehouse's first."""
        if full or (self.recorded is None and not self.built_unrecorded):
            self.path.write_text(json.dumps(inputs, indent=1, sort_keys=True) + "\n")
            self.recorded = inputs
            self.built_unrecorded = False


def judged_with_other_warning(changed: list[str]) -> str:
    """The warning of an incremental build after ``changed`` (JudgedWith.changed) changed."""
    if changed == [UNRECORDED]:
        what = (
            "this lakehouse was built before retrylake recorded the seeds and rules its "
            "history is judged with"
        )
    else:
        what = f"{' and '.join(changed)} changed since this lakehouse was last built in full"
    return (
        f"retrylake: {what}; lifecycles built before keep what they were judged with until "
        "`retrylake build --full-refresh` judges the whole history again."
    )
