"""What each CLI command does: session, configuration check, dbt, summaries."""

from __future__ import annotations

import contextlib
import math
import shutil
import sys
import threading
import time
from pathlib import Path

from retrylake.build_inputs import (
    JudgedWith,
    LastBuild,
    UnitTestsPassed,
    build_inputs_fingerprint,
    code_fingerprint,
    judged_with_other_warning,
    judgement_inputs,
    landing_bytes,
    runtime_fingerprint,
)
from retrylake.config_check import (
    check_configuration,
    check_consumer_groups,
    check_delay_levels,
    check_project_vars,
)
from retrylake.dbt_runner import run_dbt, without_vars
from retrylake.errors import (
    LakehouseBusyError,
    LandingError,
    RetrylakeError,
    RuntimeChangedError,
    UsageError,
)
from retrylake.lakehouse import Lakehouse
from retrylake.metastore import lakehouse_metastore
from retrylake.spark import start_session


def build(
    project_dir: Path,
    lakehouse: Lakehouse,
    *,
    full_refresh: bool = False,
    select: list[str] | None = None,
    exclude: list[str] | None = None,
    master: str | None = None,
    spark_conf: dict[str, str] | None = None,
    force: bool = False,
    holding_lock: bool = False,
    inputs: str | None = None,
    process_ends_after: bool = False,
) -> bool:
    """`dbt build` on the embedded session (or a cluster, given ``master``); the configuration
    is checked before any change. Returns False, having started nothing, when nothing the marts
    depend on changed since the last build that succeeded (unless ``force``). The dbt unit tests
    are left out when they passed in a build of the same code (``UnitTestsPassed``).
    ``holding_lock``: the caller already holds the lakehouse; ``inputs``: the fingerprint of
    this build's inputs, which the caller has just taken (both from `watch`).
    ``process_ends_after``: the process runs this build only (`retrylake build`), so a session
    started for an incremental build, or for a small landing read whole, gets a JVM for short
    runs (`is_short_run`)."""
    check_configuration(project_dir)
    lakehouse.check_landing_exists()
    command = build_command(select, exclude)
    with contextlib.nullcontext() if holding_lock else lakehouse.lock():
        last_build = LastBuild(lakehouse)
        # A full refresh leaves the marts an incremental build would (docs/incremental.md), so
        # it is not part of the fingerprint; asked for, it always runs.
        fingerprint = inputs or build_inputs_fingerprint(project_dir, lakehouse, command)
        if not (force or full_refresh) and last_build.matches(fingerprint):
            return False
        if full_refresh:
            command.append("--full-refresh")
        # A build of the default selection (the ledger) vouches for its unit tests; one given
        # --select may choose others (the what-if's), so it runs those it selects.
        code = code_fingerprint(project_dir)
        unit_tests = UnitTestsPassed(lakehouse)
        unit_tests_passed = not select and unit_tests.on(code)
        if unit_tests_passed:
            command += ["--exclude-resource-type", "unit_test"]
            print(UNIT_TESTS_SKIPPED, file=sys.stderr)
        # leaving out tests still builds every seed and model of the ledger
        whole = not select and set(exclude or []) <= TEST_RESOURCE_TYPES
        judged, judgement = JudgedWith(lakehouse), judgement_inputs(project_dir)
        last_build.forget()
        reads_all = full_refresh or not lakehouse.built_from
        short_run = process_ends_after and is_short_run(lakehouse, reads_all=reads_all)
        lakehouse.claim_landing(full_refresh=full_refresh and whole)
        start_session(lakehouse, master, spark_conf, short_run=short_run)
        # once nothing stops the build before dbt: a refused build stays one line
        _warn_if_judged_with_other(judged, judgement, whole=whole, full_refresh=full_refresh)
        run_dbt(command, project_dir, lakehouse)
        last_build.record(fingerprint)
        if whole:
            judged.after_build(judgement, full=full_refresh)
            if full_refresh:
                lakehouse.landing_settled()
        if not (unit_tests_passed or select or exclude):
            unit_tests.record(code)
    return True


