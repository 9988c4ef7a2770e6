"""Check the configuration seeds before dbt touches any table.

dbt loads seeds as part of the build, so a bad delay string would otherwise be found only after
tables had changed. The checks reuse the broker's own parser from spark_udfs.
"""

from __future__ import annotations

import csv
import difflib
import json
import re
from pathlib import Path

from retrylake.errors import ConfigError
from retrylake.project import project_file, project_var, vars_read_by_models
from spark_udfs import DelayLevelError, parse_delay_levels

MESSAGE_MODELS = ("CLUSTERING", "BROADCASTING")
CONSUME_MODES = ("CONCURRENTLY", "ORDERLY")
CLIENT_LINES = ("remoting-4.9", "remoting-5", "grpc-5", "cloud-5")
CONSUMER_KINDS = ("PUSH", "SIMPLE")
BOOLEANS = ("true", "false")
RETRY_POLICY_TYPES = ("CUSTOMIZED", "EXPONENTIAL")
GROUP_COLUMNS = (
    "consumer_group",
    "message_model",
    "consume_mode",
    "max_reconsume_times",
    "suspend_current_queue_time_millis",
    "retry_queue_nums",
    "delay_level_when_next_consume",
    "broker_cluster",
    "client_line",
    "consume_timeout_minutes",
    "group_retry_policy",
    "retry_max_times",
    "consumer_kind",
    "dead_letter_enabled",
)
# Columns added since the first release: a seed written before them still reads, and the
# build takes RocketMQ's default for them.
GROUP_OPTIONAL_COLUMNS = (
    "consume_timeout_minutes",
    "retry_max_times",
    "consumer_kind",
    "dead_letter_enabled",
)
DELAY_COLUMNS = ("broker_cluster", "message_delay_level", "broker_version")
WHATIF_DELAY_COLUMNS = ("scenario", "broker_cluster", "message_delay_level")
WHATIF_GROUP_COLUMNS = (
    "scenario",
    "consumer_group",
    "max_reconsume_times",
    "retry_max_times",
    "group_retry_policy",
    "replay_model",
)
REPLAY_MODELS = ("ATTEMPT_INDEX", "WALL_CLOCK")
SCENARIO_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
# The replay of the observed settings themselves, which every scenario is compared with.
OBSERVED_SCENARIO = "observed"
DELAY_OPTIONAL_COLUMNS = ("broker_version",)
# ASCII digits only: Spark casts no other digits to int (full-width ones would read as null)
BROKER_VERSION = re.compile(r"[0-9]+\.[0-9]+(\.[0-9]+)?")


def _rows(
    path: Path, columns: tuple[str, ...], optional: tuple[str, ...] = ()
) -> list[tuple[int, dict[str, str]]]:
    """The rows of a seed whose header is ``columns`` in order, any of ``optional`` left out.

    Read as dbt loads a seed (agate): a UTF-8 byte-order mark is skipped, a short row's missing
    cells are empty; a blank row, which dbt would load as a row of nulls, and a row longer than
    the header, which fails dbt's load halfway through the build, are refused here.
    """
    if not path.exists():
        raise ConfigError(f"{path}: file not found")
    try:
        with path.open(newline="", encoding="utf-8-sig") as handle:
            records = list(csv.reader(handle))
    except UnicodeDecodeError as error:
        raise ConfigError(
            f"{path}: byte {error.start} is not UTF-8 ({error.object[error.start : error.end]!r}); "
            "save the file as UTF-8"
        ) from None
    header = tuple(records[0]) if records else ()
    if header != tuple(name for name in columns if name in header or name not in optional):
        expected = [f"{name} (optional)" if name in optional else name for name in columns]
        raise ConfigError(f"{path}, row 1: header is {list(header)}, expected {expected}")
    rows = []
    # Row numbers as a spreadsheet shows them: the header is row 1.
    for number, values in enumerate(records[1:], start=2):
        if not any(value.strip() for value in values):
            raise ConfigError(
                f"{path}, row {number}: empty; dbt would load it as a row of nulls, so delete it"
            )
        if len(values) > len(header):
            raise ConfigError(
                f"{path}, row {number}: {len(values)} values for {len(header)} columns "
                f"(the extra ones: {values[len(header) :]!r})"
            )
        padded = values + [""] * (len(header) - len(values))  # a short row: empty cells
        rows.append((number, dict(zip(header, padded, strict=True))))
    return rows


