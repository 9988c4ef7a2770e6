"""One history's measurements in a process of its own: a process has one SparkSession and a
lakehouse one Derby metastore. `retrylake bench` runs this; it is not a user command."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from retrylake.bench.measure import run_phase


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m retrylake.bench")
    parser.add_argument("phase", choices=["small", "large"])
    parser.add_argument("--dir", required=True, help="the bench working folder")
    parser.add_argument("--data", required=True, help="the generated history to build")
    parser.add_argument("--project-dir", default=".")
    parser.add_argument("--skip-tests", action="store_true")
    args = parser.parse_args()
    result = run_phase(
        args.phase,
        Path(args.data),
        Path(args.dir).resolve(),
        Path(args.project_dir).resolve(),
        tests=not args.skip_tests,
    )
    print(json.dumps(result))


main()
