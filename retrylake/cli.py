"""The `retrylake` command line."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from retrylake.lakehouse import Lakehouse, LakehouseBusyError


def _add_lakehouse_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--lakehouse", help="lakehouse folder (default: $RETRYLAKE_LAKEHOUSE or ./lakehouse)"
    )


def _add_location_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--project-dir",
        default=".",
        help="the dbt project to run (default: the current directory, as with dbt)",
    )
    _add_lakehouse_arg(parser)
    parser.add_argument(
        "--landing", help="landing zone (default: $RETRYLAKE_LANDING or <lakehouse>/landing)"
    )


def _add_spark_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--master",
        help="Spark master URL: spark://HOST:7077, yarn, k8s://... "
        "(default: $RETRYLAKE_MASTER, else local[2], or what spark-submit was given)",
    )
    parser.add_argument(
        "--conf",
        action="append",
        metavar="KEY=VALUE",
        help="a Spark setting, applied after retrylake's defaults (repeatable; "
        "also $RETRYLAKE_SPARK_CONF, whitespace-separated)",
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
    build.add_argument(
        "--exclude", nargs="+", help="dbt nodes to leave out (resource_type:test: no data tests)"
    )
    _add_spark_args(build)

    dbt = commands.add_parser("dbt", help="run any dbt command: retrylake dbt -- ARGS")
    _add_location_args(dbt)
    _add_spark_args(dbt)
    dbt.add_argument("dbt_args", nargs=argparse.REMAINDER, help="arguments for dbt")

    generate = commands.add_parser(
        "generate", help="write simulated RocketMQ trace data as a landing zone, with ground truth"
    )
    generate.add_argument("--out", required=True, help="folder to write trace/, dlq/ and seeds/ to")
    generate.add_argument("--messages", type=int, default=3000, help="messages to publish")
    generate.add_argument("--seed", type=int, default=1, help="random seed (same seed, same bytes)")
    generate.add_argument(
        "--start", default="2026-03-01T00:00:00Z", help="simulated start time (ISO 8601, UTC)"
    )
    generate.add_argument("--hours", type=float, default=6.0, help="simulated hours")
    generate.add_argument(
        "--client-versions",
        nargs="+",
        default=["4.9"],
        help="client versions whose trace layouts to mix: 4.9, 4.9.1, 4.8, 4.7, old",
    )
    generate.add_argument(
        "--dlq-export", action="store_true", help="also write dlq/ as read from %%DLQ%% topics"
    )
    generate.add_argument(
        "--seeds",
        help="folder with the consumer_groups.csv and broker_delay_levels.csv to simulate",
    )
    generate.add_argument(
        "--compression",
        choices=["none", "gzip", "mixed"],
        default="mixed",
        help="gzip the trace files: none, all, or every other hour (default)",
    )

    query = commands.add_parser(
        "query", help="run SQL with DuckDB over the marts' parquet files (no Java needed)"
    )
    query.add_argument("sql", help="the query; each mart is a view named like its table")
    query.add_argument("--format", choices=["table", "csv", "json"], default="table")
    _add_lakehouse_arg(query)

    report = commands.add_parser(
        "report", help="write one self-contained HTML page of charts (DuckDB, no Java needed)"
    )
    report.add_argument("--out", default="report.html", help="file to write (default report.html)")
    _add_lakehouse_arg(report)

    dlq_export = commands.add_parser(
        "dlq-export",
        help="the DLQ compensation work list, with an mqadmin re-send command per message",
    )
    dlq_export.add_argument(
        "--group", action="append", help="only this consumer group (repeat for several)"
    )
    dlq_export.add_argument(
        "--since", help="only dead letters entered at or after this UTC time (ISO 8601)"
    )
    dlq_export.add_argument("--format", choices=["csv", "jsonl"], default="csv")
    dlq_export.add_argument("--out", help="file to write (default: standard output)")
    dlq_export.add_argument(
        "--namesrv",
        help="name server list for the mqadmin commands (default: mqadmin reads $NAMESRV_ADDR)",
    )
    _add_lakehouse_arg(dlq_export)

    bench = commands.add_parser(
        "bench",
        help="generate N trace records and measure scan floor, full and incremental builds",
    )
    bench.add_argument(
        "--records", type=int, default=1_000_000, help="trace records in the base history"
    )
    bench.add_argument("--seed", type=int, default=1, help="generator seed")
    bench.add_argument(
        "--dir", default="bench", help="working folder; generated data is reused when present"
    )
    bench.add_argument("--project-dir", default=".", help="the dbt project (default: .)")
    bench.add_argument(
        "--skip-tests", action="store_true", help="time the builds only, not the data tests"
    )

    serve = commands.add_parser(
        "serve",
        help="run Spark's Thrift JDBC/ODBC server on the lakehouse (dbt --target server, BI tools)",
    )
    serve.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on (default 127.0.0.1, loopback only; 0.0.0.0 for every address)",
    )
    serve.add_argument("--port", type=int, default=10000, help="port (default 10000)")
    _add_lakehouse_arg(serve)
    serve.add_argument(
        "--landing", help="landing zone (default: $RETRYLAKE_LANDING or <lakehouse>/landing)"
    )
    _add_spark_args(serve)

    demo = commands.add_parser("demo", help="generate sample traffic, build it, print a summary")
    _add_location_args(demo)
    demo.add_argument("--messages", type=int, default=3000, help="messages to generate")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command in ("query", "report", "dlq-export"):
        return _duckdb_command(args)
    if args.command == "bench":
        import json

        from retrylake.bench import bench

        root, project_dir = Path(args.dir).resolve(), Path(args.project_dir).resolve()
        result = bench(root, args.records, args.seed, project_dir, tests=not args.skip_tests)
        print(json.dumps(result, indent=2))
        return 0
    if args.command != "generate":
        lakehouse = Lakehouse.resolve(args.lakehouse, args.landing)
        project_dir = Path(getattr(args, "project_dir", ".")).resolve()
    try:
        if hasattr(args, "master"):
            from retrylake.spark import spark_settings

            master, spark_conf = spark_settings(args.master, args.conf)
        if args.command == "serve":
            from retrylake.server import serve

            serve(lakehouse, host=args.host, port=args.port, master=master, spark_conf=spark_conf)
        elif args.command == "build":
            from retrylake.commands import build

            build(
                project_dir,
                lakehouse,
                full_refresh=args.full_refresh,
                select=args.select,
                exclude=args.exclude,
                master=master,
                spark_conf=spark_conf,
            )
        elif args.command == "dbt":
            from retrylake.commands import dbt

            dbt_args = args.dbt_args[1:] if args.dbt_args[:1] == ["--"] else args.dbt_args
            if not dbt_args:
                print(
                    "retrylake dbt: give a dbt command, e.g. retrylake dbt -- test", file=sys.stderr
                )
                return 2
            dbt(project_dir, lakehouse, dbt_args, master=master, spark_conf=spark_conf)
        elif args.command == "generate":
            from retrylake.commands import generate

            generate(args)
        elif args.command == "demo":
            from retrylake.commands import demo

            demo(project_dir, lakehouse, messages=args.messages)
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


def _duckdb_command(args: argparse.Namespace) -> int:
    """The commands that read the marts' parquet files with DuckDB, without Java."""
    import duckdb

    lakehouse = Lakehouse.resolve(args.lakehouse, None)
    try:
        if args.command == "report":
            from retrylake.analyst.report import render_report

            out = Path(args.out)
            out.write_text(render_report(lakehouse), encoding="utf-8")
            print(f"Wrote {out.resolve()}", file=sys.stderr)
        elif args.command == "dlq-export":
            from retrylake.analyst.dlq_export import dlq_work_list, parse_since, render_work_list

            columns, rows = dlq_work_list(
                lakehouse,
                groups=args.group,
                since=parse_since(args.since) if args.since else None,
                namesrv=args.namesrv,
            )
            text = render_work_list(columns, rows, args.format)
            if args.out:
                Path(args.out).write_text(text, encoding="utf-8")
                print(f"Wrote {len(rows):,} DLQ messages to {args.out}", file=sys.stderr)
            else:
                sys.stdout.write(text)
        else:
            from retrylake.analyst.query import render, run_query

            columns, rows = run_query(lakehouse, args.sql)
            print(render(columns, rows, args.format))
    except (FileNotFoundError, ValueError) as error:  # no marts yet, or a bad --since
        print(f"retrylake {args.command}: {error}", file=sys.stderr)
        return 1 if isinstance(error, FileNotFoundError) else 2
    except duckdb.Error as error:  # DuckDB's message says what is wrong with the SQL
        print(f"retrylake {args.command}: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