# Java's int and long: the seed's integer columns are cast to them, and a value out of range
# (or written other than in ASCII digits) would become null rather than an error.
JAVA_INT = 2**31 - 1
JAVA_LONG = 2**63 - 1
# The longest wait the ledger adds to a time: 100 years. The broker takes longer delays (up to
# Java's long), but a retry due centuries on is no schedule, and times that far out leave what
# Spark's arithmetic (long overflow), Parquet readers and pandas' timestamps (to 2262) hold.
LONGEST_WAIT_MS = 36_525 * 86_400_000
LONGEST_WAIT = "100 years (3,155,760,000,000 ms)"
WHOLE_NUMBER = re.compile(r"[ \t]*[+-]?[0-9]+[ \t]*")
# Cells dbt's seed loader reads as no value at all (agate compares them stripped, lower case).
NULL_TEXT = ("", "null")


def _integer(
    path: Path,
    number: int,
    row: dict[str, str],
    column: str,
    minimum: int,
    maximum: int = JAVA_INT,
) -> None:
    value = row.get(column)
    if value in ("", None):
        return
    if not WHOLE_NUMBER.fullmatch(value):
        raise ConfigError(f"{path}, row {number}, {column}: {value!r} is not a whole number")
    parsed = int(value)
    if parsed < minimum:
        raise ConfigError(f"{path}, row {number}, {column}: {value!r} is below {minimum}")
    if parsed > maximum:
        raise ConfigError(f"{path}, row {number}, {column}: {value!r} is above {maximum}")


def _name(path: Path, number: int, row: dict[str, str], column: str) -> str:
    """A group's or cluster's name, matched as written against the trace and the other seed."""
    value = row[column]
    if value.strip().lower() in NULL_TEXT:
        raise ConfigError(
            f"{path}, row {number}, {column}: "
            + ("empty" if not value else f"{value!r} is read by dbt as no value")
        )
    if value != value.strip():
        raise ConfigError(
            f"{path}, row {number}, {column}: {value!r} has spaces around the name, so it "
            "would match no name in the trace or the other seed"
        )
    return value


def _choice(
    path: Path,
    number: int,
    row: dict[str, str],
    column: str,
    allowed: tuple[str, ...],
    *,
    ignore_case: bool = False,
) -> None:
    value = row.get(column, "")  # an optional column the seed was written without: empty
    if (value.lower() if ignore_case else value) not in ("", *allowed):
        raise ConfigError(
            f"{path}, row {number}, {column}: {value!r} is not one of {', '.join(allowed)}"
        )


def check_delay_levels(path: Path) -> None:
    seen: dict[str, int] = {}
    for number, row in _rows(path, DELAY_COLUMNS, DELAY_OPTIONAL_COLUMNS):
        cluster = _name(path, number, row, "broker_cluster")
        if cluster in seen:
            raise ConfigError(
                f"{path}, row {number}, broker_cluster: {cluster!r} is listed twice "
                f"(also row {seen[cluster]})"
            )
        seen[cluster] = number
        _delay_levels(path, number, row["message_delay_level"])
        version = row.get("broker_version") or ""
        if version and not BROKER_VERSION.fullmatch(version):
            raise ConfigError(
                f"{path}, row {number}, broker_version: {version!r} is not a version such as "
                "4.9 or 5.3"
            )
    if "*" not in seen:
        raise ConfigError(f"{path}: no default row with broker_cluster '*'")


def _delay_levels(path: Path, number: int, text: str) -> None:
    """A delay string the broker would start with, none of whose delays is too long to place."""
    try:
        levels = parse_delay_levels(text)
    except DelayLevelError as error:
        raise ConfigError(f"{path}, row {number}, message_delay_level: {error}") from None
    for level, token, delay_ms in levels:
        if delay_ms > LONGEST_WAIT_MS:
            raise ConfigError(
                f"{path}, row {number}, message_delay_level: delay token {token!r} at position "
                f"{level} is {delay_ms:,} ms, longer than the {LONGEST_WAIT} retrylake places "
                "on a timeline"
            )


