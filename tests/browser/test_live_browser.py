"""Live transcript pages in a real browser: a session growing on disk appears in the open page.

The first test imports in the test process (the live server shares its database);
the second runs the real thing: gunicorn with the deployed config and the watcher
(`import_sessions --watch`) as their own processes, the watcher stopped and started
again in the middle of a line being written.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from playwright.sync_api import Page, expect

from sessions_app.services.importing import sessions_import
from sessions_app.services.owner_token import owner_token
from tests.factories import grow, jsonl, session_file, turn

ROOT = Path(__file__).resolve().parent.parent.parent


def test_a_growing_session_appears_without_moving_the_reader(
    page: Page, live_server, transactional_db: None, tmp_path: Path, settings
) -> None:
    root = tmp_path / "root"
    path, records = session_file(root, 4)
    settings.SESSION_ROOTS = [root]
    sessions_import(roots=[root])
    page.goto(f"{live_server.url}/sessions/{records[0]['sessionId']}/")
    expect(page.locator("#live-tail")).to_contain_text("prompt 4")

    # The reader opens the last turn's tool call, then scrolls back to the top.
    call = page.locator("#live-tail details.tool").first
    call.locator("summary").click()
    expect(call).to_have_attribute("open", "")
    call_id = call.get_attribute("id")
    page.evaluate("window.scrollTo(0, 0)")

    grow(path, records, 5)
    sessions_import(roots=[root])
    expect(page.locator("#turn-5")).to_contain_text("prompt 5")
    expect(page.locator("#new-turn-hint")).to_have_text("New turn below ↓")
    assert page.evaluate("window.scrollY") == 0
    expect(page.locator(f"[id='{call_id}']")).to_have_attribute("open", "")
    expect(page.locator("#session-counts")).to_contain_text("5 · 20 records")
    assert page.locator("#turns article.turn").count() == 5  # turn 4 replaced, not doubled

    page.locator("#new-turn-hint").click()
    expect(page.locator("#new-turn-hint")).to_have_count(0)

    # At the bottom, the page follows the session.
    page.evaluate("window.scrollTo(0, document.documentElement.scrollHeight)")
    grow(path, records, 6)
    sessions_import(roots=[root])
    expect(page.locator("#turn-6")).to_contain_text("answer 6")
    page.wait_for_function(
        "window.innerHeight + window.scrollY >= document.documentElement.scrollHeight - 48"
    )
    expect(page.locator("#new-turn-hint")).to_have_count(0)


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _lines_imported(db: Path, sid: str) -> int:
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1) as c:
            row = c.execute(
                "SELECT line_count FROM sessions_app_session WHERE session_id = ?",
                (sid.replace("-", ""),),
            ).fetchone()
    except sqlite3.OperationalError:
        return -1
    return row[0] if row else -1


def _records_of(db: Path, sid: str) -> list[tuple[int, str]]:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1) as c:
        return c.execute(
            "SELECT r.line, r.uuid FROM sessions_app_record r JOIN sessions_app_session s "
            "ON s.id = r.session_id WHERE s.session_id = ? ORDER BY r.line",
            (sid.replace("-", ""),),
        ).fetchall()


def _poll(what: str, check, deadline: float = 30) -> None:
    end = time.monotonic() + deadline
    while not check():
        assert time.monotonic() < end, f"{what}: not within {deadline} s"
        time.sleep(0.05)


def test_the_watcher_and_gunicorn_show_a_session_as_it_is_written(
    page: Page, tmp_path: Path
) -> None:
    root, data = tmp_path / "root", tmp_path / "data"
    path, records = session_file(root, 2)
    sid = records[0]["sessionId"]
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL",)}
    env.update(BRANCHBOARD_DATA_DIR=str(data), BRANCHBOARD_ROOTS=str(root))
    env["BRANCHBOARD_WORKERS"] = "2"
    db = data / "branchboard.sqlite3"
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "-v", "0"], cwd=ROOT, env=env, check=True
    )
    port = _free_port()
    logs = tmp_path / "logs"
    logs.mkdir()

    def watcher() -> subprocess.Popen:
        return subprocess.Popen(
            [sys.executable, "manage.py", "import_sessions", "--watch", "--no-progress"],
            cwd=ROOT,
            env=env,
            stdout=(logs / f"watcher-{time.monotonic_ns()}.log").open("wb"),
            stderr=subprocess.STDOUT,
        )

    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "branchboard.wsgi",
            "-c",
            str(ROOT / "deploy" / "gunicorn.conf.py"),
            "--bind",
            f"127.0.0.1:{port}",
        ],
        cwd=ROOT,
        env=env,
        stdout=(logs / "gunicorn.log").open("wb"),
        stderr=subprocess.STDOUT,
    )
    importer = watcher()
    try:
        _poll("the first import", lambda: _lines_imported(db, sid) == 8)

        token = owner_token(folder=data)

        def up() -> bool:
            # As a script asks: the owner token as a bearer token.
            asked = urllib.request.Request(
                f"http://127.0.0.1:{port}/", headers={"Authorization": f"Bearer {token}"}
            )
            try:
                urllib.request.urlopen(asked, timeout=1).close()
            except OSError:
                return False
            return True

        _poll("gunicorn", up)
        # The owner's one click: the link `make run` prints, then the session's page.
        page.goto(f"http://127.0.0.1:{port}/?token={token}")
        expect(page).to_have_url(f"http://127.0.0.1:{port}/")
        page.goto(f"http://127.0.0.1:{port}/sessions/{sid}/")
        expect(page.locator("#live-tail")).to_contain_text("prompt 2")

        # A line the CLI is still writing: the watcher must not take the half.
        grow(path, records, 3)  # whole lines 9-12
        new = turn(sid, records[-1]["uuid"], 4)
        records += new
        data_4 = jsonl(new)
        with path.open("ab") as f:
            f.write(data_4[:100])
        expect(page.locator("#turn-3")).to_contain_text("answer 3", timeout=10_000)
        _poll("turn 3 imported", lambda: _lines_imported(db, sid) == 12)

        importer.terminate()
        importer.wait(timeout=30)
        with path.open("ab") as f:
            f.write(data_4[100:])
        grow(path, records, 5)
        importer = watcher()
        expect(page.locator("#turn-5")).to_contain_text("answer 5", timeout=15_000)
        _poll("every line imported", lambda: _lines_imported(db, sid) == 20)
    finally:
        importer.terminate()
        server.terminate()
        importer.wait(timeout=30)
        server.wait(timeout=30)

    # Nothing missed, nothing doubled: every record once, in file order.
    imported = _records_of(db, sid)
    assert [line for line, _ in imported] == list(range(20))
    assert [u for _, u in imported] == [r["uuid"] for r in records]
    for n in range(1, 6):
        expect(page.locator(f"#turn-{n}")).to_have_count(1)
        expect(page.locator("#turns").get_by_text(f"prompt {n}", exact=True)).to_have_count(1)
