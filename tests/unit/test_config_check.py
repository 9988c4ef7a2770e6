"""A bad configuration names the file, row and value, before anything is built."""

from __future__ import annotations

import csv
import re
import shutil
from pathlib import Path

import pytest

from retrylake.config_check import (
    GROUP_COLUMNS,
    GROUP_OPTIONAL_COLUMNS,
    check_configuration,
    check_consumer_groups,
)
from retrylake.errors import ConfigError
from retrylake.sim.sample import write_seeds
from tests.conftest import PROJECT_DIR


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    shutil.copytree(PROJECT_DIR / "seeds", tmp_path / "seeds")
    shutil.copy(PROJECT_DIR / "dbt_project.yml", tmp_path / "dbt_project.yml")
    return tmp_path


def _replace(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def test_the_shipped_seeds_are_valid():
    check_configuration(PROJECT_DIR)


def test_the_shipped_seeds_match_the_sample_groups(tmp_path: Path):
    write_seeds(tmp_path)
    for name in ("consumer_groups.csv", "broker_delay_levels.csv"):
        assert (tmp_path / name).read_text() == (PROJECT_DIR / "seeds" / name).read_text()


@pytest.mark.parametrize(
    ("delay_string", "named"),
    [("1s 5x 10s", "'5x'"), ("1s  5s", "position 2"), ("", "empty"), ("1S", "'1S'")],
)
def test_bad_delay_strings_name_file_row_and_token(project: Path, delay_string: str, named: str):
    seed = project / "seeds" / "broker_delay_levels.csv"
    _replace(seed, "fast-cluster,5s 8s", f"fast-cluster,{delay_string}")
    with pytest.raises(ConfigError) as error:
        check_configuration(project)
    message = str(error.value)
    assert "broker_delay_levels.csv" in message and "row 3" in message and named in message


@pytest.mark.parametrize(
    ("delay_string", "named"),
    [
        # 36,525 days is 100 years to the millisecond; a day more is refused
        ("1s 36526d", "'36526d' at position 2 is 3,155,846,400,000 ms, longer than the 100 years"),
        ("1s 9223372036854775s", "'9223372036854775s' at position 2"),
    ],
)
def test_a_delay_too_long_to_place_names_file_row_and_token(
    project: Path, delay_string: str, named: str
):
    seed = project / "seeds" / "broker_delay_levels.csv"
    _replace(seed, "fast-cluster,5s 8s", f"fast-cluster,{delay_string}")
    with pytest.raises(ConfigError, match=r"broker_delay_levels\.csv, row 3, message_delay_level"):
        check_configuration(project)
    with pytest.raises(ConfigError, match=re.escape(named)):
        check_configuration(project)


def test_delays_of_zero_or_less_and_of_100_years_pass(project: Path):
    # the broker parses `0s` and `-1s` and delivers them at once (spec §2.3); both ends pass
    seed = project / "seeds" / "broker_delay_levels.csv"
    _replace(seed, "fast-cluster,5s 8s", "fast-cluster,-1s 0s 36525d")
    check_configuration(project)


@pytest.mark.parametrize(
    ("old", "new", "named"),
    [
        ("payment-ledger,CLUSTERING,ORDERLY", "payment-ledger,CLUSTERING,ORDERED", "'ORDERED'"),
        ("order-service,CLUSTERING", "order-service,CLUSTER", "'CLUSTER'"),
        (
            "payment-ledger,CLUSTERING,ORDERLY,3,1000",
            "payment-ledger,CLUSTERING,ORDERLY,3,-5",
            "'-5'",
        ),
        (
            "inventory-sync,CLUSTERING,CONCURRENTLY,3",
            "inventory-sync,CLUSTERING,CONCURRENTLY,x",
            "'x'",
        ),
        ("inventory-sync,", "order-service,", "listed twice"),
    ],
)
def test_bad_group_rows_name_file_row_and_value(project: Path, old: str, new: str, named: str):
    seed = project / "seeds" / "consumer_groups.csv"
    _replace(seed, old, new)
    with pytest.raises(ConfigError) as error:
        check_configuration(project)
    message = str(error.value)
    assert "consumer_groups.csv" in message and "row " in message and named in message


def test_a_bad_broker_version_names_file_row_and_value(project: Path):
    seed = project / "seeds" / "broker_delay_levels.csv"
    _replace(seed, "fast-cluster,5s 8s,4.9", "fast-cluster,5s 8s,five")
    with pytest.raises(ConfigError) as error:
        check_configuration(project)
    message = str(error.value)
    assert "broker_delay_levels.csv, row 3, broker_version: 'five'" in message


def test_the_broker_version_column_is_optional(project: Path):
    seed = project / "seeds" / "broker_delay_levels.csv"
    lines = seed.read_text().splitlines()
    seed.write_text("\n".join(line.rsplit(",", 1)[0] for line in lines) + "\n")
    assert seed.read_text().startswith("broker_cluster,message_delay_level\n")
    check_configuration(project)
    seed.write_text(seed.read_text().replace("message_delay_level", "message_delay_level,extra", 1))
    with pytest.raises(ConfigError, match="row 1: header is"):
        check_configuration(project)


def test_a_seed_written_before_consume_timeout_minutes_still_reads(project: Path):
    seed = project / "seeds" / "consumer_groups.csv"
    rows = [line.split(",") for line in seed.read_text().splitlines()]
    column = rows[0].index("consume_timeout_minutes")
    seed.write_text("".join(",".join(row[:column] + row[column + 1 :]) + "\n" for row in rows))
    check_configuration(project)
    # an unknown column in its place is still an error, naming the optional one
    seed.write_text(seed.read_text().replace("client_line,", "client_line,bogus,", 1))
    with pytest.raises(ConfigError, match=r"consume_timeout_minutes \(optional\)"):
        check_configuration(project)


def test_a_seed_written_before_every_optional_column_still_reads(project: Path):
    """The columns added since the first release, the 5.x ones among them, may all be missing."""
    seed = project / "seeds" / "consumer_groups.csv"
    rows = list(csv.reader(seed.read_text().splitlines()))
    kept = [i for i, name in enumerate(rows[0]) if name not in GROUP_OPTIONAL_COLUMNS]
    assert len(kept) == len(GROUP_COLUMNS) - 4
    with seed.open("w", newline="") as handle:
        csv.writer(handle).writerows([[row[i] for i in kept] for row in rows])
    check_configuration(project)


def test_a_bad_consume_timeout_names_file_row_and_value(project: Path):
    seed = project / "seeds" / "consumer_groups.csv"
    _replace(seed, "remoting-4.9,15,", "remoting-4.9,0,")
    with pytest.raises(ConfigError, match="row 2, consume_timeout_minutes: '0' is below 1"):
        check_configuration(project)


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        # 100 years: 52,596,000 minutes, 3,155,760,000,000 ms
        (
            "remoting-4.9,15,",
            "remoting-4.9,52596001,",
            "consume_timeout_minutes: '52596001' is above 52596000",
        ),
        (
            ",1000,1,0,",
            ",3155760000001,1,0,",
            "suspend_current_queue_time_millis: '3155760000001' is above 3155760000000",
        ),
    ],
)
def test_a_wait_longer_than_100_years_names_file_row_and_value(
    project: Path, old: str, new: str, message: str
):
    seed = project / "seeds" / "consumer_groups.csv"
    _replace(seed, old, new)
    with pytest.raises(ConfigError, match=re.escape(f"consumer_groups.csv, row 2, {message}")):
        check_configuration(project)
    _replace(seed, new, new.replace("0001,", "0000,").replace("6001,", "6000,"))
    check_configuration(project)