# The most landing a run that reads all of it (a first build, a full refresh, the demo, the
# what-if, a dbt command whose reads are not known) may read and still be a short run:
# measured in processes of their own, C1 took 7 to 16% off such builds of up to 102 MB, and
# C2 won on the 1x bench history (docs/spark-settings.md, "The JIT compiler").
SHORT_RUN_LANDING_BYTES = 64 * 2**20


def is_short_run(lakehouse: Lakehouse, *, reads_all: bool) -> bool:
    """Whether a process that runs one command and ends (a build, a dbt command, the what-if)
    starts its JVM for a short run (`start_session`): C2's compilations cost more than they
    save in an incremental run, as from cron, and in one that reads all of a small local
    landing."""
    if not reads_all:
        return True
    if lakehouse.landing_url is not None:  # shared storage Python cannot list: not known small
        return False
    return landing_bytes(lakehouse.landing) <= SHORT_RUN_LANDING_BYTES


def build_command(select: list[str] | None, exclude: list[str] | None) -> list[str]:
    """The dbt command of a build of ``select`` without ``exclude`` (before --full-refresh)."""
    command = ["build"]
    if select:
        command += ["--select", *select]
    if exclude:
        # dbt leaves the default selector (selectors.yml: no what-if) out when --exclude is
        # given, so a build of everything but something leaves the what-if out itself
        command += ["--exclude", *exclude, *([] if select else ["tag:whatif"])]
    return command


def watch(
    project_dir: Path,
    lakehouse: Lakehouse,
    every_seconds: float,
    stop: threading.Event,
    *,
    select: list[str] | None = None,
    exclude: list[str] | None = None,
    master: str | None = None,
    spark_conf: dict[str, str] | None = None,
) -> None:
    """`retrylake build --watch`: `build` now and then every ``every_seconds``, in this process,
    until ``stop`` is set. A new process pays for the JVM's start and its JIT compilers' warm-up
    in every build; here only the first build does (docs/performance.md). A check with nothing
    new starts nothing, as `build` does. A build that fails (a data test, the configuration, the
    landing) is reported and tried again once its inputs change, not at every check. When
    retrylake's own code or its tools change on disk, it stops: this process would go on running
    the code it loaded.

    On embedded Derby, which this process's JVM holds from its first build on, the watch holds
    the lakehouse throughout, as `retrylake serve` does. On a PostgreSQL metastore it takes the
    lakehouse for each build, so other processes may build in between; one that holds it when a
    check comes is waited for until the next check."""
    shared = lakehouse_metastore(lakehouse, lakehouse.metastore_url) is not None
    with contextlib.nullcontext() if shared else lakehouse.lock("retrylake build --watch"):
        _watch_checks(
            project_dir,
            lakehouse,
            every_seconds,
            stop,
            holding_lock=not shared,
            select=select,
            exclude=exclude,
            master=master,
            spark_conf=spark_conf,
        )


def _watch_checks(
    project_dir: Path,
    lakehouse: Lakehouse,
    every_seconds: float,
    stop: threading.Event,
    *,
    holding_lock: bool,
    select: list[str] | None,
    exclude: list[str] | None,
    master: str | None,
    spark_conf: dict[str, str] | None,
) -> None:
    failed_inputs: str | None = None
    loaded = runtime_fingerprint()
    while not stop.is_set():
        if runtime_fingerprint() != loaded:
            raise RuntimeChangedError(
                "retrylake's code or its dbt, dbt-spark or pyspark changed since this watch "
                "started, and a running process keeps what it loaded: start it again"
            )
        inputs = build_inputs_fingerprint(project_dir, lakehouse, build_command(select, exclude))
        if inputs != failed_inputs:
            started = time.monotonic()
            try:
                built = build(
                    project_dir,
                    lakehouse,
                    select=select,
                    exclude=exclude,
                    master=master,
                    spark_conf=spark_conf,
                    holding_lock=holding_lock,
                    inputs=inputs,  # listing a large landing takes a second: once per check
                )
            except LakehouseBusyError as error:
                print(
                    f"retrylake: {error.message().rstrip('.')}. Trying again in "
                    f"{every_seconds:g} s.",
                    file=sys.stderr,
                )
            except RetrylakeError as error:
                # A landing on shared storage is not listed, so its inputs never show a change:
                # there a failed build is tried again at the next check, as every check builds.
                listed = lakehouse.landing_url is None
                failed_inputs = inputs if listed else None
                again = (
                    "when the landing, seeds or project change"
                    if listed
                    else f"in {every_seconds:g} s"
                )
                print(
                    f"retrylake: {error.message().rstrip('.')}. Building again {again}.",
                    file=sys.stderr,
                )
            else:
                failed_inputs = None
                if built:
                    print(
                        f"retrylake: built in {time.monotonic() - started:.1f} s; next check in "
                        f"{every_seconds:g} s",
                        file=sys.stderr,
                    )
        stop.wait(every_seconds)


