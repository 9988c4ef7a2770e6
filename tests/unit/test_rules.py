"""The broker's rules in Python (retrylake.sim.rules) against fixed values from the spec: the
same ladder the dbt unit tests pin for the SQL (models/intermediate/_intermediate__unit_tests.yml).
Every expected number is written out, not computed by the code under test."""

from __future__ import annotations

import pytest

from retrylake.sim.rules import Decision, Group, decide, delay_table, dlq_copy_reconsume_times

FAILED_AT = 1_772_323_200_000
# "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h", in ms
DEFAULT_TABLE = [
    1_000,
    5_000,
    10_000,
    30_000,
    60_000,
    120_000,
    180_000,
    240_000,
    300_000,
    360_000,
    420_000,
    480_000,
    540_000,
    600_000,
    1_200_000,
    1_800_000,
    3_600_000,
    7_200_000,
]

# reconsumeTimes -> (delay level, delay ms): 10s 30s 1m 2m ... 30m 1h 2h at levels 3..18
DEFAULT_LADDER = [
    (0, 3, 10_000),
    (1, 4, 30_000),
    (2, 5, 60_000),
    (3, 6, 120_000),
    (4, 7, 180_000),
    (5, 8, 240_000),
    (6, 9, 300_000),
    (7, 10, 360_000),
    (8, 11, 420_000),
    (9, 12, 480_000),
    (10, 13, 540_000),
    (11, 14, 600_000),
    (12, 15, 1_200_000),
    (13, 16, 1_800_000),
    (14, 17, 3_600_000),
    (15, 18, 7_200_000),
]


def _group(**settings) -> Group:
    return Group(
        "g",
        **{
            "message_model": "CLUSTERING",
            "consume_mode": "CONCURRENTLY",
            "max_reconsume_times": -1,
            "suspend_ms": 1000,
            "retry_queue_nums": 1,
            "delay_level_when_next_consume": 0,
            "broker_cluster": "DefaultCluster",
            "client_line": "remoting-4.9",
            **settings,
        },
    )


@pytest.mark.parametrize(("reconsume_times", "level", "delay_ms"), DEFAULT_LADDER)
def test_the_default_ladder(reconsume_times: int, level: int, delay_ms: int):
    assert decide(_group(), reconsume_times, FAILED_AT, DEFAULT_TABLE) == Decision(
        "RETRY", level, delay_ms, FAILED_AT + delay_ms
    )


def test_the_17th_failure_goes_to_the_dlq_when_max_is_unset():
    assert decide(_group(), 16, FAILED_AT, DEFAULT_TABLE) == Decision(
        "DLQ", entered_dlq_ms=FAILED_AT
    )
    assert decide(_group(max_reconsume_times=16), 16, FAILED_AT, DEFAULT_TABLE) == Decision(
        "DLQ", entered_dlq_ms=FAILED_AT
    )


@pytest.mark.parametrize("reconsume_times", [15, 16, 17, 18, 19])
def test_above_the_table_the_highest_level_holds(reconsume_times: int):
    group = _group(max_reconsume_times=20)
    assert decide(group, reconsume_times, FAILED_AT, DEFAULT_TABLE) == Decision(
        "RETRY", 18, 7_200_000, FAILED_AT + 7_200_000
    )


def test_max_20_dead_letters_at_20():
    assert decide(_group(max_reconsume_times=20), 20, FAILED_AT, DEFAULT_TABLE) == Decision(
        "DLQ", entered_dlq_ms=FAILED_AT
    )


def test_a_short_cluster_table_clamps_to_its_last_level():
    # "5s 8s": level 3 does not exist, so level 2, 8 s
    assert decide(_group(), 0, FAILED_AT, [5_000, 8_000]) == Decision(
        "RETRY", 2, 8_000, FAILED_AT + 8_000
    )


def test_a_level_of_zero_or_less_redelivers_at_once():
    # "-1s 0s": parsed without error; store time + delay is already due, the timer sends it (§2.3)
    assert decide(_group(), 0, FAILED_AT, delay_table("-1s 0s")) == Decision(
        "RETRY", 2, 0, FAILED_AT
    )
    group = _group(delay_level_when_next_consume=1)
    assert decide(group, 0, FAILED_AT, delay_table("-1s 0s")) == Decision("RETRY", 1, 0, FAILED_AT)


