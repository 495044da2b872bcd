"""Everything else works for Gemini CLI sessions too (issue 45): usage with the thoughts as
reasoning, usage unchanged by a branch or a fork, search, lineage, compare, exports, archive
and restore, hub push and pull, on the Gemini fixtures (tests/fixtures/gemini)."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest
from django.contrib.auth.models import Permission, User

from sessions_app.models import ApiToken, Session, Usage
from sessions_app.selectors.compare import compare
from sessions_app.selectors.usage import usage_by_day
from sessions_app.selectors.usage.sessions import session_usage
from sessions_app.services.archive.restoring import session_restore
from sessions_app.services.branching import session_fork
from sessions_app.services.hub.client import Hub, Login
from sessions_app.services.hub.namespaces import hub_folder
from sessions_app.services.hub.pulling import pull
from sessions_app.services.hub.pushing import push
from sessions_app.services.importing import sessions_import
from sessions_app.services.searching import search_refresh
from sessions_app.services.usage import usage_refresh

from .corpus import make_idle
from .test_hub import _owners_fork

pytestmark = pytest.mark.django_db(transaction=True)

FIXTURE = Path(__file__).parent / "fixtures" / "gemini"
DEMO = "1a2b3c4d-5e6f-4a1b-8c2d-3e4f5a6b7c8d"
DEMO_FILE = "demo-app/chats/session-2026-11-20T10-00-1a2b3c4d.jsonl"


@pytest.fixture
def gemini_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, settings) -> Path:
    """A home whose `.gemini` is the fixtures, its `tmp` the one root, imported."""
    home = tmp_path / "home"
    shutil.copytree(FIXTURE, home / ".gemini")
    root = home / ".gemini" / "tmp"
    make_idle(root)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("GEMINI_CLI_HOME", raising=False)
    settings.SESSION_ROOTS = [root]
    report = sessions_import(roots=[root])
    assert not report.errors, report.errors
    return root


def _demo() -> Session:
    return Session.objects.get(session_id=DEMO, namespace="")


def _everything() -> tuple:
    """Gemini's usage summed over the days: messages, tokens of each kind, cost."""
    days = usage_by_day(agent="gemini")
    kinds = ("messages", "input", "output", "reasoning", "cache_read", "cost")
    return tuple(sum(getattr(d.total, k) for d in days) for k in kinds)


# --- Usage.


def test_the_thoughts_are_the_replies_reasoning_billed_as_output(gemini_tmp: Path) -> None:
    usage_refresh()
    rows = Usage.objects.filter(session__session_id=DEMO)
    # thoughts 10 + 5 (tests/fixtures/gemini); output 143 + those 15.
    assert sum(rows.values_list("reasoning_tokens", flat=True)) == 15
    assert sum(rows.values_list("output_tokens", flat=True)) == 158
    total, _ = session_usage(_demo())
    assert (total.output, total.reasoning) == (158, 15)


@pytest.mark.parametrize("turn", [None, 1, 2])
def test_a_branch_or_a_fork_leaves_the_usage_totals_unchanged(
    gemini_tmp: Path, client, turn: int | None
) -> None:
    usage_refresh()
    before = _everything()
    page = client.get("/usage/").content.decode()
    assert before[0] > 0 and before[-1] > 0

    fork = session_fork(session=_demo(), turn=turn)
    usage_refresh()

    assert Path(fork.path).parent == gemini_tmp / "demo-app" / "chats"
    assert Usage.objects.filter(session=fork).exists()  # the copied replies, counted once
    assert _everything() == before
    assert client.get("/usage/").content.decode().count("gemini-2.5-pro") == page.count(
        "gemini-2.5-pro"
    )


# --- Search, lineage, compare, exports.


def test_a_fork_is_found_by_search_and_drawn_in_the_lineage(gemini_tmp: Path, client) -> None:
    fork = session_fork(session=_demo(), turn=2)
    search_refresh()

    page = client.get("/search/", {"q": '"explain setup.py"'}).content.decode()
    # The fork's copy of the prompt is folded under the source's hit, as for the other agents.
    assert f"/sessions/{DEMO}/" in page and "also in 1 branch" in page
    svg = client.get(f"/sessions/{fork.session_id}/lineage/").content.decode()
    assert "<svg" in svg and f'href="/sessions/{DEMO}/"' in svg
    assert f'href="/sessions/{fork.session_id}/"' in svg and "split after turn 2" in svg


