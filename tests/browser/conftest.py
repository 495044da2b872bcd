"""Browser tests: Debian's chromium driven by pytest-playwright against the live server."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import BrowserContext

from sessions_app.services.importing import sessions_import
from tests.compat.conftest import cli_home, clis, fake_model  # noqa: F401 (the real CLIs)
from tests.corpus import ALL_ROOTS, FIXTURES, make_idle
from tests.owner import owner_cookie

CHROMIUM = os.environ.get("BRANCHBOARD_CHROMIUM", "/usr/bin/chromium")
SCREENSHOTS = Path(__file__).resolve().parent.parent.parent / "docs" / "screenshots"

# Playwright's sync API runs an event loop in this thread; the ORM calls the
# tests make between browser steps are still plain synchronous code.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/browser/" in str(item.fspath):
            item.add_marker(pytest.mark.browser)


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict) -> dict:
    if not Path(CHROMIUM).exists():
        pytest.skip(
            f"browser tests need Debian's chromium at {CHROMIUM} (apt-get install chromium)"
        )
    return {
        **browser_type_launch_args,
        "executable_path": CHROMIUM,
        "args": [
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
        ],
    }


@pytest.fixture(autouse=True)
def _browser_is_the_owners(request: pytest.FixtureRequest) -> None:
    """The browser of a test against the live server holds the owner's cookie, as after the
    one-click link (test_local_owner_browser.py clicks it): the local dashboard answers its
    owner only (middleware.OwnerOnlyMiddleware)."""
    if not {"page", "live_server"} <= set(request.fixturenames):
        return
    as_owner(request.getfixturevalue("context"), request.getfixturevalue("live_server").url)


def as_owner(context: BrowserContext, url: str) -> None:
    """Give `context` the owner's cookie for the server at `url`: again after a test moves
    the data folder (settings.DATA_DIR), whose token it is."""
    name, value = owner_cookie(str(urlsplit(url).port))
    context.add_cookies([{"name": name, "value": value, "url": url}])


@pytest.fixture
def session_root(tmp_path: Path, transactional_db: None, settings) -> Iterator[Path]:
    """The corpus copied into a temporary root and imported, files looking idle."""
    root = tmp_path / "corpus"
    shutil.copytree(FIXTURES, root)
    make_idle(root)
    roots = [root / r for r in ALL_ROOTS]
    settings.SESSION_ROOTS = roots
    report = sessions_import(roots=roots)
    assert not report.errors, report.errors
    yield root


def shot(page, name: str) -> None:
    """Save a screenshot for the README (docs/screenshots/)."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=False)
