"""Fail when the project's modules import in a circle, or a lower layer imports a higher one.

Every import counts, including those inside functions: a function-local import hides a cycle
from Python's loader, not from the reader. Run by `make lint`; exits 1 naming each problem.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

PACKAGES = ("retrylake", "spark_udfs")

# Lower numbers are lower layers; a module may import its own layer and those below it.
LAYERS = {
    "spark_udfs": 0,
    "retrylake.errors": 0,
    "retrylake.project": 1,
    "retrylake.lakehouse": 1,
    "retrylake.config_check": 1,
    "retrylake.build_inputs": 2,
    "retrylake.sim": 2,
    "retrylake.analyst": 2,
    "retrylake.spark": 3,
    "retrylake.dbt_runner": 3,
    "retrylake.server": 4,
    "retrylake.commands": 4,
    "retrylake.bench": 5,
    "retrylake.cli": 6,
    "retrylake.__main__": 7,
}

# Modules that may import only these project prefixes: errors must be importable from
# anywhere, and the UDFs are shipped to Spark executors where retrylake is not installed.
ONLY = {"retrylake.errors": (), "spark_udfs": ("spark_udfs",)}


def module_names(root: Path, packages: tuple[str, ...] = PACKAGES) -> dict[str, Path]:
    modules = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join(parts)] = path
    return modules


def imports_of(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The project modules ``name`` imports anywhere in its file."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            # `from pkg import mod` imports the module pkg.mod when there is one
            targets = [
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                for alias in node.names
            ]
        else:
            continue
        found.update(target for target in targets if target in modules and target != name)
    return found


def _layer(name: str, layers: dict[str, int]) -> int | None:
    matches = [prefix for prefix in layers if name == prefix or name.startswith(prefix + ".")]
    return layers[max(matches, key=len)] if matches else None


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as a path that ends where it starts, or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for target in sorted(graph.get(node, ())):
            if state.get(target) == 1:
                return [*path[path.index(target) :], target]
            if target not in state and (cycle := visit(target)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def problems(
    root: Path,
    packages: tuple[str, ...] = PACKAGES,
    layers: dict[str, int] = LAYERS,
    only: dict[str, tuple[str, ...]] = ONLY,
) -> list[str]:
    modules = module_names(root, packages)
    graph = {name: imports_of(name, path, modules) for name, path in modules.items()}
    found = []
    if cycle := find_cycle(graph):
        found.append("import cycle: " + " -> ".join(cycle))
    for name, targets in sorted(graph.items()):
        own = _layer(name, layers)
        allowed = next((v for k, v in only.items() if name == k or name.startswith(k + ".")), None)
        for target in sorted(targets):
            if allowed is not None and not target.startswith(allowed):
                found.append(f"{name} imports {target}, but may import only {allowed or 'nothing'}")
            theirs = _layer(target, layers)
            if own is not None and theirs is not None and theirs > own:
                found.append(f"{name} (layer {own}) imports the higher layer {target} ({theirs})")
    return found


def main() -> int:
    found = problems(Path(__file__).resolve().parents[1])
    for problem in found:
        print(f"check_imports: {problem}", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