def test_max_0_and_a_listener_asking_for_the_dlq_dead_letter_at_once():
    assert decide(_group(max_reconsume_times=0), 0, FAILED_AT, DEFAULT_TABLE) == Decision(
        "DLQ", entered_dlq_ms=FAILED_AT
    )
    group = _group(delay_level_when_next_consume=-1)
    assert decide(group, 0, FAILED_AT, DEFAULT_TABLE) == Decision("DLQ", entered_dlq_ms=FAILED_AT)


def test_a_listener_chosen_level_is_used_as_is():
    group = _group(delay_level_when_next_consume=5)
    assert decide(group, 7, FAILED_AT, DEFAULT_TABLE) == Decision(
        "RETRY", 5, 60_000, FAILED_AT + 60_000
    )


@pytest.mark.parametrize(
    ("suspend_ms", "waits_ms"), [(1000, 1000), (5, 10), (0, 10), (60_000, 30_000), (30_000, 30_000)]
)
def test_orderly_retries_locally_after_the_clamped_suspend_time(suspend_ms: int, waits_ms: int):
    group = _group(consume_mode="ORDERLY", suspend_ms=suspend_ms, max_reconsume_times=3)
    assert decide(group, 0, FAILED_AT, DEFAULT_TABLE) == Decision(
        "LOCAL_RETRY", None, waits_ms, FAILED_AT + waits_ms
    )


def test_orderly_without_a_max_never_dead_letters():
    group = _group(consume_mode="ORDERLY")
    assert decide(group, 1000, FAILED_AT, DEFAULT_TABLE) == Decision(
        "LOCAL_RETRY", None, 1000, FAILED_AT + 1000
    )


@pytest.mark.parametrize("client_line", ["remoting-4.9", "remoting-5"])
def test_orderly_at_max_dead_letters_through_the_schedule_on_a_4_9_broker(client_line: str):
    # The client sends the DLQ copy with DELAY = 3 + r and a 4.x broker keeps it (§1.3):
    # r = 3 is level 6, 2 minutes, whichever client sent it.
    group = _group(consume_mode="ORDERLY", max_reconsume_times=3, client_line=client_line)
    assert decide(group, 3, FAILED_AT, DEFAULT_TABLE, "4.9") == Decision(
        "DLQ", 6, 120_000, entered_dlq_ms=FAILED_AT + 120_000
    )


@pytest.mark.parametrize("client_line", ["remoting-4.9", "remoting-5"])
def test_orderly_at_max_dead_letters_at_once_on_a_5_broker(client_line: str):
    # A 5.x broker forces DELAY=-1 on the DLQ copy (§1.4).
    group = _group(consume_mode="ORDERLY", max_reconsume_times=3, client_line=client_line)
    assert decide(group, 3, FAILED_AT, DEFAULT_TABLE, "5.3") == Decision(
        "DLQ", entered_dlq_ms=FAILED_AT
    )


@pytest.mark.parametrize(
    "settings", [{"message_model": "BROADCASTING"}, {"retry_queue_nums": 0}], ids=str
)
def test_broadcasting_and_no_retry_queue_drop_the_message(settings: dict):
    assert decide(_group(**settings), 0, FAILED_AT, DEFAULT_TABLE) == Decision("DROP")


@pytest.mark.parametrize(
    ("consume_mode", "client_line", "stored"),
    [
        # the broker's send-back stores r + 1 (§1.2 step 10)
        ("CONCURRENTLY", "remoting-4.9", 17),
        ("CONCURRENTLY", "remoting-5", 17),
        # an orderly 4.9.x client sends RECONSUME_TIME = r, 5.1.1+ r + 1 (§3.5)
        ("ORDERLY", "remoting-4.9", 16),
        ("ORDERLY", "remoting-5", 17),
    ],
)
def test_the_count_a_dlq_copy_stores(consume_mode: str, client_line: str, stored: int):
    group = Group("g", consume_mode=consume_mode, client_line=client_line)
    assert dlq_copy_reconsume_times(group, 16) == stored
