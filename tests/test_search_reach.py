"""What search reaches: a subagent's work by default, abandoned branches when asked, and
every hit labelled and linked to where it is shown."""

from __future__ import annotations

import html
import re
import uuid
from pathlib import Path

import pytest
from django.test import Client

from sessions_app.models import Session
from sessions_app.selectors.search import SearchQuery, search
from sessions_app.services.importing import sessions_import
from sessions_app.services.searching import search_refresh

from .factories import jsonl, one_turn
from .facts import FORKS_TREE

DEMO = "fe5e1c67-53e7-4862-81ae-d0e013e3270b"  # inline sidechains (Claude Code 1.0)
MANIFEST = "a7da6a22-facc-4fcd-8bab-f83c87862004"  # agent-c8d9b115.jsonl beside it
AGENTS = "04fa9149-8141-4f34-8bc2-f6d11b8fa354"  # subagents/agent-a0751b2961eeab05e.jsonl


@pytest.fixture
def indexed(imported: Path) -> Path:
    report = search_refresh()
    assert not report.errors, report.errors
    return imported


def hits_of(text: str, **filters) -> list[tuple[Session, object]]:
    results = search(SearchQuery(text, **filters))
    return [(g.session, h) for g in results.groups for h in g.hits]


@pytest.mark.parametrize(
    ("word", "owner"),
    [
        ("TodoListProps", DEMO),  # only in an inline sidechain
        ("_lilypond_builtins", MANIFEST),  # only in agent-<id>.jsonl beside it
        ('"Sub: looking"', AGENTS),  # only in <session>/subagents/agent-<id>.jsonl
    ],
)
def test_a_subagents_work_is_found_by_default(indexed: Path, word: str, owner: str) -> None:
    found = hits_of(word)
    assert found, f"{word!r} is found without asking for abandoned branches"
    for session, _ in found:
        assert str(session.owner_session_id or session.session_id) == owner


def test_abandoned_branches_only_when_asked_and_marked_so(indexed: Path, client: Client) -> None:
    forks_tree = Session.objects.get(path__endswith=FORKS_TREE.split("/")[-1])
    phrase = '"one more prompt in the branch"'
    assert hits_of(phrase) == []
    found = hits_of(phrase, everything=True)
    assert found and found[0][0] == forks_tree and found[0][1].active is False
    page = client.get("/search/", {"q": phrase, "all": "1"})
    assert "abandoned branch" in page.content.decode()


@pytest.mark.parametrize(
    ("word", "link"),
    [
        ("TodoListProps", rf"/sessions/{DEMO}/"),
        ("_lilypond_builtins", rf"/sessions/{MANIFEST}/subagents/c8d9b115/"),
        ('"Sub: looking"', rf"/sessions/{AGENTS}/subagents/a0751b2961eeab05e/"),
    ],
)
def test_a_subagent_hit_is_labelled_subagent_and_every_link_opens(
    indexed: Path, client: Client, word: str, link: str
) -> None:
    page = client.get("/search/", {"q": word}).content.decode()
    group = page[page.index('class="search-group"') :]
    heading = re.search(r'<h2><a href="([^"]+)"', group)
    assert heading and heading.group(1).startswith(link), heading
    assert "0000000000" not in page, "no link to a placeholder session id"
    hit = re.search(r'<li class="hit">.*?</li>', group, re.S)
    assert hit and "subagent" in hit.group(0) and "abandoned branch" not in hit.group(0)
    for href in re.findall(r'href="(/sessions/[^"]+)"', group):
        assert client.get(html.unescape(href).split("#")[0]).status_code == 200, href


def test_a_title_hit_is_no_abandoned_branch(tmp_path: Path, client: Client, db: None) -> None:
    """Claude Code's `custom-title` record hangs off no record: it is the session's title,
    found without asking for abandoned branches, and labelled as what it is."""
    sid = str(uuid.uuid4())
    title = {"type": "custom-title", "customTitle": "zorblatt refactor", "sessionId": sid}
    folder = tmp_path / "-work-titled"
    folder.mkdir()
    (folder / f"{sid}.jsonl").write_bytes(jsonl([title, *one_turn(sid, "hello", "hi")]))
    sessions_import(roots=[tmp_path])
    assert not search_refresh().errors
    page = client.get("/search/", {"q": "zorblatt"}).content.decode()
    hit = re.search(r'<li class="hit">.*?</li>', page, re.S)
    assert hit and '<span class="badge">title</span>' in hit.group(0), page
    assert "abandoned branch" not in hit.group(0), hit.group(0)
    link = re.search(r'href="([^"]+)"', hit.group(0))
    assert link and "leaf=" not in link.group(1)
    assert client.get(html.unescape(link.group(1)).split("#")[0]).status_code == 200
