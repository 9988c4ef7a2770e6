"""Bad landing input: every kind lands in landing_quarantine with a reason, or is handled as the
spec says, and the build succeeds with every line accounted for. Then the data tests, which read
only what changed since they passed, still find a bad row or an unbuilt file that appears."""

from __future__ import annotations

import base64
import contextlib
import gzip
import json
import random
from pathlib import Path

import pytest

from retrylake.commands import build
from retrylake.lakehouse import Lakehouse
from retrylake.sim import trace_format as tf
from tests.conftest import PROJECT_DIR
from tests.integration.helpers import rows

pytestmark = [pytest.mark.integration, pytest.mark.spark]

V = tf.CLIENT_VERSIONS["4.9"]
T0 = 1_772_400_000_000  # 2026-03-01T21:20:00Z
GROUP = "order-service"


def _before(at: int, request: str, msg: str, retries: int, keys: str | None = None) -> str:
    return tf.sub_before_record(
        V,
        timestamp=at,
        region="r",
        group=GROUP,
        request_id=request,
        msg_id=msg,
        retry_times=retries,
        keys=keys,
    )


def _after(at: int, request: str, msg: str, success: bool) -> str:
    return tf.sub_after_record(
        V,
        request_id=request,
        msg_id=msg,
        cost_ms=20,
        success=success,
        keys=None,
        return_type="SUCCESS" if success else "FAILED",
        timestamp=at,
        group=GROUP,
    )


def _cloud_after(request: str, msg: str) -> str:
    """A successful SubAfter as a CLOUD-channel client of 4.9.5 to 5.3.0 writes it: 7 fields
    ending in U+0001, no U+0002 (spec §5.3)."""
    record = tf.sub_after_record(
        tf.CLIENT_VERSIONS["4.9.1"],  # the 7-field layout
        request_id=request,
        msg_id=msg,
        cost_ms=20,
        success=True,
        keys=None,
        return_type="SUCCESS",
        timestamp=0,
        group=GROUP,
    )
    assert record.endswith("\u0002")
    return record[:-1] + "\u0001"


def _line(number: int, body: str, store: int, **extra: object) -> str:
    return tf.landing_line(
        trace_msg_id=f"TRACE{number:04d}",
        store_timestamp=store,
        store_host="10.0.0.1:10911",
        body=body,
        **extra,
    )


def _dlq_copy(offset_id: str, **fields: object) -> dict:
    """A message as a DLQ export reads it from %DLQ%order-service (design.md, Inputs)."""
    return {
        "msgId": "M1",
        "offsetMsgId": offset_id,
        "topic": f"%DLQ%{GROUP}",
        "queueId": 0,
        "reconsumeTimes": 17,
        "bornTimestamp": T0 - 1000,
        "storeTimestamp": T0 + 50_000,
        "storeHost": "10.0.0.1:10911",
        **fields,
    }


PROPERTIES = {"UNIQ_KEY": "M1", "ORIGIN_MESSAGE_ID": "ORIGIN-1", "RETRY_TOPIC": "orders"}
# The same properties as the broker stores them (spec §7), with a segment Java skips (no key).
PROPERTIES_STRING = "".join(f"{k}\u0001{v}\u0002" for k, v in PROPERTIES.items()) + "\u0001x\u0002"
DLQ_LINES = [
    json.dumps(_dlq_copy("A" * 32, properties={**PROPERTIES, "KEYS": "k1"})),
    json.dumps(_dlq_copy("B" * 32, msgId="M2", propertiesString=PROPERTIES_STRING)),
    # an overlapping export holds the first copy again: it counts once
    json.dumps(_dlq_copy("A" * 32, properties={**PROPERTIES, "KEYS": "k1"})),
    "{not json",
    json.dumps({k: v for k, v in _dlq_copy("C" * 32, properties={}).items() if k != "offsetMsgId"}),
    json.dumps(_dlq_copy("D" * 32, topic=f"%RETRY%{GROUP}", properties={})),
    json.dumps(_dlq_copy("E" * 32, reconsumeTimes="x", properties={})),
    json.dumps(_dlq_copy("F" * 32)),
    # no bornTimestamp, which an export may leave out: read, not quarantined
    json.dumps(
        {
            key: value
            for key, value in _dlq_copy(
                "I" * 32, msgId="M9", properties={**PROPERTIES, "UNIQ_KEY": "M9"}
            ).items()
            if key != "bornTimestamp"
        }
    ),
    # numbers past what their columns hold: a time timestamp_millis would throw on, an int a
    # cast would turn into null
    json.dumps(_dlq_copy("G" * 32, storeTimestamp=10**18, properties={})),
    json.dumps(_dlq_copy("H" * 32, reconsumeTimes=2**31, properties={})),
]

