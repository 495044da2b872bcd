"""The usage tables fit the window: /usage/ per project and a lineage's cost table, with
long project paths and long titles, at 1280 and 390 px, light and dark."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from sessions_app.models import Session
from sessions_app.services.branching import session_fork
from sessions_app.services.importing import sessions_import
from sessions_app.services.usage import usage_refresh
from tests.factories import jsonl, make_session

LONG_PATH = "/home/dev/" + "/".join(f"a-rather-long-folder-name-number-{n}" for n in range(8))
LONG_WORDS = "Refactor the importer so that every agent's files are read by one loop " * 3
LONG_WORD = "refactor-the-importer-so-that-every-agents-files-are-read-by-one-loop-" * 3


@pytest.fixture
def family(tmp_path: Path, transactional_db: None, settings) -> Session:
    """A session of a long-named project, branched twice under very long titles."""
    root = tmp_path / "root"
    path, records = make_session(root, 3)
    for record in records:
        record["cwd"] = LONG_PATH
    path.write_bytes(jsonl(records))
    settings.SESSION_ROOTS = [root]
    settings.BRANCHBOARD_BUSY_SECONDS = 0
    assert not sessions_import(roots=[root]).errors
    source = Session.objects.get(session_id=records[0]["sessionId"])
    Session.objects.filter(pk=source.pk).update(title=LONG_WORDS)
    session_fork(session=source, turn=2, title=LONG_WORD)
    session_fork(session=source, title=LONG_WORDS + "(Branch)")
    assert not usage_refresh().errors
    return source


def page_width(page: Page) -> tuple[int, int]:
    return page.evaluate("() => [document.documentElement.scrollWidth, window.innerWidth]")


@pytest.mark.parametrize("which", ["usage", "lineage"])
@pytest.mark.parametrize("width", [1280, 390])
@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_usage_tables_with_long_names_fit_the_window(
    page: Page, live_server, family: Session, which: str, width: int, scheme: str
) -> None:
    page.set_viewport_size({"width": width, "height": 900})
    page.emulate_media(color_scheme=scheme)
    url, table = {
        "usage": ("/usage/", "#usage-projects"),
        "lineage": (f"/sessions/{family.session_id}/lineage/", "table.numbers"),
    }[which]
    page.goto(live_server.url + url)
    expect(page.locator(f"{table} tbody tr").first).to_be_visible()
    expect(page.locator(table).first).to_contain_text(LONG_PATH if which == "usage" else LONG_WORD)
    scroll, inner = page_width(page)
    print(f"{which} at {width} px ({scheme}): the page is {scroll} px wide")
    assert scroll <= inner, f"{url} is {scroll} px wide in a {inner} px window"
    if width == 1280:  # the table itself fits too: nothing to scroll inside it
        box = page.locator(table).first.bounding_box()
        assert box and box["x"] + box["width"] <= inner, (url, box)
