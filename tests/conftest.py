"""One SparkSession per pytest session, on one lakehouse, shared by every test that needs Spark.

The Hive metastore of a session is fixed when it starts, so tests that need a scenario of their
own use another landing folder and a full-refresh build in this same lakehouse.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from retrylake.lakehouse import Lakehouse

PROJECT_DIR = Path(__file__).resolve().parents[1]


def rule_macros():
    """The macros of macros/rules, rendered with plain Jinja: what model and test files call,
    for tests that run them on the session's Spark."""
    from jinja2 import Environment

    rules = PROJECT_DIR / "macros" / "rules"
    text = "\n".join(path.read_text() for path in sorted(rules.glob("*.sql")))
    return Environment().from_string(text).module


os.environ.setdefault("DBT_SEND_ANONYMOUS_USAGE_STATS", "false")

# The session starts with a JVM option as a user's --conf would give it, a harmless property:
# tests/unit/test_spark_session.py checks that it reaches the JVM beside retrylake's own.
USERS_JVM_OPTION = "-Dretrylake.suite=true"


# The most expensive modules first, so that `pytest -n 2 --dist loadfile` does not finish with
# one worker idle while the other runs a long module alone. xdist keeps this order only with
# --no-loadscope-reorder (pyproject.toml's addopts); by default it orders the modules by their
# number of tests. Worker-seconds per module, 2026-11-27: the incremental law with the crash
# test about 650, serve 627, sample 478, generated 291, cli 290, bad input 87.
SLOWEST_FIRST = (
    "test_incremental_law.py",
    "test_serve.py",
    "test_sample_build.py",
    "test_generated_build.py",
    "test_cli.py",
    "test_bad_input.py",
    "test_crash_safety.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    def cost_rank(item: pytest.Item) -> int:
        name = item.path.name
        return SLOWEST_FIRST.index(name) if name in SLOWEST_FIRST else len(SLOWEST_FIRST)

    items.sort(key=cost_rank)  # stable: tests keep their order within a module


@pytest.fixture(scope="session")
def lakehouse(tmp_path_factory: pytest.TempPathFactory) -> Lakehouse:
    root = tmp_path_factory.mktemp("lakehouse")
    return Lakehouse(root=root, landing=root / "landing")


@pytest.fixture(scope="session")
def spark(lakehouse: Lakehouse):
    from retrylake.spark import start_session

    session = start_session(
        lakehouse, extra_conf={"spark.driver.extraJavaOptions": USERS_JVM_OPTION}
    )
    yield session
    session.stop()
