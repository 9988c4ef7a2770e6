"""The dbt layers flow one way: sources and seeds -> staging -> intermediate -> marts.

Read from the model files themselves (every `ref()` and `source()`), so a model that reads
backwards fails here in a second, without starting dbt or Spark.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

PROJECT_DIR = Path(__file__).resolve().parents[2]
LAYERS = ("staging", "intermediate", "marts")
REF = re.compile(r"""\bref\(\s*['"]([\w]+)['"]\s*\)""")
SOURCE = re.compile(r"""\bsource\(\s*['"]""")


def _models() -> dict[str, tuple[str, str]]:
    """Model name -> (layer, SQL text)."""
    models = {}
    for path in sorted((PROJECT_DIR / "models").rglob("*.sql")):
        layer = path.relative_to(PROJECT_DIR / "models").parts[0]
        models[path.stem] = (layer, path.read_text(encoding="utf-8"))
    return models


def layer_violations(models: dict[str, tuple[str, str]], seeds: set[str]) -> list[str]:
    """Every read that runs against the flow, as 'reader -> read (why)'."""
    found = []
    for name, (layer, sql) in models.items():
        if SOURCE.search(sql) and layer != "staging":
            found.append(f"{name} -> source() (only staging reads sources)")
        for read in REF.findall(sql):
            if read in seeds:
                if layer != "staging":
                    found.append(f"{name} -> seed {read} (only staging reads seeds)")
                continue
            read_layer = models[read][0]
            if LAYERS.index(read_layer) > LAYERS.index(layer):
                found.append(f"{name} -> {read} ({layer} reads {read_layer})")
    return found


def test_every_model_is_in_a_layer():
    assert {layer for layer, _ in _models().values()} == set(LAYERS)


def test_layers_flow_one_way():
    seeds = {path.stem for path in (PROJECT_DIR / "seeds").glob("*.csv")}
    assert layer_violations(_models(), seeds) == []


@pytest.mark.parametrize(
    ("models", "expected"),
    [
        (
            {"int_x": ("intermediate", "select * from {{ ref('fact') }}"), "fact": ("marts", "")},
            ["int_x -> fact (intermediate reads marts)"],
        ),
        (
            {"fact": ("marts", 'select * from {{ ref("consumer_groups") }}')},
            ["fact -> seed consumer_groups (only staging reads seeds)"],
        ),
        (
            {"int_y": ("intermediate", "select * from {{ source('landing', 'trace_files') }}")},
            ["int_y -> source() (only staging reads sources)"],
        ),
    ],
)
def test_a_read_against_the_flow_is_named(models, expected):
    assert layer_violations(models, {"consumer_groups"}) == expected
