"""`retrylake report`: one self-contained HTML page of the charts an operator looks at.

The marts are read with DuckDB (no Java); charts are inline SVG and the page has no script,
font or style from the network, so it opens anywhere, offline. The DLQ section's reasons for
one-sided dead letters and its max reconsume drift need the `reconciliation_reason` column and
the `dlq_reconciliation` mart; on a lakehouse built before them those parts are left out, as is
the retry schedule fit section on a lakehouse without the `schedule_fit` mart.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from dataclasses import dataclass
from html import escape
from pathlib import Path

from retrylake.analyst.charts import bar_chart, line_chart
from retrylake.analyst.query import connect
from retrylake.lakehouse import Lakehouse
from retrylake.project import DEFAULT_PROJECT_DIR, project_var


@dataclass(frozen=True)
class OutageWindow:
    """Flow control, not sporadic failure: a consumer that returns RECONSUME_LATER while a
    dependency is down fails most deliveries for a sustained stretch, and fails them whatever
    the message: nearly every distinct message delivered in that stretch fails. Poison messages
    fail again and again, but they are few among the messages delivered. The numbers are var
    `outage_window` of the project's dbt_project.yml, which the what-if's outage windows
    (whatif_failure_windows) use too; read when a report is made, from the project it names."""

    bucket_minutes: int
    min_failure_rate: float
    min_buckets: int
    min_failing_share: float
    min_failures_per_bucket: int

    @classmethod
    def of_project(cls, project_dir: Path = DEFAULT_PROJECT_DIR) -> OutageWindow:
        window = project_var("outage_window", project_dir)
        return cls(
            bucket_minutes=int(window["bucket_minutes"]),
            min_failure_rate=float(window["min_failure_rate"]),
            min_buckets=int(window["min_buckets"]),
            min_failing_share=float(window["min_failing_share"]),
            min_failures_per_bucket=int(window["min_failures_per_bucket"]),
        )

    @property
    def min_run_minutes(self) -> int:
        return self.min_buckets * self.bucket_minutes


TOP_FAILED = 25

# A message's tries: its deliveries, less a broadcasting group's copies to its other instances
# (a lakehouse built before they were counted has no such column).
TRIES = "deliveries - coalesce(broadcast_copies, 0)"

LADDER_SQL = """
select consumer_group, {tries} as tries, count(*) as messages
from message_lifecycles group by all order by all
"""

DLQ_PER_DAY_SQL = """
select consumer_group, cast(entered_dlq_at as date) as day, count(*) as entries
from dlq_messages group by all order by all
"""

ONE_SIDED_SQL = """
select consumer_group, evidence, reconciliation_reason, count(*) as dead_letters
from dlq_messages
where evidence in ('PREDICTED', 'OBSERVED')
group by all order by consumer_group, evidence, reconciliation_reason
"""

DRIFT_SQL = """
select consumer_group, effective_max_reconsume_times, implied_max_reconsume_times
from dlq_reconciliation
where max_reconsume_drift
order by consumer_group
"""

DRIFT_COLUMNS = {
    "consumer_group",
    "effective_max_reconsume_times",
    "implied_max_reconsume_times",
    "max_reconsume_drift",
}

# The default of the dbt var `schedule_fit_min_redeliveries`: the mart names a group's best fit
# from this many redeliveries on. The report only says so; the mart decides.
SCHEDULE_FIT_MIN_REDELIVERIES = 20

SCHEDULE_FIT_SQL = """
select
    consumer_group,
    any_value(client_line) as client_line,
    coalesce(
        max(sample_size) filter (where candidate_schedule = 'CONFIGURED'), max(sample_size)
    ) as redeliveries,
    max(fit_share) filter (where candidate_schedule = 'CONFIGURED') as configured_fit_share,
    any_value(best_fit_schedule) as best_fit_schedule,
    max(fit_share) filter (where candidate_schedule = best_fit_schedule) as best_fit_share
from schedule_fit
group by consumer_group
order by consumer_group
"""

SCHEDULE_FIT_COLUMNS = {
    "consumer_group",
    "client_line",
    "candidate_schedule",
    "sample_size",
    "fit_share",
    "best_fit_schedule",
}

REDELIVERY_LAG_SQL = """
select
    delay_level,
    min(delay_ms) as scheduled_ms,
    count(*) as redeliveries,
    quantile_cont(redelivery_lag_ms, 0.5) as p50_lag_ms,
    quantile_cont(redelivery_lag_ms, 0.95) as p95_lag_ms,
    max(redelivery_lag_ms) as max_lag_ms
