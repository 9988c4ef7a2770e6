"""The simulation engine: deterministic bytes, the broker's rules, the transport faults, and the
sample scripted on it."""

from __future__ import annotations

import base64
import gzip
import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from retrylake.config_check import GROUP_COLUMNS
from retrylake.errors import UsageError
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


def _records(root: Path) -> Iterator[list[str]]:
    """The fields of every trace record in the landing, each trace message read once."""
    seen = set()
    for line in _lines(root, "trace"):
        try:
            message = json.loads(line)
        except json.JSONDecodeError:
            continue
        if message["msgId"] in seen:
            continue
        seen.add(message["msgId"])
        body = message.get("body") or base64.b64decode(message["bodyBase64"]).decode("utf-8")
        for record in body.split("\u0002")[:-1]:
            yield record.split("\u0001")


def _pubs(root: Path) -> dict[str, list[str]]:
    """msgId -> the fields of its landed Pub record."""
    return {fields[5]: fields for fields in _records(root) if fields[0] == "Pub"}


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
    pubs = _pubs(config.out)
    kinds = {"0": "NORMAL", "1": "TRANSACTIONAL", "3": "DELAYED"}  # MessageType ordinals (§5.1)
    for row in truth:
        pub = pubs.get(row["msg_id"])  # None: its Pub record was lost
        # the Pub's offset id is where consumers read a normal message; a delayed one's names
        # its SCHEDULE_TOPIC_XXXX copy and a transactional one's the half message (§2.2, §2.4)
        normal_with_id = pub is not None and pub[11] == "0" and len(pub) >= 14
        assert row["origin_msg_id"] == (pub[12] if normal_with_id else None), row
        assert row["origin_kind"] == (kinds[pub[11]] if pub else "UNKNOWN"), row
        if pub is not None and len(pub) >= 14:
            assert (row["received_offset_msg_id"] == pub[12]) == (pub[11] == "0"), row
    kinds_seen = Counter(row["origin_kind"] for row in truth)
    assert set(kinds_seen) == {"NORMAL", "DELAYED", "TRANSACTIONAL", "UNKNOWN"}, kinds_seen
    for copy in exported:
        properties = copy.get("properties") or parse_message_properties(copy["propertiesString"])
        # inventory-sync runs in namespace MQ_INST_1_demo: the broker stores its dead letters in
        # %DLQ%MQ_INST_1_demo%inventory-sync and names its topics in it (spec §7)
        group = copy["topic"].removeprefix("%DLQ%")
        namespaced = group.startswith("MQ_INST_1_demo%")
        group = group.removeprefix("MQ_INST_1_demo%")
        assert namespaced == (group == "inventory-sync"), copy
        assert properties["RETRY_TOPIC"].startswith("MQ_INST_1_demo%") == namespaced, copy
        row = dead[(group, copy["msgId"])]
        assert copy["reconsumeTimes"] == row["dlq_reconsume_times"]
        assert copy["storeTimestamp"] == row["dlq_entered_ms"]
        assert properties["UNIQ_KEY"] == copy["msgId"]
        assert decode_offset_msg_id(copy["offsetMsgId"]) is not None
        pub = pubs.get(copy["msgId"])
        transactional = pub is not None and pub[11] == "1"
        if group == "payment-ledger":
            # orderly on the 4.9.x line: the client sent it itself and lost ORIGIN_MESSAGE_ID
            # when it replaced the property map (§3.5); only UNIQ_KEY leads back
            assert "ORIGIN_MESSAGE_ID" not in properties
            assert properties["REAL_TOPIC"] == copy["topic"]
            assert "TRAN_MSG" not in properties  # a client's own send clears it
        elif properties["DELAY"] != "0":
            # the client's fallback, dead-lettered by a 4.9 broker through the schedule topic
            # with the DELAY = 3 + r it was sent with (§1.3, §3.4)
            r = copy["reconsumeTimes"] - 1
            assert properties["DELAY"] == str(min(3 + r, 18)), copy
            assert properties["REAL_TOPIC"] == copy["topic"] and properties["REAL_QID"] == "0"
            assert "TRAN_MSG" not in properties
        else:
            # the broker's send-back: ORIGIN_MESSAGE_ID is the offset id of the copy consumers
            # received, unless a client fallback on the way lost it (§1.2 step 10, §3.4)
            if "CLIENT_FALLBACK" not in row["redelivery_causes"]:
                assert properties["ORIGIN_MESSAGE_ID"] == row["received_offset_msg_id"], copy
            if pub is not None and len(pub) >= 14:
                received = properties["ORIGIN_MESSAGE_ID"] == row["received_offset_msg_id"]
                assert (properties["ORIGIN_MESSAGE_ID"] == pub[12]) == (
                    received and pub[11] == "0"
                ), copy
            # REAL_TOPIC is left over from the last schedule hop, or the re-put or committed
            # copy of a delayed or transactional message (§2.4)
            if copy["reconsumeTimes"] > 1:
                assert properties["REAL_TOPIC"].startswith("%RETRY%"), copy
            elif pub is not None:
                expected = None if pub[11] == "0" else properties["RETRY_TOPIC"]
                assert properties.get("REAL_TOPIC") == expected, copy
            assert ("TRAN_MSG" in properties) == transactional or pub is None, copy
    assert any(copy["topic"] == "%DLQ%MQ_INST_1_demo%inventory-sync" for copy in exported)
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


def test_an_offline_group_takes_no_delivery_from_its_instant_on(tmp_path: Path):
    start_ms = 1_772_323_200_000  # 2026-03-01T00:00:00Z
    offline_ms = start_ms + 2 * 3_600_000
    config = GeneratorConfig(
        out=tmp_path / "offline",
        messages=3000,
        seed=5,
        start_ms=start_ms,
        hours=6.0,
        offline_groups=(("order-service", offline_ms),),
    )
    generate(config)
    deliveries = [
        int(fields[1])
        for fields in _records(config.out)
        if fields[0] == "SubBefore" and fields[3] == "order-service"
    ]
    others = [
        int(fields[1])
        for fields in _records(config.out)
        if fields[0] == "SubBefore" and fields[3] == "inventory-sync"
    ]
    assert deliveries and max(deliveries) < offline_ms
    assert max(others) >= offline_ms + 3 * 3_600_000  # the other groups go on to the end
    assert json.loads((config.out / "generation.json").read_text())["config"]["offline_groups"] == [
        ["order-service", offline_ms]
    ]


def test_an_offline_group_must_be_a_simulated_4x_group(tmp_path: Path):
    config = GeneratorConfig(out=tmp_path / "x", messages=10, offline_groups=(("nobody", 0),))
    with pytest.raises(UsageError, match=r"nobody is not a simulated 4\.x consumer group"):
        generate(config)