# Numbers past what their columns hold, each of which once failed the build (a time in ms that
# timestamp_millis throws on) or became null silently (an int or a long out of range).
OUT_OF_RANGE_TRACE = [
    json.dumps({"msgId": "T10", "storeTimestamp": 1_772_400_000_000_000_000, "body": "x"}),
    _line(10, _before(99_999_999_999_999_999, "R20", "M20", 0), T0 + 5),
    _line(11, _before(T0, "R21", "M21", 2**31), T0 + 6),
]
OTEL_SPAN_AFTER_LONG = json.dumps(
    {
        "resourceSpans": [
            {
                "resource": {"attributes": []},
                "scopeSpans": [
                    {
                        "scope": {"name": "io.opentelemetry.rocketmq-client-5.0"},
                        "spans": [
                            {
                                "traceId": "a" * 32,
                                "spanId": "b" * 16,
                                "name": "orders process",
                                "kind": 5,
                                "startTimeUnixNano": str(2**63),
                                "endTimeUnixNano": str(2**63 + 1),
                                "attributes": [
                                    {"key": k, "value": {"stringValue": v}}
                                    for k, v in (
                                        ("messaging.system", "rocketmq"),
                                        ("messaging.operation", "process"),
                                        ("messaging.rocketmq.client_group", "checkout-push"),
                                        ("messaging.message.id", "M30"),
                                    )
                                ],
                            }
                        ],
                    }
                ],
            }
        ]
    }
)
BROKER_LOG_LINE_AFTER_MILLIS = (
    "2026-03-02 05:20:00 INFO SendMessageThread_1 - send msg to DLQ %DLQ%checkout-push, owner=, "
    "originalTopic=orders, consumerId=checkout-push, msgUniqKey=M31, "
    "storeTimestamp=99999999999999999"
)


@pytest.fixture(scope="module")
def bad_landing_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("bad-landing")