from retry_decisions
where decision = 'RETRY' and redelivery_lag_ms is not null
group by delay_level order by delay_level
"""

TIME_TO_SUCCESS_SQL = """
select
    consumer_group,
    count(*) as consumed,
    quantile_cont(time_to_success_ms, 0.5) as p50_ms,
    quantile_cont(time_to_success_ms, 0.9) as p90_ms,
    quantile_cont(time_to_success_ms, 0.99) as p99_ms
from message_lifecycles
where final_state = 'CONSUMED' and {tries} > 1
group by consumer_group order by consumer_group
"""

MOST_FAILED_SQL = f"""
select consumer_group, msg_id, origin_msg_id, topic, keys, deliveries, final_state
from message_lifecycles
where {{tries}} > 1
order by {{tries}} desc, deliveries desc, consumer_group, msg_id
limit {TOP_FAILED}
"""

FAILURE_BUCKETS_SQL = """
with attempts as (
    select
        consumer_group,
        msg_id,
        is_success,
        time_bucket(interval {bucket_minutes} minute, consume_started_at) as bucket
    from consume_attempts
),

buckets as (
    select
        consumer_group,
        bucket,
        count(*) as attempts,
        count(*) filter (where not is_success) as failures
    from attempts group by all
),

flagged as (
    select
        *,
        failures >= {min_failures_per_bucket}
        and failures >= {min_failure_rate} * attempts as is_high
    from buckets
),

runs as (
    select
        *,
        epoch(bucket) / ({bucket_minutes} * 60)
        - row_number() over (partition by consumer_group, is_high order by bucket) as run_key
    from flagged
)

select consumer_group, bucket, attempts, failures, is_high, run_key from runs order by all
"""

SUSTAINED_SQL = """
with runs as ({failure_buckets}),

run_lengths as (
    select consumer_group, run_key, count(*) as buckets, min(bucket) as run_start,
        max(bucket) + interval {bucket_minutes} minute as run_end
    from runs where is_high group by all
),

longest as (
    select * from run_lengths
    qualify row_number() over (
        partition by consumer_group order by buckets desc, run_start
    ) = 1
),

breadth as (
    select
        a.consumer_group,
        count(distinct a.msg_id) as delivered_messages,
        count(distinct a.msg_id) filter (where not a.is_success) as failed_messages
    from consume_attempts as a
    inner join longest as l
        on a.consumer_group = l.consumer_group
        and a.consume_started_at >= l.run_start and a.consume_started_at < l.run_end
    group by all
),

totals as (
    select consumer_group, count(*) as attempts, count(*) filter (where not is_success) as failures
    from consume_attempts group by all
)

select
    t.consumer_group,
    t.attempts,
    t.failures,
    coalesce(l.buckets, 0) * {bucket_minutes} as longest_run_minutes,
    l.run_start,
    b.delivered_messages,
    b.failed_messages
