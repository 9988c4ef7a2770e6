"""The pure parts of `dlq-export` and the report's charts."""

from __future__ import annotations

import datetime as dt
import re

import pytest

from retrylake.analyst.charts import bar_chart, line_chart
from retrylake.analyst.dlq_export import parse_since, resend_command

OFFSET_ID = "0A00000100002A9F00000000000F608B"


def test_resend_goes_through_query_msg_by_id_with_the_offset_id():
    assert resend_command(OFFSET_ID, None) == f"mqadmin queryMsgById -i {OFFSET_ID} -s true"
    assert resend_command(OFFSET_ID, "10.0.0.1:9876;10.0.0.2:9876") == (
        f"mqadmin queryMsgById -n '10.0.0.1:9876;10.0.0.2:9876' -i {OFFSET_ID} -s true"
    )


def test_mqadmin_5_3_and_later_take_the_stored_topic():
    assert resend_command(OFFSET_ID, None, "Orders", (5, 3)) == (
        f"mqadmin queryMsgById -t Orders -i {OFFSET_ID} -s true"
    )
    assert resend_command(OFFSET_ID, None, None, (5, 3)) is None  # -t is required there


@pytest.mark.parametrize("origin", [None, "", "7F0000010001ABCD", "Z" * 32])
def test_no_command_without_an_offset_id(origin):
    assert resend_command(origin, None) is None


def test_since_is_utc():
    assert parse_since("2026-03-01") == dt.datetime(2026, 3, 1)
    assert parse_since("2026-03-01T08:00:00+08:00") == dt.datetime(2026, 3, 1, 0, 0)
    assert parse_since("2026-03-01T06:30:00Z") == dt.datetime(2026, 3, 1, 6, 30)
    with pytest.raises(ValueError, match="ISO 8601"):
        parse_since("yesterday")


def _marks(svg: str) -> int:
    return int(re.search(r'data-marks="(\d+)"', svg).group(1))


def test_bar_chart_draws_one_mark_per_nonzero_value():
    svg = bar_chart("c", "t", ["a", "b", "c"], {"x": [1, 0, 3], "y": [2, 2, 0]}, y_label="n")
    assert _marks(svg) == 4 and svg.count('class="mark"') == 4
    stacked = bar_chart("c", "t", ["a"], {"x": [1], "y": [2]}, y_label="n", stacked=True)
    heights = [float(h) for h in re.findall(r'class="mark"[^>]*height="([\d.]+)"', stacked)]
    assert heights[1] == pytest.approx(2 * heights[0], rel=0.01)


def test_empty_charts_say_so():
    assert _marks(bar_chart("c", "t", [], {}, y_label="n")) == 0
    assert _marks(line_chart("c", "t", ["1", "2"], {"g": [None, None]}, y_label="n")) == 0


def test_line_chart_breaks_at_gaps():
    svg = line_chart("c", "t", list("abcde"), {"g": [0.1, 0.2, None, 0.4, 0.5]}, y_label="n")
    assert svg.count("<polyline") == 2 and _marks(svg) == 4