UNIT_TESTS_SKIPPED = (
    "retrylake: dbt unit tests left out: they read fixtures only, and the ledger's passed in a "
    "build of this same project and code (`retrylake dbt -- test --select test_type:unit` runs "
    "them)"
)


WHATIF_SUMMARY_SQL = """
select
    scenario,
    consumer_group,
    replay_model,
    messages,
    observed_dlq,
    predicted_dlq,
    observed_deliveries,
    predicted_deliveries,
    delivery_delta,
    observed_p95_time_to_success_ms,
    predicted_p95_time_to_success_ms,
    changed_outcomes
from whatif_group_summary
where scenario <> 'observed' {scenario_filter}
order by scenario, consumer_group
"""


def whatif(
    project_dir: Path,
    lakehouse: Lakehouse,
    *,
    scenarios: list[str] | None = None,
    output: str = "table",
    master: str | None = None,
    spark_conf: dict[str, str] | None = None,
    process_ends_after: bool = False,
) -> str:
    """`retrylake whatif`: build the what-if models (`dbt build --select tag:whatif`) on the
    ledger the last build left, then return the per-scenario, per-group summary. The ledger's
    tables are not rebuilt, so the last build's fingerprint still holds.
    ``process_ends_after``: the process runs this only (`retrylake whatif`); the what-if reads
    the whole ledger, so its JVM is for a short run while the landing is small (`is_short_run`)."""
    from retrylake.analyst.query import render, run_query
    from retrylake.scenarios import scenario_names

    check_configuration(project_dir)
    unknown = sorted(set(scenarios or ()) - set(scenario_names(project_dir / "seeds")))
    if unknown:  # checked before a build of minutes, not after it with an empty table
        raise UsageError(
            f"--scenario: no scenario {', '.join(map(repr, unknown))} in "
            f"{project_dir / 'seeds'}/whatif_*.csv; scenarios: "
            f"{', '.join(scenario_names(project_dir / 'seeds')) or 'none'}"
        )
    lakehouse.check_landing_exists()
    with lakehouse.lock():
        short_run = process_ends_after and is_short_run(lakehouse, reads_all=True)
        lakehouse.claim_landing(full_refresh=False)
        start_session(lakehouse, master, spark_conf, short_run=short_run)
        run_dbt(["build", "--select", "tag:whatif"], project_dir, lakehouse)
    scenario_filter = ""
    if scenarios:
        names = ", ".join("'" + name.replace("'", "''") + "'" for name in scenarios)
        scenario_filter = f"and scenario in ({names})"
    columns, rows = run_query(lakehouse, WHATIF_SUMMARY_SQL.format(scenario_filter=scenario_filter))
    return render(columns, rows, output)


# dbt commands that change no table, so the last build's marts stay up to date after them.
READ_ONLY_DBT_COMMANDS = ("test", "docs", "show", "compile", "ls", "list", "parse", "debug")
# dbt commands that may load the seeds or build from them: the configuration is checked first.
SEED_READING_DBT_COMMANDS = ("build", "run", "seed", "retry", "clone", "snapshot", "run-operation")


