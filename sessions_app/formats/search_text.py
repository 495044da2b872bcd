"""What a search finds in a record, pure: its words, what part of the conversation they are,
and how a query is split into the terms both databases look for.

A record gives one searchable text, the text the transcript shows for it: a prompt,
a note (a local command's output, a hook's message, a task notification, a message
typed while a tool ran), a reply (with its thinking and tool calls, whose inputs are
searched as the values they hold, so an identifier that only appears in a tool's
argument is found), a tool's output, or a title. `search_text` reads it from a parsed
record, so the importer's one pass can call it; `searchable` from a raw line. Text
beyond `SEARCH_TEXT_LIMIT` characters is not searched; the record is still shown.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from .agent import Agent, AssistantPart
from .common import load
from .kinds import (
    ASSISTANT,
    COMMAND,
    COMPACT_SUMMARY,
    LOCAL_OUTPUT,
    PROMPT,
    SUMMARY,
    TITLE,
    TOOL_RESULT,
    USER_OTHER,
)
from .markup import shown_text

SEARCH_TEXT_LIMIT = 256_000
# User-side records the transcript shows as notes inside a turn.
NOTE_KINDS = (USER_OTHER, LOCAL_OUTPUT)
# The kinds whose records carry text a person would look for: every kind the page shows.
SEARCHABLE_KINDS = (
    PROMPT,
    COMMAND,
    ASSISTANT,
    TOOL_RESULT,
    COMPACT_SUMMARY,
    TITLE,
    SUMMARY,
    *NOTE_KINDS,
)

PROMPT_PART, REPLY, THINKING, TOOL, OUTPUT, TITLE_PART, SUMMARY_PART, NOTE_PART = (
    "prompt",
    "reply",
    "thinking",
    "tool",
    "output",
    "title",
    "summary",
    "note",
)
PART_LABELS = {
    PROMPT_PART: "prompt",
    REPLY: "reply",
    THINKING: "thinking",
    TOOL: "tool call",
    OUTPUT: "tool output",
    TITLE_PART: "title",
    SUMMARY_PART: "summary",
    NOTE_PART: "note",
}
# Shorter terms cannot be looked up in a trigram index, so they are not searched for.
MIN_TERM = 3
MAX_TERMS = 8
MAX_QUERY = 500
_TERM_RE = re.compile(r'"([^"]*)"|(\S+)')
SPACE_RUN = re.compile(r"\s+")


def searchable(agent: Agent, raw: bytes, kind: str) -> tuple[str, str] | None:
    """(part, text) a search finds in one record's line of `kind`; None when it has none."""
    if kind not in SEARCHABLE_KINDS:
        return None
    title = agent.parse_line(raw).title if kind == TITLE else None
    return line_searchable(agent, raw, kind, title)


def line_searchable(
    agent: Agent, raw: bytes, kind: str, title: str | None, data: Any = None
) -> tuple[str, str] | None:
    """`searchable` for a line already parsed into a record of a searchable `kind` (`title`:
    the title its parse found; `data`: the line loaded, if it was): the importer's read of
    each line, so it is read once."""
    if kind == TITLE:  # the title is all it shows: no second parse of the line
        return search_text(agent, {}, kind, title=title)
    data = load(raw) if data is None else data
    return search_text(agent, data, kind) if isinstance(data, dict) else None


def search_text(
    agent: Agent, data: dict, kind: str, *, title: str | None = None
) -> tuple[str, str] | None:
    """(part, text) a search finds in one parsed record of `kind` (`title`: the title the
    reader found in it); None when it has none.

    The same texts the transcript shows for the record, so what the page shows is found:
    a prompt; a note (what the CLI wrote in the person's name: a local command's output,
    a hook's message, a background task's notice, a slash command's expansion, a
    message typed while a tool ran); each part of a reply; a tool's output; a title.
    """
    if kind == TITLE:
        return (TITLE_PART, _cut(title)) if title and title.strip() else None
    if kind == SUMMARY:
        # Claude's `summary` record: the page's heading when no other title is set.
        text = _string(data.get("summary"))
        return (TITLE_PART, _cut(text)) if text.strip() else None
    if kind in (PROMPT, COMMAND, COMPACT_SUMMARY):
        part = SUMMARY_PART if kind == COMPACT_SUMMARY else PROMPT_PART
        text = agent.record_text(data)
        if kind != COMPACT_SUMMARY:
            # The CLI's tags as the page's chips, a 1.0.x command's JSON expansion decoded.
            text = shown_text(text)
        return (part, _cut(text)) if text.strip() else None
    if kind in NOTE_KINDS and (context := agent.context_of(data)) is not None:
        # Context the CLI wrote for the model: found by the words the page folds it under.
        return (NOTE_PART, _cut("\n".join(context))) if context[1].strip() else None
    if kind in NOTE_KINDS:
        # The transcript's own reading of such a record (transcript.building, "note").
        text = shown_text(agent.record_text(data) or _string(data.get("content")))
        return (NOTE_PART, _cut(text)) if text.strip() else None
    if kind == ASSISTANT:
        reply = _reply(agent.assistant_parts(data))
        if agent.results_in_reply:  # Gemini CLI: the calls' outputs are found with the reply
            outputs = "\n".join(o.text for o in agent.tool_results(data) if o.text)
            if outputs.strip():
                return (
                    (reply[0], _cut(f"{reply[1]}\n{outputs}")) if reply else (OUTPUT, _cut(outputs))
                )
        return reply
    if kind == TOOL_RESULT:
        text = "\n".join(outcome.text for outcome in agent.tool_results(data) if outcome.text)
        return (OUTPUT, _cut(text)) if text.strip() else None
    return None