def check_consumer_groups(path: Path, default_client_line: str | None = None) -> None:
    """``default_client_line``: the line of a row whose cell is empty (None: not known here)."""
    seen: dict[str, int] = {}
    for number, row in _rows(path, GROUP_COLUMNS, GROUP_OPTIONAL_COLUMNS):
        group = _name(path, number, row, "consumer_group")
        if group in seen:
            raise ConfigError(
                f"{path}, row {number}, consumer_group: {group!r} is listed twice "
                f"(also row {seen[group]})"
            )
        seen[group] = number
        _choice(path, number, row, "message_model", MESSAGE_MODELS)
        _choice(path, number, row, "consume_mode", CONSUME_MODES)
        _choice(path, number, row, "client_line", CLIENT_LINES)
        _integer(path, number, row, "max_reconsume_times", -1)
        _integer(path, number, row, "suspend_current_queue_time_millis", 0, LONGEST_WAIT_MS)
        _integer(path, number, row, "retry_queue_nums", -(2**31))
        _integer(path, number, row, "delay_level_when_next_consume", -(2**31))
        _integer(path, number, row, "consume_timeout_minutes", 1, LONGEST_WAIT_MS // 60_000)
        _integer(path, number, row, "retry_max_times", 0)
        _choice(path, number, row, "consumer_kind", CONSUMER_KINDS)
        if row["broker_cluster"]:
            _name(path, number, row, "broker_cluster")
        _choice(path, number, row, "dead_letter_enabled", BOOLEANS, ignore_case=True)
        line = row["client_line"] or default_client_line
        off = (row.get("dead_letter_enabled") or "").lower() == "false"
        if off and line is not None and not _turns_dead_letters_off(line):
            raise ConfigError(
                f"{path}, row {number}, dead_letter_enabled: {row['dead_letter_enabled']!r} on a "
                f"{line} group; {NO_DEAD_LETTER_SWITCH}"
            )
        _retry_policy(path, number, row.get("group_retry_policy") or "")


# Only the managed service turns a group's dead letters off (spec §8.5).
NO_DEAD_LETTER_SWITCH = (
    "only the managed service can turn dead letters off (cloud-5), open-source RocketMQ has no "
    "such switch (a group whose retryQueueNums is 0 or less drops them: retry_queue_nums)"
)


def _turns_dead_letters_off(client_line: str) -> bool:
    return client_line == "cloud-5"


def _retry_policy(path: Path, number: int, text: str) -> None:
    """The JSON `mqadmin updateSubGroup -p` takes (spec §8.1): a CUSTOMIZED policy's `next` is a
    list of delays in ms; an EXPONENTIAL one's `initial`, `max` and `multiplier` are numbers.
    A missing policy object means the default of its type, and a missing or null type
    CUSTOMIZED (GroupRetryPolicyTest, spec §9)."""
    if not text:
        return
    where = f"{path}, row {number}, group_retry_policy"
    try:
        policy = json.loads(
            text, parse_constant=_not_json_number, object_pairs_hook=_object_of_distinct_keys
        )
    except json.JSONDecodeError as error:
        raise ConfigError(f"{where}: {text!r} is not JSON ({error.msg})") from None
    except ValueError as error:  # what Spark's JSON reader would not read as this check does
        raise ConfigError(f"{where}: {text!r} {error}") from None
    if not isinstance(policy, dict):
        raise ConfigError(f"{where}: {text!r} is not a JSON object")
    kind = policy.get("type") or "CUSTOMIZED"
    if kind not in RETRY_POLICY_TYPES:
        raise ConfigError(f"{where}: type {kind!r} is not one of {', '.join(RETRY_POLICY_TYPES)}")
    if kind == "CUSTOMIZED":
        delays = _policy_object(where, policy, "customizedRetryPolicy").get("next")
        if delays is None:
            return
        if not isinstance(delays, list) or not delays:
            raise ConfigError(f"{where}: customizedRetryPolicy.next must be a non-empty list")
        for delay in delays:
            if not _whole(delay, 0, JAVA_LONG):
                raise ConfigError(
                    f"{where}: customizedRetryPolicy.next holds {delay!r}, "
                    "not a delay in milliseconds"
                )
            if delay > LONGEST_WAIT_MS:
                raise ConfigError(
                    f"{where}: customizedRetryPolicy.next holds {delay!r}, longer than the "
                    f"{LONGEST_WAIT} retrylake places on a timeline"
                )
        return
    exponential = _policy_object(where, policy, "exponentialRetryPolicy")
    # Java's types: initial and max are longs (here at most the longest wait), multiplier an int
    for field, minimum, maximum in (
        ("initial", 0, LONGEST_WAIT_MS),
        ("max", 0, LONGEST_WAIT_MS),
        ("multiplier", 1, JAVA_INT),
    ):
        value = exponential.get(field)
        if value is not None and not _whole(value, minimum, maximum):
            raise ConfigError(
                f"{where}: exponentialRetryPolicy.{field} is {value!r}, "
                f"not a whole number from {minimum} to {maximum}"
            )


def _not_json_number(name: str) -> None:
    """NaN and Infinity, which Python's reader takes and Spark's reads as no document at all."""
    raise ValueError(f"holds {name}, which is not a JSON number")


def _object_of_distinct_keys(pairs: list[tuple[str, object]]) -> dict:
    """A JSON object; a key given twice is refused, since Spark's reader takes the first and
    Python's the last."""
    keys = [key for key, _ in pairs]
    for key in keys:
        if keys.count(key) > 1:
            raise ValueError(f"gives {key!r} twice")
    return dict(pairs)


def _whole(value: object, minimum: int, maximum: int) -> bool:
    """A JSON whole number (not a boolean) from ``minimum`` to ``maximum``."""
    return type(value) is int and minimum <= value <= maximum


def _policy_object(where: str, policy: dict, field: str) -> dict:
    """The policy's ``field`` object; null or missing is the type's default (spec §8.1)."""
    value = policy.get(field)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: {field} is {json.dumps(value)}, not a JSON object")
    return value


def _scenario(path: Path, number: int, row: dict[str, str]) -> str:
    name = row["scenario"]
    if not SCENARIO_NAME.fullmatch(name):
        raise ConfigError(
            f"{path}, row {number}, scenario: {name!r} is not a name (letters, digits, _ . -)"
        )
    if name == OBSERVED_SCENARIO:
        raise ConfigError(
            f"{path}, row {number}, scenario: {name!r} is reserved for the observed settings"
        )
    return name


def check_whatif_delay_levels(path: Path, clusters: set[str]) -> None:
    """Each row gives one scenario's delay string for one broker cluster (`*` the default)."""
    seen: dict[tuple[str, str], int] = {}
    for number, row in _rows(path, WHATIF_DELAY_COLUMNS):
        key = (_scenario(path, number, row), row["broker_cluster"])
        if key[1] not in clusters:
            raise ConfigError(
                f"{path}, row {number}, broker_cluster: {key[1]!r} is not a cluster of "
                f"broker_delay_levels.csv or consumer_groups.csv"
            )
        if key in seen:
            raise ConfigError(
                f"{path}, row {number}, broker_cluster: {key[1]!r} is listed twice for scenario "
                f"{key[0]!r} (also row {seen[key]})"
            )
        seen[key] = number
        _delay_levels(path, number, row["message_delay_level"])


def check_whatif_consumer_groups(path: Path, client_lines: dict[str, str]) -> None:
    """Each row gives one scenario's settings for one group, under the owner's names: the 4.x
    consumer's maxReconsumeTimes, the 5.x group metadata's retryMaxTimes and retry policy.
    ``client_lines`` holds the line of each group consumer_groups.csv lists; a group it does
    not list takes its line from the data (a group seen only in 5.x spans or consume events is
    grpc-5), so the what-if build's test `whatif_settings_apply_to_their_groups` checks its row."""
    seen: dict[tuple[str, str], int] = {}
    for number, row in _rows(path, WHATIF_GROUP_COLUMNS):
        key = (_scenario(path, number, row), _name(path, number, row, "consumer_group"))
        if key in seen:
            raise ConfigError(
                f"{path}, row {number}, consumer_group: {key[1]!r} is listed twice for scenario "
                f"{key[0]!r} (also row {seen[key]})"
            )
        seen[key] = number
        _integer(path, number, row, "max_reconsume_times", -1)
        _integer(path, number, row, "retry_max_times", 0)
        _retry_policy(path, number, row.get("group_retry_policy") or "")
        _choice(path, number, row, "replay_model", REPLAY_MODELS)
        line = client_lines.get(key[1])
        if line is None:
            continue
        grpc = line in ("grpc-5", "cloud-5")
        for column, applies in (
            ("max_reconsume_times", not grpc),
            ("retry_max_times", grpc),
            ("group_retry_policy", grpc),
        ):
            if row[column] and not applies:
                raise ConfigError(
                    f"{path}, row {number}, {column}: {key[1]!r} is a {line} group, which "
                    f"does not read {column}"
                )


def check_configuration(project_dir: Path, given_vars: dict | None = None) -> None:
    """Raise ConfigError naming the file, row and value of the first problem found.
    ``given_vars``: a run's ``--vars``, which replace the project's vars of the same name."""
    check_project_vars(project_dir, given_vars)
    seeds = project_dir / "seeds"
    defaults = (given_vars or {}).get("consumer_group_defaults")
    if defaults is None:
        defaults = project_var("consumer_group_defaults", project_dir)
    # (a value dbt renders, `{{ ... }}`, is left to dbt: its line is not known here)
    default_line = str(defaults["client_line"]) if isinstance(defaults, dict) else None
    check_delay_levels(seeds / "broker_delay_levels.csv")
    check_consumer_groups(seeds / "consumer_groups.csv", default_line)
    # The what-if scenarios (docs/whatif.md); a project without their seeds has none.
    groups = [
        row
        for _, row in _rows(seeds / "consumer_groups.csv", GROUP_COLUMNS, GROUP_OPTIONAL_COLUMNS)
    ]
    delay_rows = _rows(seeds / "broker_delay_levels.csv", DELAY_COLUMNS, DELAY_OPTIONAL_COLUMNS)
    clusters = {row["broker_cluster"] for _, row in delay_rows}
    clusters |= {row["broker_cluster"] for row in groups if row["broker_cluster"]}
    if (seeds / "whatif_delay_levels.csv").exists():
        check_whatif_delay_levels(seeds / "whatif_delay_levels.csv", clusters)
    if (seeds / "whatif_consumer_groups.csv").exists():
        check_whatif_consumer_groups(
            seeds / "whatif_consumer_groups.csv",
            {row["consumer_group"]: row["client_line"] or default_line for row in groups},
        )


# What each var of dbt_project.yml must be; the models, macros and the Python side read them
# (a value the macros would cast to 0, or read as true, must not pass).
def _whole_var(minimum: int, maximum: int = JAVA_INT):
    def check(value: object) -> str | None:
        if not _whole(value, minimum, maximum):
            return f"is not a whole number from {minimum} to {maximum}"
        return None

    return check


def _share_var(value: object) -> str | None:
    if type(value) not in (int, float) or not 0 <= value <= 1:
        return "is not a number from 0 to 1"
    return None


def _choice_var(allowed: tuple[str, ...]):
    def check(value: object) -> str | None:
        return None if value in allowed else f"is not one of {', '.join(allowed)}"

    return check


def _boolean_var(value: object) -> str | None:
    return None if type(value) is bool else "is not true or false (unquoted)"


def _name_var(value: object) -> str | None:
    if not isinstance(value, str) or not value or value != value.strip():
        return "is not a name"
    return None


def _broker_version_var(value: object) -> str | None:
    if not isinstance(value, str) or not BROKER_VERSION.fullmatch(value):
        return 'is not a version in quotes, such as "4.9" or "5.3"'
    return None


def _delays_var(value: object) -> str | None:
    if not isinstance(value, list) or not value:
        return "is not a non-empty list of delays in milliseconds"
    if not all(_whole(delay, 0, LONGEST_WAIT_MS) for delay in value):
        return f"holds a value that is not a delay from 0 ms to {LONGEST_WAIT}"
    return None


def _names_var(value: object) -> str | None:
    if not isinstance(value, list) or not value or not all(map(_is_name, value)):
        return "is not a non-empty list of names"
    return None


def _is_name(value: object) -> bool:
    return _name_var(value) is None


# Vars the models read that dbt_project.yml does not set: retrylake passes them.
OTHER_VARS = ("landing_path", "checks_code")
PROJECT_VARS = {
    "retry_overdue_grace_seconds": _whole_var(0),
    "consumer_group_defaults": {
        "message_model": _choice_var(MESSAGE_MODELS),
        "consume_mode": _choice_var(CONSUME_MODES),
        "max_reconsume_times": _whole_var(-1),
        "suspend_current_queue_time_millis": _whole_var(0, LONGEST_WAIT_MS),
        "retry_queue_nums": _whole_var(-(2**31)),
        "delay_level_when_next_consume": _whole_var(-(2**31)),
        "broker_cluster": _name_var,
        "client_line": _choice_var(CLIENT_LINES),
        "consume_timeout_minutes": _whole_var(1, LONGEST_WAIT_MS // 60_000),
        "retry_max_times": _whole_var(0),
        "consumer_kind": _choice_var(CONSUMER_KINDS),
        "dead_letter_enabled": _boolean_var,
    },
    "cloud_fifo_retry_interval_millis": _whole_var(0, LONGEST_WAIT_MS),
    "customized_retry_policy_default_millis": _delays_var,
    "exponential_retry_policy_default": {
        "initial": _whole_var(0, LONGEST_WAIT_MS),
        "max": _whole_var(0, LONGEST_WAIT_MS),
        "multiplier": _whole_var(1),
    },
    "schedule_fit_min_redeliveries": _whole_var(1),
    "default_broker_version": _broker_version_var,
    "trace_clock_skew_hours": _whole_var(0, 24 * 36_525),
    "delivery_attempt_attributes": _names_var,
    "message_retention_hours": _whole_var(1, 24 * 36_525),
    "broadcast_max_new_records": _whole_var(0, JAVA_LONG),
    "whatif_max_tries": _whole_var(1),
    "outage_window": {
        "bucket_minutes": _whole_var(1, 24 * 60),
        "min_failure_rate": _share_var,
        "min_buckets": _whole_var(1),
        "min_failing_share": _share_var,
        "min_failures_per_bucket": _whole_var(1),
    },
    "published_builds_kept": _whole_var(1),
}


def check_project_vars(project_dir: Path, given_vars: dict | None = None) -> None:
    """The vars of dbt_project.yml the rules read, each of the type and range they need, before
    dbt runs: a macro would read a word as 0 and a quoted "false" as true. A value dbt renders
    (one with `{{ ... }}`, such as an env_var) is left to dbt. ``given_vars`` (a run's
    ``--vars``) replace the file's vars of the same name whole, as dbt does, and are checked
    with the same rules."""
    import yaml

    path = project_file(project_dir)
    text = path.read_text(encoding="utf-8")
    root = yaml.compose(text)
    given = given_vars or {}
    project = yaml.safe_load(text) or {}
    file_values, scoped = vars_read_by_models(project)
    values = {**file_values, **given}  # --vars before both, as dbt reads them

    def line_of(*keys: str) -> int:
        node = root
        for key in ("vars", *keys):
            node = next((v for k, v in getattr(node, "value", []) if k.value == key), node)
        return node.start_mark.line + 1

    def fail(keys: tuple[str, ...], value: object, problem: str) -> None:
        if keys[0] in given:
            if len(keys) == 1 and problem.startswith("has no "):
                problem += f" (--vars replaces the project's {keys[0]} whole, as dbt does)"
            raise ConfigError(f"--vars, {'.'.join(keys)}: {value!r} {problem}")
        if keys[0] in scoped:
            keys = (project["name"], *keys)
        raise ConfigError(
            f"{path}, line {line_of(*keys)}, vars.{'.'.join(keys)}: {value!r} {problem}"
        )

    def check(keys: tuple[str, ...], value: object, rule) -> None:
        if isinstance(value, str) and "{{" in value:
            return
        if isinstance(rule, dict):
            if not isinstance(value, dict):
                fail(keys, value, f"is not a mapping of {', '.join(rule)}")
            for field, field_rule in rule.items():
                if field not in value:
                    fail(keys, value, f"has no {field}")
                check((*keys, field), value[field], field_rule)
            return
        problem = rule(value)
        if problem:
            fail(keys, value, problem)

    for name in given:
        if name not in PROJECT_VARS and name not in OTHER_VARS:
            close = difflib.get_close_matches(name, [*PROJECT_VARS, *OTHER_VARS], n=1, cutoff=0.8)
            if close:  # dbt would ignore it without a word
                raise ConfigError(
                    f"--vars, {name}: no model reads this name; the nearest they read is {close[0]}"
                )
    for name, rule in PROJECT_VARS.items():
        if name not in values:
            raise ConfigError(f"{path}: vars has no {name}, which the models read")
        check((name,), values[name], rule)
    defaults = values["consumer_group_defaults"]
    if not isinstance(defaults, dict):  # rendered by dbt
        return
    if defaults["dead_letter_enabled"] is False and not _turns_dead_letters_off(
        defaults["client_line"]
    ):
        fail(
            ("consumer_group_defaults", "dead_letter_enabled"),
            False,
            f"on the default line {defaults['client_line']}; {NO_DEAD_LETTER_SWITCH}",
        )
