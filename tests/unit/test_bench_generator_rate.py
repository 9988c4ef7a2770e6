"""The bench's generator rate (retrylake.bench.measure._generator_rate): per process-second and
per wall-second, the latter only when every chunk was generated in this run."""

from __future__ import annotations

from retrylake.bench.measure import _generator_rate


def test_both_rates_when_every_chunk_was_generated():
    # two chunks of 3 s each, generated side by side on two cores in 3.2 s of wall time
    chunks = [{"records": 300_000, "seconds": 3.0}, {"records": 330_000, "seconds": 3.0}]
    rate = _generator_rate(chunks, wall_seconds=3.2)
    assert rate["records"] == 630_000
    assert rate["seconds"] == 6.0
    assert rate["records_per_second"] == 105_000
    assert rate["wall_seconds"] == 3.2
    assert rate["records_per_wall_second"] == 196_875


def test_no_wall_rate_when_a_chunk_came_from_the_cache():
    # a cached chunk has no seconds: the wall time covers only part of the work
    chunks = [{"records": 300_000, "seconds": 4.0}, {"records": 330_000}]
    rate = _generator_rate(chunks, wall_seconds=4.5)
    assert rate["records_per_second"] == 75_000
    assert rate["wall_seconds"] is None and rate["records_per_wall_second"] is None


def test_no_rate_when_every_chunk_came_from_the_cache():
    rate = _generator_rate([{"records": 300_000}, {"records": 330_000}], wall_seconds=0.1)
    assert rate["records"] == 0 and rate["records_per_second"] is None
    assert rate["records_per_wall_second"] is None
