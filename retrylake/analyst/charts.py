"""Inline SVG charts for the HTML report: no script and no network needed to view them.

Each chart is an ``<svg class="chart">`` whose ``data-marks`` attribute counts the data marks
drawn (bars, points), so a test can tell an empty chart from one with data.
"""

from __future__ import annotations

import math
from html import escape

PALETTE = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#17becf",
    "#bcbd22",
    "#7f7f7f",
)

WIDTH, HEIGHT = 720, 300
MARGIN_LEFT, MARGIN_RIGHT, MARGIN_TOP, MARGIN_BOTTOM = 64, 16, 28, 56


def _nice_ticks(maximum: float, count: int = 5) -> list[float]:
    if maximum <= 0:
        return [0.0, 1.0]
    raw = maximum / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    return [step * i for i in range(math.ceil(maximum / step) + 1)]


def _label(value: float) -> str:
    if value >= 1_000_000:
        return f"{value / 1_000_000:g}M"
    if value >= 1_000:
        return f"{value / 1_000:g}k"
    return f"{value:g}"


def _frame(name: str, title: str, y_label: str, ticks: list[float], scale, body: str, marks: int):
    plot_bottom = HEIGHT - MARGIN_BOTTOM
    axis = [
        f'<line x1="{MARGIN_LEFT}" y1="{MARGIN_TOP}" x2="{MARGIN_LEFT}" y2="{plot_bottom}" '
        'stroke="#444"/>',
        f'<line x1="{MARGIN_LEFT}" y1="{plot_bottom}" x2="{WIDTH - MARGIN_RIGHT}" '
        f'y2="{plot_bottom}" stroke="#444"/>',
    ]
    for tick in ticks:
        y = scale(tick)
        axis.append(
            f'<line x1="{MARGIN_LEFT}" y1="{y:.1f}" x2="{WIDTH - MARGIN_RIGHT}" y2="{y:.1f}" '
            'stroke="#e4e4e4"/>'
            f'<text x="{MARGIN_LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{_label(tick)}</text>'
        )
    return (
        f'<svg class="chart" data-chart="{escape(name)}" data-marks="{marks}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}" role="img" '
        f'aria-label="{escape(title)}">'
        f'<text x="{MARGIN_LEFT}" y="16" class="title">{escape(title)}</text>'
        f'<text transform="translate(14,{(MARGIN_TOP + plot_bottom) / 2}) rotate(-90)" '
        f'text-anchor="middle">{escape(y_label)}</text>' + "".join(axis) + body + "</svg>"
    )


def bar_chart(
    name: str,
    title: str,
    categories: list[str],
    series: dict[str, list[float]],
    *,
    y_label: str,
    stacked: bool = False,
) -> str:
    """Grouped (or stacked) vertical bars: one colour per series, one slot per category."""
    combine = sum if stacked else max
    totals = [combine(values[i] for values in series.values()) for i in range(len(categories))]
    ticks = _nice_ticks(max(totals, default=0))
    plot_bottom, plot_height = HEIGHT - MARGIN_BOTTOM, HEIGHT - MARGIN_BOTTOM - MARGIN_TOP

    def scale(value: float) -> float:
        return plot_bottom - plot_height * value / ticks[-1]

    slot = (WIDTH - MARGIN_LEFT - MARGIN_RIGHT) / max(len(categories), 1)
    per_bar = slot * 0.8 / (1 if stacked else max(len(series), 1))
    body, marks = [], 0
    label_every = max(1, math.ceil(len(categories) / 24))
    for i, category in enumerate(categories):
        x0, base = MARGIN_LEFT + slot * i + slot * 0.1, 0.0
        for k, (label, values) in enumerate(series.items()):
            value = values[i]
            if value <= 0:
                continue
            top = base + value if stacked else value
            y, y_base = scale(top), scale(base if stacked else 0)
            x = x0 if stacked else x0 + per_bar * k
            body.append(
                f'<rect class="mark" x="{x:.1f}" y="{y:.1f}" width="{max(per_bar - 1, 1):.1f}" '
                f'height="{max(y_base - y, 0.5):.1f}" fill="{PALETTE[k % len(PALETTE)]}">'
                f"<title>{escape(label)} · {escape(category)}: {_label(value)}</title></rect>"
            )
            marks += 1
            if stacked:
                base = top
        if i % label_every == 0:
            body.append(_x_label(x0 + slot * 0.4, category))
    body.append(_legend(list(series)))
    return _frame(name, title, y_label, ticks, scale, "".join(body), marks)


def line_chart(
    name: str,
    title: str,
    x_labels: list[str],
    series: dict[str, list[float | None]],
    *,
    y_label: str,
    y_max: float | None = None,
) -> str:
    """One polyline per series over shared x positions; None leaves a gap."""
    values = [v for points in series.values() for v in points if v is not None]
    ticks = _nice_ticks(y_max if y_max is not None else max(values, default=0))
    plot_bottom, plot_height = HEIGHT - MARGIN_BOTTOM, HEIGHT - MARGIN_BOTTOM - MARGIN_TOP

    def scale(value: float) -> float:
        return plot_bottom - plot_height * value / ticks[-1]

    step = (WIDTH - MARGIN_LEFT - MARGIN_RIGHT) / max(len(x_labels) - 1, 1)
    body, marks = [], 0
    for k, (label, points) in enumerate(series.items()):
        colour = PALETTE[k % len(PALETTE)]
        segment: list[str] = []
        for i, value in enumerate([*points, None]):
            if value is None:
                if segment:
                    body.append(
                        f'<polyline class="mark" points="{" ".join(segment)}" fill="none" '
                        f'stroke="{colour}" stroke-width="2"><title>{escape(label)}</title>'
                        "</polyline>"
                    )
                    marks += len(segment)
                segment = []
                continue
            segment.append(f"{MARGIN_LEFT + step * i:.1f},{scale(value):.1f}")
    label_every = max(1, math.ceil(len(x_labels) / 8))
    for i, text in enumerate(x_labels):
        if i % label_every == 0:
            body.append(_x_label(MARGIN_LEFT + step * i, text))
    body.append(_legend(list(series)))
    return _frame(name, title, y_label, ticks, scale, "".join(body), marks)


def _x_label(x: float, text: str) -> str:
    return (
        f'<text x="{x:.1f}" y="{HEIGHT - MARGIN_BOTTOM + 14}" text-anchor="middle">'
        f"{escape(text)}</text>"
    )


def _legend(labels: list[str]) -> str:
    items, x = [], MARGIN_LEFT
    y = HEIGHT - 18
    for k, label in enumerate(labels):
        if x > WIDTH - 120:
            x, y = MARGIN_LEFT, y + 14
        items.append(
            f'<rect x="{x}" y="{y - 9}" width="10" height="10" fill="{PALETTE[k % len(PALETTE)]}"/>'
            f'<text x="{x + 14}" y="{y}">{escape(label)}</text>'
        )
        x += 22 + 7 * len(label)
    return "".join(items)
