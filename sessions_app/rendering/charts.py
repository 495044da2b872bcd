"""Bar charts drawn on the server as SVG: no script, every label escaped, bounded in size.

A chart is a picture of numbers the page also shows as a table; it carries a
`<title>` per bar piece (the browser's tooltip) and an `aria-label` that says
what it shows.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

# Okabe-Ito's colour-blind-safe hues, their light ones darkened and black made violet, so
# that each stands out (>= 3:1) on the light and on the dark page alike; then grey.
PALETTE = (
    "#0072b2",
    "#c57300",
    "#009e73",
    "#d04596",
    "#0a94c1",
    "#d55e00",
    "#978a00",
    "#8d48d1",
)
OTHER = "#7b7b7b"
MAX_BARS = 400
MAX_SEGMENTS = len(PALETTE)


@dataclass(frozen=True)
class Bar:
    label: str
    pieces: dict[str, float]  # segment -> value (>= 0)


def colour_of(segments: Sequence[str]) -> dict[str, str]:
    """The colour each segment is drawn in, the same in the chart and its legend."""
    return {s: PALETTE[i] if i < len(PALETTE) else OTHER for i, s in enumerate(segments)}


NARROW = 360  # the phone's drawing: a 390 px screen shows it near its own size


def stacked_bars(
    bars: Sequence[Bar],
    segments: Sequence[str],
    *,
    title: str,
    fmt: Callable[[float], str] = lambda v: f"{v:,.0f}",
    width: int = 720,
    height: int = 180,
) -> SafeString:
    """Vertical bars, each stacked from its segments in the order given: two SVG elements,
    one for wide screens and one drawn narrow for phones (CSS shows one), so that a phone
    does not shrink the labels to a few pixels."""
    wide = _stacked(bars, segments, title=title, fmt=fmt, width=width, height=height, labels=8)
    narrow = _stacked(bars, segments, title=title, fmt=fmt, width=NARROW, height=height, labels=4)
    return mark_safe(wide + narrow)  # noqa: S308 (every text in both is escaped)


def _stacked(
    bars: Sequence[Bar],
    segments: Sequence[str],
    *,
    title: str,
    fmt: Callable[[float], str],
    width: int,
    height: int,
    labels: int,
) -> str:
    bars = list(bars)[-MAX_BARS:]
    colours = colour_of(segments)
    top = max((sum(b.pieces.values()) for b in bars), default=0.0) or 1.0
    left, bottom, pad_top = 56, 22, 8
    plot_w, plot_h = width - left - 8, height - bottom - pad_top
    step = plot_w / max(len(bars), 1)
    bar_w = max(1.0, step * 0.8)
    parts = [
        f'<svg class="chart {_size(width)}" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="{escape(title)}" xmlns="http://www.w3.org/2000/svg">',
        f"<title>{escape(title)}</title>",
        f'<line x1="{left}" y1="{pad_top + plot_h}" x2="{width - 8}" y2="{pad_top + plot_h}" '
        'class="axis"/>',
        f'<text x="{left - 6}" y="{pad_top + 9}" text-anchor="end" class="tick">'
        f"{escape(fmt(top))}</text>",
        f'<text x="{left - 6}" y="{pad_top + plot_h}" text-anchor="end" class="tick">0</text>',
    ]
    label_every = max(1, -(-len(bars) // labels))
    for i, bar in enumerate(bars):
        x = left + i * step + (step - bar_w) / 2
        y = float(pad_top + plot_h)
        for segment in segments:
            value = bar.pieces.get(segment, 0.0)
            if value <= 0:
                continue
            h = value / top * plot_h
            y -= h
            parts.append(
                f'<rect x="{x:.1f}" y="{y:.1f}" width="{bar_w:.1f}" height="{max(h, 0.5):.1f}" '
                f'fill="{colours[segment]}"><title>{escape(bar.label)} · {escape(segment)}: '
                f"{escape(fmt(value))}</title></rect>"
            )
        if i % label_every == 0:
            parts.append(
                f'<text x="{x + bar_w / 2:.1f}" y="{height - 6}" text-anchor="middle" '
                f'class="tick">{escape(bar.label)}</text>'
            )
    parts.append("</svg>")
    return "".join(parts)


def _size(width: int) -> str:
    return "chart-narrow" if width <= NARROW else "chart-wide"


def legend(segments: Sequence[str]) -> list[tuple[str, str]]:
    """(segment, colour) pairs for a legend beside the chart."""
    colours = colour_of(segments)
    return [(s, colours[s]) for s in segments]


def horizontal_bars(
    bars: Sequence[Bar],
    segments: Sequence[str],
    *,
    title: str,
    fmt: Callable[[float], str] = lambda v: f"{v:,.0f}",
    width: int = 720,
    row: int = 18,
) -> SafeString:
    """One labelled row per bar (long labels such as paths fit), stacked from its segments:
    a wide and a narrow drawing, as `stacked_bars`."""
    wide = _horizontal(bars, segments, title=title, fmt=fmt, width=width, row=row, label_w=260)
    narrow = _horizontal(
        bars, segments, title=title, fmt=fmt, width=NARROW, row=row + 4, label_w=150
    )
    return mark_safe(wide + narrow)  # noqa: S308 (every text in both is escaped)


def _horizontal(
    bars: Sequence[Bar],
    segments: Sequence[str],
    *,
    title: str,
    fmt: Callable[[float], str],
    width: int,
    row: int,
    label_w: int,
) -> str:
    bars = list(bars)[:MAX_BARS]
    colours = colour_of(segments)
    top = max((sum(b.pieces.values()) for b in bars), default=0.0) or 1.0
    value_w = 80 if width > NARROW else 60
    keep = 42 if width > NARROW else 22  # characters of a label the left column holds
    plot_w = width - label_w - value_w
    height = row * len(bars) + 4
    parts = [
        f'<svg class="chart {_size(width)}" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="{escape(title)}" xmlns="http://www.w3.org/2000/svg">',
        f"<title>{escape(title)}</title>",
    ]
    for i, bar in enumerate(bars):
        y = i * row + 2
        label = bar.label if len(bar.label) <= keep else "…" + bar.label[-(keep - 1) :]
        parts.append(
            f'<text x="{label_w - 6}" y="{y + row * 0.7:.1f}" text-anchor="end" class="tick">'
            f"{escape(label)}</text>"
        )
        x = float(label_w)
        for segment in segments:
            value = bar.pieces.get(segment, 0.0)
            if value <= 0:
                continue
            w = value / top * plot_w
            parts.append(
                f'<rect x="{x:.1f}" y="{y}" width="{max(w, 0.5):.1f}" height="{row - 5}" '
                f'fill="{colours[segment]}"><title>{escape(bar.label)} · {escape(segment)}: '
                f"{escape(fmt(value))}</title></rect>"
            )
            x += w
        total = sum(bar.pieces.values())
        parts.append(
            f'<text x="{x + 4:.1f}" y="{y + row * 0.7:.1f}" class="tick">'
            f"{escape(fmt(total))}</text>"
        )
    parts.append("</svg>")
    return "".join(parts)
