"""One card per turn: bookkeeping is never a turn, a turn cut by a page goes on where it was cut.

Every page and every chunk of it is parsed as HTML: no id twice (within a chunk and
across the chunks of one page), and every card that is not a continuation shows
its prompt.
"""

from __future__ import annotations

import re
import uuid
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from sessions_app.models import Session
from sessions_app.services.branching import session_rewind, session_rewind_undo
from sessions_app.services.importing import sessions_import

from .factories import assistant_record, user_record, write_session

pytestmark = pytest.mark.django_db

QWEN = "cli/qwen/-home-dev-code-qwenproj/chats/6fbeb39a-1e79-43ef-995c-46eedd93e6fe.jsonl"
HX = {"HTTP_HX_REQUEST": "true"}
MORE = re.compile(r'<div class="more" hx-get="([^"]+)"')
# Words without characters that escaping grows: each is 5 bytes of HTML per character.
WORDS = "word "


class Cards(HTMLParser):
    """The ids of a page, and each turn card with what it holds."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: list[str] = []
        self.cards: list[dict[str, Any]] = []
        self.depth = 0  # of <article> elements open

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if found.get("id"):
            self.ids.append(found["id"] or "")
        classes = (found.get("class") or "").split()
        if tag == "article" and "turn" in classes:
            self.depth += 1
            if self.depth == 1:
                self.cards.append(
                    {"id": found.get("id"), "continued": "continued" in classes, "prompts": 0}
                )
        elif self.depth == 1 and "prompt" in classes:
            self.cards[-1]["prompts"] += 1
        elif self.depth == 1 and any(c in classes for c in ("branch-here", "edit-fork")):
            self.cards[-1].setdefault("actions", 0)
            self.cards[-1]["actions"] += 1

    def handle_endtag(self, tag: str) -> None:
        if tag == "article" and self.depth:
            self.depth -= 1


def parsed(html: str) -> Cards:
    cards = Cards()
    cards.feed(html)
    cards.close()
    return cards


def body(response) -> str:
    assert response.status_code == 200, response.status_code
    if response.streaming:
        return b"".join(response.streaming_content).decode()
    return response.content.decode()


def every_chunk(client, url: str) -> list[str]:
    """The page at `url` and every chunk its "More" links load, in order."""
    chunks = [body(client.get(url))]
    while match := MORE.search(chunks[-1]):
        chunks.append(body(client.get(match.group(1).replace("&amp;", "&"), **HX)))
        assert len(chunks) < 100, "the chunks never end"
    return chunks


def check_cards(chunks: list[str]) -> list[dict[str, Any]]:
    """Every card of the chunks, after checking ids are unique and each card has its prompt."""
    ids: list[str] = []
    cards: list[dict[str, Any]] = []
    for chunk in chunks:
        found = parsed(chunk)
        ids += found.ids
        cards += found.cards
    twice = sorted(name for name, n in Counter(ids).items() if n > 1)
    assert twice == [], f"ids used more than once: {twice}"
    for card in cards:
        if (
            card["id"] == "turn-0" or card["continued"]
        ):  # the records before turn 1, shown on request
            assert card["prompts"] == 0 and not card.get("actions"), card
        else:
            assert card["prompts"] == 1, f"a card without its prompt: {card}"
    return cards


def turn_numbers(cards: list[dict[str, Any]]) -> list[str]:
    return [card["id"] for card in cards if not card["continued"]]


def test_a_qwen_rewind_and_its_undo_draw_no_turns_of_their_own(client, imported: Path) -> None:
    source = Session.objects.get(path=str(imported / QWEN))
    session_rewind_undo(session=session_rewind(session=source, turn=2))
    session = Session.objects.get(pk=source.pk)
    assert session.turn_count == 3
    cards = check_cards([body(client.get(f"/sessions/{session.session_id}/"))])
    assert turn_numbers(cards) == ["turn-1", "turn-2", "turn-3"]
    assert [card.get("actions") for card in cards] == [2, 2, 2]
    markdown = body(client.get(f"/sessions/{session.session_id}/export.md"))
    assert re.findall(r"^## Turn (\d+)", markdown, re.M) == ["1", "2", "3"]
    exported = body(client.get(f"/sessions/{session.session_id}/export.html"))
    assert turn_numbers(check_cards([exported])) == ["turn-1", "turn-2", "turn-3"]


def test_a_qwen_rewind_marker_shown_on_request_is_no_turn(client, imported: Path) -> None:
    source = Session.objects.get(path=str(imported / QWEN))
    session_rewind_undo(session=session_rewind(session=source, turn=2))
    html = body(client.get(f"/sessions/{source.session_id}/?all=1"))
    cards = check_cards([html])
    assert turn_numbers(cards) == ["turn-1", "turn-2", "turn-3"]
    assert html.count("system rewind") == 2  # both markers shown, as records, in their turns


class Turns:
    """A Claude Code session built turn by turn, each record the child of the one before."""

    def __init__(self) -> None:
        self.sid = str(uuid.uuid4())
        self.records: list[dict[str, Any]] = []

    def add(self, make, content: Any) -> None:
        parent = self.records[-1]["uuid"] if self.records else None
        self.records.append(make(content, sid=self.sid, parent=parent))

    def turn(self, n: int, *replies: int) -> None:
        """Turn `n`: its prompt, then one reply of each length given (in characters)."""
        self.add(user_record, f"Prompt {n:02}")
        for length in replies:
            self.add(assistant_record, (WORDS * length)[:length])

    def imported(self, root: Path) -> Session:
        write_session(root / "-work-demo", self.records)
        sessions_import(roots=[root])
        return Session.objects.get(session_id=self.sid)


def test_a_page_that_fills_up_at_a_turn_s_start_leaves_that_turn_to_the_next(
    client, tmp_path: Path
) -> None:
    # Five turns of about 29.7 KB each (estimated) leave 1.5 KB of the 150 KB budget:
    # less than a turn's card, so the page ends just before turn 6's prompt.
    built = Turns()
    for n in range(1, 9):
        built.turn(n, 8_900)
    session = built.imported(tmp_path)
    chunks = every_chunk(client, f"/sessions/{session.session_id}/")
    assert len(chunks) == 2
    assert "More of turn 6" not in chunks[0]
    cards = check_cards(chunks)
    assert turn_numbers(cards) == [f"turn-{n}" for n in range(1, 9)]


def test_a_local_command_where_a_page_was_cut_is_no_second_card(client, tmp_path: Path) -> None:
    built = Turns()
    for n in range(1, 6):
        built.turn(n, 5_000)
    # Turn 6 fills the page; the local command typed during it starts the next chunk.
    built.turn(6, 9_900, 9_900)
    built.add(user_record, "<command-name>/rate-limit-options</command-name>")
    built.add(user_record, "<local-command-stdout>Waiting for the limit</local-command-stdout>")
    built.add(assistant_record, "Carrying on with turn 6.")
    built.turn(7, 100)
    session = built.imported(tmp_path)
    assert session.turn_count == 7
    chunks = every_chunk(client, f"/sessions/{session.session_id}/")
    assert len(chunks) == 2 and "More of turn 6" in chunks[0]
    cards = check_cards(chunks)
    assert turn_numbers(cards) == [f"turn-{n}" for n in range(1, 8)]
    assert cards[6]["continued"] and "rate-limit-options" in chunks[1]


def test_a_long_session_has_unique_ids_on_every_page_and_chunk(client, tmp_path: Path) -> None:
    built = Turns()
    for n in range(1, 46):
        built.turn(n, *([3_000 + 97 * n] * (n % 4 + 1)))
    session = built.imported(tmp_path)
    chunks = every_chunk(client, f"/sessions/{session.session_id}/")
    assert len(chunks) > 3 and any("More of turn" in chunk for chunk in chunks)
    cards = check_cards(chunks)
    assert turn_numbers(cards) == [f"turn-{n}" for n in range(1, 46)]
