"""RocketMQ's retry rules in Python, for the simulator and the traffic generator (spec §11).

The dbt models implement the same rules in SQL (macros/rules/retry_rules.sql); this is the
independent second implementation the tests compare them with.
"""

from __future__ import annotations

from dataclasses import dataclass

CONSUME_TIMEOUT_MS = 15 * 60 * 1000


@dataclass(frozen=True)
class Group:
    """A consumer group's settings, as in seeds/consumer_groups.csv."""

    name: str
    message_model: str = "CLUSTERING"
    consume_mode: str = "CONCURRENTLY"
    max_reconsume_times: int = -1
    suspend_ms: int = 1000
    retry_queue_nums: int = 1
    delay_level_when_next_consume: int = 0
    broker_cluster: str = "DefaultCluster"
    client_line: str = "remoting-4.9"
    in_seed: bool = True

    def seed_row(self) -> list[object]:
        return [
            self.name,
            self.message_model,
            self.consume_mode,
            self.max_reconsume_times,
            self.suspend_ms,
            self.retry_queue_nums,
            self.delay_level_when_next_consume,
            self.broker_cluster,
            self.client_line,
            "",
        ]


@dataclass(frozen=True)
class Decision:
    decision: str  # RETRY, DLQ, LOCAL_RETRY or DROP
    delay_level: int | None = None
    delay_ms: int | None = None
    expected_redelivery_ms: int | None = None
    entered_dlq_ms: int | None = None


def decide(group: Group, reconsume_times: int, failed_at_ms: int, table: list[int]) -> Decision:
    """What the client and broker do with one failed delivery; ``table`` is the delay of each
    level of the group's broker cluster, in ms."""
    r = reconsume_times
    if group.consume_mode == "ORDERLY":
        limit = None if group.max_reconsume_times == -1 else group.max_reconsume_times
        if limit is not None and r >= limit:
            if group.client_line == "remoting-4.9":  # 4.9.x keeps DELAY=3+r on the DLQ copy
                level = min(3 + r, len(table))
                delay = table[level - 1]
                return Decision("DLQ", level, delay, entered_dlq_ms=failed_at_ms + delay)
            return Decision("DLQ", entered_dlq_ms=failed_at_ms)
        suspend = min(max(group.suspend_ms, 10), 30_000)
        return Decision("LOCAL_RETRY", None, suspend, failed_at_ms + suspend)
    if group.message_model == "BROADCASTING" or group.retry_queue_nums <= 0:
        return Decision("DROP")
    limit = 16 if group.max_reconsume_times == -1 else group.max_reconsume_times
    level_asked = group.delay_level_when_next_consume
    if r >= limit or level_asked < 0:
        return Decision("DLQ", entered_dlq_ms=failed_at_ms)
    level = min(level_asked if level_asked > 0 else 3 + r, len(table))
    delay = table[level - 1]
    return Decision("RETRY", level, delay, failed_at_ms + delay)
