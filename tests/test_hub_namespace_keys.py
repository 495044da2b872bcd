"""A hub keys everything of a pushed session by (namespace, id): what one user pushes never
changes what another user's session shows or costs.

Alice's laptop pushed a Claude Code session with a subagent. Bob, who may push too, pushes
files of his own that reuse her ids: a subagent transcript under her session's id and her
agent's id (`<project>/<her session id>/subagents/agent-<her agent id>.jsonl`), and a copy
of her session under a new id, both with her records' uuids and her messages' ids but his
own words and huge token counts. Her session's page, its subagent's page and link, its
Markdown and HTML exports, its usage and cost, her project's usage, her search hits and
her lineage stay as they were.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import orjson
import pytest
from django.test import Client

from sessions_app.models import Session, Usage
from sessions_app.selectors.usage import usage_by_project
from sessions_app.selectors.usage.sessions import session_usage, session_usage_parts
from sessions_app.services.hub.client import Hub, Login
from sessions_app.services.hub.namespaces import hub_roots, namespace_folder
from sessions_app.services.hub.pushing import push
from sessions_app.services.importing import sessions_import
from sessions_app.services.searching import search_refresh

from .corpus import FIXTURES, make_idle

ALICE, BOB = "alice@laptop", "bob@desktop"
PROJECT = "-home-dev-code-agents"
SID = "04fa9149-8141-4f34-8bc2-f6d11b8fa354"  # alice's session, with a subagent
AGENT = "a0751b2961eeab05e"  # its subagent's agent id
BOB_COPY = "5b0b0b0b-0b0b-4b0b-8b0b-0b0b0b0b0b0b"  # bob's copy of her session, its own id
BOB_PROJECT = "-home-bob-code-mine"
WORDS = "BOBPUSHEDWORDS"  # every text of bob's files
SOURCE = FIXTURES / "cli" / "claude" / PROJECT


def bobs_version(raw: bytes, *, session_id: str | None = None, parent: str | None = None) -> bytes:
    """The lines of one of alice's files as bob pushes them: the same uuids and message ids,
    his words in every text, and a hundred million tokens in each message."""
    out = []
    for line in raw.splitlines():
        data = orjson.loads(line)
        message = data.get("message")
        if isinstance(message, dict):
            content = message.get("content")
            if isinstance(content, str):
                message["content"] = f"{WORDS} prompt"
            elif isinstance(content, list):
                for block in content:
                    if isinstance(block, dict) and isinstance(block.get("text"), str):
                        block["text"] = f"{WORDS} reply"
            if isinstance(message.get("usage"), dict):
                message["usage"]["input_tokens"] = 100_000_000
                message["usage"]["output_tokens"] = 2_000_000
        if session_id is not None and "sessionId" in data:
            data["sessionId"] = session_id
        if parent is not None and data.get("type") == "user":
            data["forkedFrom"] = {"sessionId": parent, "messageUuid": data.get("uuid")}
        if isinstance(data.get("cwd"), str):
            data["cwd"] = "/home/bob/code/mine"
        out.append(orjson.dumps(data) + b"\n")
    return b"".join(out)


def bobs_subagent() -> bytes:
    return bobs_version((SOURCE / SID / "subagents" / f"agent-{AGENT}.jsonl").read_bytes())


def bobs_copy() -> bytes:
    return bobs_version((SOURCE / f"{SID}.jsonl").read_bytes(), session_id=BOB_COPY, parent=SID)


def place_alice(data_dir: Path) -> None:
    shutil.copytree(SOURCE, namespace_folder(ALICE) / ".claude" / "projects" / PROJECT)


def place_bob(data_dir: Path) -> None:
    """Bob's files in his namespace's folder, where his pushes put them."""
    folder = namespace_folder(BOB) / ".claude" / "projects" / BOB_PROJECT
    (folder / SID / "subagents").mkdir(parents=True)
    (folder / SID / "subagents" / f"agent-{AGENT}.jsonl").write_bytes(bobs_subagent())
    (folder / f"{BOB_COPY}.jsonl").write_bytes(bobs_copy())


def hub_import() -> None:
    make_idle(namespace_folder(ALICE).parent)
    report = sessions_import(roots=hub_roots())
    assert not report.errors, report.errors
    assert not search_refresh().errors


@pytest.fixture
def hub_dir(tmp_path: Path, settings, db) -> Path:
    settings.DATA_DIR = tmp_path / "data"
    settings.DATA_DIR.mkdir(mode=0o700)
    settings.SESSION_ROOTS = [tmp_path / "local"]
    return settings.DATA_DIR


def alices_session() -> Session:
    return Session.objects.get(namespace=ALICE, session_id=SID, is_subagent=False)


def _steady(html: str) -> str:
    """A page without what changes from one request to the next (its CSRF token)."""
    html = re.sub(r'(name="csrfmiddlewaretoken" value=")[^"]+', r"\1", html)
    return re.sub(r'("x-csrftoken": ")[^"]+', r"\1", html, flags=re.I)


def what_alice_sees(client: Client) -> dict[str, str]:
    base = f"/sessions/{ALICE}/{SID}"
    pages = {}
    for url in (
        f"{base}/",
        f"{base}/subagents/{AGENT}/",
        f"{base}/export.md",
        f"{base}/export.html",
        f"{base}/usage.csv",
        f"{base}/usage-turns/",
        f"{base}/lineage/",
    ):
        page = client.get(url)
        assert page.status_code == 200, url
        body = b"".join(page.streaming_content) if page.streaming else page.content
        pages[url] = _steady(body.decode())
    return pages


def what_alice_costs() -> tuple:
    session = alices_session()
    total, per_model = session_usage(session)
    parts = [(p.part, p.turn, p.totals.tokens, p.totals.cost) for p in session_usage_parts(session)]
    project = usage_by_project()[session.project_id]
    return (
        (total.tokens, total.cost, total.messages),
        sorted((m, t.tokens, t.cost) for m, t in per_model.items()),
        parts,
        (project.tokens, project.cost, project.messages),
    )


def test_a_subagent_pushed_under_another_users_session_id_changes_nothing_of_hers(
    hub_dir: Path, client: Client
) -> None:
    place_alice(hub_dir)
    hub_import()
    before, cost = what_alice_sees(client), what_alice_costs()
    assert "Sub: looking." in before[f"/sessions/{ALICE}/{SID}/subagents/{AGENT}/"]
    assert f"/sessions/{ALICE}/{SID}/subagents/{AGENT}/" in before[f"/sessions/{ALICE}/{SID}/"]
    place_bob(hub_dir)
    hub_import()
    assert Session.objects.filter(namespace=BOB, is_subagent=True).count() == 1, "bob's is read"
    after = what_alice_sees(client)
    for url, html in after.items():
        assert WORDS not in html, f"{url} shows what bob pushed"
        assert html == before[url], f"{url} changed when bob pushed"
    assert what_alice_costs() == cost
    # Bob's own subagent file is his: it belongs to no session of alice's.
    assert client.get(f"/sessions/{BOB}/{SID}/").status_code == 404


def test_pushed_messages_of_another_user_are_no_copies_of_hers(
    hub_dir: Path, client: Client
) -> None:
    """Usage counts a message once per namespace: bob's copy, pushed first, does not make
    hers a copy (left out of her project's totals), nor does hers, read again, make his
    the originals."""
    place_alice(hub_dir)
    hub_import()
    cost = what_alice_costs()
    Session.objects.all().delete()
    place_bob(hub_dir)
    shutil.rmtree(namespace_folder(ALICE))
    hub_import()
    place_alice(hub_dir)
    hub_import()
    assert (
        not Usage.objects.filter(session__namespace=ALICE, copy=True)
        .exclude(session__is_subagent=True)
        .exists()
    ), "her messages were taken for copies of bob's"
    assert what_alice_costs() == cost
    bobs = Usage.objects.filter(session__namespace=BOB, session__is_subagent=False)
    assert bobs.exists() and not bobs.filter(copy=True).exists(), "his are his own, not copies"
    # Her file read again from the start (a new inode): her messages stay hers.
    path = Path(alices_session().path)
    raw = path.read_bytes()
    path.unlink()
    path.write_bytes(raw)
    hub_import()
    assert alices_session().usage.filter(copy=True).count() == 0
    assert what_alice_costs() == cost


def _search(client: Client, token: str, q: str, session: str | None = None) -> list[dict]:
    params = {"q": q, **({"session": session} if session else {})}
    answer = client.get("/api/search", params, HTTP_AUTHORIZATION=f"Bearer {token}")
    assert answer.status_code == 200, answer.content
    return answer.json()["sessions"]


def test_search_texts_are_kept_per_namespace(hub_dir: Path, client: Client, token: str) -> None:
    """A record's text is stored once per uuid within a namespace: bob's records, though they
    carry her uuids, neither lend her records his words nor take hers."""
    place_bob(hub_dir)
    hub_import()  # bob first: his texts are there before hers
    place_alice(hub_dir)
    hub_import()
    mine = _search(client, token, "explore the repo", f"{ALICE}/{SID}")
    assert mine, "her prompt is found in her session"
    hits = [hit for group in mine for hit in group["hits"]]
    assert all(WORDS not in orjson.dumps(hit).decode() for hit in hits)
    for group in _search(client, token, WORDS):
        assert not group["ref"].startswith(ALICE), f"bob's words found in {group['ref']}"
    theirs = _search(client, token, "Sub: looking")
    assert {g["ref"].split("/")[0] for g in theirs} == {ALICE}
    also = [hit["also_in"] for g in theirs for hit in g["hits"]]
    assert also and not any(also), "her text counted as held by bob's sessions too"


def test_a_pushed_fork_of_another_users_session_is_not_in_her_lineage(
    hub_dir: Path, client: Client
) -> None:
    place_alice(hub_dir)
    place_bob(hub_dir)
    hub_import()
    bob = Session.objects.get(namespace=BOB, session_id=BOB_COPY)
    assert bob.parent_id is None and not bob.kind
    assert not alices_session().children.exists()
    lineage = client.get(f"/sessions/{ALICE}/{SID}/lineage/").content.decode()
    assert BOB_COPY not in lineage


def test_compare_of_her_session_with_its_fork_is_unchanged_by_bobs_copies(
    hub_dir: Path, client: Client
) -> None:
    from sessions_app.services.branching import session_fork

    place_alice(hub_dir)
    hub_import()
    fork = session_fork(session=alices_session(), turn=1)
    url = f"/sessions/{ALICE}/{SID}/compare/{fork.ref}/"
    before = _steady(client.get(url).content.decode())
    place_bob(hub_dir)
    hub_import()
    after = _steady(client.get(url).content.decode())
    assert WORDS not in after
    assert after == before


@pytest.mark.django_db(transaction=True)
def test_bobs_push_under_alices_ids_over_http_leaves_her_session_as_it_was(
    tmp_path: Path, settings, monkeypatch: pytest.MonkeyPatch, live_server
) -> None:
    """The same, as it happens: both push over HTTP with their own tokens."""
    from sessions_app.models import ApiToken

    from .test_hub import _user

    settings.DATA_DIR = tmp_path / "data"
    settings.DATA_DIR.mkdir(mode=0o700)
    settings.HUB_PROJECTS = ["*"]
    settings.HUB_EXCLUDE = []
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)

    def push_from(user: str, namespace: str, files: dict[str, bytes]) -> None:
        home = tmp_path / namespace
        for inside, raw in files.items():
            (home / inside).parent.mkdir(parents=True, exist_ok=True)
            (home / inside).write_bytes(raw)
        make_idle(home)
        monkeypatch.setenv("HOME", str(home))
        settings.SESSION_ROOTS = [home / ".claude" / "projects"]
        _, key = ApiToken.issue(name=namespace, user=_user(user, "push_sessions"))
        report = push(Hub(Login(live_server.url, namespace, key)))
        assert report.problems == [] and report.sent_files, report.problems

    theirs = ".claude/projects"
    push_from(
        "alice",
        ALICE,
        {
            f"{theirs}/{PROJECT}/{p.relative_to(SOURCE)}": p.read_bytes()
            for p in SOURCE.rglob("*")
            if p.is_file()
        },
    )
    client = Client()
    before, cost = what_alice_sees(client), what_alice_costs()
    push_from(
        "bob",
        BOB,
        {
            f"{theirs}/{BOB_PROJECT}/{SID}/subagents/agent-{AGENT}.jsonl": bobs_subagent(),
            f"{theirs}/{BOB_PROJECT}/{BOB_COPY}.jsonl": bobs_copy(),
        },
    )
    assert Session.objects.filter(namespace=BOB).count() == 2, "bob's files were taken"
    assert what_alice_sees(client) == before
    assert what_alice_costs() == cost
    assert os.path.exists(namespace_folder(BOB) / theirs / BOB_PROJECT / SID / "subagents")
