"""Under load and locks the dashboard answers, and its workers survive.

A database lock held longer than the configured wait gives "busy, try again"
(never a 500); the `--watch` importer outlives such a lock and says so in its log;
an abandoned branch of a long session is paged like the transcript; a lineage
a thousand forks deep, or one whose parent links go round in a circle, still draws.
"""

from __future__ import annotations

import logging
import os
import re
import sqlite3
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from itertools import pairwise
from pathlib import Path

import orjson
import pytest
from django.db import OperationalError, connection
from django.test import Client
from pytest_django import DjangoDbBlocker

from sessions_app import selectors
from sessions_app.conversation import Node, analyse
from sessions_app.models import ApiToken, Project, Session
from sessions_app.services.importing import sessions_import

from .corpus import FIXTURES

ROOT = Path(__file__).resolve().parent.parent
WEBAPP = FIXTURES / "cli/claude/-home-dev-code-webapp/d62afd75-12b1-4077-921c-1fa1eda79364.jsonl"
WEBAPP_ID = "d62afd75-12b1-4077-921c-1fa1eda79364"
BIGREPO = FIXTURES / "cli/claude/-home-dev-code-bigrepo/ad8024e4-83f0-4ff3-82f8-4e19f6c9127b.jsonl"
MARKER = "ABANDONED-BRANCH-MARKER"
TURN_NO = re.compile(r'class="turn-no"[^>]*>(\d+)<')


# --- a database lock held by another process ----------------------------------


@pytest.fixture
def short_lock_wait(transactional_db: None) -> Iterator[None]:
    """Make this test's connection give up on a lock after half a second, not 20 s.

    The same options BRANCHBOARD_DB_TIMEOUT sets: SQLite's busy timeout,
    PostgreSQL's lock_timeout.
    """
    options = connection.settings_dict.setdefault("OPTIONS", {})
    saved = dict(options)
    if connection.vendor == "sqlite":
        options["timeout"] = 0.5
    else:
        options["options"] = "-c lock_timeout=500"
    connection.close()
    yield
    options.clear()
    options.update(saved)
    connection.close()


@contextmanager
def database_locked() -> Iterator[None]:
    """Hold the database the way another writer would, from another connection."""
    params = connection.settings_dict
    if connection.vendor == "sqlite":
        other = sqlite3.connect(params["NAME"], isolation_level=None, timeout=5)
        other.execute("BEGIN EXCLUSIVE")
        try:
            yield
        finally:
            other.execute("ROLLBACK")
            other.close()
        return
    import psycopg

    other = psycopg.connect(
        dbname=params["NAME"],
        host=params["HOST"] or None,
        port=params["PORT"] or None,
        user=params["USER"] or None,
        password=params["PASSWORD"] or None,
    )
    try:
        other.execute("LOCK TABLE sessions_app_session IN ACCESS EXCLUSIVE MODE")
        yield
    finally:
        other.rollback()
        other.close()


def test_a_lock_held_too_long_is_busy_not_500_on_pages_and_api(
    imported_committed: Path, short_lock_wait: None
) -> None:
    _, key = ApiToken.issue(name="t")
    client = Client(raise_request_exception=False)
    api = {"HTTP_AUTHORIZATION": f"Bearer {key}", "content_type": "application/json"}
    fork_url, page_url = f"/sessions/{WEBAPP_ID}/fork/", f"/sessions/{WEBAPP_ID}/"
    folder = imported_committed / "cli/claude/-home-dev-code-webapp"
    before = sorted(p.name for p in folder.iterdir())
    with database_locked():
        page = client.post(fork_url, {"turn": "2"})
        assert page.status_code == 503, page.status_code
        assert page["Retry-After"].isdigit()
        assert b"Busy, try again" in page.content and b"Traceback" not in page.content

        fragment = client.post(fork_url, {"turn": "2"}, HTTP_HX_REQUEST="true")
        assert fragment.status_code == 409, fragment.status_code  # htmx shows 4xx in place
        assert b"database is busy" in fragment.content and b"<html" not in fragment.content
        assert fragment["Retry-After"].isdigit()

        response = client.post(f"/api/sessions/{WEBAPP_ID}/fork", b"{}", **api)
        assert response.status_code == 503, response.status_code
        assert response["Retry-After"].isdigit()
        assert set(response.json()) == {"error"} and "busy" in response.json()["error"]

        reading = client.get(page_url)
        if connection.vendor == "sqlite":
            assert reading.status_code == 200  # WAL: reads go on while another writes
        else:
            assert reading.status_code == 503  # the table itself is locked
    assert sorted(p.name for p in folder.iterdir()) == before, "a refused fork wrote a file"
    assert client.post(f"/api/sessions/{WEBAPP_ID}/fork", b"{}", **api).status_code == 201