def test_a_fork_compares_with_its_source_from_the_split(gemini_tmp: Path, client) -> None:
    source = _demo()
    fork = session_fork(session=source, turn=1)

    cmp = compare(source, fork)

    assert cmp.split == 1 and len(cmp.shared) == 1
    assert (cmp.a.total_turns, cmp.b.total_turns) == (2, 0)
    assert cmp.a.turns[0].prompt == "explain setup.py" and cmp.a.turns[0].number == 2
    url = f"/sessions/{source.session_id}/compare/{fork.session_id}/"
    assert client.get(url).status_code == 200


def test_exports(gemini_tmp: Path, client) -> None:
    raw = (gemini_tmp / DEMO_FILE).read_bytes()
    jsonl = client.get(f"/sessions/{DEMO}/export.jsonl")
    assert b"".join(jsonl.streaming_content) == raw
    md = b"".join(client.get(f"/sessions/{DEMO}/export.md").streaming_content).decode()
    assert "## Turn 3" in md and "## Turn 4" not in md and "list the files" in md
    assert "Two files: README.md and setup.py." in md
    html = b"".join(client.get(f"/sessions/{DEMO}/export.html").streaming_content).decode()
    assert "<style>" in html and "<script" not in html and "explain setup.py" in html


# --- Archive and restore.


def test_a_removed_file_is_read_from_the_archive_and_restored_byte_for_byte(
    gemini_tmp: Path, client
) -> None:
    path = gemini_tmp / DEMO_FILE
    raw = path.read_bytes()
    exports = [f"/sessions/{DEMO}/export.{fmt}" for fmt in ("md", "html")]
    before = [b"".join(client.get(url).streaming_content) for url in exports]
    path.unlink()
    assert sessions_import(roots=[gemini_tmp]).removed == 1
    session = _demo()
    assert session.file_removed_at is not None
    page = client.get(f"/sessions/{DEMO}/").content.decode()
    assert "removed from disk on" in page and "list the files" in page
    assert [b"".join(client.get(url).streaming_content) for url in exports] == before
    fork = session_fork(session=session, turn=1)  # forked from the archive
    assert Path(fork.path).parent == path.parent and fork.turn_count == 1

    assert session_restore(session=session) == [path]

    assert path.read_bytes() == raw and stat.S_IMODE(os.lstat(path).st_mode) == 0o600
    report = sessions_import(roots=[gemini_tmp])
    assert report.sessions == 0 and report.removed == 0 and not report.errors
    session.refresh_from_db()
    assert session.file_removed_at is None and session.turn_count == 3


# --- Hub push and pull.


@pytest.fixture
def alice(live_server, settings, tmp_path: Path) -> Hub:
    settings.DATA_DIR = tmp_path / "data"
    settings.DATA_DIR.mkdir(mode=0o700)
    settings.HUB_PROJECTS = ["*"]
    settings.HUB_EXCLUDE = []
    user = User.objects.create_user("alice", password="x")
    for codename in ("push_sessions", "write_sessions"):
        user.user_permissions.add(Permission.objects.get(codename=codename))
    _, key = ApiToken.issue(name="laptop", user=user)
    return Hub(Login(live_server.url, "alice@laptop", key))


def test_a_push_keeps_the_gemini_files_and_a_fork_on_the_hub_is_pulled_into_chats(
    gemini_tmp: Path, alice: Hub
) -> None:
    local = sorted(gemini_tmp.glob("*/chats/*.jsonl"))
    report = push(alice)

    sent = {f".gemini/tmp/{p.relative_to(gemini_tmp).as_posix()}" for p in local}
    assert set(report.sent_files) == sent - {
        ".gemini/tmp/demo-app/chats/session-2026-11-21T09-00-a2a-serv.jsonl"  # no session
    }
    hub_copy = hub_folder() / "alice@laptop" / ".gemini" / "tmp" / DEMO_FILE
    assert hub_copy.read_bytes() == (gemini_tmp / DEMO_FILE).read_bytes()
    on_hub = Session.objects.get(namespace="alice@laptop", session_id=DEMO)
    assert on_hub.agent == "gemini" and on_hub.turn_count == _demo().turn_count == 3

    fork = _owners_fork(on_hub, turn=2)  # by alice: it goes to her machine
    assert fork.namespace == "alice@laptop"
    pulled = pull(alice)

    back = gemini_tmp / "demo-app" / "chats" / Path(fork.path).name
    assert pulled.written == [back] and back.read_bytes() == Path(fork.path).read_bytes()
    mine = Session.objects.get(namespace="", session_id=fork.session_id)
    assert mine.path == str(back) and mine.agent == "gemini" and mine.turn_count == 2
    assert push(alice).sent_files == []
