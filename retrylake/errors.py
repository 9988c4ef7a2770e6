"""The failures a user can act on. The CLI prints each as one line, `retrylake: ...`, and exits
with its code; anything else is a bug. This module imports nothing of the project, so every
layer can raise these."""

from __future__ import annotations


class RetrylakeError(Exception):
    """A failure with a message that says what to do; ``exit_code`` is the process's status."""

    exit_code = 1

    def message(self) -> str:
        return str(self)


class UsageError(RetrylakeError, ValueError):
    """A command-line option, environment variable or query retrylake cannot use."""

    exit_code = 2


class ConfigError(RetrylakeError, ValueError):
    """A seed or var is malformed; nothing was built. The message names the file, row (or line) and
    value, or `--vars` and the value."""

    def message(self) -> str:
        return f"configuration error: {self}. Fix it and run again; nothing was changed."


class ProjectError(RetrylakeError):
    """The dbt project (its dbt_project.yml) is missing or lacks a setting retrylake reads."""


class LakehouseBusyError(RetrylakeError):
    """Another retrylake process holds the lakehouse (the Derby metastore admits one)."""

    exit_code = 3


class LandingError(RetrylakeError):
    """The landing folder does not exist, or is not the one the lakehouse was built from."""


class NoMartsError(RetrylakeError, FileNotFoundError):
    """A reader found no built marts in the lakehouse."""


class RuntimeChangedError(RetrylakeError):
    """retrylake's code changed under a process that keeps running (`retrylake build --watch`)."""


class DbtFailedError(RetrylakeError):
    """dbt reported a failure; its own output already shows which node and why."""

    def message(self) -> str:
        return f"{self}. The dbt output above names the failing node."


class PortInUseError(RetrylakeError):
    """The requested address is taken; nothing was started."""