def test_only_lock_errors_count_as_busy() -> None:
    from sessions_app.middleware import is_lock_error

    assert is_lock_error(OperationalError("database is locked"))
    assert not is_lock_error(OperationalError("no such table: sessions_app_session"))
    assert not is_lock_error(ValueError("database is locked"))


# --- the --watch importer -----------------------------------------------------------


def _subprocess_env(data: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL",)}
    env.update(BRANCHBOARD_DATA_DIR=str(data), **extra)
    return env


def _copy_session(folder: Path, session_id: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{session_id}.jsonl"
    path.write_bytes(WEBAPP.read_bytes().replace(WEBAPP_ID.encode(), session_id.encode()))
    return path


def _imported_ids(db: Path) -> set[str]:
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1) as c:
            rows = c.execute("SELECT session_id FROM sessions_app_session").fetchall()
    except sqlite3.OperationalError:
        return set()
    return {str(uuid.UUID(r[0])) for r in rows}


def _start_watcher(env: dict[str, str], out) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "manage.py", "import_sessions", "--watch", "--no-progress"],
        cwd=ROOT,
        env=env,
        stdout=out,
        stderr=subprocess.STDOUT,
    )


def _wait_for(what: str, check, process: subprocess.Popen, deadline: float = 60) -> None:
    end = time.monotonic() + deadline
    while not check():
        assert process.poll() is None, f"the watcher died while waiting for {what}"
        assert time.monotonic() < end, f"{what}: not within {deadline} s"
        time.sleep(0.1)


def test_watcher_survives_a_locked_database_and_logs_why(tmp_path: Path) -> None:
    root, data = tmp_path / "root", tmp_path / "data"
    folder = root / "-tmp-proj"
    first, locked_out, later = (str(uuid.uuid4()) for _ in range(3))
    _copy_session(folder, first)
    env = _subprocess_env(data, BRANCHBOARD_ROOTS=str(root), BRANCHBOARD_DB_TIMEOUT="1")
    db, log = data / "branchboard.sqlite3", data / "import.log"
    out = (tmp_path / "stdout").open("wb")
    # No migrate first: the watcher sets up the fresh database itself.
    watcher = _start_watcher(env, out)
    try:
        _wait_for("the first import", lambda: first in _imported_ids(db), watcher)
        holder = sqlite3.connect(db, isolation_level=None, timeout=5)
        holder.execute("BEGIN EXCLUSIVE")
        try:
            _copy_session(folder, locked_out)
            _wait_for(
                "the log naming the lock",
                lambda: log.exists() and "database is locked" in log.read_text(),
                watcher,
            )
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        _copy_session(folder, later)
        _wait_for(
            "the sessions after the lock",
            lambda: {locked_out, later} <= _imported_ids(db),
            watcher,
        )
    finally:
        watcher.terminate()
        watcher.wait(timeout=30)
        out.close()
    printed = (tmp_path / "stdout").read_text()
    assert f"log: {log}" in printed, printed  # says where to look
    assert "database is locked" in printed  # and the warning reached the terminal


def test_watcher_waits_for_a_root_that_does_not_exist_yet(tmp_path: Path) -> None:
    """A CLI not used yet has no folder: the watcher waits for it instead of stopping."""
    root, data = tmp_path / "root", tmp_path / "data"
    sid = str(uuid.uuid4())
    env = _subprocess_env(data, BRANCHBOARD_ROOTS=str(root))
    out = (tmp_path / "stdout").open("wb")
    watcher = _start_watcher(env, out)
    try:
        log = data / "import.log"
        _wait_for(
            "the log saying it waits",
            lambda: log.exists() and "waiting" in log.read_text(),
            watcher,
        )
        _copy_session(root / "-tmp-later", sid)
        _wait_for(
            "the session in the root made later",
            lambda: sid in _imported_ids(data / "branchboard.sqlite3"),
            watcher,
        )
    finally:
        watcher.terminate()
        watcher.wait(timeout=30)
        out.close()
    assert (data / "import.log").read_text().count("waiting for one") == 1