from totals as t
left join longest as l on t.consumer_group = l.consumer_group
left join breadth as b on t.consumer_group = b.consumer_group
order by t.consumer_group
"""


def _failure_buckets_sql(window: OutageWindow) -> str:
    return FAILURE_BUCKETS_SQL.format(**dataclasses.asdict(window))


@dataclass(frozen=True)
class GroupFailurePattern:
    window: OutageWindow
    consumer_group: str
    attempts: int
    failures: int
    longest_run_minutes: int
    run_start: dt.datetime | None
    delivered_messages: int | None
    failed_messages: int | None

    @property
    def failing_share(self) -> float | None:
        """Of the distinct messages delivered in the longest high-failure run, the share that
        failed there."""
        if not self.delivered_messages:
            return None
        return (self.failed_messages or 0) / self.delivered_messages

    @property
    def verdict(self) -> str:
        if self.failures == 0:
            return "no failures"
        if (
            self.longest_run_minutes >= self.window.min_run_minutes
            and (self.failing_share or 0) >= self.window.min_failing_share
        ):
            return "flow control"
        return "sporadic"


def failure_patterns(connection, window: OutageWindow) -> list[GroupFailurePattern]:
    sql = SUSTAINED_SQL.format(
        failure_buckets=_failure_buckets_sql(window), bucket_minutes=window.bucket_minutes
    )
    return [GroupFailurePattern(window, *row) for row in connection.execute(sql).fetchall()]


def _seconds(ms: float | None) -> str:
    if ms is None:
        return ""
    seconds = ms / 1000
    if seconds < 120:
        return f"{seconds:.1f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def _table(
    columns: list[str],
    rows: list[tuple],
    css_class: str = "",
    row_classes: list[str] | None = None,
) -> str:
    head = "".join(f"<th>{escape(column)}</th>" for column in columns)
    classes = row_classes or [""] * len(rows)
    body = "".join(
        (f'<tr class="{escape(row_class)}">' if row_class else "<tr>")
        + "".join(f"<td>{escape('' if v is None else str(v))}</td>" for v in row)
        + "</tr>"
        for row, row_class in zip(rows, classes, strict=True)
    )
    if not rows:
        body = f'<tr><td colspan="{len(columns)}" class="empty">none</td></tr>'
    return f'<table class="{css_class}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _ladder_section(connection, tries: str) -> str:
    rows = connection.execute(LADDER_SQL.format(tries=tries)).fetchall()
    groups = sorted({row[0] for row in rows})
    first_try = sum(messages for _, tries, messages in rows if tries == 1)
    top = max((row[1] for row in rows), default=2)
    rungs = list(range(2, max(top, 2) + 1))
    counts = {(group, n): messages for group, n, messages in rows}
    chart = bar_chart(
        "ladder",
        "Retried messages by number of tries, per consumer group",
        [str(n) for n in rungs],
        {group: [counts.get((group, n), 0) for n in rungs] for group in groups},
        y_label="messages",
        stacked=True,
    )
    return (
        "<h2>Deliveries per message</h2><p>How far up the retry ladder messages climb; the top "
        f"rung is the DLQ cut-off. {first_try:,} messages were consumed on their first delivery "
        "and are not drawn. A broadcasting group's copies to its other instances are no "
        "tries.</p>" + chart
    )


def _tries(connection) -> str:
    """How to count a message's tries in message_lifecycles (`TRIES`), or its deliveries in a
    lakehouse built before broadcast copies were counted."""
    return (
        TRIES if "broadcast_copies" in _columns(connection, "message_lifecycles") else "deliveries"
    )


def _columns(connection, table: str) -> set[str]:
    """The columns of a mart view; empty when the lakehouse has no such mart (a lakehouse built
    by an older model version lacks the newer tables and columns)."""
    return {
        name
        for (name,) in connection.execute(
            "select column_name from information_schema.columns where table_name = ?", [table]
        ).fetchall()
    }


ONE_SIDED = {"PREDICTED": "predicted only", "OBSERVED": "observed only"}


def _one_sided_part(connection) -> str:
    needed = {"consumer_group", "evidence", "reconciliation_reason"}
    if not _columns(connection, "dlq_messages").issuperset(needed):
        return ""
    rows = connection.execute(ONE_SIDED_SQL).fetchall()
    table = _table(
        ["consumer group", "seen", "reason", "dead letters"],
        [(group, ONE_SIDED[evidence], reason, n) for group, evidence, reason, n in rows],
        "reasons",
    )
    return (
        "<h3>Dead letters seen on one side only</h3><p>Observed only: a copy in the DLQ export "
        "that the rules do not predict from the trace. Predicted only: the rules send the "
        "message to the DLQ and no export shows the copy. Each reason is documented with "
        "the dlq_messages column reconciliation_reason.</p>" + table
    )


def _drift_part(connection) -> str:
    if not _columns(connection, "dlq_reconciliation").issuperset(DRIFT_COLUMNS):
        return ""
    rows = connection.execute(DRIFT_SQL).fetchall()
    if not rows:
        items = "<li>No group's DLQ copies contradict its max reconsume times.</li>"
    else:
        items = "".join(
            f"<li>{escape(group)}: the rules apply maxReconsumeTimes {effective}, its DLQ "
            f"copies imply {implied}. Check the consumer's setting and "
            "seeds/consumer_groups.csv.</li>"
            for group, effective, implied in rows
        )
    return f'<h3>Max reconsume times drift</h3><ul class="drift">{items}</ul>'


def _dlq_section(connection) -> str:
    rows = connection.execute(DLQ_PER_DAY_SQL).fetchall()
    days = sorted({row[1] for row in rows})
    groups = sorted({row[0] for row in rows})
    counts = {(group, day): entries for group, day, entries in rows}
    chart = bar_chart(
        "dlq_per_day",
        "DLQ entries per day, per consumer group",
        [day.isoformat() for day in days],
        {group: [counts.get((group, day), 0) for day in days] for group in groups},
        y_label="DLQ entries",
        stacked=True,
    )
    return (
        "<h2>Dead letters per day</h2>"
        + chart
        + _one_sided_part(connection)
        + _drift_part(connection)
    )


def _share(value) -> str:
    return "\u2014" if value is None else f"{float(value):.0%}"


def _schedule_fit_section(connection) -> str:
    """One row per group: how its redelivery gaps fit the configured schedule and the best
    fitting one; groups whose best fit is not the configured schedule are listed above the table.
    Empty on a lakehouse without the `schedule_fit` mart."""
    if not _columns(connection, "schedule_fit").issuperset(SCHEDULE_FIT_COLUMNS):
        return ""
    rows = connection.execute(SCHEDULE_FIT_SQL).fetchall()
    table_rows, row_classes, mismatched = [], [], []
    for group, client_line, redeliveries, configured, best, best_share in rows:
        if best is None:
            seed_row = "\u2014"
        elif best == "CONFIGURED":
            seed_row = "matches"
        else:
            seed_row = f"does not match: runs on {best}"
            mismatched.append((group, client_line, redeliveries, configured, best, best_share))
        table_rows.append(
            (
                group,
                client_line,
                redeliveries,
                _share(configured),
                "\u2014" if best is None else best,
                _share(best_share) if best is not None else "\u2014",
                seed_row,
            )
        )
        row_classes.append("mismatch" if best not in (None, "CONFIGURED") else "")
    table = _table(
        [
            "consumer group",
            "client line",
            "redeliveries",
            "configured fit share",
            "best fit",
            "best fit share",
            "seed row",
        ],
        table_rows,
        "schedule-fit",
        row_classes,
    )
    warning = ""
    if mismatched:
        items = "".join(
            f"<li>{escape(group)}"
            + (f" ({escape(client_line)})" if client_line else "")
            + f": seed row does not match: runs on {escape(best)}, which fits "
            f"{_share(best_share)} of its {redeliveries:,} redeliveries; the configured "
            f"schedule fits {_share(configured)}.</li>"
            for group, client_line, redeliveries, configured, best, best_share in mismatched
        )
        warning = (
            '<div class="warning"><p><strong>Seed row does not match how the group really '
            f"retries ({len(mismatched)} of {len(rows)} groups).</strong> The rules time "
            "these groups' redeliveries by the configured schedule, which they do not run "
            "on; check each consumer's retry settings and its row in "
            "seeds/consumer_groups.csv.</p>"
            f'<ul class="mismatch">{items}</ul></div>'
        )
    return (
        "<h2>Retry schedule fit</h2><p>Each group's observed redelivery gaps, from a failed "
        "delivery to the next, against each candidate schedule: the one its settings configure, "
        "the broker's delay levels, the gRPC client's ladder, the documented ladder and the "
        "exponential policy. The best fit is named from "
        f"{SCHEDULE_FIT_MIN_REDELIVERIES} redeliveries on; groups with fewer "
        "show \u2014 in its place.</p>" + warning + table
    )


def _lag_section(connection) -> str:
    rows = connection.execute(REDELIVERY_LAG_SQL).fetchall()
    levels = [f"L{row[0]}" for row in rows]
    chart = bar_chart(
        "redelivery_lag",
        "Redelivery lag behind schedule, by delay level (seconds; delays in the table below)",
        levels,
        {
            "p50": [row[3] / 1000 for row in rows],
            "p95": [row[4] / 1000 for row in rows],
        },
        y_label="seconds late",
    )
    table = _table(
        ["delay level", "scheduled delay", "redeliveries", "p50 lag", "p95 lag", "max lag"],
        [
            (row[0], _seconds(row[1]), row[2], _seconds(row[3]), _seconds(row[4]), _seconds(row[5]))
            for row in rows
        ],
    )
    return (
        "<h2>Redelivery lag against schedule</h2><p>Observed redelivery minus the time the "
        "delay level scheduled it for. A lag that grows with load points at the schedule "
        "service or a slow consumer, not at the delay table.</p>" + chart + table
    )


def _time_to_success_section(connection, tries: str) -> str:
    rows = connection.execute(TIME_TO_SUCCESS_SQL.format(tries=tries)).fetchall()
    chart = bar_chart(
        "time_to_success",
        "Time to success of retried messages, per consumer group (minutes)",
        [row[0] for row in rows],
        {
            "p50": [row[2] / 60000 for row in rows],
            "p90": [row[3] / 60000 for row in rows],
            "p99": [row[4] / 60000 for row in rows],
        },
        y_label="minutes",
    )
    table = _table(
        ["consumer group", "consumed after retry", "p50", "p90", "p99"],
        [(row[0], row[1], _seconds(row[2]), _seconds(row[3]), _seconds(row[4])) for row in rows],
    )
    return "<h2>Time to success</h2>" + chart + table


def _most_failed_section(connection, tries: str) -> str:
    rows = connection.execute(MOST_FAILED_SQL.format(tries=tries)).fetchall()
    table = _table(
        ["consumer group", "msg_id", "origin_msg_id", "topic", "keys", "deliveries", "state"],
        rows,
        "ids",
    )
    return f"<h2>The {TOP_FAILED} messages that failed most</h2>" + table


def _flow_control_section(connection, window: OutageWindow) -> str:
    patterns = failure_patterns(connection, window)
    buckets = connection.execute(_failure_buckets_sql(window)).fetchall()
    times = sorted({row[1] for row in buckets})
    rate = {(row[0], row[1]): row[3] / row[2] for row in buckets if row[2]}
    groups = [p.consumer_group for p in patterns if p.failures]
    chart = line_chart(
        "failure_rate",
        f"Failure rate per {window.bucket_minutes}-minute bucket (day hh:mm UTC), per group",
        [t.strftime("%d %H:%M") for t in times],
        {group: [rate.get((group, t)) for t in times] for group in groups},
        y_label="failed share of deliveries",
        y_max=1.0,
    )
    table = _table(
        [
            "consumer group",
            "deliveries",
            "failure rate",
            "longest sustained run",
            "run started",
            "messages delivered in run",
            "of which failed",
            "looks like",
        ],
        [
            (
                p.consumer_group,
                p.attempts,
                f"{p.failures / p.attempts:.1%}" if p.attempts else "",
                f"{p.longest_run_minutes} min" if p.longest_run_minutes else "",
                p.run_start.strftime("%Y-%m-%d %H:%M") if p.run_start else "",
                p.delivered_messages or "",
                f"{p.failing_share:.0%}" if p.failing_share is not None else "",
                p.verdict,
            )
            for p in patterns
        ],
        "verdicts",
    )
    return (
        "<h2>Flow control or sporadic failure?</h2><p>A group that fails at least "
        f"{window.min_failure_rate:.0%} of its deliveries for "
        f"{window.min_run_minutes} minutes or more, failing at "
        f"least {window.min_failing_share:.0%} of the distinct messages it was given in "
        "that stretch, is failing whatever the message: RECONSUME_LATER as flow control while a "
        "dependency is down, not sporadic failure or a few poison messages. With a low "
        "maxReconsumeTimes such a stretch fills the DLQ with good messages.</p>" + chart + table
    )


STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #222; max-width: 1100px; }
h1 { font-size: 22px; } h2 { font-size: 17px; margin-top: 32px; } h3 { font-size: 15px; }
svg.chart { display: block; margin: 8px 0; background: #fff; border: 1px solid #ddd; }
svg.chart text { font-size: 11px; fill: #333; } svg.chart text.title { font-weight: 600; }
table { border-collapse: collapse; margin: 8px 0; }
th, td { border: 1px solid #ddd; padding: 3px 8px; text-align: left; }
th { background: #f3f3f3; } td.empty { color: #888; }
table.ids td:nth-child(2), table.ids td:nth-child(3) { font-family: monospace; }
.summary span { display: inline-block; margin-right: 24px; }
.warning { border-left: 4px solid #c77700; background: #fff6e5; padding: 4px 12px; }
tr.mismatch td { background: #fff6e5; } tr.mismatch td:last-child { font-weight: 600; }
"""


