"""The `retrylake` command line."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from retrylake.lakehouse import Lakehouse, LakehouseBusyError


def _add_location_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--project-dir",
        default=".",
        help="the dbt project to run (default: the current directory, as with dbt)",
    )
    parser.add_argument(
        "--lakehouse", help="lakehouse folder (default: $RETRYLAKE_LAKEHOUSE or ./lakehouse)"
    )
    parser.add_argument(
        "--landing", help="landing zone (default: $RETRYLAKE_LANDING or <lakehouse>/landing)"
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="retrylake",
        description="Build a ledger of RocketMQ retries and dead letters from trace data.",
    )
    commands = parser.add_subparsers(dest="command", required=True)

    build = commands.add_parser("build", help="run `dbt build` on the embedded Spark")
    _add_location_args(build)
    build.add_argument("--full-refresh", action="store_true", help="rebuild every table")
    build.add_argument("--select", nargs="+", help="dbt node selection")

    dbt = commands.add_parser("dbt", help="run any dbt command: retrylake dbt -- ARGS")
    _add_location_args(dbt)
    dbt.add_argument("dbt_args", nargs=argparse.REMAINDER, help="arguments for dbt")

    demo = commands.add_parser("demo", help="build a sample landing set and print a summary")
    _add_location_args(demo)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    lakehouse = Lakehouse.resolve(args.lakehouse, args.landing)
    project_dir = Path(args.project_dir).resolve()
    try:
        if args.command == "build":
            from retrylake.commands import build

            build(project_dir, lakehouse, full_refresh=args.full_refresh, select=args.select)
        elif args.command == "dbt":
            from retrylake.commands import dbt

            dbt_args = args.dbt_args[1:] if args.dbt_args[:1] == ["--"] else args.dbt_args
            if not dbt_args:
                print(
                    "retrylake dbt: give a dbt command, e.g. retrylake dbt -- test", file=sys.stderr
                )
                return 2
            dbt(project_dir, lakehouse, dbt_args)
        elif args.command == "demo":
            from retrylake.commands import demo

            demo(project_dir, lakehouse)
    except LakehouseBusyError as error:
        print(f"retrylake: {error}", file=sys.stderr)
        return 3
    except Exception as error:  # one clear line for the user; dbt already printed its details
        from retrylake.errors import user_facing

        message = user_facing(error)
        if message is None:
            raise
        print(f"retrylake: {message}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
