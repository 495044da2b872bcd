"""A calendar heatmap drawn on the server as SVG: a column per week, a row per weekday.

No script and no inline style (the CSP forbids both): each day is a `rect` whose class
says its level (`heat-0` none, `heat-1`..`heat-4` the quartiles of the days with any),
the stylesheet colours it, and its `<title>` says the day and its numbers (the
browser's tooltip). The page shows the same numbers in a table beside it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import date, timedelta

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

CELL, GAP = 11, 2
LEFT, TOP = 28, 16  # room for the weekday and month labels
LEVELS = 4
WEEKDAYS = {0: "Mon", 2: "Wed", 4: "Fri"}


def levels(values: Mapping[date, float]) -> dict[date, int]:
    """Each day's level: 0 for nothing, else 1..LEVELS by the quartile its value is in."""
    ranked = sorted(v for v in values.values() if v > 0)
    out = {}
    for day, value in values.items():
        if value <= 0:
            out[day] = 0
            continue
        below = sum(1 for v in ranked if v < value)
        out[day] = min(LEVELS, 1 + below * LEVELS // len(ranked))
    return out


def calendar_heatmap(
    values: Mapping[date, float],
    *,
    first: date,
    last: date,
    title: str,
    describe: Callable[[date, float], str],
) -> SafeString:
    """Days `first`..`last` (the weeks from first's Monday); `describe(day, value)` is a
    day's tooltip."""
    start = first - timedelta(days=first.weekday())
    weeks = (last - start).days // 7 + 1
    width, height = LEFT + weeks * (CELL + GAP), TOP + 7 * (CELL + GAP)
    level = levels({d: v for d, v in values.items() if first <= d <= last})
    parts = [
        f'<svg class="heatmap" viewBox="0 0 {width} {height}" width="{width}" '
        f'height="{height}" role="img" aria-label="{escape(title)}">'
    ]
    for row, name in WEEKDAYS.items():
        y = TOP + row * (CELL + GAP) + CELL - 1
        parts.append(f'<text x="0" y="{y}" class="tick">{name}</text>')
    for week in range(weeks):
        monday = start + timedelta(weeks=week)
        # A month is named over the first week that starts in it (and the first week).
        if week == 0 or monday.month != (monday - timedelta(weeks=1)).month:
            x = LEFT + week * (CELL + GAP)
            parts.append(f'<text x="{x}" y="{TOP - 5}" class="tick">{monday:%b}</text>')
    day = first
    while day <= last:
        week, row = (day - start).days // 7, day.weekday()
        x, y = LEFT + week * (CELL + GAP), TOP + row * (CELL + GAP)
        value = values.get(day, 0.0)
        parts.append(
            f'<rect x="{x}" y="{y}" width="{CELL}" height="{CELL}" rx="2" '
            f'class="heat heat-{level.get(day, 0)}"><title>'
            f"{escape(describe(day, value))}</title></rect>"
        )
        day += timedelta(days=1)
    parts.append("</svg>")
    return mark_safe("".join(parts))  # noqa: S308 (every text escaped above)
