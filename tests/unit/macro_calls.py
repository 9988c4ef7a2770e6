"""One project macro called alone, rendered with plain Jinja as dbt renders it, its queries run
on the session's Spark, and the macros it calls given their values by the test."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

from jinja2 import Environment


class Table:
    """What dbt's run_query returns (an agate table), as far as the macros read it."""

    def __init__(self, rows) -> None:
        self.rows = [tuple(row) for row in rows]
        self.columns = [
            SimpleNamespace(values=lambda i=i: [row[i] for row in self.rows])
            for i in range(len(rows[0]) if rows else 0)
        ]


class CompilerError(Exception):
    pass


class _Return(Exception):  # dbt's `return` raises, and its macro wrapper catches it
    def __init__(self, value) -> None:
        self.value = value


def _raise_return(value) -> None:
    raise _Return(value)


def _raise_compiler_error(message: str) -> None:
    raise CompilerError(message)


def call_macro(spark, path: Path, macro: str, given: dict, *args):
    """What ``macro`` of the file ``path`` returns for ``args``; ``given`` names the values of
    the other macros and dbt globals it uses (run_query, exceptions and return are given)."""
    text = path.read_text()
    found = re.search(r"{% macro " + macro + r"\(.*?{% endmacro %}", text, re.DOTALL)
    environment = Environment(extensions=["jinja2.ext.do"])
    environment.globals.update(
        run_query=lambda sql: Table(spark.sql(sql).collect()),
        exceptions=SimpleNamespace(raise_compiler_error=_raise_compiler_error),
        **{"return": _raise_return},
        **given,
    )
    try:
        getattr(environment.from_string(found.group(0)).module, macro)(*args)
    except _Return as returned:
        return returned.value
    raise AssertionError(f"{macro} returned nothing")