def _reply(parts: list[AssistantPart]) -> tuple[str, str] | None:
    """An assistant record's text, thinking and tool calls (name and input values)."""
    pieces: list[str] = []
    part = ""
    for piece in parts:
        if piece.kind == "tool":
            pieces.append(piece.name)
            pieces.extend(_values(piece.input))
            part = part or TOOL
        else:
            pieces.append(piece.text)
            part = part or (THINKING if piece.kind == "thinking" else REPLY)
    text = "\n".join(p for p in pieces if p)
    return (part, _cut(text)) if text.strip() else None


def _string(value: Any) -> str:
    return value if isinstance(value, str) else str(value) if value else ""


def _values(value: Any, depth: int = 0) -> Iterator[str]:
    """The strings and numbers a tool's input holds, keys left out, in order."""
    if depth > 20:
        return
    if isinstance(value, str):
        yield value
    elif isinstance(value, bool) or value is None:
        return
    elif isinstance(value, int | float):
        yield str(value)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _values(item, depth + 1)
    elif isinstance(value, list):
        for item in value:
            yield from _values(item, depth + 1)


def _cut(text: str) -> str:
    """At most SEARCH_TEXT_LIMIT characters, with no NUL (neither database stores one)."""
    return text[:SEARCH_TEXT_LIMIT].replace("\x00", " ")


def query_terms(query: str) -> list[str]:
    """The terms of a query: words, or "quoted phrases" kept whole; each found as a substring.

    Terms shorter than MIN_TERM characters are left out (a trigram index cannot find
    them), and so are repeats; at most MAX_TERMS are kept.
    """
    terms: list[str] = []
    for quoted, word in _TERM_RE.findall(query[:MAX_QUERY].replace("\x00", " ")):
        term = " ".join((quoted if quoted else word).split())
        if len(term) >= MIN_TERM and term.casefold() not in (t.casefold() for t in terms):
            terms.append(term)
    return terms[:MAX_TERMS]


def short_terms(query: str) -> list[str]:
    """The words of a query too short to be searched for, to say so."""
    found = []
    for quoted, word in _TERM_RE.findall(query[:MAX_QUERY]):
        term = " ".join((quoted if quoted else word).split())
        if term and len(term) < MIN_TERM:
            found.append(term)
    return found


def matches(text: str, terms: list[str]) -> list[tuple[int, int]]:
    """Where the terms occur in `text` (case-insensitive), as sorted, non-overlapping spans."""
    folded = text.casefold()
    if len(folded) != len(text):  # a character that folds to several: search the original
        folded = text.lower()
        if len(folded) != len(text):
            folded = text
    spans: list[tuple[int, int]] = []
    for term in terms:
        needle = term.casefold() if folded is not text else term
        start = folded.find(needle)
        count = 0
        while start >= 0 and count < 200:
            spans.append((start, start + len(needle)))
            start = folded.find(needle, start + len(needle))
            count += 1
    spans.sort()
    merged: list[tuple[int, int]] = []
    for start, end in spans:
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def snippet(text: str, terms: list[str], width: int = 220) -> tuple[str, list[tuple[int, int]]]:
    """A piece of `text` around its first match, whitespace collapsed, and the matches in it.

    Returns plain text and spans into it; whoever shows it escapes the text.
    """
    spans = matches(text, terms)
    first = spans[0][0] if spans else 0
    start = max(0, first - width // 3)
    if start:
        # Begin at a word boundary when one is near.
        space = text.rfind(" ", max(0, start - 20), start)
        start = space + 1 if space >= 0 else start
    end = min(len(text), start + width)
    piece = text[start:end]
    flat, mapping = _collapse(piece)
    inside = []
    for s, e in spans:
        if s >= start and e <= end:
            inside.append((mapping[s - start], mapping[e - start - 1] + 1))
    prefix = "…" if start else ""
    suffix = "…" if end < len(text) else ""
    shifted = [(s + len(prefix), e + len(prefix)) for s, e in inside]
    return prefix + flat + suffix, shifted


def _collapse(piece: str) -> tuple[str, list[int]]:
    """Whitespace runs made one space; `mapping[i]` is where piece[i] went."""
    # By runs, not by character: a character loop cost most of a search's Python time.
    # `\s` in a str pattern is exactly `str.isspace()`.
    out: list[str] = []
    mapping: list[int] = []
    at = size = 0
    for run in SPACE_RUN.finditer(piece):
        start, end = run.span()
        out.append(piece[at:start])
        mapping.extend(range(size, size + start - at))
        size += start - at
        out.append(" ")
        mapping.extend([size] * (end - start))
        size += 1
        at = end
    out.append(piece[at:])
    mapping.extend(range(size, size + len(piece) - at))
    return "".join(out), mapping