@pytest.fixture(scope="module")
def bad_landing(spark, lakehouse: Lakehouse, bad_landing_folder: Path):
    landing = bad_landing_folder
    trace = landing / "trace"
    trace.mkdir()
    good = [
        # a normal failure and retry, then success
        _line(1, _before(T0, "R1", "M1", 0) + _after(T0 + 20, "R1", "M1", False), T0 + 30),
        _line(
            2,
            _before(T0 + 10_100, "R2", "M1", 1) + _after(T0 + 10_120, "R2", "M1", True),
            T0 + 10_130,
        ),
        # the retry count goes backwards: a redelivery after a rebalance carries r = 0 again
        _line(
            3,
            _before(T0 + 50, "R3", "M2", 0)
            + _after(T0 + 70, "R3", "M2", False)
            + _before(T0 + 10_200, "R4", "M2", 1)
            + _after(T0 + 10_220, "R4", "M2", False)
            + _before(T0 + 20_000, "R5", "M2", 0)
            + _after(T0 + 20_020, "R5", "M2", True),
            T0 + 20_030,
        ),
        # a request id reused for a later delivery of the same message
        _line(
            4,
            _before(T0 + 100, "R6", "M3", 0)
            + _after(T0 + 120, "R6", "M3", True)
            + _before(T0 + 30_000, "R6", "M3", 0),
            T0 + 30_010,
        ),
        # a SubAfter whose SubBefore never came, and a SubBefore still without its SubAfter
        _line(
            5, _after(T0 + 200, "R7", "M4", True) + _before(T0 + 40_000, "R8", "M5", 0), T0 + 40_010
        ),
        # a 10 MB body: one delivery whose KEYS are enormous, parsed like any other
        _line(
            6,
            _before(T0 + 300, "R9", "M6", 0, keys="k" * 10_000_000)
            + _after(T0 + 320, "R9", "M6", True),
            T0 + 40_020,
        ),
        # a CLOUD-channel client of 4.9.5 to 5.3.0: 7-field SubAfters without U+0002 (§5.3)
        _line(
            12,
            _before(T0 + 400, "R10", "M7", 0)
            + _before(T0 + 400, "R10", "M8", 0)
            + _cloud_after("R10", "M7")
            + _cloud_after("R10", "M8"),
            T0 + 40_030,
        ),
    ]
    # a 4.9.x client on a JVM whose platform charset is GBK encodes the body in it (spec §5.4):
    # the KEYS 订单 are bytes that are not UTF-8, the rest of the records ASCII
    gbk_body = _before(T0 + 700, "R22", "M11", 0, keys="订单")
    gbk_body += _after(T0 + 720, "R22", "M11", True)
    gbk = base64.b64encode(gbk_body.encode("gbk")).decode()
    bad = [
        "this is not JSON",
        "",
        json.dumps({"msgId": "T9", "storeTimestamp": "12x", "body": "x"}),
        json.dumps({"msgId": "T8", "storeTimestamp": T0 + 40_040, "bodyBase64": gbk}),
        _line(7, "Mystery\u0001x\u0002", T0 + 1),
        _line(8, "SubBefore\u00011\u0002", T0 + 2),
        _line(9, "SubBefore\u0001soon\u0001r\u0001g\u0001R\u0001M\u00010\u0001k\u0002", T0 + 3),
    ]
    lines = good[:3] + bad + good[3:]
    (trace / "mixed.jsonl").write_text("\n".join(lines) + "\n")
    # bad bytes on one line, and U+FFFD written as a character on the next: only the first is bad
    (trace / "invalid-bytes.jsonl").write_bytes(
        b'{"msgId": "\xff\xfe", "storeTimestamp": 1}\n'
        + _line(
            21,
            _before(T0 + 600, "R21", "M10", 0, keys="\ufffd-\u00e9")
            + _after(T0 + 620, "R21", "M10", True),
            T0 + 40_050,
        ).encode("utf-8")
        + b"\n"
    )
    # U+FFFD written as a character (EF BF BD) in a file of valid UTF-8: text, not bad bytes
    (trace / "replacement-char.jsonl").write_text(
        _line(
            20,
            _before(T0 + 500, "R20", "M9", 0, keys="caf\ufffd")
            + _after(T0 + 520, "R20", "M9", True),
            T0 + 40_040,
        )
        + "\n",
        encoding="utf-8",
    )
    (trace / "out-of-range.jsonl").write_text("\n".join(OUT_OF_RANGE_TRACE) + "\n")
    for feed, name, line in (
        ("otel", "spans.jsonl", OTEL_SPAN_AFTER_LONG),
        ("broker_logs", "broker-a.log", BROKER_LOG_LINE_AFTER_MILLIS),
    ):
        (landing / feed).mkdir()
        (landing / feed / name).write_text(line + "\n")
    noise = "".join(f'{{"n": {i}, "pad": "{random.Random(i).random()}"}}\n' for i in range(5000))
    packed = gzip.compress(noise.encode())
    (trace / "truncated.jsonl.gz").write_bytes(packed[: len(packed) // 2])
    (trace / "empty.jsonl").write_bytes(b"")
    # a gzip of nothing (an exporter's quiet hour) is empty, not corrupt: nothing to account for
    (trace / "empty.jsonl.gz").write_bytes(gzip.compress(b"", mtime=0))
    dlq = landing / "dlq" / "2026" / "03" / "01"
    dlq.mkdir(parents=True)
    (dlq / "dlq-export.jsonl").write_text("\n".join(DLQ_LINES) + "\n")
    (dlq / "dlq-broken.jsonl.gz").write_bytes(packed[: len(packed) // 3])
    # with every data test; the dbt unit tests run with the sample build
    build(
        PROJECT_DIR,
        Lakehouse(lakehouse.root, landing),
        full_refresh=True,
        exclude=["resource_type:unit_test"],
    )
    spark.catalog.setCurrentDatabase("retrylake")
    return lines


def test_bad_lines_and_records_are_quarantined_with_a_reason(spark, bad_landing):
    found = sorted(
        (Path(row["file"]).name, row["line"], row["reason"])
        for row in rows(spark, "landing_quarantine", ["file", "line", "reason"])
    )
    assert found == sorted(
        [
            ("invalid-bytes.jsonl", 1, "line is not valid UTF-8"),
            ("mixed.jsonl", 4, "not a valid JSON object"),
            ("mixed.jsonl", 5, "empty line"),
            ("mixed.jsonl", 6, "storeTimestamp missing or not a number"),
            ("mixed.jsonl", 8, "unknown trace record kind: Mystery"),
            ("mixed.jsonl", 9, "SubBefore record with 2 fields (expected 8 or 9)"),
            ("mixed.jsonl", 10, "SubBefore field 1 is not a number: soon"),
            ("mixed.jsonl", 11, "request id R6 reused for another delivery of M3"),
            ("mixed.jsonl", 12, "SubAfter without its SubBefore (request R7)"),
            ("truncated.jsonl.gz", 0, "file could not be read: truncated or corrupt"),
            ("dlq-export.jsonl", 4, "not a valid JSON object"),
            ("dlq-export.jsonl", 5, "missing offsetMsgId"),
            ("dlq-export.jsonl", 6, "topic is not a dead-letter topic: %RETRY%order-service"),
            ("dlq-export.jsonl", 7, "reconsumeTimes missing or not a number"),
            ("dlq-export.jsonl", 8, "neither properties nor propertiesString"),
            ("dlq-broken.jsonl.gz", 0, "file could not be read: truncated or corrupt"),
            ("dlq-export.jsonl", 10, f"storeTimestamp is out of range: {10**18}"),
            ("dlq-export.jsonl", 11, f"reconsumeTimes is out of range: {2**31}"),
            ("out-of-range.jsonl", 1, "storeTimestamp is out of range: 1772400000000000000"),
            ("out-of-range.jsonl", 2, "SubBefore field 1 is out of range: 99999999999999999"),
            ("out-of-range.jsonl", 3, f"SubBefore field 6 is out of range: {2**31}"),
            (
                "spans.jsonl",
                1,
                "1 process span(s) unusable, first: process span start or end time is out of "
                f"range (trace {'a' * 32}, span {'b' * 16})",
            ),
            ("broker-a.log", 1, "DLQ log line storeTimestamp is out of range"),
        ]
    )


def test_every_line_is_accounted_for(spark, bad_landing):
    staged = spark.sql(
        "select count_if(line_error is null) as parsed, count_if(line_error is not null) as bad "
        "from retrylake_staging.stg_landing__trace_lines where line_number > 0"
    ).first()
    # + the invalid-bytes file's two lines, the U+FFFD line and the out-of-range file
    assert staged.parsed + staged.bad == len(bad_landing) + 3 + len(OUT_OF_RANGE_TRACE)
    dlq = spark.sql(
        "select count_if(line_error is null) as parsed, count_if(line_error is not null) as bad "
        "from retrylake_staging.stg_landing__dlq_lines where line_number > 0"
    ).first()
    assert (dlq.parsed, dlq.bad) == (4, len(DLQ_LINES) - 4)


def test_dead_letter_copies_are_staged_once_with_their_properties(spark, bad_landing):
    copies = rows(
        spark,
        "retrylake_staging.stg_dlq__messages",
        [
            "consumer_group",
            "msg_id",
            "offset_msg_id",
            "reconsume_times",
            "uniq_key",
            "origin_msg_id",
            "retry_topic",
            "keys",
            "copies_landed",
            "stored_at",
        ],
    )
    common = {
        "consumer_group": GROUP,
        "reconsume_times": 17,
        "uniq_key": "M1",
        "origin_msg_id": "ORIGIN-1",
        "retry_topic": "orders",
        "stored_at": T0 + 50_000,
    }
    assert sorted(copies, key=lambda row: row["offset_msg_id"]) == [
        {**common, "msg_id": "M1", "offset_msg_id": "A" * 32, "keys": "k1", "copies_landed": 2},
        {**common, "msg_id": "M2", "offset_msg_id": "B" * 32, "keys": None, "copies_landed": 1},
        {
            **common,
            "msg_id": "M9",
            "uniq_key": "M9",
            "offset_msg_id": "I" * 32,
            "keys": None,
            "copies_landed": 1,
        },
    ]


def test_the_good_lifecycles_are_built_as_the_spec_says(spark, bad_landing):
    lifecycles = {
        row["msg_id"]: (row["final_state"], row["deliveries"])
        for row in rows(spark, "message_lifecycles", ["msg_id", "final_state", "deliveries"])
    }
    assert lifecycles == {
        "M1": ("CONSUMED", 2),
        "M2": ("CONSUMED", 3),  # the backwards count is kept as delivered
        "M3": ("CONSUMED", 1),  # the reused request id is not a second delivery
        "M5": ("IN_FLIGHT", 1),
        "M6": ("CONSUMED", 1),
        "M7": ("CONSUMED", 1),  # both SubAfters of the CLOUD client's batch are read
        "M8": ("CONSUMED", 1),
        "M9": ("CONSUMED", 1),  # a U+FFFD in a valid file is a character of its KEYS
        "M10": ("CONSUMED", 1),  # ... and in a file whose other line has bad bytes
        "M11": ("CONSUMED", 1),  # a body in GBK: its records are read
    }
    decisions = rows(
        spark,
        "retry_decisions",
        ["reconsume_times", "delay_ms", "observed_reconsume_times"],
        "msg_id = 'M2'",
    )
    assert sorted(tuple(row.values()) for row in decisions) == [(0, 10_000, 1), (1, 30_000, 0)]
    causes = rows(
        spark,
        "redeliveries",
        ["delivery_number", "reconsume_times", "gap_ms", "redelivery_cause"],
        "msg_id = 'M2'",
    )
    # 10.13 s after the first failure, level 3 (10 s) as the rules say; then the redelivery
    # after the rebalance carries r = 0 again: recorded, not taken as scheduled
    assert sorted(tuple(row.values()) for row in causes) == [
        (2, 1, 10_130, "SCHEDULED"),
        (3, 0, 9_780, "DUPLICATE_DELIVERY"),
    ]
    keys = spark.sql("select length(keys) from consume_attempts where msg_id = 'M6'").first()[0]
    assert keys == 10_000_000
    keys = spark.sql("select keys from consume_attempts where msg_id = 'M9'").first()[0]
    assert keys == "caf\ufffd"
    keys = spark.sql("select keys from consume_attempts where msg_id = 'M10'").first()[0]
    assert keys == "\ufffd-\u00e9"
    # the GBK bytes of 订单 as UTF-8 reads them: each invalid sequence one U+FFFD
    keys = spark.sql("select keys from consume_attempts where msg_id = 'M11'").first()[0]
    assert keys == "订单".encode("gbk").decode("utf-8", "replace") == "\ufffd" * 4


def _fingerprint(root: Path) -> dict[str, tuple[int, str]]:
    import hashlib

    return {
        str(path.relative_to(root)): (
            path.stat().st_size,
            hashlib.sha256(path.read_bytes()).hexdigest(),
        )
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


@pytest.mark.parametrize(
    ("seed_file", "old", "new", "named"),
    [
        ("broker_delay_levels.csv", "fast-cluster,5s 8s", "fast-cluster,5s 5x", "'5x'"),
        ("broker_delay_levels.csv", "fast-cluster,5s 8s", "fast-cluster,5s  8s", "position 2"),
        ("broker_delay_levels.csv", "fast-cluster,5s 8s", "fast-cluster,", "empty"),
        ("consumer_groups.csv", ",ORDERLY,", ",ORDERED,", "'ORDERED'"),
        ("consumer_groups.csv", "ORDERLY,3,1000", "ORDERLY,3,-1000", "'-1000'"),
        ("consumer_groups.csv", "inventory-sync,", "order-service,", "listed twice"),
    ],
)
def test_bad_configuration_leaves_the_lakehouse_exactly_as_it_was(
    spark, bad_landing, lakehouse: Lakehouse, tmp_path: Path, seed_file, old, new, named
):
    import shutil

    from retrylake.errors import ConfigError

    project = tmp_path / "project"
    for part in ("dbt_project.yml", "profiles", "models", "macros", "seeds", "tests/dbt"):
        source = PROJECT_DIR / part
        if source.is_dir():
            shutil.copytree(source, project / part)
        else:
            project.mkdir(exist_ok=True)
            shutil.copy(source, project / part)
    seed = project / "seeds" / seed_file
    seed.write_text(seed.read_text().replace(old, new, 1))
    before = _fingerprint(lakehouse.root)
    with pytest.raises(ConfigError) as error:
        build(project, Lakehouse(lakehouse.root, lakehouse.landing))
    assert (
        seed_file in str(error.value) and "row " in str(error.value) and named in str(error.value)
    )
    assert _fingerprint(lakehouse.root) == before


def _data_tests(lakehouse: Lakehouse, names: list[str]) -> dict[str, tuple[str, int]]:
    """Run the named data tests through `retrylake dbt`; each one's status and failing rows."""
    from retrylake.commands import dbt
    from retrylake.errors import DbtFailedError

    with contextlib.suppress(DbtFailedError):  # the results say which failed
        dbt(PROJECT_DIR, lakehouse, ["test", "--select", *names])
    results = json.loads((lakehouse.dbt_target / "run_results.json").read_text())["results"]
    return {
        result["unique_id"].split(".")[2]: (result["status"], result["failures"])
        for result in results
        if result["unique_id"].startswith("test.")
    }


def _compiled(lakehouse: Lakehouse, path: str) -> str:
    return (lakehouse.dbt_target / "compiled" / "retrylake" / path).read_text()


ATTEMPTS_CHECKS = "models/marts/ledger/_ledger__models.yml/consume_attempts_table_checks.sql"
LANDING_CHECK = "tests/dbt/landing_lines_accounted_for.sql"


def test_data_tests_read_what_changed_since_they_passed(
    spark, bad_landing, bad_landing_folder: Path, lakehouse: Lakehouse
):
    """The fixture's build ran every data test, and each that passed recorded the files it read.
    Nothing changed since, so the fact marts' checks and the landing check read nothing. A copy
    of an attempt written into a new partition is read there: its key, counted over the whole
    table, is on 2 rows, and its lifecycle is in another partition; the copy's partition is the
    only one read, so each test fails on that one row. A landed file not built yet fails the
    landing check."""
    built = Lakehouse(lakehouse.root, bad_landing_folder)
    tests = ["consume_attempts_table_checks", "lifecycle_deliveries_are_the_attempts"]
    assert _data_tests(built, [*tests, "landing_lines_accounted_for"]) == {
        "consume_attempts_table_checks": ("pass", 0),
        "lifecycle_deliveries_are_the_attempts": ("pass", 0),
        "landing_lines_accounted_for": ("pass", 0),
    }
    assert "where false" in _compiled(built, ATTEMPTS_CHECKS)
    assert "_metadata.file_path in (" not in _compiled(built, LANDING_CHECK)
    assert "where false" in _compiled(built, LANDING_CHECK)

    attempts = "retrylake_unpublished.consume_attempts"
    copied = spark.sql(f"select * from {attempts} order by msg_id, delivery_number").first()
    taken = {
        row.lifecycle_hour
        for row in spark.sql(f"select distinct lifecycle_hour from {attempts}").collect()
    }
    hour = min(set(range(24)) - taken)
    columns = [name for name in copied.asDict() if name not in ("lifecycle_date", "lifecycle_hour")]
    spark.sql(
        f"insert into {attempts} select {', '.join(columns)}, lifecycle_date, {hour}"
        f" from {attempts}"
        f" where request_id = '{copied.request_id}' and msg_id = '{copied.msg_id}'"
        f" and delivery_number = {copied.delivery_number}"
    )
    try:
        assert _data_tests(built, tests) == {
            "consume_attempts_table_checks": ("fail", 1),
            "lifecycle_deliveries_are_the_attempts": ("fail", 1),
        }
        scoped = _compiled(built, ATTEMPTS_CHECKS)
        assert f"cast(lifecycle_hour as string) = '{hour}'" in scoped
        assert "cast(lifecycle_hour as string) = '" + str(copied.lifecycle_hour) not in scoped
    finally:
        spark.sql(
            f"alter table {attempts} drop partition"
            f" (lifecycle_date = '{copied.lifecycle_date}', lifecycle_hour = {hour})"
        )

    late = bad_landing_folder / "trace" / "late.jsonl"
    late.write_text(_line(10, "x", T0 + 5) + "\n" + _line(11, "y", T0 + 6) + "\n")
    try:
        assert _data_tests(built, ["landing_lines_accounted_for"]) == {
            "landing_lines_accounted_for": ("fail", 1)
        }
        assert str(late) in _compiled(built, LANDING_CHECK)
    finally:
        late.unlink()