@pytest.mark.parametrize(
    ("policy", "message"),
    [
        ("{not json", "is not JSON"),
        ('{"type":"LINEAR"}', "type 'LINEAR' is not one of CUSTOMIZED, EXPONENTIAL"),
        ('{"type":"CUSTOMIZED","customizedRetryPolicy":{"next":[]}}', "non-empty list"),
        ('{"type":"CUSTOMIZED","customizedRetryPolicy":{"next":[1000,"5s"]}}', "holds '5s'"),
        (
            '{"type":"EXPONENTIAL","exponentialRetryPolicy":{"initial":5000,"multiplier":0}}',
            "exponentialRetryPolicy.multiplier is 0",
        ),
        # objects of the wrong shape, and numbers beyond Java's long and int
        ('{"customizedRetryPolicy":"x"}', 'customizedRetryPolicy is "x", not a JSON object'),
        (
            '{"type":"EXPONENTIAL","exponentialRetryPolicy":[1]}',
            "exponentialRetryPolicy is [1], not a JSON object",
        ),
        (
            '{"customizedRetryPolicy":{"next":[9223372036854775808]}}',
            "next holds 9223372036854775808",
        ),
        (
            '{"type":"EXPONENTIAL","exponentialRetryPolicy":{"multiplier":2147483648}}',
            "multiplier is 2147483648",
        ),
        # waits longer than 100 years (3,155,760,000,000 ms)
        (
            '{"customizedRetryPolicy":{"next":[1000,3155760000001]}}',
            "next holds 3155760000001, longer than the 100 years",
        ),
        (
            '{"type":"EXPONENTIAL","exponentialRetryPolicy":{"max":3155760000001}}',
            "exponentialRetryPolicy.max is 3155760000001, not a whole number from 0 to "
            "3155760000000",
        ),
    ],
)
def test_a_bad_group_retry_policy_names_row_and_value(tmp_path: Path, policy: str, message: str):
    seed = tmp_path / "consumer_groups.csv"
    with seed.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(GROUP_COLUMNS)
        writer.writerow(["grpc-orders", *[""] * 7, "grpc-5", "", policy, "3", "PUSH", "true"])
    with pytest.raises(ConfigError) as raised:
        check_consumer_groups(seed)
    assert f"{seed}, row 2, group_retry_policy" in str(raised.value)
    assert message in str(raised.value)


