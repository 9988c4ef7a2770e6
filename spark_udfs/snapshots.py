"""Published builds: the marts' files as a build left them, which readers see until the next one.

Write, audit, publish (docs/publishing.md): dbt writes the marts in the unpublished schema, where
readers do not look, and runs the data tests; only then does `publish_marts` (an on-run-end
macro) publish the build, calling the two functions below through Spark UDFs:
1. `snapshot_marts` hard-links each mart's committed parquet files into
   `warehouse/_published/<build>/<mart>/`, in the same partition folders. Spark's partition
   overwrite later deletes the table's old files, but the links keep them: one system call per
   file, no copy. The macro then points the `retrylake.<mart>` views at the new folders.
2. `point_readers_at` writes the build's manifest (`_published/manifests/<build>.json`, which
   the `retrylake_meta.published_builds` view lists) and replaces `_published/current.json`, which
   DuckDB readers (`retrylake query`, report, DLQ export) follow, with one rename: every mart
   switches for them at once. It then prunes all but the newest kept builds.

Pure Python, no Spark: the UDFs run in Spark's Python workers, which get this package by value.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
from pathlib import Path

PUBLISHED_FOLDER = "_published"  # under the warehouse; `_` keeps it out of Spark's listings
MANIFESTS = "manifests"  # one `<build>.json` per kept build; a `_` folder Spark would not read
CURRENT = "current.json"


def committed_files(table: Path) -> list[Path]:
    """The committed parquet files of a table folder, relative to it: Spark's in-progress
    folders (`_temporary`, `.spark-staging-*`) and marker files start with `_` or `.`."""
    return [
        path.relative_to(table)
        for path in sorted(table.rglob("*.parquet"))
        if not any(part.startswith(("_", ".")) for part in path.relative_to(table).parts)
    ]


def link_snapshot(table: Path, snapshot: Path) -> int:
    """Hard-link the committed files of ``table`` into ``snapshot`` (a new folder), keeping
    their partition folders; return how many. A folder left by an interrupted publish of the
    same build is replaced."""
    if snapshot.exists():
        shutil.rmtree(snapshot)
    files = committed_files(table) if table.is_dir() else []
    for relative in files:
        target = snapshot / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        os.link(table / relative, target)
    snapshot.mkdir(parents=True, exist_ok=True)  # an empty mart is an empty folder
    return len(files)


def on_local_disk(location: str) -> bool:
    """Whether a warehouse or table location is a path on this machine's disk."""
    return "://" not in location or location.startswith("file:")


def table_folder(location: str) -> Path:
    """A table's folder from its metastore location; only a local warehouse can be linked."""
    if not on_local_disk(location):
        raise ValueError(
            f"publishing hard-links the marts' files, so it needs a local warehouse, not {location}"
        )
    return Path(location.removeprefix("file:").removeprefix("//"))


def snapshot_marts(folder: Path, build: str, locations: dict[str, str]) -> dict[str, int]:
    """Snapshot every mart (name -> table location) for ``build``; return name -> files."""
    return {
        mart: link_snapshot(table_folder(location), folder / build / mart)
        for mart, location in sorted(locations.items())
    }


def point_readers_at(folder: Path, manifest: dict, kept: int) -> list[str]:
    """Write the manifest of ``manifest["build"]`` and make it the build DuckDB readers see,
    through a temporary file and a rename that readers see whole or not at all; then remove
    all but the ``kept`` newest published builds. Returns the builds removed."""
    build = manifest["build"]
    text = json.dumps(manifest, sort_keys=True)  # one line: Spark reads the manifests as JSON
    (folder / MANIFESTS).mkdir(exist_ok=True)
    # readers list manifests/*.json while builds publish: each file appears whole, by a rename
    # from a name the listing skips
    for final in (folder / MANIFESTS / f"{build}.json", folder / CURRENT):
        staged = final.with_name(f".{final.name}.{build}.tmp")
        staged.write_text(text + "\n")
        os.replace(staged, final)
    return prune(folder, keep=max(kept, 1), current=build)


def published_builds(folder: Path) -> list[dict]:
    """The manifests of the builds still kept, oldest published first."""
    manifests = []
    for path in (folder / MANIFESTS).glob("*.json"):
        try:
            manifests.append(json.loads(path.read_text()))
        except (OSError, ValueError):
            continue  # pruned while listed
    return sorted(manifests, key=lambda manifest: (manifest["published_at"], manifest["build"]))


def prune(folder: Path, keep: int, current: str) -> list[str]:
    """Remove every build but the ``keep`` newest published ones and ``current``: the manifest
    first, so readers stop listing it, then its folder. A folder without a manifest is a
    publish that never finished."""
    kept = {manifest["build"] for manifest in published_builds(folder)[-keep:]} | {current}
    for manifest in sorted((folder / MANIFESTS).glob("*.json")):
        if manifest.stem not in kept:
            manifest.unlink(missing_ok=True)
    removed = []
    for path in sorted(folder.iterdir()):
        if path.is_dir() and path.name not in kept | {MANIFESTS}:
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path.name)
    return removed


def current_build(folder: Path) -> str | None:
    """The build DuckDB readers see now; None before the first publish."""
    current = folder / CURRENT
    return json.loads(current.read_text())["build"] if current.exists() else None


def _manifest(folder: Path, build: str | None) -> dict | None:
    """The manifest of the current build, or of ``build``; None before the first publish."""
    manifest = folder / (f"{MANIFESTS}/{build}.json" if build else CURRENT)
    return json.loads(manifest.read_text()) if manifest.exists() else None


def published_marts(folder: Path, build: str | None = None) -> dict[str, Path]:
    """Mart -> snapshot folder of the current build, or of ``build``; empty if none."""
    published = _manifest(folder, build)
    if published is None:
        return {}
    return {mart: folder / published["build"] / mart for mart in published["marts"]}


def published_columns(folder: Path, build: str | None = None) -> dict[str, list[list[str]]]:
    """Mart -> its [column, Spark type] pairs, as the current build (or ``build``) published
    them: what a reader needs for a mart of no rows, whose snapshot has no file to read them
    from. Empty for a build published before the manifests kept them."""
    published = _manifest(folder, build)
    return dict(published.get("columns") or {}) if published else {}


def build_as_of(folder: Path, when: str) -> str | None:
    """The build named ``when``, else the last one published at or before the UTC time
    ``when`` (ISO 8601); None when no kept build qualifies."""
    builds = published_builds(folder)
    if any(manifest["build"] == when for manifest in builds):
        return when
    instant = dt.datetime.fromisoformat(when.replace("Z", "+00:00"))
    if instant.tzinfo is None:
        instant = instant.replace(tzinfo=dt.UTC)
    earlier = [
        manifest["build"]
        for manifest in builds
        if dt.datetime.fromisoformat(manifest["published_at"]) <= instant
    ]
    return earlier[-1] if earlier else None
