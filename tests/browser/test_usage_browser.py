"""Usage in a real browser: the charts draw, their numbers sit beside them, CSV downloads."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from sessions_app.services.usage import usage_refresh

from .conftest import shot


def test_the_usage_page_draws_its_charts_and_numbers(
    page: Page, live_server, session_root: Path
) -> None:
    assert not usage_refresh().errors
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(live_server.url + "/usage/")
    panel = page.locator("#usage-panel")
    chart = panel.locator("svg.chart.chart-wide")  # a wide screen shows the wide drawing
    expect(chart).to_be_visible()
    expect(panel.locator("svg.chart.chart-narrow")).to_be_hidden()
    assert chart.bounding_box()["width"] > 400
    assert panel.locator("svg.chart rect").count() >= 7  # a bar piece per day and model
    expect(panel.locator("table.by-model")).to_contain_text("claude-opus-4-6")
    expect(panel.locator("table.by-model")).to_contain_text("no known price")
    expect(page.locator("#usage-projects")).to_contain_text("/src/deep-manifest")
    with page.expect_download() as download:
        panel.get_by_role("link", name="per day").click()
    assert download.value.suggested_filename == "usage-by-day.csv"
    shot(page, "usage")


def test_usage_per_turn_pages_through_a_long_session_in_place(
    page: Page, live_server, tmp_path: Path, transactional_db: None
) -> None:
    """The panel shows 200 turns; its links swap the next and previous 200 in, in place."""
    from tests.test_usage import imported, session_with

    session = imported(tmp_path, session_with(tmp_path, [(f"turn {n}", [10]) for n in range(450)]))
    page.goto(f"{live_server.url}/sessions/{session.session_id}/")
    panel = page.locator("#usage-turns")
    panel.locator("summary").click()
    rows = panel.locator("tbody tr")
    expect(rows).to_have_count(200)
    expect(rows.first).to_contain_text("1")
    panel.locator("#usage-turns-next").click()
    expect(rows.first.locator("td").first).to_have_text("201")
    expect(rows).to_have_count(200)
    panel.locator("#usage-turns-next").click()
    expect(rows.first.locator("td").first).to_have_text("401")
    expect(rows).to_have_count(50)
    expect(panel.locator("#usage-turns-next")).to_have_count(0)
    panel.locator("#usage-turns-previous").click()
    expect(rows.first.locator("td").first).to_have_text("201")
    assert page.url.endswith(f"/sessions/{session.session_id}/")  # swapped, not navigated


@pytest.mark.parametrize("width", [1280, 390])
def test_the_activity_heatmap_fits_and_shows_the_latest_weeks(
    page: Page, live_server, session_root: Path, width: int
) -> None:
    assert not usage_refresh().errors
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(live_server.url + "/usage/")
    page.locator("#usage-activity-link a").click()
    expect(page.locator("h1")).to_have_text("Your work at a glance")
    page.goto(live_server.url + "/usage/activity/?until=2026-11-30")
    heatmap = page.locator("#activity-heatmap svg.heatmap")
    expect(heatmap).to_be_visible()
    cells = heatmap.locator("rect.heat")
    expect(cells).to_have_count(365)
    # Coloured by the stylesheet (the CSP allows no inline style): a busy day is not blank.
    busy = heatmap.locator("rect.heat-4").first
    expect(busy).to_be_visible()
    fill = busy.evaluate("e => getComputedStyle(e).fill")
    empty = heatmap.locator("rect.heat-0").first.evaluate("e => getComputedStyle(e).fill")
    assert fill != empty
    # The page never scrolls sideways; the latest day is in view without scrolling.
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    last = cells.last.bounding_box()
    assert last is not None and last["x"] >= 0 and last["x"] + last["width"] <= width
    expect(page.locator("#activity-months")).to_contain_text("2026-11")
    # Every column of the months' table can be brought into view (its box scrolls).
    cost = page.locator("#activity-months th").last
    cost.scroll_into_view_if_needed()
    box = cost.bounding_box()
    assert box is not None and box["x"] + box["width"] <= width
    if width == 1280:  # the heatmap starts at the left of its panel while it fits
        panel = page.locator("#activity-heatmap").bounding_box()
        assert heatmap.bounding_box()["x"] - panel["x"] < 5
    page.get_by_role("link", name="cost", exact=True).click()
    expect(page.locator("#activity-days")).to_have_text("Cost per day")
    if width == 1280:
        assert heatmap.bounding_box()["width"] > 600
