"""The dashboard's usage chart, drawn on the server as SVG (no script, readable in print).

Two bar charts from the limiter's hourly counts of counted requests: the last 24 hours, one
bar an hour, and the last 30 days, one bar a UTC day.
"""

from __future__ import annotations

import datetime as dt
from html import escape

from markupsafe import Markup

HOUR = 3600
DAY = 86_400
WIDTH, HEIGHT = 720, 150
LEFT, RIGHT, TOP, BOTTOM = 12, 52, 26, 26
"""The scale and the titles stand at the right, by the recent end: where a phone, scrolling
the chart inside its box, opens it."""


def hourly_series(hours: dict[int, int], now: float) -> list[tuple[int, int]]:
    """(hour start, count) for the 24 hours ending with the current one."""
    current = int(now) // HOUR * HOUR
    return [(h, hours.get(h, 0)) for h in range(current - 23 * HOUR, current + HOUR, HOUR)]


def daily_series(hours: dict[int, int], now: float) -> list[tuple[int, int]]:
    """(UTC day start, count) for the 30 days ending today."""
    today = int(now) // DAY * DAY
    days = {d: 0 for d in range(today - 29 * DAY, today + DAY, DAY)}
    for hour, count in hours.items():
        day = hour // DAY * DAY
        if day in days:
            days[day] += count
    return sorted(days.items())


def totals(hours: dict[int, int], now: float) -> dict[str, int]:
    return {
        "day": sum(n for _, n in hourly_series(hours, now)),
        "month": sum(n for _, n in daily_series(hours, now)),
    }


def _nice(top: int) -> int:
    """A round axis maximum at or above `top` (1, 2, 5 x 10^n)."""
    if top <= 0:
        return 1
    step = 1
    while True:
        for m in (1, 2, 5):
            if m * step >= top:
                return m * step
        step *= 10


def _bars(series: list[tuple[int, int]], title: str, label_every: int, fmt: str, y0: int) -> str:
    peak = _nice(max((n for _, n in series), default=0))
    plot_w = WIDTH - LEFT - RIGHT
    plot_h = HEIGHT - TOP - BOTTOM
    slot = plot_w / len(series)
    parts = [
        f'<text x="{WIDTH - RIGHT}" y="{y0 + 16}" text-anchor="end" class="chart-title">{escape(title)}</text>',
        f'<text x="{WIDTH - RIGHT + 6}" y="{y0 + TOP + 4}" class="chart-axis">{peak:,}</text>',
        f'<text x="{WIDTH - RIGHT + 6}" y="{y0 + TOP + plot_h}" class="chart-axis">0</text>',
        f'<line x1="{LEFT}" y1="{y0 + TOP}" x2="{WIDTH - RIGHT}" y2="{y0 + TOP}" class="chart-grid"/>',
        f'<line x1="{LEFT}" y1="{y0 + TOP + plot_h / 2}" x2="{WIDTH - RIGHT}" y2="{y0 + TOP + plot_h / 2}" class="chart-grid"/>',
        f'<line x1="{LEFT}" y1="{y0 + TOP + plot_h}" x2="{WIDTH - RIGHT}" y2="{y0 + TOP + plot_h}" class="chart-base"/>',
    ]
    for i, (start, count) in enumerate(series):
        height = plot_h * count / peak
        x = LEFT + i * slot + slot * 0.15
        y = y0 + TOP + plot_h - height
        when = dt.datetime.fromtimestamp(start, dt.UTC).strftime(fmt)
        parts.append(
            f'<rect x="{x:.1f}" y="{y:.1f}" width="{slot * 0.7:.1f}" height="{max(height, 0):.1f}"'
            f' class="chart-bar" data-count="{count}"><title>{escape(when)}: {count:,} requests'
            "</title></rect>"
        )
        if i % label_every == 0 or i == len(series) - 1:
            parts.append(
                f'<text x="{LEFT + i * slot + slot / 2:.1f}" y="{y0 + TOP + plot_h + 16}"'
                f' text-anchor="middle" class="chart-axis">{escape(when)}</text>'
            )
    return "".join(parts)


def usage_svg(key_id: str, hours: dict[int, int], now: float) -> Markup:
    """Both charts in one SVG, described for screen readers."""
    hourly = hourly_series(hours, now)
    daily = daily_series(hours, now)
    label = (
        f"Counted requests of key {key_id}: {sum(n for _, n in hourly):,} in the last 24 hours,"
        f" {sum(n for _, n in daily):,} in the last 30 days"
    )
    body = _bars(hourly, "Requests per hour, last 24 hours (UTC)", 3, "%H:00", 0) + _bars(
        daily, "Requests per day, last 30 days (UTC)", 5, "%b %d", HEIGHT
    )
    svg = (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT * 2}"'
        f' role="img" aria-label="{escape(label)}" class="chart">'
        f"<title>{escape(label)}</title>{body}</svg>"
    )
    return Markup(svg)