def test_a_problem_that_stays_is_logged_once(
    tmp_path: Path, caplog, transactional_db: None
) -> None:
    from sessions_app.management.commands import import_sessions as command

    root = tmp_path / "root"
    sid = str(uuid.uuid4())
    _copy_session(root / "-tmp-one", sid)
    two = _copy_session(root / "-tmp-two", sid)  # the same session id in a second file: refused
    # The older file is the one left out: the import reads the newest first.
    os.utime(two, ns=(0, (root / "-tmp-one" / two.name).stat().st_mtime_ns - 10**9))
    reported: set[str] = set()
    with caplog.at_level(logging.INFO, logger="branchboard.importer"):
        command._import_pass([root], reported)
        (root / "-tmp-two" / f"{sid}.jsonl").touch()  # a change: the next pass tries again
        command._import_pass([root], reported)
    assert caplog.text.count("already imported from") == 1
    (root / "-tmp-two" / f"{sid}.jsonl").unlink()  # it went away...
    command._import_pass([root], reported)
    _copy_session(root / "-tmp-two", sid)  # ...and came back: said again
    with caplog.at_level(logging.INFO, logger="branchboard.importer"):
        command._import_pass([root], reported)
    assert caplog.text.count("already imported from") == 2


def test_an_import_pass_that_raises_is_logged_and_survived(
    monkeypatch, caplog, transactional_db: None
) -> None:
    """The pass first closes stale connections: it needs the database, outside a test transaction."""
    from sessions_app.management.commands import import_sessions as command
    from sessions_app.services import watching

    def broken(**kwargs: object) -> None:
        raise OperationalError("database is locked")

    monkeypatch.setattr(watching, "sessions_import", broken)
    with caplog.at_level(logging.INFO, logger="branchboard.importer"):
        assert command._import_pass([]) is False
    assert "database is locked" in caplog.text and "Traceback" in caplog.text