def dbt(
    project_dir: Path,
    lakehouse: Lakehouse,
    args: list[str],
    *,
    master: str | None = None,
    spark_conf: dict[str, str] | None = None,
    process_ends_after: bool = False,
) -> None:
    """Any dbt command, on the same session and with the same UDFs as `build`.
    ``process_ends_after``: the process runs this command only (`retrylake dbt`), so its
    session gets a JVM for short runs as `build`'s does (`is_short_run`): an incremental `run`
    or `build`, or any command while the landing, which bounds what it may read, is small."""
    given_vars = _check_passthrough(args)
    if args[0] in SEED_READING_DBT_COMMANDS:
        check_configuration(project_dir, given_vars)
    elif given_vars:
        check_project_vars(project_dir, given_vars)
    lakehouse.check_landing_exists()
    full_refresh = bool(FULL_REFRESH_FLAGS & set(args))
    # Only a plain `build`, seeds and all, is known to judge the whole ledger: any other option
    # may narrow it (--select, -s, --model, --exclude-resource-type, --empty, ...).
    whole = args[0] == "build" and set(args[1:]) <= FULL_REFRESH_FLAGS
    # A `build` or `run` that selects nothing rebuilds every model, the landing's staging tables
    # among them, whatever else it is told (--debug, --threads 4).
    every_model = args[0] in ("build", "run") and not _narrows_selection(args[1:])
    judges_ledger = args[0] in ("build", "run")
    with lakehouse.lock():
        if judges_ledger:
            judged, judgement = JudgedWith(lakehouse), judgement_inputs(project_dir)
        if args[0] not in READ_ONLY_DBT_COMMANDS:
            LastBuild(lakehouse).forget()  # the command may change the tables
        # what a command other than run or build reads (a test, docs) is not known: all of it
        reads_all = full_refresh or not lakehouse.built_from or not judges_ledger
        short_run = process_ends_after and is_short_run(lakehouse, reads_all=reads_all)
        lakehouse.claim_landing(full_refresh=full_refresh and every_model)
        start_session(lakehouse, master, spark_conf, short_run=short_run)
        if judges_ledger:
            _warn_if_judged_with_other(judged, judgement, whole=whole, full_refresh=full_refresh)
        run_dbt(args, project_dir, lakehouse)
        if judges_ledger and whole:
            judged.after_build(judgement, full=full_refresh)
        if full_refresh and every_model:
            lakehouse.landing_settled()


FULL_REFRESH_FLAGS = {"--full-refresh", "-f"}
# dbt options that choose fewer nodes than the project's default selection
SELECTION_OPTIONS = (
    "-s", "--select", "-m", "--models", "--model", "--exclude", "--selector",
    "--resource-type", "--resource-types", "--exclude-resource-type",
    "--exclude-resource-types", "--empty", "--inline",
)  # fmt: skip


def _narrows_selection(options: list[str]) -> bool:
    return any(option.split("=", 1)[0] in SELECTION_OPTIONS for option in options)


def _check_passthrough(args: list[str]) -> dict | None:
    """What `retrylake dbt --` cannot pass on as given: options before the dbt command (which
    would hide the command from the checks above) and another project than the one checked.
    Returns the command's ``--vars`` (None: none), for the configuration's checks."""
    if args[:1] in (["--version"], ["-h"], ["--help"]):
        return None
    if not args or args[0].startswith("-"):
        raise UsageError(
            "give the dbt command first, then its options (dbt takes its global options there "
            "too), e.g. retrylake dbt -- build --debug"
        )
    for arg in args:
        if arg == "--project-dir" or arg.startswith("--project-dir="):
            raise UsageError(
                "give --project-dir to retrylake, before --: it checks that project's seeds "
                "before dbt runs, e.g. retrylake dbt --project-dir DIR -- build"
            )
    return without_vars(args)[1]  # a --vars dbt cannot be given is refused before anything starts


# What `retrylake build --exclude` may leave out and still build every seed and model.
TEST_RESOURCE_TYPES = {"resource_type:test", "resource_type:unit_test"}


def _warn_if_judged_with_other(
    judged: JudgedWith, judgement: dict, *, whole: bool, full_refresh: bool
) -> None:
    """Before a build or run of the ledger: warn when the seeds or rules changed since the
    history was last built in full, unless this run is that full build."""
    if whole and full_refresh:
        return
    changed = judged.changed(judgement)
    if changed:
        print(judged_with_other_warning(changed), file=sys.stderr)


