"""20,000 generated messages built on the real embedded Spark: every lifecycle's final state and
deliveries, and every dead letter, agree with the generator's ground truth."""

from __future__ import annotations

from collections import Counter

import pytest

from retrylake.commands import build
from retrylake.generator import GeneratorConfig, generate, read_ground_truth
from retrylake.lakehouse import Lakehouse
from tests.conftest import PROJECT_DIR
from tests.integration.helpers import rows

pytestmark = [pytest.mark.integration, pytest.mark.spark]


@pytest.fixture(scope="module")
def generated(spark, lakehouse: Lakehouse, tmp_path_factory: pytest.TempPathFactory):
    out = tmp_path_factory.mktemp("generated-landing")
    config = GeneratorConfig(
        out=out,
        messages=20_000,
        seed=11,
        client_versions=("4.9", "4.8", "4.9.1", "old"),
        dlq_export=True,
    )
    stats = generate(config, seeds_dir=PROJECT_DIR / "seeds")
    build(PROJECT_DIR, Lakehouse(lakehouse.root, out), full_refresh=True)
    return config, stats


def test_every_lifecycle_matches_the_ground_truth(spark, generated):
    config, stats = generated
    truth = {(row["consumer_group"], row["msg_id"]): row for row in read_ground_truth(config.out)}
    built = {
        (row["consumer_group"], row["msg_id"]): row
        for row in rows(
            spark,
            "retrylake.message_lifecycles",
            [
                "consumer_group",
                "msg_id",
                "final_state",
                "deliveries",
                "origin_msg_id",
            ],
        )
    }
    assert len(truth) == stats.lifecycles
    assert set(built) == set(truth)
    mismatches = [
        (key, truth[key], built[key])
        for key in truth
        if (built[key]["final_state"], built[key]["deliveries"], built[key]["origin_msg_id"])
        != (truth[key]["final_state"], truth[key]["deliveries"], truth[key]["origin_msg_id"])
    ]
    assert mismatches == []
    states = Counter(row["final_state"] for row in truth.values())
    assert set(states) == {
        "CONSUMED",
        "DLQ",
        "DROPPED",
        "WAITING_RETRY",
        "RETRY_OVERDUE",
        "IN_FLIGHT",
    }, states


def test_every_dead_letter_matches_the_ground_truth(spark, generated):
    config, stats = generated
    expected = {
        (row["consumer_group"], row["msg_id"]): row["dlq_reconsume_times"]
        for row in read_ground_truth(config.out)
        if row["in_dlq"]
    }
    built = {
        (row["consumer_group"], row["msg_id"]): row["reconsume_times"]
        for row in rows(
            spark,
            "retrylake.dlq_messages",
            [
                "consumer_group",
                "msg_id",
                "reconsume_times",
            ],
        )
    }
    assert built == expected
    assert len(expected) == stats.dlq_messages > 0


def test_transport_faults_are_accounted_for(spark, generated):
    _, stats = generated
    staged = spark.sql(
        "select count(*) as lines, count_if(line_error is not null) as rejected "
        "from retrylake_staging.stg_landing__trace_lines"
    ).first()
    assert staged.lines == stats.lines
    assert staged.rejected == stats.malformed_lines
    records = spark.sql(
        "select count(*) as records, count(distinct trace_msg_id) as messages "
        "from retrylake_staging.stg_trace__records"
    ).first()
    assert records.records == stats.records  # duplicates of trace messages are read once
    assert records.messages == stats.trace_messages