def test_good_5x_rows_pass(tmp_path: Path):
    seed = tmp_path / "consumer_groups.csv"
    with seed.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(GROUP_COLUMNS)
        exponential = (
            '{"type":"EXPONENTIAL",'
            '"exponentialRetryPolicy":{"initial":5000,"max":60000,"multiplier":2}}'
        )
        writer.writerow(["a", *[""] * 7, "grpc-5", "", exponential, "5", "PUSH", ""])
        writer.writerow(["b", "", "ORDERLY", *[""] * 5, "cloud-5", "", "", "3", "PUSH", "false"])
        writer.writerow(["c", *[""] * 7, "grpc-5", "", '{"type":"EXPONENTIAL"}', "", "SIMPLE", ""])
    check_consumer_groups(seed)
    with seed.open("a", newline="") as handle:
        csv.writer(handle).writerow(["d", *[""] * 7, "cloud-5", "", "", "", "PULL", ""])
    with pytest.raises(
        ConfigError, match="row 5, consumer_kind: 'PULL' is not one of PUSH, SIMPLE"
    ):
        check_consumer_groups(seed)


def _whatif_project(tmp_path: Path, delay_rows: str, group_rows: str) -> Path:
    project = tmp_path / "project"
    shutil.copytree(PROJECT_DIR / "seeds", project / "seeds")
    shutil.copy(PROJECT_DIR / "dbt_project.yml", project / "dbt_project.yml")
    (project / "seeds" / "whatif_delay_levels.csv").write_text(
        "scenario,broker_cluster,message_delay_level\n" + delay_rows
    )
    (project / "seeds" / "whatif_consumer_groups.csv").write_text(
        "scenario,consumer_group,max_reconsume_times,retry_max_times,group_retry_policy,"
        "replay_model\n" + group_rows
    )
    return project


def test_the_shipped_whatif_scenarios_pass(tmp_path: Path):
    check_configuration(_whatif_project(tmp_path, "b,*,5s 30s\n", "b,order-service,5,,,\n"))


def test_a_whatif_row_for_a_group_the_seed_does_not_list_is_left_to_the_build(tmp_path: Path):
    # the data gives such a group its line (grpc-5 when seen only in 5.x spans or events), so
    # either kind of setting passes here and the what-if build's data test judges it
    project = _whatif_project(tmp_path, "", "b,spans-only,,5,,\nc,spans-only,5,,,\n")
    check_configuration(project)
    # a listed group with no client_line has the default line, remoting-4.9
    _replace(project / "seeds" / "consumer_groups.csv", "remoting-4.9,15,", ",15,")
    (project / "seeds" / "whatif_consumer_groups.csv").write_text(
        "scenario,consumer_group,max_reconsume_times,retry_max_times,group_retry_policy,"
        "replay_model\nb,order-service,,5,,\n"
    )
    with pytest.raises(ConfigError, match=re.escape("'order-service' is a remoting-4.9 group")):
        check_configuration(project)


