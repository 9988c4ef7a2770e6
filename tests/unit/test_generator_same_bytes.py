"""The generator's fast paths write the bytes the plain ones did: hand-written JSON lines, ids
formatted from cached prefixes, files written in chunks or on a background thread, and whole
runs, whatever the number of jobs; and its rarer garbage collection is undone after a run."""

from __future__ import annotations

import base64
import gc
import gzip
import hashlib
import io
import ipaddress
import json
import random
import struct
from pathlib import Path

import pytest

from retrylake.sim import engine, output
from retrylake.sim import trace_format as tf
from retrylake.sim.engine import (
    TRUTH_COLUMNS,
    TRUTH_ROW,
    GeneratorConfig,
    _json_bool,
    _json_or_null,
    _json_text,
    generate,
    parallel_jobs,
)

# Strings that JSON escapes in every way: quotes, backslashes, control characters (the trace's
# field separators among them), non-ASCII and a character outside the BMP.
AWKWARD = [
    "plain",
    'say "hi"',
    "back\\slash",
    "\u0001\u0002\n\t\x7f",
    "caf\u00e9 \u4e2d",
    "\U0001f600",
]


def tree_digest(root: Path) -> str:
    """One digest of every file under ``root``: its path and its bytes."""
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


# Runs and the digests of what the generator wrote for them before it was made faster (commit
# a0e5177). A change that means to alter the output must update these; any other must not.
# Updated when the 4.x traffic's publications got a stream of their own and its consumers'
# draws, then the 5.x listeners', were keyed by group, message and attempt (issue 16); then
# when two groups moved into a namespace (their DLQ copies' and DLQ log lines' names); then
# when the broadcasting cache-invalidator got three instances (the other groups' ground truth
# unchanged).
RUNS = {
    "mixed": (
        dict(
            messages=400,
            seed=4,
            grpc5_messages=150,
            dlq_export=True,
            client_versions=("4.9", "4.8", "old"),
        ),
        "a470ceb82f32fa60f1afd6f6a8f2aec4f66d1f5b11c6472934a8583201f1b160",
    ),
    "gzip": (
        dict(messages=300, seed=8, hours=2.0, compression="gzip", client_versions=("4.7", "4.9.1")),
        "17d343e6ec8adb21057e58c17a1f78705924d280f509992ef221da1cc5739ce9",
    ),
}


@pytest.mark.parametrize("jobs", [1, 2])
@pytest.mark.parametrize("run", sorted(RUNS))
def test_runs_write_the_bytes_they_always_wrote(tmp_path: Path, run: str, jobs: int):
    options, expected = RUNS[run]
    generate(GeneratorConfig(out=tmp_path, **options), jobs=jobs)
    assert tree_digest(tmp_path) == expected


def test_small_chunks_and_the_cli_default_change_nothing(tmp_path: Path, monkeypatch):
    # many chunks per file, handed to a background thread
    monkeypatch.setattr(output, "CHUNK_CHARS", 500)
    options, expected = RUNS["mixed"]
    with parallel_jobs(2):
        generate(GeneratorConfig(out=tmp_path, **options))
    assert tree_digest(tmp_path) == expected


@pytest.mark.parametrize("fails", [False, True])
def test_a_run_collects_cycles_rarely_and_then_as_before(tmp_path: Path, monkeypatch, fails: bool):
    seen = []
    simulate = engine.Engine.run

    def run(self, *args, **kwargs):
        seen.append(gc.get_threshold())
        if fails:
            raise OSError("disk full")
        return simulate(self, *args, **kwargs)

    monkeypatch.setattr(engine.Engine, "run", run)
    before = gc.get_threshold()
    try:
        gc.set_threshold(700, 10, 10)  # CPython's default, whatever the session set
        if fails:
            with pytest.raises(OSError):
                generate(GeneratorConfig(out=tmp_path, messages=20, seed=1))
        else:
            generate(GeneratorConfig(out=tmp_path, messages=20, seed=1))
        assert seen == [(100_000, 50, 1000)]
        assert gc.get_threshold() == (700, 10, 10)
    finally:
        gc.set_threshold(*before)


