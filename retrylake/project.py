"""Settings the Python side shares with the dbt models, read from the one place both use: the
`vars:` of dbt_project.yml (the overdue grace and RocketMQ's consumer-group defaults)."""

from __future__ import annotations

import functools
from pathlib import Path

import retrylake
from retrylake.errors import ProjectError

# The project folder next to the package: the repository, or an editable install of it.
DEFAULT_PROJECT_DIR = Path(retrylake.__file__).resolve().parents[1]


def project_file(project_dir: Path) -> Path:
    """The project's dbt_project.yml; a folder without one is no dbt project."""
    path = project_dir / "dbt_project.yml"
    if not path.is_file():
        raise ProjectError(
            f"{path} not found; retrylake reads its settings from the dbt project's "
            "dbt_project.yml (give the project folder with --project-dir)"
        )
    return path


def vars_read_by_models(document: dict) -> tuple[dict, dict]:
    """The vars the project's models read, from a dbt_project.yml ``document``: the global ones
    overridden by those scoped to the project (`vars: {retrylake: {...}}`), as dbt merges them;
    and the scoped ones alone."""
    file_vars = document.get("vars") or {}
    scoped = file_vars.get(document.get("name"))
    scoped = scoped if isinstance(scoped, dict) else {}
    return {**file_vars, **scoped}, scoped


@functools.cache
def project_vars(project_dir: Path = DEFAULT_PROJECT_DIR) -> dict:
    import yaml

    path = project_file(project_dir)
    with path.open(encoding="utf-8") as handle:
        return vars_read_by_models(yaml.safe_load(handle) or {})[0]


def project_var(name: str, project_dir: Path):
    values = project_vars(project_dir)
    if name not in values:
        raise ProjectError(f"{project_dir / 'dbt_project.yml'} has no var {name!r}")
    return values[name]


def retry_overdue_grace_ms(project_dir: Path = DEFAULT_PROJECT_DIR) -> int:
    """A retry due this long before the watermark and never seen is RETRY_OVERDUE."""
    return int(project_var("retry_overdue_grace_seconds", project_dir)) * 1000


def consumer_group_defaults(project_dir: Path = DEFAULT_PROJECT_DIR) -> dict[str, object]:
    """RocketMQ's settings for an empty seed cell or a group missing from the seed."""
    return dict(project_var("consumer_group_defaults", project_dir))


def default_broker_version(project_dir: Path = DEFAULT_PROJECT_DIR) -> str:
    """The broker version of a cluster whose broker_delay_levels.csv row names none."""
    return str(project_var("default_broker_version", project_dir))