WHATIF_SQL = """
select
    scenario, consumer_group, observed_dlq, predicted_dlq, observed_deliveries,
    predicted_deliveries, observed_p95_time_to_success_ms, predicted_p95_time_to_success_ms
from whatif_group_summary
where scenario <> 'observed'
order by scenario, consumer_group
"""


def _whatif_section(connection) -> str:
    """The scenarios of `retrylake whatif` beside what was observed, for the groups a scenario
    changes; nothing on a lakehouse where the what-if was never built."""
    if not _columns(connection, "whatif_group_summary"):
        return ""
    rows = connection.execute(WHATIF_SQL).fetchall()
    changed = [row for row in rows if row[2] != row[3] or row[4] != row[5]]
    groups = sorted({row[1] for row in changed})
    scenarios = sorted({row[0] for row in rows})
    if not groups:
        return (
            "<h2>What-if</h2><p>No scenario of seeds/whatif_*.csv changes any group's dead "
            "letters or deliveries.</p>"
        )
    by_key = {(row[0], row[1]): row for row in rows}
    observed = {row[1]: row for row in rows}

    def series(observed_column: int, predicted_column: int) -> dict[str, list[float]]:
        drawn = {"observed": [observed[group][observed_column] for group in groups]}
        for scenario in scenarios:
            drawn[scenario] = [
                by_key[scenario, group][predicted_column]
                if (scenario, group) in by_key
                else observed[group][observed_column]
                for group in groups
            ]
        return drawn

    dlq_chart = bar_chart(
        "whatif_dlq",
        "Dead letters per consumer group: observed, and under each what-if scenario",
        groups,
        series(2, 3),
        y_label="dead letters",
    )
    deliveries_chart = bar_chart(
        "whatif_deliveries",
        "Deliveries per consumer group (broker and consumer load): observed, and under each "
        "scenario",
        groups,
        series(4, 5),
        y_label="deliveries",
    )
    table = _table(
        ["scenario", "consumer group", "dead letters", "deliveries", "p95 time to success"],
        [
            (
                row[0],
                row[1],
                f"{row[2]:,} → {row[3]:,}",
                f"{row[4]:,} → {row[5]:,} ({row[5] - row[4]:+,})",
                f"{_seconds(row[6])} → {_seconds(row[7])}",
            )
            for row in changed
        ],
    )
    return (
        "<h2>What-if</h2><p>The observed deliveries replayed under other retry settings "
        "(seeds/whatif_*.csv, <code>retrylake whatif</code>; docs/whatif.md), for the groups a "
        "scenario changes.</p>" + dlq_chart + deliveries_chart + table
    )