def test_parallel_jobs_wants_one_or_more():
    with pytest.raises(ValueError), parallel_jobs(0):
        pass


@pytest.mark.parametrize("as_base64", [False, True])
@pytest.mark.parametrize("keys", [None, "k1 k2", 'odd "key"'])
def test_landing_line_is_what_json_dumps_writes(as_base64: bool, keys: str | None):
    body = tf.CONTENT_SPLITOR.join(AWKWARD) + tf.FIELD_SPLITOR
    line = tf.landing_line(
        trace_msg_id="0A000301177018B4AAC2000000010001",
        store_timestamp=1_772_323_200_123,
        store_host="10.0.0.1:10911",
        body=body,
        keys=keys,
        as_base64=as_base64,
    )
    message: dict[str, object] = {
        "msgId": "0A000301177018B4AAC2000000010001",
        "storeTimestamp": 1_772_323_200_123,
        "storeHost": "10.0.0.1:10911",
    }
    if keys is not None:
        message["keys"] = keys
    if as_base64:
        message["bodyBase64"] = base64.b64encode(body.encode("utf-8")).decode("ascii")
    else:
        message["body"] = body
    assert line == json.dumps(message, ensure_ascii=False, separators=(",", ":"))


def test_ids_are_what_struct_packs():
    rng = random.Random(3)
    for _ in range(2000):
        ip = str(ipaddress.IPv4Address(rng.getrandbits(32)))
        port, offset = rng.randrange(-(2**31), 2**31), rng.randrange(-(2**63), 2**63)
        packed = ipaddress.ip_address(ip).packed
        assert tf.offset_msg_id(ip, port, offset) == (
            (packed + struct.pack(">iq", port, offset)).hex().upper()
        )
        pid, loader, counter = rng.getrandbits(20), rng.getrandbits(36), rng.getrandbits(20)
        born, month = rng.randrange(2**45), rng.randrange(2**45)
        fields = struct.pack(
            ">HIIH",
            pid & 0xFFFF,
            loader & 0xFFFFFFFF,
            (born - month) & 0xFFFFFFFF,
            counter & 0xFFFF,
        )
        assert tf.uniq_msg_id(ip, pid, loader, born, month, counter) == (
            (packed + fields).hex().upper()
        )
    with pytest.raises(ValueError):
        tf.offset_msg_id("10.0.0.1", 10911, 2**63)


@pytest.mark.parametrize("version", sorted(tf.CLIENT_VERSIONS))
@pytest.mark.parametrize("tags,keys", [(None, None), ("TagA", "k1 k2")])
def test_records_are_the_encoders_fields_in_order(version: str, tags, keys):
    client = tf.CLIENT_VERSIONS[version]
    pub = tf.pub_record(
        client,
        timestamp=5,
        region="R",
        producer_group="P",
        topic="T",
        msg_id="M",
        tags=tags,
        keys=keys,
        store_host="H",
        body_length=26,
        cost_ms=7,
        offset_id="O",
        success=False,
        message_type=tf.DELAY_MSG,
    )
    expected = ["Pub", 5, "R", "P", "T", "M", tags, keys, "H", 26, 7, 3]
    expected += ["O"] if client.pub_fields >= 14 else []
    expected += ["false"] + (["10.0.0.9"] if client.pub_fields >= 15 else [])
    assert pub == tf._record(*expected)
    before = tf.sub_before_record(
        client,
        timestamp=6,
        region="R",
        group="G",
        request_id="Q",
        msg_id="M",
        retry_times=2,
        keys=keys,
    )
    expected = ["SubBefore", 6, "R", "G", "Q", "M", 2, keys]
    expected += ["10.0.0.21"] if client.sub_before_fields >= 9 else []
    assert before == tf._record(*expected)
    for code, return_type in enumerate(tf.RETURN_TYPES):
        after = tf.sub_after_record(
            client,
            request_id="Q",
            msg_id="M",
            cost_ms=9,
            success=True,
            keys=keys,
            return_type=return_type,
            timestamp=8,
            group="G",
        )
        expected = ["SubAfter", "Q", "M", 9, "true", keys, code]
        expected += [8, "G"] if client.sub_after_fields >= 9 else []
        assert after == tf._record(*expected)


