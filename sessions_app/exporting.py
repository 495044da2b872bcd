"""Sessions as Markdown and as one self-contained HTML page, streamed turn by turn."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from django.template.loader import render_to_string
from django.utils.html import escape

from . import selectors
from .models import Session
from .transcript import build_turns

CHUNK_TURNS = 50


def _turn_pages(session: Session) -> Iterator[list]:
    first = 1
    while first <= max(session.turn_count, 1):
        last = first + CHUNK_TURNS - 1
        records = selectors.transcript_records(session, first_turn=first, last_turn=last)
        yield build_turns(records, session.agent)
        first = last + 1


def _fence(text: str) -> str:
    ticks = "```"
    while ticks in text:
        ticks += "`"
    return ticks


def markdown_chunks(session: Session) -> Iterator[str]:
    """The active branch as Markdown: prompts, answers, tool calls with their output."""
    yield f"# {session.title or session.session_id}\n\n"
    yield f"- session: `{session.session_id}` ({session.get_agent_display()})\n"
    if session.cwd:
        yield f"- cwd: `{session.cwd}`\n"
    yield f"- turns: {session.turn_count}\n\n"
    for turns in _turn_pages(session):
        for turn in turns:
            if turn.number is None:
                continue
            yield f"## Turn {turn.number}\n\n**User:**\n\n{turn.prompt}\n\n"
            for item in turn.items:
                if item.kind == "text":
                    yield f"**Assistant:**\n\n{item.text}\n\n"
                elif item.kind == "tool" and item.tool:
                    call = item.tool
                    yield f"**Tool `{call.name}`** {call.summary}\n\n"
                    if call.result:
                        fence = _fence(call.result)
                        yield f"{fence}\n{call.result}\n{fence}\n\n"
                elif item.kind in ("note", "summary", "boundary"):
                    yield f"> {item.text.strip()[:2000]}\n\n"


def html_chunks(session: Session) -> Iterator[str]:
    """The transcript as one HTML file with its styles inline, for sharing or archiving."""
    static = Path(__file__).resolve().parent.parent / "static" / "sessions_app"
    css = "".join(
        (static / name).read_text()
        for name in ("app.css", "highlight.css")
        if (static / name).exists()
    )
    yield (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        f"<title>{escape(session.title)}</title><style>{css}</style></head><body><main>"
        f"<h1>{escape(session.title)}</h1>"
    )
    for turns in _turn_pages(session):
        yield render_to_string(
            "sessions_app/transcript.html#turn-list",
            {"session": session, "turns": turns, "static_export": True},
        )
    yield "</main></body></html>"