def test_import_on_a_fresh_data_folder_sets_up_the_database(tmp_path: Path) -> None:
    root = tmp_path / "root"
    session_id = str(uuid.uuid4())
    _copy_session(root / "-tmp-proj", session_id)
    result = subprocess.run(
        [sys.executable, "manage.py", "import_sessions", "--root", str(root), "--no-progress"],
        cwd=ROOT,
        env=_subprocess_env(tmp_path / "fresh-data"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert "applied" in result.stdout and "1 session imported" in result.stdout, result.stdout
    assert _imported_ids(tmp_path / "fresh-data" / "branchboard.sqlite3") == {session_id}


# --- ?leaf= on a long session ---------------------------------------------------------


def _shift(timestamp: str, by: timedelta) -> str:
    moved = datetime.fromisoformat(timestamp.replace("Z", "+00:00")) + by
    return moved.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def write_long_session(folder: Path, copies: int) -> tuple[str, str]:
    """The bigrepo fixture's 30 turns `copies` times over, one chain, with fresh uuids;
    the last copy has an abandoned branch (its turns 4-6 again) split off at its turn 3.

    Returns the session id and the abandoned branch's leaf uuid.
    """
    records = [r for r in map(orjson.loads, BIGREPO.read_bytes().splitlines()) if r.get("uuid")]
    parents = {r["parentUuid"] for r in records}
    leaf = [r["uuid"] for r in records if r["uuid"] not in parents][-1]
    prompts = [
        i
        for i, r in enumerate(records)
        if r["type"] == "user" and "toolUseResult" not in r and not r.get("isMeta")
    ]
    session_id = str(uuid.uuid4())

    def copy(rows: list[dict], name: str, shift: timedelta, tail: str | None) -> list[bytes]:
        new = {r["uuid"]: str(uuid.uuid5(uuid.NAMESPACE_URL, f"{name}/{r['uuid']}")) for r in rows}
        out = []
        for r in rows:
            r = {**r, "sessionId": session_id, "uuid": new[r["uuid"]]}
            r["parentUuid"] = new.get(r["parentUuid"], tail)
            if r.get("timestamp"):
                r["timestamp"] = _shift(r["timestamp"], shift)
            out.append(orjson.dumps(r))
        return out

    lines: list[bytes] = []
    tail = None
    for k in range(copies):
        lines += copy(records, f"copy{k}", timedelta(days=k), tail)
        tail = str(uuid.uuid5(uuid.NAMESPACE_URL, f"copy{k}/{leaf}"))
    last = copies - 1
    branch = [dict(r) for r in records[prompts[3] : prompts[6]]]
    branch[0]["message"] = {**branch[0]["message"], "content": f"{MARKER}: try it another way"}
    split = str(uuid.uuid5(uuid.NAMESPACE_URL, f"copy{last}/{records[prompts[3]]['parentUuid']}"))
    lines += copy(branch, "abandoned", timedelta(days=last, hours=-1), split)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{session_id}.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    leaf_uuid = str(uuid.uuid5(uuid.NAMESPACE_URL, f"abandoned/{branch[-1]['uuid']}"))
    return session_id, leaf_uuid


COPIES = 40  # 6,400 records, 1,200 turns


@pytest.fixture(scope="module")
def long_session_file(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    """Written once (21 MB): the tests only read it."""
    root = tmp_path_factory.mktemp("long")
    session_id, leaf = write_long_session(root / "-home-dev-code-long", COPIES)
    return root, session_id, leaf


@pytest.fixture(scope="module")
def long_session_imported(
    long_session_file: tuple[Path, str, str],
    module_transaction: None,
    django_db_blocker: DjangoDbBlocker,
) -> tuple[str, str]:
    """Imported once for the module: the tests only read it (see conftest.module_transaction)."""
    root, session_id, leaf = long_session_file
    with django_db_blocker.unblock():
        sessions_import(roots=[root])
    return session_id, leaf


@pytest.fixture
def long_session(long_session_imported: tuple[str, str], db: None) -> tuple[Session, str]:
    session_id, leaf = long_session_imported
    session = Session.objects.get(session_id=session_id)
    assert session.turn_count == COPIES * 30
    assert [b["leaf_uuid"] for b in session.abandoned] == [leaf]
    return session, leaf


def test_abandoned_branch_of_a_long_session_is_paged(
    client, long_session: tuple[Session, str], django_assert_max_num_queries, tmp_path: Path
) -> None:
    session, leaf = long_session
    # The session's folder exists, as on the machine that ran it: the page offers a fork
    # into a worktree and says whether the CLI kept file backups, and that costs no query
    # (the count must not depend on whether /home/dev/code/bigrepo exists here).
    Session.objects.filter(pk=session.pk).update(cwd=str(tmp_path))
    url = f"/sessions/{session.session_id}/"
    main = client.get(url)
    assert main.status_code == 200
    with django_assert_max_num_queries(12):
        first = client.get(f"{url}?leaf={leaf}")
    assert first.status_code == 200
    html = first.content.decode()
    assert [int(n) for n in TURN_NO.findall(html)] == list(range(1, 21))
    assert "abandoned branch" in html and f"after=20&amp;leaf={leaf}" in html
    # As big as the transcript's own first page, whatever the session's size.
    assert len(first.content) <= len(main.content) * 1.1, (len(first.content), len(main.content))

    shared = (COPIES - 1) * 30 + 3
    total = shared + 3
    with django_assert_max_num_queries(8):
        end = client.get(f"{url}?leaf={leaf}&after={total - 5}", HTTP_HX_REQUEST="true")
    assert end.status_code == 200
    fragment = end.content.decode()
    assert "<html" not in fragment and "More turns" not in fragment
    assert [int(n) for n in TURN_NO.findall(fragment)] == list(range(total - 4, total + 1))
    assert fragment.count(MARKER) == 1
    assert len(end.content) <= len(main.content)


def _full_walk(session: Session, leaf: str) -> list[tuple[int, int | None]]:
    """The branch ending at `leaf` as the whole file's graph says: (line, turn) of its records."""
    rows = list(session.records.order_by("line"))
    nodes = [
        Node(
            r.line,
            r.uuid or None,
            r.parent_uuid or None,
            r.kind,
            r.timestamp,
            r.sidechain,
            r.logical_parent_uuid or None,
            r.text or None,
        )
        for r in rows
    ]
    analysis = analyse(nodes, session.agent, leaf_uuid=leaf)
    return [(r.line, t) for r, t, a in zip(rows, analysis.turn, analysis.active, strict=True) if a]


def _paged_walk(session: Session, leaf: str) -> list[tuple[int, int | None]]:
    branch = selectors.abandoned_branch(session, leaf)
    assert branch is not None
    seen = []
    for after in range(0, branch.turns, 7):
        page = selectors.branch_records(session, branch, first_turn=after + 1, last_turn=after + 7)
        seen += [(r.line, r.turn) for r in page if r.active]
    return sorted(seen)


def test_branch_pages_are_the_branch_a_whole_walk_finds(
    imported: Path, long_session: tuple[Session, str]
) -> None:
    branches = [(s, b["leaf_uuid"]) for s in Session.objects.all() for b in s.abandoned]
    assert len(branches) >= 3
    for session, leaf in branches:
        whole = [(line, turn) for line, turn in _full_walk(session, leaf) if turn is not None]
        assert _paged_walk(session, leaf) == whole, session.path


@pytest.mark.parametrize(
    ("leaf", "status"),
    [
        ("../../etc/passwd", 400),
        ("x" * 5000, 400),
        ("a b", 400),
        ("abc\n", 400),
        ("0b5e4c6e-3f8a-4d2b-9c1e-7a6f5d4c3b2a", 404),  # no such record
        ("active", 404),  # a record, but on the active branch
    ],
)
def test_a_leaf_that_names_no_abandoned_branch_is_refused(
    client, long_session: tuple[Session, str], leaf: str, status: int
) -> None:
    session, _ = long_session
    if leaf == "active":
        leaf = session.leaf_uuid
    response = client.get(f"/sessions/{session.session_id}/", {"leaf": leaf})
    assert response.status_code == status
    assert b"leaf must be a record id" in response.content or b"no abandoned branch" in (
        response.content
    )


# --- lineage: deep chains and cycles --------------------------------------------------------


def test_lineage_of_a_chain_1100_forks_deep_is_drawn_bounded(client, db: None) -> None:
    project = Project.objects.create(agent="claude", folder="/tmp/deep", root="/tmp")
    sessions = Session.objects.bulk_create(
        Session(
            project=project,
            session_id=uuid.uuid4(),
            path=f"/tmp/deep/{i}.jsonl",
            agent="claude",
            title=f"fork {i}",
        )
        for i in range(1100)
    )
    for parent, child in pairwise(sessions):
        child.parent_id, child.kind, child.fork_turn = parent.pk, "fork", 1
    Session.objects.bulk_update(sessions[1:], ["parent", "kind", "fork_turn"])
    for current in (sessions[-1], sessions[0], sessions[550]):
        response = client.get(f"/sessions/{current.session_id}/lineage/")
        assert response.status_code == 200
        html = response.content.decode()
        boxes = html.split("<svg", 1)[1].split("</svg>", 1)[0].count('<a href="/sessions/')
        tree = html.split('id="family-tree"', 1)[1].split("</section>", 1)[0]
        nodes = tree.count('<li class="tree-node')
        # Bounded whatever the chain's length: 200 tree nodes, 150 boxes, their table.
        assert boxes <= 150 and nodes <= 200 and len(html) < 500_000, (boxes, nodes, len(html))
        assert "more sessions of this family not shown" in tree
        assert f'href="/sessions/{current.session_id}/"' in html
        assert f'href="/sessions/{sessions[0].session_id}/"' in html  # the root is always shown
        assert "more sessions not drawn" in html


def test_lineage_survives_parent_links_in_a_circle(client, tmp_path: Path, db: None) -> None:
    folder = tmp_path / "root" / "-tmp-circle"
    a, b = str(uuid.uuid4()), str(uuid.uuid4())
    for mine, other in ((a, b), (b, a)):
        path = _copy_session(folder, mine)
        lines = [orjson.loads(line) for line in path.read_bytes().splitlines()]
        for record in lines:
            record["forkedFrom"] = {"sessionId": other, "messageUuid": record.get("uuid")}
        path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in lines))
    sessions_import(roots=[tmp_path / "root"])
    # Whichever came first found no parent yet; a new line makes it look again.
    orphan = Session.objects.get(session_id__in=[a, b], parent__isnull=True)
    other = b if str(orphan.session_id) == a else a
    extra = {
        "type": "user",
        "uuid": str(uuid.uuid4()),
        "parentUuid": None,
        "sessionId": str(orphan.session_id),
        "timestamp": "2026-01-02T00:00:00Z",
        "message": {"role": "user", "content": "and again"},
        "forkedFrom": {"sessionId": other, "messageUuid": None},
    }
    with open(orphan.path, "ab") as f:
        f.write(orjson.dumps(extra) + b"\n")
    sessions_import(roots=[tmp_path / "root"])
    first, second = Session.objects.get(session_id=a), Session.objects.get(session_id=b)
    assert (first.parent_id, second.parent_id) == (second.pk, first.pk), "no cycle to test"
    for session_id in (a, b):
        response = client.get(f"/sessions/{session_id}/lineage/")
        assert response.status_code == 200
        html = response.content.decode()
        assert f'href="/sessions/{a}/"' in html and f'href="/sessions/{b}/"' in html
        assert html.split("<svg", 1)[1].split("</svg>", 1)[0].count('<a href="/sessions/') == 2
        assert html.count('<li class="tree-node') == 2  # each once, in one tree


# --- HEAD -----------------------------------------------------------------------------------


def test_head_answers_like_get_on_pages(client, imported: Path) -> None:
    session = Session.objects.get(session_id=WEBAPP_ID)
    for url in (
        "/",
        f"/projects/{session.project_id}/",
        f"/sessions/{WEBAPP_ID}/",
        f"/sessions/{WEBAPP_ID}/lineage/",
        f"/sessions/{WEBAPP_ID}/export.jsonl",
    ):
        response = client.head(url)
        assert response.status_code == 200, (url, response.status_code)
