"""RocketMQ's retry rules in Python, for the simulation engine (spec §11).

The dbt models implement the same rules in SQL (macros/rules/retry_rules.sql); this is the
independent second implementation the tests compare them with.
"""

from __future__ import annotations

from dataclasses import dataclass

from retrylake.project import consumer_group_defaults

CONSUME_TIMEOUT_MS = 15 * 60 * 1000

# RocketMQ's defaults, from dbt_project.yml like the models' (an empty seed cell, a missing group)
DEFAULTS = consumer_group_defaults()
# What broker_cluster '*' (the default delay row) stands for where a real cluster name is
# written, as in a DLQ copy's CLUSTER property: RocketMQ's own default cluster name.
DEFAULT_CLUSTER_NAME = "DefaultCluster"

# Seed column -> Group field, for the columns that have a default.
SEED_FIELDS = {
    "message_model": "message_model",
    "consume_mode": "consume_mode",
    "max_reconsume_times": "max_reconsume_times",
    "suspend_current_queue_time_millis": "suspend_ms",
    "retry_queue_nums": "retry_queue_nums",
    "delay_level_when_next_consume": "delay_level_when_next_consume",
    "broker_cluster": "broker_cluster",
    "client_line": "client_line",
}


@dataclass(frozen=True)
class Group:
    """A consumer group's settings, as in seeds/consumer_groups.csv."""

    name: str
    message_model: str = DEFAULTS["message_model"]
    consume_mode: str = DEFAULTS["consume_mode"]
    max_reconsume_times: int = int(DEFAULTS["max_reconsume_times"])
    suspend_ms: int = int(DEFAULTS["suspend_current_queue_time_millis"])
    retry_queue_nums: int = int(DEFAULTS["retry_queue_nums"])
    delay_level_when_next_consume: int = int(DEFAULTS["delay_level_when_next_consume"])
    broker_cluster: str = DEFAULTS["broker_cluster"]
    client_line: str = DEFAULTS["client_line"]
    in_seed: bool = True

    @classmethod
    def from_seed_row(cls, row: dict[str, str]) -> Group:
        """A row of consumer_groups.csv; an empty cell takes the default, as in the models."""
        values: dict[str, object] = {}
        for column, name in SEED_FIELDS.items():
            if row.get(column):
                default = cls.__dataclass_fields__[name].default
                values[name] = int(row[column]) if isinstance(default, int) else row[column]
        return cls(row["consumer_group"], **values)

    @property
    def cluster_name(self) -> str:
        """The broker cluster's name; a real cluster is never named '*'."""
        return DEFAULT_CLUSTER_NAME if self.broker_cluster == "*" else self.broker_cluster

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


def dlq_copy_reconsume_times(group: Group, reconsume_times: int) -> int:
    """The reconsumeTimes stored on a DLQ copy of a message that failed with ``reconsume_times``:
    r + 1 (the broker's send-back, §1.2 step 10), except an orderly client of the 4.9.x line,
    which sends its DLQ copy with RECONSUME_TIME = r (5.1.1+ sends r + 1, §3.5)."""
    if group.consume_mode == "ORDERLY" and group.client_line == "remoting-4.9":
        return reconsume_times
    return reconsume_times + 1