@pytest.mark.parametrize(
    ("delay_rows", "group_rows", "message"),
    [
        ("observed,*,5s\n", "", "whatif_delay_levels.csv, row 2, scenario: 'observed' is reserved"),
        ("b,nowhere,5s\n", "", "row 2, broker_cluster: 'nowhere' is not a cluster"),
        ("b,*,5s\nb,*,10s\n", "", "row 3, broker_cluster: '*' is listed twice"),
        ("b,*,5 s\n", "", "whatif_delay_levels.csv, row 2, message_delay_level"),
        ("", "b,order-service,x,,,\n", "row 2, max_reconsume_times: 'x' is not a whole number"),
        ("", "b,checkout-push,5,,,\n", "checkout-push' is a grpc-5 group"),
        ("", "b,order-service,,5,,\n", "order-service' is a remoting-4.9 group"),
        (
            "",
            "b,order-service,,,,LATER\n",
            "replay_model: 'LATER' is not one of ATTEMPT_INDEX, WALL_CLOCK",
        ),
        ("", 'b,notify-exp,,,"{""type"":""X""}",\n', "group_retry_policy: type 'X'"),
    ],
)
def test_a_bad_whatif_scenario_names_file_row_and_value(
    tmp_path: Path, delay_rows: str, group_rows: str, message: str
):
    with pytest.raises(ConfigError, match=re.escape(message)):
        check_configuration(_whatif_project(tmp_path, delay_rows, group_rows))


# What dbt's seed loader (agate) makes of a seed, and what Spark's casts make of its values,
# decide these cases: a row dbt would load as nulls, or a value Spark would turn into null,
# stops the build here rather than halfway through it or silently.


def _group_seed(tmp_path: Path, *rows: str) -> Path:
    """consumer_groups.csv with the shipped header and ``rows`` as written."""
    seed = tmp_path / "consumer_groups.csv"
    seed.write_text(",".join(GROUP_COLUMNS) + "\n" + "".join(rows), encoding="utf-8")
    return seed


GOOD_ROW = "a,CLUSTERING,CONCURRENTLY,3,1000,1,0,DefaultCluster,remoting-4.9,15,,,,\n"


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        # agate loads a blank or whitespace-only line as a row of nulls: a group named null
        ([GOOD_ROW, "\n", GOOD_ROW.replace("a,", "b,", 1)], "row 3: empty"),
        ([GOOD_ROW, "  \n"], "row 3: empty"),
        ([GOOD_ROW, "\n"], "row 3: empty"),
        # dbt's load fails on a row longer than the header
        ([GOOD_ROW.replace(",\n", ",,\n")], "row 2: 15 values for 14 columns"),
        # rows are counted as a spreadsheet shows them, a quoted line break inside one cell
        (
            ['"a\nb",CLUSTERING,,,,,,,,,,,,\n', GOOD_ROW.replace("CLUSTERING", "CLUSTER")],
            "row 3, message_model: 'CLUSTER'",
        ),
    ],
)
def test_a_row_dbt_would_load_wrongly_is_refused(tmp_path: Path, rows: list[str], message: str):
    with pytest.raises(ConfigError, match=re.escape(message)):
        check_consumer_groups(_group_seed(tmp_path, *rows))


