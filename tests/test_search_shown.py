"""What the page shows, search finds: every record of every fixture session, read by the
transcript's own functions, against the search index (a brute-force comparison)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sessions_app.formats import agent_for
from sessions_app.formats.markup import shown_text
from sessions_app.formats.search_text import searchable
from sessions_app.models import Record, Session
from sessions_app.selectors import search as search_module
from sessions_app.selectors.search import SearchQuery, search
from sessions_app.services.reading.records import with_data
from sessions_app.services.searching import search_refresh
from sessions_app.transcript import build_turns

from .factories import jsonl, user_record

WORD = re.compile(r"[A-Za-z][A-Za-z0-9_]{5,}")


def _values(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _values(item)
    elif isinstance(value, list):
        for item in value:
            yield from _values(item)


def shown_texts(record: Any, agent: str) -> list[str]:
    """The texts the transcript shows for one record, wherever it is shown (its branch,
    its subagent's page): the page's own building of a turn."""
    record.active, record.sidechain = True, False
    texts: list[str] = []
    for turn in build_turns([record], agent):
        # Prompts and notes are shown with the CLI's tags as chips (`with_chips`).
        texts.append(shown_text(turn.prompt))
        for item in turn.items:
            if item.kind == "note":
                texts.append(shown_text(item.text))
            elif item.kind in ("text", "thinking", "expansion", "summary"):
                texts.append(item.text)
            elif item.tool is not None:
                call = item.tool
                # A result whose call is elsewhere is labelled "tool result" by the page.
                name = call.name if call.line != record.line or call.input else ""
                texts += [name, call.result or "", *_values(call.input)]
    return [t for t in texts if t and t.strip()]


@pytest.fixture
def indexed(imported: Path) -> Path:
    report = search_refresh()
    assert not report.errors, report.errors
    return imported


def test_every_text_the_page_shows_is_found_by_search(indexed: Path, monkeypatch) -> None:
    monkeypatch.setattr(search_module, "HITS_PER_SESSION", 10_000)
    missed: list[str] = []
    checked = 0
    for session in Session.objects.select_related("project").order_by("pk"):
        records = with_data(session, session.records.order_by("line"))
        shown = {r.line: shown_texts(r, session.agent) for r in records}
        counts = Counter(w.casefold() for texts in shown.values() for t in texts
                         for w in set(WORD.findall(t)))  # fmt: skip
        text_of = dict(session.records.values_list("line", "search_text_id"))
        done: set[int | None] = set()
        for line, texts in shown.items():
            words = {w for t in texts for w in WORD.findall(t)}
            if not words or (text_of[line] is not None and text_of[line] in done):
                continue
            # The record's most distinctive word: the rarest in its session, then longest.
            word = min(words, key=lambda w: (counts[w.casefold()], -len(w), w))
            results = search(SearchQuery(word, session=session.pk))
            found = {text_of.get(h.line) for g in results.groups for h in g.hits}
            checked += 1
            if text_of[line] is None or text_of[line] not in found:
                missed.append(f"{session.path.rsplit('/', 1)[-1]}:{line} {word!r}")
            done.add(text_of[line])
    assert checked > 300
    assert not missed, f"{len(missed)} shown records not found: {missed[:20]}"


@pytest.mark.parametrize(
    ("content", "extra", "word"),
    [
        (
            "<local-command-stdout>Set model to quokkafish</local-command-stdout>",
            {},
            "quokkafish",
        ),
        (
            "Stop hook feedback:\nerror TS2304: cannot find wallabyName",
            {"isMeta": True},
            "wallabyName",
        ),
        (
            "<task-notification><summary>Background numbat build finished</summary>"
            "<status>completed</status></task-notification>",
            {},
            "numbat",
        ),
    ],
)
def test_user_side_records_the_page_shows_are_searchable(
    content: str, extra: dict, word: str
) -> None:
    """Pure: the search text of a record the page shows as a note holds its words."""
    from sessions_app.formats import CLAUDE

    agent = agent_for(CLAUDE)
    sid = "9b2f4c1e-0d5a-4e6b-8c7d-1a2b3c4d5e6f"
    raw = jsonl([{**user_record(content, sid=sid), **extra}]).strip()
    parsed = agent.parse_line(raw)
    found = searchable(agent, raw, parsed.kind)
    assert found is not None and word in found[1], (parsed.kind, found)


def test_a_message_typed_while_a_tool_ran_is_found(indexed: Path) -> None:
    """Qwen's mid-turn message (synthetic fixture) is shown in its turn, so it is found."""
    hits = search(SearchQuery('"what about hidden files"'))
    assert hits.groups, "the mid-turn message is searchable"
    assert Record.objects.filter(search_text__text__icontains="what about hidden files").exists()
