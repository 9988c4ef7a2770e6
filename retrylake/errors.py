"""Errors the CLI reports in one line, with what to do next."""

from __future__ import annotations


class ConfigError(ValueError):
    """A seed file is malformed; nothing was built. The message names the file, row and value."""


class UsageError(ValueError):
    """A command-line option or environment variable has a value retrylake cannot use."""


def user_facing(error: BaseException) -> str | None:
    """The one-line message for an expected failure, or None for a bug (shown as a traceback)."""
    from retrylake.dbt_runner import DbtFailedError
    from retrylake.server import PortInUseError

    if isinstance(error, ConfigError):
        return f"configuration error: {error}. Fix the seed and run again; nothing was changed."
    if isinstance(error, DbtFailedError):
        return f"{error}. The dbt output above names the failing node."
    if isinstance(error, PortInUseError):
        return str(error)
    if isinstance(error, UsageError):
        return str(error)
    return None