@pytest.mark.parametrize(
    ("column", "value", "message"),
    [
        # Spark casts only ASCII digits within Java's int to an int column; else null
        ("max_reconsume_times", "3000000000", "'3000000000' is above 2147483647"),
        ("retry_max_times", "2147483648", "'2147483648' is above 2147483647"),
        ("max_reconsume_times", "1_0", "'1_0' is not a whole number"),
        ("max_reconsume_times", "\u0663", "'\u0663' is not a whole number"),
        ("consume_timeout_minutes", "3.0", "'3.0' is not a whole number"),
        # suspendCurrentQueueTimeMillis is a long, here at most 100 years
        (
            "suspend_current_queue_time_millis",
            "9223372036854775808",
            "is above 3155760000000",
        ),
        # names dbt reads as no value, or that match nothing
        ("consumer_group", "null", "consumer_group: 'null' is read by dbt as no value"),
        ("consumer_group", "NULL", "consumer_group: 'NULL' is read by dbt as no value"),
        ("consumer_group", "order-service ", "'order-service ' has spaces around the name"),
        ("broker_cluster", " DefaultCluster", "' DefaultCluster' has spaces around the name"),
        ("broker_cluster", "null", "broker_cluster: 'null' is read by dbt as no value"),
    ],
)
def test_a_value_spark_or_dbt_would_read_as_null_is_refused(
    tmp_path: Path, column: str, value: str, message: str
):
    row = dict(zip(GROUP_COLUMNS, GOOD_ROW.strip().split(","), strict=True))
    row[column] = value
    seed = _group_seed(tmp_path)
    with seed.open("a", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerow(row.values())
    with pytest.raises(ConfigError) as raised:
        check_consumer_groups(seed)
    assert f"{seed}, row 2, {column}: " in str(raised.value)
    assert message in str(raised.value)


def test_values_dbt_and_spark_read_as_meant_pass(tmp_path: Path):
    # Spark trims an integer's spaces and reads a sign; agate reads TRUE as true; a long fits
    check_consumer_groups(
        _group_seed(
            tmp_path,
            "a,CLUSTERING,CONCURRENTLY, 3 ,3155760000000,+1,-1,DefaultCluster,"
            "remoting-4.9,15,,,,\n",
            'b,,,,,,,,grpc-5,,"{""type"":null}",2147483647,PUSH,TRUE\n',
            "c,CLUSTERING\n",  # a short row: the missing cells are empty, as dbt loads them
        )
    )


def test_a_seed_with_a_byte_order_mark_reads_as_dbt_reads_it(project: Path):
    for name in ("consumer_groups.csv", "broker_delay_levels.csv"):
        seed = project / "seeds" / name
        seed.write_bytes(b"\xef\xbb\xbf" + seed.read_bytes())
    check_configuration(project)


def test_a_seed_not_in_utf8_names_the_file_and_byte(project: Path):
    seed = project / "seeds" / "consumer_groups.csv"
    seed.write_bytes(seed.read_bytes().replace(b"order-service,", b"order-servic\xe9,", 1))
    with pytest.raises(ConfigError, match=r"consumer_groups\.csv: byte \d+ is not UTF-8"):
        check_configuration(project)


def test_retrylake_check_runs_the_check_alone(project: Path, capsys: pytest.CaptureFixture):
    """`retrylake check`, for the plain dbt CLI's route, which loads the seeds without it."""
    from retrylake.cli import main

    assert main(["check", "--project-dir", str(project)]) == 0
    assert "are valid" in capsys.readouterr().err
    _replace(project / "seeds" / "broker_delay_levels.csv", "1s 5s", "1s 5x")
    assert main(["check", "--project-dir", str(project)]) != 0
    error = capsys.readouterr().err
    assert "broker_delay_levels.csv, row 2, message_delay_level" in error and "5x" in error


def test_a_broker_version_in_other_digits_than_ascii_is_refused(project: Path):
    """Spark casts no other digits to int: a full-width version would read as no version and
    take the 5.x broker's rules."""
    seed = project / "seeds" / "broker_delay_levels.csv"
    _replace(seed, "fast-cluster,5s 8s,4.9", "fast-cluster,5s 8s,\uff14.\uff19")
    with pytest.raises(ConfigError, match="row 3, broker_version"):
        check_configuration(project)


@pytest.mark.parametrize(
    ("policy", "message"),
    [
        # Spark's JSON reader reads no document with NaN, and takes the first of two keys
        (
            '{"type":"EXPONENTIAL","exponentialRetryPolicy":{"initial":5000,"x":NaN}}',
            "holds NaN",
        ),
        ('{"type":"CUSTOMIZED","type":"EXPONENTIAL"}', "gives 'type' twice"),
        ('{"customizedRetryPolicy":{"next":[1000],"next":[2000]}}', "gives 'next' twice"),
    ],
)
def test_a_policy_spark_reads_otherwise_than_the_check_is_refused(
    tmp_path: Path, policy: str, message: str
):
    seed = tmp_path / "consumer_groups.csv"
    with seed.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(GROUP_COLUMNS)
        writer.writerow(["grpc-orders", *[""] * 7, "grpc-5", "", policy, "3", "PUSH", "true"])
    with pytest.raises(ConfigError, match=re.escape(message)):
        check_consumer_groups(seed)


def test_only_a_cloud_5_group_turns_dead_letters_off(project: Path):
    """Open-source RocketMQ has no switch for dead letters (spec §8.5): false on another line
    would make the rules drop them."""
    seed = project / "seeds" / "consumer_groups.csv"
    _replace(
        seed,
        "cloud-fifo,CLUSTERING,ORDERLY,,,,,DefaultCluster,cloud-5,",
        "cloud-fifo,CLUSTERING,ORDERLY,,,,,DefaultCluster,grpc-5,",
    )
    with pytest.raises(ConfigError, match="dead_letter_enabled: 'false' on a grpc-5 group"):
        check_configuration(project)
    _replace(  # the default line: remoting-4.9
        seed,
        "cloud-fifo,CLUSTERING,ORDERLY,,,,,DefaultCluster,grpc-5,",
        "cloud-fifo,CLUSTERING,ORDERLY,,,,,DefaultCluster,,",
    )
    with pytest.raises(ConfigError, match=r"on a remoting-4\.9 group"):
        check_configuration(project)


@pytest.mark.parametrize(
    ("old", "new", "named"),
    [
        # a word the macros would cast to 0: every failure straight to the DLQ
        (
            "    max_reconsume_times: -1\n",
            "    max_reconsume_times: sixteen\n",
            "vars.consumer_group_defaults.max_reconsume_times: 'sixteen' is not a whole number",
        ),
        # a quoted "false", which the macros would read as true
        (
            "    dead_letter_enabled: true\n",
            '    dead_letter_enabled: "false"\n',
            "vars.consumer_group_defaults.dead_letter_enabled: 'false' is not true or false",
        ),
        (
            "    dead_letter_enabled: true\n",
            "    dead_letter_enabled: false\n",
            "only the managed service can turn dead letters off",
        ),
        (
            "    consume_timeout_minutes: 15\n",
            "    consume_timeout_minutes: 15m\n",
            "vars.consumer_group_defaults.consume_timeout_minutes: '15m'",
        ),
        (
            "    client_line: remoting-4.9\n",
            "    client_line: remoting-4.8\n",
            "is not one of remoting-4.9",
        ),
        ('default_broker_version: "4.9"', "default_broker_version: 4.10", "4.1 is not a version"),
        (
            "  exponential_retry_policy_default: {initial: 5000, max: 7200000, multiplier: 2}",
            "  exponential_retry_policy_default: {initial: 5000, max: 7200000}",
            "has no multiplier",
        ),
        ("    min_failure_rate: 0.5\n", "    min_failure_rate: 50\n", "from 0 to 1"),
        ("  published_builds_kept: 10\n", "  published_builds_kept: 0\n", "from 1 to"),
    ],
)
def test_a_bad_project_var_names_file_line_and_value(project: Path, old: str, new: str, named: str):
    """The vars of dbt_project.yml are the configuration too: checked before any table changes,
    with the line of the value."""
    path = project / "dbt_project.yml"
    _replace(path, old, new)
    line = next(n for n, text in enumerate(path.read_text().splitlines(), 1) if new.strip() in text)
    with pytest.raises(ConfigError) as error:
        check_configuration(project)
    assert f"{path}, line {line}, " in str(error.value)
    assert named in str(error.value)


def test_a_var_dbt_renders_is_left_to_dbt(project: Path):
    path = project / "dbt_project.yml"
    _replace(
        path,
        "  trace_clock_skew_hours: 24\n",
        "  trace_clock_skew_hours: \"{{ env_var('SKEW_HOURS', 24) }}\"\n",
    )
    check_configuration(project)
    # and so is a mapping dbt renders, in the file or given on the command line
    rendered = "{{ fromyaml(env_var('GROUP_DEFAULTS')) }}"
    check_configuration(project, {"consumer_group_defaults": rendered})
    path.write_text(path.read_text().replace("  whatif_max_tries: 1000\n", ""))
    with pytest.raises(ConfigError, match="vars has no whatif_max_tries"):
        check_configuration(project)


def test_a_project_scoped_var_is_checked_where_it_is_written(project: Path):
    """dbt reads `vars: {retrylake: {...}}` before the global vars for the project's models:
    a bad value there is named at its own line, and a good one there overrides a bad global."""
    path = project / "dbt_project.yml"
    written = "  retrylake:\n    whatif_max_tries: many\n"
    _replace(path, "  published_builds_kept: 10\n", "  published_builds_kept: 10\n" + written)
    scoped = path.read_text()
    line = scoped[: scoped.index(written)].count("\n") + 2
    with pytest.raises(ConfigError) as error:
        check_configuration(project)
    assert f"{path}, line {line}, vars.retrylake.whatif_max_tries: 'many' is not a whole" in str(
        error.value
    )
    # the scoped value is the one the models read: a bad global one under it is not
    path.write_text(
        scoped.replace("whatif_max_tries: many", "whatif_max_tries: 50").replace(
            "  whatif_max_tries: 1000\n", "  whatif_max_tries: 0\n"
        )
    )
    check_configuration(project)
    # and a value given with --vars is read before both
    with pytest.raises(ConfigError, match="--vars, whatif_max_tries: 0 "):
        check_configuration(project, {"whatif_max_tries": 0})


DEFAULTS = {
    "message_model": "CLUSTERING",
    "consume_mode": "CONCURRENTLY",
    "max_reconsume_times": -1,
    "suspend_current_queue_time_millis": 1000,
    "retry_queue_nums": 1,
    "delay_level_when_next_consume": 0,
    "broker_cluster": "*",
    "client_line": "remoting-4.9",
    "consume_timeout_minutes": 15,
    "retry_max_times": 16,
    "consumer_kind": "PUSH",
    "dead_letter_enabled": True,
}


@pytest.mark.parametrize(
    ("given", "named"),
    [
        (
            {"retry_overdue_grace_seconds": "soon"},
            "--vars, retry_overdue_grace_seconds: 'soon' is not a whole number",
        ),
        ({"schedule_fit_min_redeliveries": 0}, "--vars, schedule_fit_min_redeliveries: 0 "),
        # dbt replaces a mapping var whole: the macros would read the missing field as none
        (
            {"consumer_group_defaults": {"message_model": "BROADCASTING"}},
            "--vars, consumer_group_defaults: {'message_model': 'BROADCASTING'} has no "
            "consume_mode (--vars replaces the project's consumer_group_defaults whole",
        ),
        (
            {"consumer_group_defaults": {**DEFAULTS, "dead_letter_enabled": False}},
            "--vars, consumer_group_defaults.dead_letter_enabled: False on the default line "
            "remoting-4.9",
        ),
        # a name dbt would take and no model read
        (
            {"schedule_fit_min_redeliverie": 5},
            "--vars, schedule_fit_min_redeliverie: no model reads this name; the nearest they "
            "read is schedule_fit_min_redeliveries",
        ),
    ],
)
def test_a_bad_var_given_on_the_command_line_is_named(project: Path, given: dict, named: str):
    """`retrylake dbt -- run --vars ...`: the values given replace the project's and are
    checked by the same rules, before any table changes."""
    with pytest.raises(ConfigError) as error:
        check_configuration(project, given)
    assert str(error.value).startswith(named), str(error.value)


def test_good_vars_given_on_the_command_line_pass_and_set_the_default_line(project: Path):
    # names no model reads and that resemble none are the user's (a run-operation's, say)
    check_configuration(
        project,
        {"schedule_fit_min_redeliveries": 5, "max_days": 3, "consumer_group_defaults": DEFAULTS},
    )
    # a group row with no client_line takes the default line, which --vars may set: only on
    # cloud-5 may it turn dead letters off
    seed = project / "seeds" / "consumer_groups.csv"
    _replace(seed, "DefaultCluster,cloud-5,,,16,PUSH,true\n", "DefaultCluster,,,,16,PUSH,false\n")
    with pytest.raises(ConfigError, match=r"dead_letter_enabled.*remoting-4\.9 group"):
        check_configuration(project)
    cloud_defaults = {**DEFAULTS, "client_line": "cloud-5"}
    check_configuration(project, {"consumer_group_defaults": cloud_defaults})
