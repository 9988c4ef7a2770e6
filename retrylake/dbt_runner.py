"""Run dbt in-process on the embedded session, so models can call the registered Python UDFs."""

from __future__ import annotations

import json
import os
from pathlib import Path

from retrylake.build_inputs import code_fingerprint
from retrylake.errors import DbtFailedError
from retrylake.lakehouse import Lakehouse
from spark_udfs.snapshots import PUBLISHED_FOLDER, current_build


def dbt_args(command: list[str], project_dir: Path, lakehouse: Lakehouse) -> list[str]:
    """Complete a dbt command line with the project, profile and lakehouse-local paths."""
    args = list(command)
    defaults = {
        "--project-dir": str(project_dir),
        "--profiles-dir": str(project_dir / "profiles"),
        "--target-path": str(lakehouse.dbt_target),
        "--log-path": str(lakehouse.dbt_logs),
    }
    for flag, value in defaults.items():
        if flag not in args:
            args += [flag, value]
    if "--vars" not in args:
        # checks_code: data tests read only what changed since they passed under this code
        # (macros/testing/checked_files.sql); dbt run with other --vars reads everything.
        checks_code = code_fingerprint(project_dir)
        args += [
            "--vars",
            json.dumps({"landing_path": lakehouse.landing_location, "checks_code": checks_code}),
        ]
    return args


def run_dbt(command: list[str], project_dir: Path, lakehouse: Lakehouse) -> None:
    """Invoke dbt with ``command`` (e.g. ``["build"]``); raise DbtFailedError when it fails."""
    os.environ.setdefault("DBT_SEND_ANONYMOUS_USAGE_STATS", "false")
    from dbt.cli.main import dbtRunner

    result = dbtRunner().invoke(dbt_args(command, project_dir, lakehouse))
    if not result.success:
        reason = f": {result.exception}" if result.exception else ""
        raise DbtFailedError(f"dbt {command[0]} failed{reason}{published_note(lakehouse)}")


def published_note(lakehouse: Lakehouse) -> str:
    """What readers see after a failed run: the publish hook leaves the last published build."""
    build = current_build(lakehouse.warehouse / PUBLISHED_FOLDER)
    return f". Readers still see build {build}" if build else ". Nothing is published yet"