def test_truth_row_template_is_what_json_dumps_writes():
    rng = random.Random(5)
    for _ in range(500):
        row: dict[str, object] = {}
        values = []
        for column in TRUTH_COLUMNS:
            kind = rng.choice(["text", "int", "null", "bool", "list"])
            if column == "redelivery_causes" or kind == "list":
                value: object = rng.sample(AWKWARD, rng.randrange(3))
                encoded = f"[{','.join(map(_json_text, value))}]"
            elif kind == "bool":
                value = rng.random() < 0.5
                encoded = _json_bool(value)
            else:
                value = {"text": rng.choice(AWKWARD), "int": rng.randrange(-99, 2**45)}.get(kind)
                encoded = _json_or_null(value)  # type: ignore[arg-type]
            row[column] = value
            values.append(encoded)
        assert TRUTH_ROW % tuple(values) == json.dumps(row, separators=(",", ":")) + "\n"


@pytest.mark.parametrize("background", [False, True])
def test_writer_chunks_give_the_bytes_of_one_write(tmp_path: Path, monkeypatch, background: bool):
    monkeypatch.setattr(output, "CHUNK_CHARS", 100)
    lines = [f"line {n} " + "x" * (n % 37) for n in range(3000)]
    writer = output.Writer(background=background)
    for name, level in (("a.jsonl.gz", 6), ("b.jsonl.gz", 9), ("c.jsonl", 6)):
        file = writer.lines(tmp_path / "sub" / name, compresslevel=level)
        for line in lines:
            file.write(line)
        file.close()
    writer.write_bytes(tmp_path / "whole.log.gz", b"all at once\n", compresslevel=9)
    writer.finish()
    text = "".join(line + "\n" for line in lines).encode()
    for name, level in (("a.jsonl.gz", 6), ("b.jsonl.gz", 9)):
        buffer = io.BytesIO()
        with gzip.GzipFile(
            filename="", fileobj=buffer, mode="wb", compresslevel=level, mtime=0
        ) as g:
            g.write(text)
        assert (tmp_path / "sub" / name).read_bytes() == buffer.getvalue()
    assert (tmp_path / "sub" / "c.jsonl").read_bytes() == text
    assert gzip.decompress((tmp_path / "whole.log.gz").read_bytes()) == b"all at once\n"


def test_a_background_writers_failure_is_raised(tmp_path: Path):
    (tmp_path / "taken").write_text("a file where a folder should be")
    writer = output.Writer(background=True)
    writer.write_bytes(tmp_path / "taken" / "x.jsonl", b"x\n")
    with pytest.raises(OSError):  # as if written here: the command line reports it plainly
        writer.finish()


def test_the_command_line_takes_jobs(tmp_path: Path, capsys):
    from retrylake.cli import main

    args = ["generate", "--messages", "60", "--grpc5-messages", "0"]
    assert main([*args, "--out", str(tmp_path / "one"), "--jobs", "1"]) == 0
    assert main([*args, "--out", str(tmp_path / "two"), "--jobs", "2"]) == 0
    assert tree_digest(tmp_path / "one") == tree_digest(tmp_path / "two")
    assert main([*args, "--out", str(tmp_path / "none"), "--jobs", "0"]) == 2
    assert "--jobs must be 1 or more" in capsys.readouterr().err
