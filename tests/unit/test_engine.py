"""The simulation engine: deterministic bytes, the broker's rules, the transport faults, and the
sample scripted on it."""

from __future__ import annotations

import base64
import gzip
import json
from collections import Counter
from pathlib import Path

import pytest

from retrylake.config_check import GROUP_COLUMNS
from retrylake.project import consumer_group_defaults
from retrylake.sim.engine import GeneratorConfig, generate, read_ground_truth, read_groups
from retrylake.sim.rules import Group
from retrylake.sim.sample import write_sample
from spark_udfs import decode_offset_msg_id, parse_message_properties


def _files(root: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(root)): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


def _lines(root: Path, kind: str) -> list[str]:
    lines = []
    for path in sorted((root / kind).rglob("*.jsonl*")):
        raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
        lines += raw.decode("utf-8").splitlines()
    return lines


def _pub_offset_ids(root: Path) -> dict[str, str]:
    """msgId -> the offset id of its stored original, from the landed 14- and 15-field Pubs."""
    origins = {}
    for line in _lines(root, "trace"):
        try:
            message = json.loads(line)
        except json.JSONDecodeError:
            continue
        body = message.get("body") or base64.b64decode(message["bodyBase64"]).decode("utf-8")
        for record in body.split("\u0002")[:-1]:
            fields = record.split("\u0001")
            if fields[0] == "Pub" and len(fields) >= 14:
                origins[fields[5]] = fields[12]
    return origins


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory):
    out = tmp_path_factory.mktemp("generated")
    config = GeneratorConfig(
        out=out,
        messages=4000,
        seed=7,
        client_versions=("4.9", "4.8", "4.9.1"),
        dlq_export=True,
        duplicate_share=0.02,
        late_share=0.05,
        malformed_share=0.01,
    )
    return config, generate(config)


def test_one_seed_gives_identical_bytes(run, tmp_path: Path):
    config, _ = run
    again = GeneratorConfig(**{**config.__dict__, "out": tmp_path / "again"})
    generate(again)
    assert _files(config.out) == _files(again.out)
    other = GeneratorConfig(**{**config.__dict__, "out": tmp_path / "other", "seed": 8})
    generate(other)
    assert _files(other.out)["ground_truth.jsonl"] != _files(config.out)["ground_truth.jsonl"]


def test_every_line_is_counted_and_the_faults_are_there(run):
    config, stats = run
    lines = _lines(config.out, "trace")
    assert len(lines) == stats.lines
    parsed, malformed = [], 0
    for line in lines:
        try:
            parsed.append(json.loads(line))
        except json.JSONDecodeError:
            malformed += 1
    assert malformed == stats.malformed_lines > 0
    ids = Counter(message["msgId"] for message in parsed)
    assert sum(count - 1 for count in ids.values()) == stats.duplicate_lines > 0
    assert any("bodyBase64" in message for message in parsed)
    assert stats.late_lines > 0
    assert max(message["storeTimestamp"] for message in parsed) == stats.watermark_ms


def test_trace_records_follow_the_client_layouts(run):
    config, _ = run
    counts: dict[str, Counter] = {}
    for line in _lines(config.out, "trace"):
        try:
            message = json.loads(line)
        except json.JSONDecodeError:
            continue
        if "body" not in message:
            continue
        for record in message["body"].split("\u0002")[:-1]:
            fields = record.split("\u0001")
            counts.setdefault(fields[0], Counter())[len(fields)] += 1
    assert set(counts["Pub"]) == {14, 15}
    assert set(counts["SubBefore"]) == {8, 9}
    assert set(counts["SubAfter"]) == {7, 9}
    # consume requests batch several messages under one request id
    assert counts["SubBefore"].total() > counts["Pub"].total()


