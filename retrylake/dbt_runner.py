"""Run dbt in-process on the embedded session, so models can call the registered Python UDFs."""

from __future__ import annotations

import os
from pathlib import Path

import yaml

from retrylake.build_inputs import code_fingerprint
from retrylake.errors import DbtFailedError, UsageError
from retrylake.lakehouse import Lakehouse
from spark_udfs.snapshots import PUBLISHED_FOLDER, current_build


def dbt_args(command: list[str], project_dir: Path, lakehouse: Lakehouse) -> list[str]:
    """Complete a dbt command line with the project, profile and lakehouse-local paths, and the
    lakehouse's landing among the ``--vars`` (a user's own are kept beside it)."""
    args, user_vars = without_vars(command)
    defaults = {
        "--project-dir": str(project_dir),
        "--profiles-dir": str(project_dir / "profiles"),
        "--target-path": str(lakehouse.dbt_target),
        "--log-path": str(lakehouse.dbt_logs),
    }
    for flag, value in defaults.items():
        if flag not in args and not any(arg.startswith(flag + "=") for arg in args):
            args += [flag, value]
    # checks_code: data tests read only what changed since they passed under this code
    # (macros/testing/checked_files.sql); dbt run with other --vars reads everything.
    if user_vars is None:
        user_vars = {"checks_code": code_fingerprint(project_dir)}
    # YAML, as dbt reads --vars: a user's dates and numbers keep their types
    merged = {"landing_path": lakehouse.landing_location, **user_vars}
    return [*args, "--vars", yaml.safe_dump(merged, default_flow_style=True, width=2**31).strip()]


def without_vars(command: list[str]) -> tuple[list[str], dict | None]:
    """The command without its ``--vars`` option, and that option's variables (None: none)."""
    args: list[str] = []
    given: list[str] = []
    rest = iter(command)
    for arg in rest:
        if arg == "--vars":
            value = next(rest, None)
            if value is None:
                raise UsageError("--vars needs a value, e.g. --vars '{max_days: 3}'")
            given.append(value)
        elif arg.startswith("--vars="):
            given.append(arg.removeprefix("--vars="))
        else:
            args.append(arg)
    if not given:
        return args, None
    if len(given) > 1:
        raise UsageError("give --vars once, with every variable in it")
    from dbt.clients.yaml_helper import load_yaml_text  # as dbt reads --vars
    from dbt_common.exceptions import DbtValidationError

    try:
        variables = load_yaml_text(given[0])
    except DbtValidationError as error:
        raise UsageError(f"--vars {given[0]!r} is not YAML: {error}") from None
    if not isinstance(variables, dict):
        raise UsageError(f"--vars {given[0]!r} is not a YAML mapping, e.g. '{{max_days: 3}}'")
    if "landing_path" in variables:
        raise UsageError(
            "--vars names landing_path: the landing is retrylake's --landing (or "
            "$RETRYLAKE_LANDING), which the lakehouse records"
        )
    return args, variables


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