SUMMARY_SQL = """
select
    consumer_group,
    count(*) as messages,
    sum(deliveries) as deliveries,
    sum(deliveries - 1) as retries,
    count_if(final_state = 'CONSUMED') as consumed,
    count_if(final_state = 'DLQ') as dlq,
    count_if(final_state = 'DROPPED') as dropped,
    count_if(final_state in ('WAITING_RETRY', 'RETRY_OVERDUE')) as waiting,
    count_if(final_state = 'IN_FLIGHT') as in_flight
from retrylake.message_lifecycles
group by consumer_group
order by consumer_group
"""


# In a landing folder the demo wrote: it may delete that folder and write it again.
DEMO_MARKER = ".retrylake-demo"


def _is_demo_landing(landing: Path) -> bool:
    """The demo's (or the generator's, which writes generation.json last) landing folder."""
    return (landing / DEMO_MARKER).is_file() or (landing / "generation.json").is_file()


def _check_demo_may_replace(lakehouse: Lakehouse) -> None:
    """The demo deletes its landing folder and rebuilds the lakehouse in full from generated
    traffic: refuse a landing folder with other files in it, and a lakehouse built from one."""
    if lakehouse.landing_url is not None:
        raise UsageError(
            "retrylake demo writes its traffic on this machine and takes no landing URL: unset "
            f"$RETRYLAKE_LANDING or give --landing a local folder, not {lakehouse.landing_url}"
        )
    landing = lakehouse.landing
    if not _is_demo_landing(landing) and any(path.is_file() for path in landing.rglob("*")):
        raise LandingError(
            f"retrylake demo replaces its landing folder with generated traffic, and {landing} "
            "holds files it did not generate: give the demo a folder of its own with --landing "
            "(or unset $RETRYLAKE_LANDING)"
        )
    built_from = lakehouse.built_from
    if (
        built_from
        and built_from != str(landing)
        and not ("://" not in built_from and _is_demo_landing(Path(built_from)))
    ):
        raise LandingError(
            f"the lakehouse {lakehouse.root} was built from the landing {built_from}, and the "
            "demo would rebuild it from generated traffic: give the demo a lakehouse of its own "
            "with --lakehouse (or unset $RETRYLAKE_LAKEHOUSE)"
        )


def grpc5_messages_for(messages: int, grpc5_messages: int | None) -> int:
    """The messages to publish to the 5.x gRPC groups: as given, else a fifth of ``messages``."""
    if grpc5_messages is None:
        return max(messages, 0) // 5
    if grpc5_messages < 0:
        raise UsageError("--grpc5-messages must be 0 or more")
    return grpc5_messages


def _print_grpc5(grpc5: dict) -> None:
    print(
        f"5.x gRPC groups: {grpc5['messages']:,} messages, {grpc5['lifecycles']:,} "
        f"lifecycles, {grpc5['process_spans']:,} process spans in {grpc5['span_lines']:,} "
        f"otel lines, {grpc5['consume_events']:,} consume events, "
        f"{grpc5['broker_dlq_lines']:,} broker DLQ lines"
    )
    evidence = grpc5.get("dlq_evidence") or {}
    if evidence:
        print(
            "5.x dead letters by evidence: "
            + ", ".join(f"{key} {count:,}" for key, count in evidence.items())
        )
    replaced = grpc5.get("seed_rows_replaced") or []
    if replaced:
        print(
            f"5.x groups simulated as the generator defines them, their seed rows replaced: "
            f"{', '.join(replaced)} (--grpc5-settings-from-seeds runs their retry settings)"
        )


