"""RocketMQ's retry rules in Python, for the simulation engine (spec §11).

The dbt models implement the same rules in SQL (macros/rules/retry_rules.sql); this is the
independent second implementation the tests compare them with.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from retrylake.config_check import GROUP_COLUMNS
from retrylake.project import consumer_group_defaults, default_broker_version
from spark_udfs import parse_delay_levels

CONSUME_TIMEOUT_MS = 15 * 60 * 1000  # DefaultMQPushConsumer.consumeTimeout, 15 minutes (§3.1)

# RocketMQ's defaults, from dbt_project.yml like the models' (an empty seed cell, a missing group)
DEFAULTS = consumer_group_defaults()
DEFAULT_BROKER_VERSION = default_broker_version()
# What broker_cluster '*' (the default delay row) stands for where a real cluster name is
# written, as in a DLQ copy's CLUSTER property: RocketMQ's own default cluster name.
DEFAULT_CLUSTER_NAME = "DefaultCluster"

# The simulated deployment's groups that live in an instance with a namespace (spec §7): the
# broker stores them as `<namespace>%<group>` and their topics as `<namespace>%<topic>`, so
# their %DLQ% topics, DLQ copies' RETRY_TOPIC and the brokers' DLQ log lines carry it, while
# their clients' trace records and OpenTelemetry spans do not (NamespaceUtil.withoutNamespace).
NAMESPACES = {"inventory-sync": "MQ_INST_1_demo", "notify-exp": "MQ_INST_1_demo"}


def broker_name(group: str, name: str) -> str:
    """``name`` (a group, a topic, or a %RETRY% or %DLQ% topic) as the broker stores it for
    ``group``'s clients: wrapped in the group's namespace after any such prefix
    (NamespaceUtil.wrapNamespace)."""
    namespace = NAMESPACES.get(group)
    if namespace is None:
        return name
    for prefix in ("%RETRY%", "%DLQ%"):
        if name.startswith(prefix):
            return f"{prefix}{namespace}%{name[len(prefix) :]}"
    return f"{namespace}%{name}"


# The client lines of 5.x gRPC consumers, and the seed columns only they use (design.md)
GRPC_CLIENT_LINES = ("grpc-5", "cloud-5")
GRPC_ONLY_COLUMNS = (
    "group_retry_policy",
    "retry_max_times",
    "consumer_kind",
    "dead_letter_enabled",
)

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
    "consume_timeout_minutes": "consume_timeout_minutes",
    "group_retry_policy": "group_retry_policy",
    "retry_max_times": "retry_max_times",
    "consumer_kind": "consumer_kind",
    "dead_letter_enabled": "dead_letter_enabled",
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
    # the consumer's consumeTimeout; read from the seed when it has the column
    consume_timeout_minutes: int = int(
        DEFAULTS.get("consume_timeout_minutes", CONSUME_TIMEOUT_MS // 60_000)
    )
    # 5.x gRPC groups (spec §8, seed 002); a remoting group leaves them at their defaults
    group_retry_policy: str = ""
    retry_max_times: int = int(DEFAULTS.get("retry_max_times", 16))
    consumer_kind: str = DEFAULTS.get("consumer_kind", "PUSH")
    dead_letter_enabled: str = str(DEFAULTS.get("dead_letter_enabled", True)).lower()
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

    @property
    def consume_timeout_ms(self) -> int:
        return self.consume_timeout_minutes * 60_000

    def seed_row(self, columns: Sequence[str] = GROUP_COLUMNS) -> list[object]:
        """The group's row of consumer_groups.csv, in the order of ``columns``."""
        values: dict[str, object] = {"consumer_group": self.name}
        values.update((column, getattr(self, name)) for column, name in SEED_FIELDS.items())
        if self.client_line not in GRPC_CLIENT_LINES:
            for column in GRPC_ONLY_COLUMNS:
                values.pop(column)
        return [values.get(column, "") for column in columns]


@dataclass(frozen=True)
class Decision:
    decision: str  # RETRY, DLQ, LOCAL_RETRY or DROP
    delay_level: int | None = None
    delay_ms: int | None = None
    expected_redelivery_ms: int | None = None
    entered_dlq_ms: int | None = None


def is_4x_broker(broker_version: str) -> bool:
    """A broker of the 4.x line: the send-back behaviours that 5.x changed (§1.3, §1.4)."""
    return int(broker_version.split(".")[0]) < 5


def delay_table(message_delay_level: str) -> list[int]:
    """The delay of each level of a broker's ``messageDelayLevel``, in ms, as the schedule waits
    it: a level of zero or less is due at once, its deliver time (store time + delay) having
    come (spec §2.3)."""
    return [max(ms, 0) for _, _, ms in parse_delay_levels(message_delay_level)]


def decide(
    group: Group,
    reconsume_times: int,
    failed_at_ms: int,
    table: list[int],
    broker_version: str = DEFAULT_BROKER_VERSION,
) -> Decision:
    """What the client and broker do with one failed delivery; ``table`` is the delay of each
    level of the group's broker cluster, in ms (`delay_table`), and ``broker_version`` that
    cluster's version."""
    r = reconsume_times
    if group.consume_mode == "ORDERLY":
        limit = None if group.max_reconsume_times == -1 else group.max_reconsume_times
        if limit is not None and r >= limit:
            if is_4x_broker(broker_version):  # a 4.x broker keeps DELAY=3+r on the DLQ copy
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
