#!/usr/bin/env bash
# Creates .venv with the pinned dependencies. Re-runs are instant unless pyproject.toml changed.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3.11}
command -v "$PYTHON" >/dev/null 2>&1 || PYTHON=python3
"$PYTHON" - <<'PY'
import sys
if sys.version_info[:2] != (3, 11):
    sys.exit(f"retrylake needs Python 3.11, found {sys.version.split()[0]}")
PY
command -v java >/dev/null 2>&1 || { echo "retrylake needs Java 17 (java not found on PATH)" >&2; exit 1; }

stamp=".venv/.installed-$(sha256sum pyproject.toml | cut -c1-16)"
if [ -f "$stamp" ]; then
  exit 0
fi
echo "Setting up .venv (first run downloads pyspark and dbt; a few minutes)..."
[ -d .venv ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install --quiet -e ".[dev]"
rm -f .venv/.installed-*
touch "$stamp"
