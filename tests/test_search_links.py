"""Search hits' links: built in a bounded number of queries however many hits there are,
and each opening a page that shows its hit (a turn-less one too)."""

from __future__ import annotations

import html
import re
import uuid
from pathlib import Path

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from sessions_app.models import Session
from sessions_app.services.importing import sessions_import
from sessions_app.services.searching import search_refresh

from .factories import assistant_record, jsonl, tool_result, user_record

WORD = "quorblaxian"


def _session(root: Path, records: list[dict]) -> str:
    folder = root / "-work-demo"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{records[0]['sessionId']}.jsonl").write_bytes(jsonl(records))
    return records[0]["sessionId"]


def _turns(sid: str, turns: int) -> list[dict]:
    """`turns` turns, each a Bash call whose output holds WORD, and a reply."""
    records: list[dict] = []
    parent = None
    for n in range(turns):
        prompt = user_record(f"step {n} please", sid=sid, parent=parent)
        call = {"type": "tool_use", "id": f"t{n}", "name": "Bash", "input": {"command": "ls"}}
        used = assistant_record([call], sid=sid, parent=prompt["uuid"])
        out = user_record(tool_result(f"t{n}", f"{WORD} line {n}"), sid=sid, parent=used["uuid"])
        reply = assistant_record(f"done {n}", sid=sid, parent=out["uuid"])
        records += [prompt, used, out, reply]
        parent = reply["uuid"]
    return records


def _corpus(root: Path, sessions: int) -> None:
    for _ in range(sessions):
        _session(root, _turns(str(uuid.uuid4()), 4))
    sessions_import(roots=[root])
    assert not search_refresh().errors


def _queries(client: Client, path: str, token: str) -> tuple[int, int]:
    """(queries, hits) of one search through `path`."""
    auth = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    with CaptureQueriesContext(connection) as captured:
        response = client.get(path, {"q": WORD}, **auth)
    assert response.status_code == 200
    if path.startswith("/api/"):
        hits = sum(len(s["hits"]) for s in response.json()["sessions"])
    else:
        hits = response.content.decode().count('<li class="hit">')
    return len(captured.captured_queries), hits


@pytest.mark.parametrize("path", ["/search/", "/api/search"])
def test_a_search_takes_as_many_queries_for_many_hits_as_for_few(
    tmp_path: Path, client: Client, token: str, path: str
) -> None:
    _corpus(tmp_path / "few", 2)
    few, few_hits = _queries(client, path, token)
    _corpus(tmp_path / "many", 10)
    many, many_hits = _queries(client, path, token)
    assert many_hits >= 5 * few_hits > 0, (few_hits, many_hits)
    # Per hit it was one query or more (14 -> 44 for the page); a query or two more may come
    # from state the search filler's thread owns (texts still behind on PostgreSQL), never
    # from the number of hits.
    assert many <= few + 2, f"{few} queries for {few_hits} hits, {many} for {many_hits}"


def _opened(client: Client, word: str) -> list[str]:
    """The pages the search page's hits for `word` open."""
    page = client.get("/search/", {"q": word}).content.decode()
    links = re.findall(r'<li class="hit">.*?href="([^"]+)"', page, re.S)
    assert links, f"no hit for {word}"
    return [client.get(html.unescape(link).split("#")[0]).content.decode() for link in links]


def test_a_hit_with_no_turn_opens_the_page_that_shows_it(
    tmp_path: Path, db, client: Client
) -> None:
    """Output before the first prompt has no turn: its hit opens all records, where it is."""
    sid = str(uuid.uuid4())
    first = user_record("<local-command-stdout>zapfoutput before</local-command-stdout>", sid=sid)
    records = [first, *_turns(sid, 3)]
    records[1]["parentUuid"] = first["uuid"]
    _session(tmp_path, records)
    sessions_import(roots=[tmp_path])
    assert not search_refresh().errors
    turnless = Session.objects.get().records.get(line=0)
    assert turnless.turn is None and turnless.active, "the shape the issue names"
    for opened in _opened(client, "zapfoutput"):
        # The words of the record itself, not the page's `hl=` echo of the query.
        assert "zapfoutput before" in opened
