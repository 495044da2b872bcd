"""The owner's one click in a real browser: the link logs in, the address loses the token."""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Browser, expect

from tests.owner import owner_cookie


def test_the_link_logs_the_browser_in_and_a_browser_without_it_is_refused(
    browser: Browser, live_server, session_root: Path
) -> None:
    context = browser.new_context()  # a browser that never had the link
    page = context.new_page()
    response = page.goto(f"{live_server.url}/search/?q=nonexistent_dir")
    assert response is not None and response.status == 403
    expect(page.locator("#error-heading")).to_contain_text("Not allowed (403)")
    expect(page.locator("body")).not_to_contain_text("webapp")

    port = live_server.url.rsplit(":", 1)[1]
    name, token = owner_cookie(port)
    page.goto(f"{live_server.url}/?token={token}")
    expect(page).to_have_url(f"{live_server.url}/")  # the token is out of the address
    expect(page.locator("#project-list")).to_contain_text("/home/dev/code/webapp")
    (cookie,) = (c for c in context.cookies() if c["name"] == name)
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"
    page.goto(f"{live_server.url}/search/?q=nonexistent_dir")
    expect(page.locator("main")).to_contain_text("nonexistent_dir")
    context.close()