def test_ground_truth_and_dlq_export_agree_with_the_rules(run):
    config, stats = run
    truth = list(read_ground_truth(config.out))
    assert len(truth) == stats.lifecycles
    assert len({(row["consumer_group"], row["msg_id"]) for row in truth}) == len(truth)
    states = Counter(row["final_state"] for row in truth)
    assert {"CONSUMED", "DLQ", "DROPPED"} <= set(states)
    dead = {(row["consumer_group"], row["msg_id"]): row for row in truth if row["in_dlq"]}
    exported = [json.loads(line) for line in _lines(config.out, "dlq")]
    assert len(dead) == stats.dlq_messages  # one DLQ entry per dead lifecycle
    # the export holds some of the copies (the export window, a group never exported)
    assert len(exported) == stats.dlq_exported < stats.dlq_messages
    origins = _pub_offset_ids(config.out)
    for copy in exported:
        group = copy["topic"].removeprefix("%DLQ%")
        row = dead[(group, copy["msgId"])]
        properties = copy.get("properties") or parse_message_properties(copy["propertiesString"])
        assert copy["reconsumeTimes"] == row["dlq_reconsume_times"]
        assert copy["storeTimestamp"] == row["dlq_entered_ms"]
        assert properties["UNIQ_KEY"] == copy["msgId"]
        assert decode_offset_msg_id(copy["offsetMsgId"]) is not None
        if group == "payment-ledger":
            # orderly on the 4.9.x line: the client sent it itself and lost ORIGIN_MESSAGE_ID
            # when it replaced the property map (§3.5); only UNIQ_KEY leads back
            assert "ORIGIN_MESSAGE_ID" not in properties
            assert properties["REAL_TOPIC"] == copy["topic"]
        else:
            # the offset id of the original stored message, as its Pub record tells it
            origin = origins.get(copy["msgId"])  # None: its Pub record was lost
            assert row["origin_msg_id"] == origin
            assert properties["ORIGIN_MESSAGE_ID"] == origin or origin is None
            assert properties["DELAY"] == "0"
            assert ("REAL_TOPIC" in properties) == (copy["reconsumeTimes"] > 1)
            assert properties.get("REAL_TOPIC", "%RETRY%").startswith("%RETRY%")
    assert (config.out / "seeds" / "consumer_groups.csv").read_text().count("\n") >= 8


def test_the_sample_exercises_every_rule_state_and_fault(tmp_path: Path):
    sample = write_sample(tmp_path / "a")
    states = Counter(lifecycle.state for lifecycle in sample.lifecycles)
    assert set(states) == {
        "CONSUMED",
        "DLQ",
        "DROPPED",
        "WAITING_RETRY",
        "RETRY_OVERDUE",
        "IN_FLIGHT",
    }
    decisions = {
        delivery.decision for lifecycle in sample.lifecycles for delivery in lifecycle.history
    }
    assert decisions == {None, "RETRY", "DLQ", "LOCAL_RETRY", "DROP"}
    assert sample.bad_records == 3 and sample.malformed_lines == sample.duplicate_lines == 1
    lines = _lines(sample.landing, "trace")
    assert len(lines) == sample.landing_lines
    assert any('"bodyBase64"' in line for line in lines)
    files = _files(sample.landing)
    assert any(name.endswith(".gz") for name in files)
    assert {name.split("/")[3] for name in files if name.startswith("trace/")} == {"01", "02"}
    assert _files(write_sample(tmp_path / "b").landing) == files  # a script: the same bytes


def test_empty_seed_cells_take_the_projects_defaults(tmp_path: Path):
    seed = tmp_path / "consumer_groups.csv"
    seed.write_text(",".join(GROUP_COLUMNS) + "\ng,,,,,,,,,\n")
    (group,) = read_groups(seed)
    defaults = consumer_group_defaults()
    assert group == Group(
        "g",
        message_model=defaults["message_model"],
        consume_mode=defaults["consume_mode"],
        max_reconsume_times=defaults["max_reconsume_times"],
        suspend_ms=defaults["suspend_current_queue_time_millis"],
        retry_queue_nums=defaults["retry_queue_nums"],
        delay_level_when_next_consume=defaults["delay_level_when_next_consume"],
        broker_cluster=defaults["broker_cluster"],
        client_line=defaults["client_line"],
    )
    assert group.broker_cluster == "*" and group.cluster_name == "DefaultCluster"
