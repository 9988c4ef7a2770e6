"""The report's retry schedule fit section on small schedule_fit files written by DuckDB: a group
whose best fit is not its configured schedule is named in a warning and its row is marked, a
group below the minimum sample has no best fit, and a lakehouse without the mart renders
without the section."""

from __future__ import annotations

from pathlib import Path

import pytest

from retrylake.analyst.query import run_query
from retrylake.analyst.report import render_report
from retrylake.lakehouse import Lakehouse
from tests.unit.test_dlq_work_list import DLQ_COLUMNS, ROWS, _other_marts, _write_rows

SCHEDULE_FIT_COLUMNS = """
    consumer_group varchar, client_line varchar, candidate_schedule varchar, sample_size bigint,
    fitting_redeliveries bigint, fit_share double, median_residual_ms bigint,
    median_relative_residual double, fit_rank integer, best_fit_schedule varchar,
    is_best_fit boolean, configured_is_best_fit boolean
"""

SCHEDULES = ("CONFIGURED", "BROKER_LEVELS", "GRPC_LADDER", "DOCUMENTED_LADDER", "EXPONENTIAL")


def _group(group: str, client_line: str, sample: int, fitting: dict[str, int], best: bool):
    """The five candidate rows of one group; ``fitting`` counts the fitting redeliveries per
    candidate, the best fit is named only when ``best``."""
    ranked = sorted(SCHEDULES, key=lambda s: (-fitting.get(s, 0), s != "CONFIGURED", s))
    best_fit = ranked[0] if best else None
    return [
        {
            "consumer_group": group,
            "client_line": client_line,
            "candidate_schedule": schedule,
            "sample_size": sample,
            "fitting_redeliveries": fitting.get(schedule, 0),
            "fit_share": fitting.get(schedule, 0) / sample,
            "median_residual_ms": 0 if schedule == best_fit else 5000,
            "median_relative_residual": 0.0 if schedule == best_fit else 0.5,
            "fit_rank": ranked.index(schedule) + 1,
            "best_fit_schedule": best_fit,
            "is_best_fit": schedule == best_fit,
            "configured_is_best_fit": None if best_fit is None else best_fit == "CONFIGURED",
        }
        for schedule in SCHEDULES
    ]


SCHEDULE_FIT_ROWS = [
    # runs as configured
    *_group("order-service", "remoting-4.9", 40, {"CONFIGURED": 40, "BROKER_LEVELS": 40}, True),
    # configured with the gRPC client's ladder, really on the documented 10 s ladder
    *_group(
        "mislabeled-push",
        "grpc-5",
        50,
        {"CONFIGURED": 6, "GRPC_LADDER": 6, "DOCUMENTED_LADDER": 48, "BROKER_LEVELS": 30},
        True,
    ),
    # too few redeliveries for a verdict, though CONFIGURED fits none of them
    *_group("report-simple", "grpc-5", 7, {"EXPONENTIAL": 7}, False),
]


def _lakehouse(root: Path, schedule_fit: list[dict] | None) -> Lakehouse:
    lake = Lakehouse(root, root / "landing")
    marts = lake.warehouse / "retrylake.db"
    _write_rows(marts / "dlq_messages" / "part-0.parquet", DLQ_COLUMNS, ROWS)
    _other_marts(marts)
    if schedule_fit is not None:
        _write_rows(marts / "schedule_fit" / "part-0.parquet", SCHEDULE_FIT_COLUMNS, schedule_fit)
    return lake


@pytest.fixture()
def lakehouse(tmp_path: Path) -> Lakehouse:
    return _lakehouse(tmp_path, SCHEDULE_FIT_ROWS)


def _section(html: str) -> str:
    start = html.index("<h2>Retry schedule fit</h2>")
    return html[start : html.index("<h2>", start + 1)]


def _cells(row: tuple) -> str:
    return "".join(f"<td>{cell}</td>" for cell in row)


def test_query_finds_the_schedule_fit_mart(lakehouse: Lakehouse):
    _, rows = run_query(
        lakehouse,
        "select consumer_group, best_fit_schedule from schedule_fit where is_best_fit order by 1",
    )
    assert rows == [("mislabeled-push", "DOCUMENTED_LADDER"), ("order-service", "CONFIGURED")]


def test_the_section_follows_the_dlq_section(lakehouse: Lakehouse):
    html = render_report(lakehouse)
    assert html.index("<h2>Dead letters per day</h2>") < html.index("<h2>Retry schedule fit</h2>")
    assert html.index("<h2>Retry schedule fit</h2>") < html.index(
        "<h2>Redelivery lag against schedule</h2>"
    )
    section = _section(html)
    assert "from 20 redeliveries on" in section
    body = section.split('<table class="schedule-fit">')[1].split("</table>")[0]
    assert body.count("<tr") == 1 + 3  # the header and one row per group


def test_a_mislabeled_group_is_named_in_the_warning(lakehouse: Lakehouse):
    section = _section(render_report(lakehouse))
    warning = section.split('<div class="warning">')[1].split("</div>")[0]
    assert "(1 of 3 groups)" in warning
    assert warning.count("<li>") == 1
    assert (
        "<li>mislabeled-push (grpc-5): seed row does not match: runs on DOCUMENTED_LADDER, "
        "which fits 96% of its 50 redeliveries; the configured schedule fits 12%.</li>"
    ) in warning
    assert "order-service" not in warning and "report-simple" not in warning
    row = (
        "mislabeled-push",
        "grpc-5",
        "50",
        "12%",
        "DOCUMENTED_LADDER",
        "96%",
        "does not match: runs on DOCUMENTED_LADDER",
    )
    assert f'<tr class="mismatch">{_cells(row)}</tr>' in section
    matching = ("order-service", "remoting-4.9", "40", "100%", "CONFIGURED", "100%", "matches")
    assert f"<tr>{_cells(matching)}</tr>" in section


def test_a_group_below_the_minimum_sample_has_no_best_fit(lakehouse: Lakehouse):
    section = _section(render_report(lakehouse))
    row = ("report-simple", "grpc-5", "7", "0%", "\u2014", "\u2014", "\u2014")
    assert f"<tr>{_cells(row)}</tr>" in section


def test_no_warning_when_every_group_runs_as_configured(tmp_path: Path):
    rows = [row for row in SCHEDULE_FIT_ROWS if row["consumer_group"] != "mislabeled-push"]
    section = _section(render_report(_lakehouse(tmp_path, rows)))
    assert 'class="warning"' not in section and 'class="mismatch"' not in section


def test_text_from_the_mart_is_escaped(tmp_path: Path):
    rows = _group("<b>odd&group</b>", "grpc-5", 30, {"GRPC_LADDER": 30}, True)
    section = _section(render_report(_lakehouse(tmp_path, rows)))
    assert "<b>odd" not in section
    assert "&lt;b&gt;odd&amp;group&lt;/b&gt; (grpc-5): seed row does not match" in section


def test_a_lakehouse_without_the_mart_renders_without_the_section(tmp_path: Path):
    html = render_report(_lakehouse(tmp_path, None))
    assert "<h2>Dead letters per day</h2>" in html
    assert "Retry schedule fit" not in html and "schedule-fit" not in html
    assert "<h2>Redelivery lag against schedule</h2>" in html


def test_the_page_stays_self_contained(lakehouse: Lakehouse):
    html = render_report(lakehouse)
    for external in ("<script", "<link", "src=", "http://", "https://", "@import", "url("):
        assert external not in html
