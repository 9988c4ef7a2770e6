"""The `retrylake` command line."""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path

from retrylake.errors import RetrylakeError, UsageError
from retrylake.lakehouse import Lakehouse
from retrylake.project import DEFAULT_PROJECT_DIR, project_vars
from retrylake.spark import spark_settings


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
    parser.add_argument(
        "--metastore",
        metavar="postgresql://USER@HOST[:PORT]/DATABASE",
        help="a PostgreSQL database as the lakehouse's Hive metastore, set up on first use and "
        "kept by the lakehouse (default: $RETRYLAKE_METASTORE, else the one the lakehouse "
        "recorded, else embedded Derby; password in $RETRYLAKE_METASTORE_PASSWORD)",
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="retrylake",
        description="Build a ledger of RocketMQ retries and dead letters from trace data.",
    )
    commands = parser.add_subparsers(dest="command", required=True)

    build = commands.add_parser(
        "build",
        help="run `dbt build` on the embedded Spark",
        description="Run `dbt build` on the embedded Spark (or --master). The dbt unit tests are "
        "left out once a build of the same project and code passed them.",
    )
    _add_location_args(build)
    build.add_argument("--full-refresh", action="store_true", help="rebuild every table")
    build.add_argument(
        "--force",
        action="store_true",
        help="build even when nothing changed since the last successful build",
    )
    build.add_argument("--select", nargs="+", help="dbt node selection")
    build.add_argument(
        "--exclude", nargs="+", help="dbt nodes to leave out (resource_type:test: no data tests)"
    )
    build.add_argument(
        "--watch",
        type=float,
        metavar="SECONDS",
        help="stay running: check the landing, seeds and project every SECONDS and build what "
        "changed, in this process, so that only the first build starts Spark (SIGTERM stops it "
        "after the build in progress)",
    )
    _add_spark_args(build)

    check = commands.add_parser(
        "check",
        help="check the seeds as build does, before the plain dbt CLI loads them "
        "(no Spark; exit 0 when they are valid)",
    )
    check.add_argument(
        "--project-dir", default=".", help="the dbt project (default: the current directory)"
    )

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
    _add_grpc5_arg(generate)
    generate.add_argument(
        "--grpc5-settings-from-seeds",
        action="store_true",
        help="the 5.x gRPC groups take retry_max_times, group_retry_policy and "
        "dead_letter_enabled from their rows in --seeds (default: the generator's own)",
    )
    generate.add_argument(
        "--offline",
        action="append",
        default=[],
        metavar="GROUP@TIME",
        help="a 4.x consumer group that consumes nothing from TIME (ISO 8601, UTC) on, so its "
        "retries stay overdue; repeatable",
    )
    generate.add_argument(
        "--jobs",
        type=int,
        metavar="N",
        help="cores to use: with 2 or more, the files are compressed and written beside the "
        "simulation, which helps where a core is idle (the same bytes whatever N; default: 1)",
    )

    whatif = commands.add_parser(
        "whatif",
        help="replay the observed deliveries under the scenarios of seeds/whatif_*.csv "
        "(docs/whatif.md) and print each scenario's effect per group",
    )
    _add_location_args(whatif)
    whatif.add_argument("--scenario", nargs="+", help="print only these scenarios")
    whatif.add_argument("--format", choices=["table", "csv", "json"], default="table")
    whatif.add_argument(
        "--write-seeds",
        nargs=2,
        metavar=("SCENARIO", "DIR"),
        help="build nothing: write the seeds with SCENARIO's settings applied to DIR (for "
        "retrylake generate --seeds, or to review before changing production)",
    )
    _add_spark_args(whatif)

    query = commands.add_parser(
        "query", help="run SQL with DuckDB over the marts' parquet files (no Java needed)"
    )
    query.add_argument("sql", help="the query; each mart is a view named like its table")
    query.add_argument("--format", choices=["table", "csv", "json"], default="table")
    query.add_argument(
        "--as-of",
        metavar="BUILD_OR_TIME",
        help="query the marts as an earlier published build left them: a build id from the "
        "published_builds view, or a UTC time such as 2026-11-25T09:00 (the last build "
        "published by then)",
    )
    _add_lakehouse_arg(query)

    report = commands.add_parser(
        "report", help="write one self-contained HTML page of charts (DuckDB, no Java needed)"
    )
    report.add_argument("--out", default="report.html", help="file to write (default report.html)")
    report.add_argument(
        "--project-dir",
        help="the dbt project the lakehouse was built with, for its var outage_window (default: "
        "the current directory if its dbt_project.yml has that var, else the installed project)",
    )
    _add_lakehouse_arg(report)

    dlq_export = commands.add_parser(
        "dlq-export",
        help="the DLQ compensation work list, with the mqadmin commands that bring each "
        "message back (re-send to the topic, or consume on one client of the group)",
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
    dlq_export.add_argument(
        "--mqadmin-version",
        default="4.9",
        help="version of the mqadmin that runs the commands (default 4.9): 5.3 or later adds "
        "the -t TOPIC its queryMsgById requires, which older tools reject",
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
    bench.add_argument(
        "--whatif",
        action="store_true",
        help="instead of timing builds: check the what-if against ground truth (each scenario's "
        "prediction from a run of about --records records, against the same traffic generated "
        "under the scenario's settings); works in DIR/whatif, rewritten on each run",
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
    _add_grpc5_arg(demo)
    return parser


def _add_grpc5_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--grpc5-messages",
        type=int,
        default=None,
        metavar="N",
        help="also publish N messages to simulated RocketMQ 5.x gRPC consumer groups, written "
        "to otel/, consume_events/ and broker_logs/ (default: a fifth of --messages; 0: none)",
    )


def main(argv: list[str] | None = None) -> int:
    """Run one command; every failure a user can act on ends here as one line on stderr."""
    args = _parser().parse_args(argv)
    try:
        COMMANDS[args.command](args)
        sys.stdout.flush()  # here, so that a reader gone away is seen below
    except RetrylakeError as error:
        return _fail(error.message(), error.exit_code)
    except KeyboardInterrupt:
        return _fail("interrupted", 130)
    except BrokenPipeError:
        # the reader went away (`retrylake query ... | head`): stop quietly, as `cat` does
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except OSError as error:  # a file or folder that cannot be read or written
        return _fail(str(error), 1)
    except Exception as error:  # a bug: one line, and the traceback on request
        if os.environ.get("RETRYLAKE_DEBUG"):
            raise
        return _fail(
            f"internal error: {type(error).__name__}: {error} "
            "(run again with RETRYLAKE_DEBUG=1 for the traceback, and report it)",
            1,
        )
    return 0


def _fail(message: str, code: int) -> int:
    print(f"retrylake: {message}", file=sys.stderr)
    return code


def _project_dir(args: argparse.Namespace) -> Path:
    return Path(args.project_dir).resolve()


def _lakehouse(args: argparse.Namespace) -> Lakehouse:
    return Lakehouse.resolve(
        args.lakehouse, getattr(args, "landing", None), getattr(args, "metastore", None)
    )


def _spark(args: argparse.Namespace) -> dict:
    master, spark_conf = spark_settings(args.master, args.conf)
    return {"master": master, "spark_conf": spark_conf}


def _build(args: argparse.Namespace) -> None:
    from retrylake.commands import build

    if args.watch is not None:
        _watch(args)
        return
    lakehouse = _lakehouse(args)
    built = build(
        _project_dir(args),
        lakehouse,
        full_refresh=args.full_refresh,
        select=args.select,
        exclude=args.exclude,
        force=args.force,
        process_ends_after=True,
        **_spark(args),
    )
    if not built:
        print(
            f"retrylake: nothing changed since the last build of {lakehouse.root} (the same "
            "landing files, seeds, project and command), so its marts are up to date; "
            "--force builds anyway"
        )


def _watch(args: argparse.Namespace) -> None:
    from retrylake.commands import watch

    # the wait between checks takes at most threading.TIMEOUT_MAX (about 292 years), not inf
    if not 0 < args.watch <= threading.TIMEOUT_MAX:
        raise UsageError(f"--watch takes a number of seconds above 0, not {args.watch:g}")
    if args.full_refresh or args.force:
        option = "--full-refresh" if args.full_refresh else "--force"
        raise UsageError(
            f"--watch builds what changed; {option} would rebuild at every check: run it once "
            "without --watch"
        )
    lakehouse = _lakehouse(args)
    stop = threading.Event()

    def stop_after_this_build(signum: int, frame: object) -> None:
        print("retrylake: stopping after the build in progress, if any", file=sys.stderr)
        stop.set()

    signal.signal(signal.SIGTERM, stop_after_this_build)
    print(
        f"retrylake: watching {lakehouse.landing_location} every {args.watch:g} s "
        "(SIGTERM stops after the build in progress)",
        file=sys.stderr,
    )
    watch(
        _project_dir(args),
        lakehouse,
        args.watch,
        stop,
        select=args.select,
        exclude=args.exclude,
        **_spark(args),
    )
    print("retrylake: stopped watching", file=sys.stderr)


def _dbt(args: argparse.Namespace) -> None:
    from retrylake.commands import dbt

    dbt_args = args.dbt_args[1:] if args.dbt_args[:1] == ["--"] else args.dbt_args
    if not dbt_args:
        raise UsageError("give a dbt command, e.g. retrylake dbt -- test")
    dbt(_project_dir(args), _lakehouse(args), dbt_args, **_spark(args), process_ends_after=True)


def _whatif(args: argparse.Namespace) -> None:
    from retrylake.commands import whatif

    if args.write_seeds:
        from retrylake.scenarios import write_scenario_seeds

        scenario, out = args.write_seeds
        write_scenario_seeds(_project_dir(args), scenario, Path(out))
        print(f"wrote the seeds with scenario {scenario!r} applied to {out}")
        return
    print(
        whatif(
            _project_dir(args),
            _lakehouse(args),
            scenarios=args.scenario,
            output=args.format,
            **_spark(args),
            process_ends_after=True,
        )
    )


def _serve(args: argparse.Namespace) -> None:
    from retrylake.server import serve

    if not 1 <= args.port <= 65535:
        raise UsageError(f"--port {args.port} is not a TCP port (1 to 65535)")
    serve(_lakehouse(args), host=args.host, port=args.port, **_spark(args))


def _generate(args: argparse.Namespace) -> None:
    from retrylake.commands import generate
    from retrylake.sim.engine import default_jobs, parallel_jobs

    if args.jobs is not None and args.jobs < 1:
        raise UsageError("--jobs must be 1 or more")
    with parallel_jobs(args.jobs or default_jobs()):
        generate(
            out=Path(args.out),
            messages=args.messages,
            seed=args.seed,
            start=args.start,
            hours=args.hours,
            client_versions=args.client_versions,
            dlq_export=args.dlq_export,
            seeds=Path(args.seeds) if args.seeds else None,
            compression=args.compression,
            grpc5_messages=args.grpc5_messages,
            offline=args.offline,
            grpc5_settings_from_seeds=args.grpc5_settings_from_seeds,
        )


def _demo(args: argparse.Namespace) -> None:
    from retrylake.commands import demo

    master, spark_conf = spark_settings(None, None)  # the environment's, as for a build
    demo(
        _project_dir(args),
        _lakehouse(args),
        messages=args.messages,
        grpc5_messages=args.grpc5_messages,
        master=master,
        spark_conf=spark_conf,
        process_ends_after=True,
    )


def _bench(args: argparse.Namespace) -> None:
    from retrylake.bench import bench
    from retrylake.bench.whatif_truth import run as whatif_against_truth

    if args.whatif:
        result = whatif_against_truth(
            Path(args.dir).resolve() / "whatif", args.records, args.seed, _project_dir(args)
        )
        print(json.dumps(result, indent=2))
        return
    result = bench(
        Path(args.dir).resolve(),
        args.records,
        args.seed,
        _project_dir(args),
        tests=not args.skip_tests,
    )
    print(json.dumps(result, indent=2))


def _query(args: argparse.Namespace) -> None:
    from retrylake.analyst.query import render, run_query

    columns, rows = run_query(_lakehouse(args), args.sql, args.as_of)
    print(render(columns, rows, args.format))


def _check(args: argparse.Namespace) -> None:
    from retrylake.config_check import check_configuration

    project_dir = _project_dir(args)
    check_configuration(project_dir)
    print(f"The seeds of {project_dir} are valid", file=sys.stderr)


def _report(args: argparse.Namespace) -> None:
    from retrylake.analyst.report import render_report

    out = _output_file(args.out, "--out")
    project_dir = DEFAULT_PROJECT_DIR
    if args.project_dir is not None:
        project_dir = _project_dir(args)
    elif Path("dbt_project.yml").is_file() and "outage_window" in project_vars(Path.cwd()):
        project_dir = Path.cwd()  # retrylake's project here, perhaps with other numbers
    out.write_text(render_report(_lakehouse(args), project_dir), encoding="utf-8")
    print(f"Wrote {out.resolve()}", file=sys.stderr)


def _dlq_export(args: argparse.Namespace) -> None:
    from retrylake.analyst.dlq_export import (
        dlq_work_list,
        parse_mqadmin_version,
        parse_since,
        render_work_list,
    )

    if args.out:
        _output_file(args.out, "--out")
    columns, rows = dlq_work_list(
        _lakehouse(args),
        groups=args.group,
        since=parse_since(args.since) if args.since else None,
        namesrv=args.namesrv,
        mqadmin_version=parse_mqadmin_version(args.mqadmin_version),
    )
    text = render_work_list(columns, rows, args.format)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
        print(f"Wrote {len(rows):,} DLQ messages to {args.out}", file=sys.stderr)
    else:
        sys.stdout.write(text)


def _output_file(path: str, option: str) -> Path:
    """``path`` as a file to write, checked before any work: its folder exists, it is no folder."""
    out = Path(path)
    if out.is_dir():
        raise UsageError(f"{option} {path} is a folder; name a file in it")
    if not out.resolve().parent.is_dir():
        raise UsageError(f"{option} {path}: the folder {out.resolve().parent} does not exist")
    return out


COMMANDS: dict[str, Callable[[argparse.Namespace], None]] = {
    "build": _build,
    "check": _check,
    "dbt": _dbt,
    "serve": _serve,
    "generate": _generate,
    "demo": _demo,
    "bench": _bench,
    "query": _query,
    "report": _report,
    "dlq-export": _dlq_export,
    "whatif": _whatif,
}


if __name__ == "__main__":
    sys.exit(main())