def render_report(lakehouse: Lakehouse, project_dir: Path = DEFAULT_PROJECT_DIR) -> str:
    """The report's HTML; the flow-control verdicts use var `outage_window` of the dbt project in
    ``project_dir`` (the one the lakehouse was built with)."""
    window = OutageWindow.of_project(project_dir)
    connection = connect(lakehouse)
    try:
        tries = _tries(connection)
        summary = connection.execute(
            "select count(*), count(*) filter (where final_state = 'DLQ'), "
            f"count(*) filter (where {tries} > 1), max(last_consume_at) "
            "from message_lifecycles"
        ).fetchone()
        sections = [
            _ladder_section(connection, tries),
            _dlq_section(connection),
            _schedule_fit_section(connection),
            _lag_section(connection),
            _time_to_success_section(connection, tries),
            _most_failed_section(connection, tries),
            _flow_control_section(connection, window),
            _whatif_section(connection),
        ]
    finally:
        connection.close()
    lifecycles, dead, retried, latest = summary
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        "<title>retrylake report</title>"
        f"<style>{STYLE}</style></head><body>"
        "<h1>RocketMQ retries and dead letters</h1>"
        f'<p class="summary"><span>{lifecycles:,} message lifecycles</span>'
        f"<span>{retried:,} retried</span><span>{dead:,} in the DLQ</span>"
        f"<span>latest consumption: {latest:%Y-%m-%d %H:%M:%S} UTC</span></p>"
        + "".join(sections)
        + f"<p><small>From {escape(str(lakehouse.warehouse))}.</small></p></body></html>"
    )
