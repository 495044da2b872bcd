"""Charts: every colour a chart draws stands out (>= 3:1, WCAG's floor for graphics) against
the light and the dark page and panel; labels stay readable when a phone shrinks the chart."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sessions_app.rendering.charts import OTHER, PALETTE

CSS = Path(__file__).parent.parent / "static" / "sessions_app" / "app.css"


def _luminance(colour: str) -> float:
    value = colour.lstrip("#")
    if len(value) == 3:
        value = "".join(c * 2 for c in value)
    channels = [int(value[i : i + 2], 16) / 255 for i in (0, 2, 4)]
    linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast(a: str, b: str) -> float:
    """WCAG 2's contrast ratio of two colours."""
    high, low = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def _backgrounds() -> dict[str, str]:
    """The page and panel colours of both themes, as app.css sets them."""
    css = CSS.read_text()
    light = css[: css.index("@media (prefers-color-scheme: dark)")]
    dark = css[css.index(':root[data-theme="dark"]') :]
    out = {}
    for theme, block in (("light", light), ("dark", dark)):
        for name in ("bg", "card"):
            out[f"{theme} {name}"] = re.search(rf"--{name}: (#[0-9a-fA-F]{{3,6}})", block)[1]
    return out


@pytest.mark.parametrize("colour", [*PALETTE, OTHER])
def test_every_chart_colour_stands_out_on_both_themes(colour: str) -> None:
    backgrounds = _backgrounds()
    assert set(backgrounds) == {"light bg", "light card", "dark bg", "dark card"}
    for name, background in backgrounds.items():
        assert contrast(colour, background) >= 3, (colour, name, background)


def test_chart_colours_are_all_different() -> None:
    assert len({*PALETTE, OTHER}) == len(PALETTE) + 1