def generate(
    *,
    out: Path,
    messages: int,
    seed: int,
    start: str,
    hours: float,
    client_versions: list[str],
    dlq_export: bool,
    seeds: Path | None,
    compression: str,
    grpc5_messages: int | None = None,
    offline: list[str] | None = None,
    grpc5_settings_from_seeds: bool = False,
) -> None:
    """`retrylake generate`: write simulated traffic and report its throughput. The 5.x gRPC
    groups get ``grpc5_messages`` messages; None: a fifth of ``messages``. ``offline`` names
    4.x groups that consume nothing from a time on, as GROUP@TIME. ``grpc5_settings_from_seeds``:
    the 5.x groups take their retry settings from their rows in ``seeds``."""
    import time

    from retrylake.sim.engine import GeneratorConfig
    from retrylake.sim.engine import generate as run_generator
    from retrylake.sim.trace_format import CLIENT_VERSIONS

    started = _utc_instant("--start", start)
    offline_groups = []
    for value in offline or []:
        group, separator, time_text = value.partition("@")
        if not group or not separator:
            raise UsageError(
                f"--offline {value!r}: write GROUP@TIME, e.g. inventory-sync@2026-03-03T12:00:00Z"
            )
        offline_groups.append((group, int(_utc_instant("--offline", time_text).timestamp() * 1000)))
    versions = tuple(v for value in client_versions for v in value.split(",") if v)
    unknown = [version for version in versions if version not in CLIENT_VERSIONS]
    if unknown or not versions:
        raise UsageError(
            f"--client-versions: {'unknown ' + ', '.join(unknown) if unknown else 'none named'}; "
            f"choose from {', '.join(CLIENT_VERSIONS)}"
        )
    if messages < 0 or not (math.isfinite(hours) and hours > 0):
        raise UsageError("--messages must be 0 or more and --hours a number more than 0")
    if grpc5_settings_from_seeds and seeds is None:
        raise UsageError("--grpc5-settings-from-seeds needs --seeds DIR")
    if seeds is not None:  # the deployment it simulates, checked as a build checks it
        check_delay_levels(seeds / "broker_delay_levels.csv")
        check_consumer_groups(seeds / "consumer_groups.csv")
    grpc5_messages = grpc5_messages_for(messages, grpc5_messages)
    config = GeneratorConfig(
        out=out.resolve(),
        messages=messages,
        seed=seed,
        start_ms=int(started.timestamp() * 1000),
        hours=hours,
        client_versions=versions,
        dlq_export=dlq_export,
        compression=compression,
        grpc5_messages=grpc5_messages,
        offline_groups=tuple(offline_groups),
        grpc5_settings_from_seeds=grpc5_settings_from_seeds,
    )
    began = time.perf_counter()
    stats = run_generator(config, seeds_dir=seeds, progress=sys.stderr.isatty())
    seconds = time.perf_counter() - began
    print(
        f"Wrote {stats.records:,} trace records in {stats.trace_messages:,} trace messages "
        f"({stats.lines:,} lines) for {stats.messages:,} messages and {stats.lifecycles:,} "
        f"lifecycles to {config.out} in {seconds:.1f} s ({stats.records / seconds:,.0f} records/s)"
    )
    if stats.grpc5 is not None:
        _print_grpc5(stats.grpc5)


def _utc_instant(option: str, value: str):
    """An ISO 8601 time as an aware datetime, UTC when it names no zone."""
    import datetime as dt

    try:
        instant = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(
            f"{option} {value!r} is not an ISO 8601 time, e.g. 2026-03-01T00:00:00Z"
        ) from None
    return instant if instant.tzinfo is not None else instant.replace(tzinfo=dt.UTC)


