"""`make lint`'s import check: it names a cycle, even one hidden in a function, and a lower layer
importing a higher one."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from tests.conftest import PROJECT_DIR

spec = importlib.util.spec_from_file_location(
    "check_imports", PROJECT_DIR / "scripts" / "check_imports.py"
)
check_imports = importlib.util.module_from_spec(spec)
spec.loader.exec_module(check_imports)


def _package(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_a_cycle_through_a_function_local_import_is_named(tmp_path: Path):
    root = _package(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/low.py": "def f():\n    from pkg import high\n",
            "pkg/high.py": "from pkg.low import f\n",
        },
    )
    found = check_imports.problems(root, ("pkg",), layers={}, only={})
    assert found == ["import cycle: pkg.high -> pkg.low -> pkg.high"]


def test_relative_imports_and_layers(tmp_path: Path):
    root = _package(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/errors.py": "from .cli import main\n",
            "pkg/cli.py": "",
        },
    )
    found = check_imports.problems(
        root, ("pkg",), layers={"pkg.errors": 0, "pkg.cli": 1}, only={"pkg.errors": ()}
    )
    assert found == [
        "pkg.errors imports pkg.cli, but may import only nothing",
        "pkg.errors (layer 0) imports the higher layer pkg.cli (1)",
    ]


def test_the_project_itself_is_clean():
    assert check_imports.problems(PROJECT_DIR) == []
