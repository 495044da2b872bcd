"""Words found together within a turn, though different records of it hold them; a record
holding them all ranked first; the same on SQLite and PostgreSQL."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest

from sessions_app.models import Session
from sessions_app.selectors.search import SearchQuery, search
from sessions_app.services.importing import sessions_import
from sessions_app.services.searching import search_refresh

from .factories import assistant_record, jsonl, tool_result, user_record

SID = "7c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f"


@pytest.fixture
def session(tmp_path: Path, db) -> Session:
    """Turn 1: numpy asked for, the error in the tool's output. Turn 2: the error alone.
    Turn 3: numpy alone. Turn 4: one reply holds both words."""
    records: list[dict] = []
    parent = None

    def add(record: dict) -> None:
        nonlocal parent
        records.append(record)
        parent = record["uuid"]

    add(user_record("please install numpy and run the analysis", sid=SID, parent=parent))
    call = {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "python a.py"}}
    add(assistant_record([call], sid=SID, parent=parent))
    add(user_record(tool_result("t1", "ModuleNotFoundError: No module named 'pandas'"),
                    sid=SID, parent=parent))  # fmt: skip
    add(assistant_record("It failed on an import.", sid=SID, parent=parent))
    add(user_record("another ModuleNotFoundError here", sid=SID, parent=parent))
    add(assistant_record("I see it.", sid=SID, parent=parent))
    add(user_record("and numpy is slow", sid=SID, parent=parent))
    add(assistant_record("Vectorise it.", sid=SID, parent=parent))
    add(user_record("what now", sid=SID, parent=parent))
    add(assistant_record("The ModuleNotFoundError went away once numpy was installed.",
                         sid=SID, parent=parent))  # fmt: skip
    folder = tmp_path / "root" / "-work-demo"
    folder.mkdir(parents=True)
    (folder / f"{SID}.jsonl").write_bytes(jsonl(records))
    sessions_import(roots=[tmp_path / "root"])
    assert not search_refresh().errors
    return Session.objects.get(session_id=SID)


def test_words_in_different_records_of_one_turn_match_together(session: Session) -> None:
    results = search(SearchQuery("ModuleNotFoundError numpy"))
    hits = [h for g in results.groups for h in g.hits]
    turns = [h.turn for h in hits]
    assert 1 in turns, "turn 1 holds both words, in its prompt and its tool's output"
    assert 2 not in turns and 3 not in turns, "a turn holding only one of them is no match"
    assert hits[0].turn == 4 and hits[0].part == "reply", "the record holding both comes first"


def test_words_across_a_turn_are_found_with_filters_too(session: Session) -> None:
    """The filters (project, agent, dates, session) narrow each term's turns and their rows:
    the turn is found when they hold it, not when they leave it out."""
    day = session.started_at.date()
    held = [
        SearchQuery("ModuleNotFoundError numpy", project=session.project_id),
        SearchQuery("ModuleNotFoundError numpy", agent=session.agent, since=day, until=day),
        SearchQuery("ModuleNotFoundError numpy", session=session.pk, everything=True),
    ]
    for query in held:
        assert 1 in [h.turn for g in search(query).groups for h in g.hits], query
    other = SearchQuery("ModuleNotFoundError numpy", project=session.project_id + 1)
    assert not search(other).groups


def test_words_in_different_turns_do_not_match(session: Session) -> None:
    assert search(SearchQuery("pandas vectorise")).groups == []
    assert search(SearchQuery("numpy xyzzy_nowhere")).groups == []


def test_a_hit_deep_in_a_long_turn_opens_the_page_that_holds_it(tmp_path: Path, db, client) -> None:
    sid = "8d2e3f4a-5b6c-4d7e-9f80-1a2b3c4d5e6f"
    records = [user_record("write a long story", sid=sid)]
    for n in range(400):
        words = f"part {n} " + "lorem ipsum dolor sit amet " * 60
        records.append(assistant_record(words, sid=sid, parent=records[-1]["uuid"]))
    records.append(assistant_record("the end: zanzibarquux", sid=sid, parent=records[-1]["uuid"]))
    folder = tmp_path / "root" / "-work-long"
    folder.mkdir(parents=True)
    (folder / f"{sid}.jsonl").write_bytes(jsonl(records))
    sessions_import(roots=[tmp_path / "root"])
    assert not search_refresh().errors
    page = client.get("/search/", {"q": "zanzibarquux"}).content.decode()
    link = re.search(rf'href="(/sessions/{sid}/\?[^"]+)"', page)
    assert link, page
    url = html.unescape(link.group(1))
    assert "hl=zanzibarquux" in url
    opened = client.get(url.split("#")[0]).content.decode()
    assert "zanzibarquux" in opened, "the page the hit opens holds the hit"