def demo(
    project_dir: Path,
    lakehouse: Lakehouse,
    *,
    messages: int = 3000,
    grpc5_messages: int | None = None,
    master: str | None = None,
    spark_conf: dict[str, str] | None = None,
    process_ends_after: bool = False,
) -> None:
    """Generate traffic for the project's consumer groups into a fresh landing zone, build it,
    print a per-group summary and check the marts against the generator's ground truth. The
    5.x gRPC groups get ``grpc5_messages`` messages; None: a fifth of ``messages``.
    ``process_ends_after``: as `build`'s (`retrylake demo`)."""
    from retrylake.sim.engine import GeneratorConfig, read_ground_truth
    from retrylake.sim.engine import generate as run_generator

    if messages < 0:
        raise UsageError("--messages must be 0 or more")
    grpc5_messages = grpc5_messages_for(messages, grpc5_messages)
    check_configuration(project_dir)
    with lakehouse.lock():
        _check_demo_may_replace(lakehouse)
        LastBuild(lakehouse).forget()
        lakehouse.claim_landing(full_refresh=True)
        if lakehouse.landing.exists():
            shutil.rmtree(lakehouse.landing)
        lakehouse.landing.mkdir(parents=True)
        (lakehouse.landing / DEMO_MARKER).write_text("written by retrylake demo\n")
        stats = run_generator(
            GeneratorConfig(
                out=lakehouse.landing,
                messages=messages,
                dlq_export=True,
                grpc5_messages=grpc5_messages,
            ),
            seeds_dir=project_dir / "seeds",
            progress=sys.stderr.isatty(),
        )
        print(
            f"Generated {stats.records:,} trace records for {stats.lifecycles:,} lifecycles "
            f"in {lakehouse.landing}"
        )
        if stats.grpc5 is not None:
            _print_grpc5(stats.grpc5)
        judged, judgement = JudgedWith(lakehouse), judgement_inputs(project_dir)
        short_run = process_ends_after and is_short_run(lakehouse, reads_all=True)
        spark = start_session(lakehouse, master, spark_conf, short_run=short_run)
        run_dbt(["build", "--full-refresh"], project_dir, lakehouse)
        judged.after_build(judgement, full=True)
        lakehouse.landing_settled()
        rows = spark.sql(SUMMARY_SQL).collect()
        quarantined = spark.sql("select count(*) from retrylake.landing_quarantine").first()[0]
        built = {
            (row.consumer_group, row.msg_id): row.final_state
            for row in spark.sql(
                "select consumer_group, msg_id, final_state from retrylake.message_lifecycles"
            ).collect()
        }
    # every lifecycle of the ground truth, the 5.x groups' (which carry client_line) included,
    # but those the landing cannot tell at all (every trace record lost, nothing built): they
    # are counted apart
    truth: dict[tuple[str, str], str] = {}
    grpc5_keys: set[tuple[str, str]] = set()
    untold = 0
    for row in read_ground_truth(lakehouse.landing):
        key = (row["consumer_group"], row["msg_id"])
        if not row["trace_complete"] and key not in built:
            untold += 1
            continue
        truth[key] = row["final_state"]
        if "client_line" in row:
            grpc5_keys.add(key)
    agreeing = sum(built.get(key) == state for key, state in truth.items())
    agreeing_5x = sum(built.get(key) == truth[key] for key in grpc5_keys)
    print()
    print(
        format_table(
            rows,
            [
                "consumer_group",
                "messages",
                "deliveries",
                "retries",
                "consumed",
                "dlq",
                "dropped",
                "waiting",
                "in_flight",
            ],
        )
    )
    print(f"\nQuarantined landing lines and records: {quarantined}")
    print(
        f"Final states agreeing with the generator's ground truth: {agreeing:,} of {len(truth):,}"
        + (f", 5.x gRPC groups {agreeing_5x:,} of {len(grpc5_keys):,}" if grpc5_keys else "")
        + ("" if len(built) == len(truth) else f" ({len(built):,} lifecycles built)")
        + (
            f"; {untold:,} more the landing cannot tell (their trace records lost)"
            if untold
            else ""
        )
    )
    print(
        f"Marts are the `retrylake` schema's views, over {lakehouse.warehouse / '_published'}; "
        "query them with "
        '`retrylake query "select ..."`, or draw them with `retrylake report`.'
    )


def format_table(rows: list, columns: list[str]) -> str:
    cells = [[str(row[column]) for column in columns] for row in rows]
    widths = [
        max([len(column), *(len(line[i]) for line in cells)]) for i, column in enumerate(columns)
    ]
    lines = ["  ".join(column.ljust(width) for column, width in zip(columns, widths, strict=True))]
    lines.append("  ".join("-" * width for width in widths))
    lines += [
        "  ".join(
            cell.rjust(width) if i else cell.ljust(width)
            for i, (cell, width) in enumerate(zip(line, widths, strict=True))
        )
        for line in cells
    ]
    return "\n".join(lines)
