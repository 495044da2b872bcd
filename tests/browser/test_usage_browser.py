"""Usage in a real browser: the charts draw, their numbers sit beside them, CSV downloads."""

from __future__ import annotations

from pathlib import Path

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
