"""A 390 px phone: no page scrolls sideways; wide content (code, tables) scrolls inside itself."""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Page, expect

from sessions_app.models import Session
from sessions_app.services.branching import session_fork
from sessions_app.services.searching import search_refresh
from sessions_app.services.usage import usage_refresh

from .conftest import shot

WEBAPP = "cli/claude/-home-dev-code-webapp/d62afd75-12b1-4077-921c-1fa1eda79364.jsonl"
BIGREPO_ID = "ad8024e4-83f0-4ff3-82f8-4e19f6c9127b"
AGENTS_ID = "04fa9149-8141-4f34-8bc2-f6d11b8fa354"  # a session with a subagent


def overflowing(page: Page) -> list[str]:
    return page.evaluate(
        "Array.from(document.querySelectorAll('body *')).filter(e => {"
        "  const r = e.getBoundingClientRect(); return r.width && r.right > window.innerWidth + 1"
        "}).filter(e => !e.closest('pre, table, .chart-box, .family-tree, .lineage-wrap, code'))"
        ".slice(0, 6).map(e => e.tagName + '.' + (e.getAttribute('class') || '') + '#' + e.id)"
    )


def test_every_page_fits_a_390_px_phone(page: Page, live_server, session_root: Path) -> None:
    search_refresh()
    usage_refresh()
    source = Session.objects.get(path=str(session_root / WEBAPP))
    fork = session_fork(session=source, turn=2)
    page.set_viewport_size({"width": 390, "height": 844})
    urls = [
        "/",
        "/recent/",
        f"/projects/{source.project_id}/",
        f"/sessions/{source.session_id}/",
        f"/sessions/{BIGREPO_ID}/",
        f"/sessions/{fork.session_id}/lineage/",
        f"/sessions/{source.session_id}/compare/{fork.session_id}/",
        "/search/?q=subtract",
        "/usage/",
        f"/sessions/{source.session_id}/records/3/output/",
        f"/sessions/{AGENTS_ID}/subagents/a0751b2961eeab05e/",
        f"/sessions/{source.session_id}/compare/",
        f"/sessions/{AGENTS_ID}/",
    ]
    for url in urls:
        page.goto(live_server.url + url)
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 390, (url, width, overflowing(page))
        if url.startswith("/sessions/") and url.endswith(f"{source.session_id}/"):
            shot(page, "transcript-phone")


def _rendered_font_sizes(page: Page, selector: str) -> list[float]:
    """The height on screen of each visible chart label: its font size times the SVG's scale."""
    return page.evaluate(
        "sel => Array.from(document.querySelectorAll(sel))"
        ".filter(t => t.ownerSVGElement.getBoundingClientRect().width)"
        ".map(t => { const svg = t.ownerSVGElement; const scale = svg.getBoundingClientRect()"
        ".width / svg.viewBox.baseVal.width;"
        " return parseFloat(getComputedStyle(t).fontSize) * scale; })",
        selector,
    )


def test_chart_labels_are_readable_on_a_390_px_phone(
    page: Page, live_server, session_root: Path
) -> None:
    assert not usage_refresh().errors
    page.set_viewport_size({"width": 390, "height": 844})
    for url in ("/usage/", "/", f"/sessions/{BIGREPO_ID}/"):
        page.goto(live_server.url + url)
        if url.startswith("/sessions/"):
            page.locator("#usage-turns summary").click()
            # Its chart and rows are fetched when it is opened.
            page.locator("#usage-turns .chart-box").wait_for()
            expect(page.locator("#usage-turns tbody tr").first).to_be_attached()
        sizes = _rendered_font_sizes(page, "svg.chart .tick")
        assert sizes, url
        assert min(sizes) >= 10, (url, min(sizes))
        # The chart a phone shows is the narrow drawing, at about its own size.
        box = page.locator("svg.chart.chart-narrow").first.bounding_box()
        assert box is not None and box["width"] <= 390


def test_a_session_row_and_its_branch_action_fit_a_390_px_phone(
    page: Page, live_server, session_root: Path
) -> None:
    source = Session.objects.get(path=str(session_root / WEBAPP))
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"{live_server.url}/projects/{source.project_id}/")
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    row = page.locator(f"#session-{source.session_id}")
    button = row.locator("button.branch-row")
    expect(button).to_be_visible()
    box = button.bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390
    # Without scrolling the table sideways: its box does not scroll.
    table = page.locator("#session-list table.sessions")
    assert table.evaluate("e => e.scrollWidth <= e.clientWidth + 1")
    assert row.locator("code").first.bounding_box()["x"] + 1 < 390  # the git branch too
