"""Turning a page of raw records into what the transcript page shows (pure Python).

The records arrive in file order with their parsed JSON; the result is a list of
turns, each a prompt followed by items: assistant text, thinking, tool calls
paired with their results, notes. Nothing here trusts the content: templates
escape it, and Markdown goes through the sanitiser.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from .formats import (
    ASSISTANT,
    COMMAND,
    COMPACT_BOUNDARY,
    COMPACT_SUMMARY,
    LOCAL_OUTPUT,
    PROMPT,
    TOOL_RESULT,
    USER_OTHER,
    Agent,
    agent_for,
)

IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
BASE64_RE = re.compile(r"^[A-Za-z0-9+/=\s]+$")
TAG_RE = re.compile(
    r"<(command-name|command-args|command-message|local-command-stdout)>(.*?)</\1>", re.S
)


@dataclass(slots=True)
class RawRecord:
    """One record as the page needs it: where it is, what the reader said, its JSON."""

    line: int
    kind: str
    raw_type: str
    subtype: str
    turn: int | None
    active: bool
    sidechain: bool
    timestamp: Any
    data: Any  # the parsed line, or None for an invalid one
    length: int = 0
    text: str = ""


@dataclass(slots=True)
class Image:
    media_type: str
    data: str

    @property
    def src(self) -> str:
        return f"data:{self.media_type};base64,{self.data}"


@dataclass(slots=True)
class ToolCall:
    id: str
    name: str
    input: dict
    line: int
    result: str | None = None
    is_error: bool = False
    result_data: Any = None
    result_line: int | None = None
    images: list[Image] = field(default_factory=list)
    agent_id: str | None = None

    @property
    def summary(self) -> str:
        """A one-line description of the call for its collapsed header."""
        args = self.input
        keys = (
            "command",
            "file_path",
            "filePath",
            "path",
            "pattern",
            "description",
            "url",
            "query",
        )
        for key in keys:
            value = args.get(key)
            if isinstance(value, str) and value:
                return value.splitlines()[0][:200]
        return ""

    @property
    def edit(self) -> tuple[str, str, str] | None:
        """(file, old, new) when the call changed a file and the change is known."""
        args, data = self.input, self.result_data if isinstance(self.result_data, dict) else {}
        path = args.get("file_path") or args.get("filePath") or args.get("path") or ""
        if self.name in ("Edit", "MultiEdit", "replace", "edit"):
            old = args.get("old_string", args.get("oldString"))
            new = args.get("new_string", args.get("newString"))
            if isinstance(old, str) and isinstance(new, str):
                return str(path), old, new
            edits = args.get("edits")
            if isinstance(edits, list):
                olds = [e.get("old_string", "") for e in edits if isinstance(e, dict)]
                news = [e.get("new_string", "") for e in edits if isinstance(e, dict)]
                return str(path), "\n".join(olds), "\n".join(news)
        if self.name in ("Write", "write_file"):
            content = args.get("content")
            original = data.get("originalFile")
            if not isinstance(original, str):
                original = ""
            if isinstance(content, str):
                return str(path), original, content
        return None


@dataclass(slots=True)
class Item:
    """One thing shown inside a turn."""

    kind: str  # text, thinking, tool, note, boundary, summary, record
    line: int
    text: str = ""
    tool: ToolCall | None = None
    record: RawRecord | None = None
    images: list[Image] = field(default_factory=list)


@dataclass(slots=True)
class Turn:
    number: int | None
    prompt: str = ""
    prompt_line: int | None = None
    images: list[Image] = field(default_factory=list)
    timestamp: Any = None
    items: list[Item] = field(default_factory=list)
    abandoned: list[dict] = field(default_factory=list)
    leaving: int = 0  # turns a rewind to this one would take out of the session


def build_turns(records: Iterable[RawRecord], agent: str, *, show_all: bool = False) -> list[Turn]:
    """Group a page of records (in file order) into turns with paired tool calls."""
    spec = agent_for(agent)
    turns: list[Turn] = []
    calls: dict[str, ToolCall] = {}
    current: Turn | None = None
    for rec in records:
        if current is None or rec.turn != current.number:
            current = Turn(number=rec.turn)
            turns.append(current)
        if rec.sidechain:
            if show_all:
                current.items.append(Item("record", rec.line, record=rec))
            continue
        if rec.data is None or not isinstance(rec.data, dict):
            if show_all:
                current.items.append(Item("record", rec.line, record=rec))
            continue
        if not rec.active:
            if show_all:
                current.items.append(Item("record", rec.line, record=rec))
            continue
        if rec.kind in (PROMPT, COMMAND) and current.prompt_line is None and rec.turn is not None:
            current.prompt = display_prompt(rec.text or _message_text(rec.data, spec))
            current.prompt_line = rec.line
            current.images = _images(rec.data, spec)
            current.timestamp = rec.timestamp
            continue
        if rec.kind == ASSISTANT:
            _add_assistant(current, rec, spec, calls)
        elif rec.kind == TOOL_RESULT:
            _add_results(current, rec, spec, calls)
        elif rec.kind == COMPACT_BOUNDARY:
            current.items.append(Item("boundary", rec.line, text="Conversation compacted"))
        elif rec.kind == COMPACT_SUMMARY:
            current.items.append(Item("summary", rec.line, text=_message_text(rec.data, spec)))
        elif rec.kind in (USER_OTHER, LOCAL_OUTPUT, PROMPT, COMMAND):
            text = _message_text(rec.data, spec) or str(rec.data.get("content") or "")
            if text.strip():
                current.items.append(Item("note", rec.line, text=display_prompt(text)))
        elif show_all:
            current.items.append(Item("record", rec.line, record=rec))
    return turns


def display_prompt(text: str) -> str:
    """Slash commands and local output as a person typed or saw them, without the tags."""
    if "<command-name>" not in text and "<local-command-stdout>" not in text:
        return text
    parts = {m.group(1): m.group(2).strip() for m in TAG_RE.finditer(text)}
    if "command-name" in parts:
        return " ".join(p for p in (parts["command-name"], parts.get("command-args", "")) if p)
    return parts.get("local-command-stdout", text)


def _message_text(data: dict, agent: Agent) -> str:
    return agent.record_text(data)


def _images(data: dict, agent: Agent) -> list[Image]:
    images = []
    for block in agent.content_blocks(data):
        found = agent.image_of(block)
        image = _image(*found) if found else None
        if image:
            images.append(image)
    return images


def _image(media: str, payload: str) -> Image | None:
    """An image the page may show: a known type and base64 data, nothing else."""
    if media in IMAGE_TYPES and isinstance(payload, str) and BASE64_RE.match(payload[:4096]):
        return Image(media, payload)
    return None


def _add_assistant(turn: Turn, rec: RawRecord, agent: Agent, calls: dict[str, ToolCall]) -> None:
    for part in agent.assistant_parts(rec.data):
        if part.kind != "tool":
            turn.items.append(Item(part.kind, rec.line, text=part.text))
            continue
        call = ToolCall(id=part.call_id, name=part.name, input=part.input or {}, line=rec.line)
        calls[call.id] = call
        turn.items.append(Item("tool", rec.line, tool=call))


def _add_results(turn: Turn, rec: RawRecord, agent: Agent, calls: dict[str, ToolCall]) -> None:
    for outcome in agent.tool_results(rec.data):
        call = calls.get(outcome.call_id)
        if call is None:
            # The call sits on an earlier page or was cut off: show the result alone.
            call = ToolCall(id=outcome.call_id, name="tool result", input={}, line=rec.line)
            turn.items.append(Item("tool", rec.line, tool=call))
        call.result, call.is_error = outcome.text, outcome.is_error
        call.images = [image for found in outcome.images if (image := _image(*found))]
        call.result_line = rec.line
        call.result_data = extra = outcome.details
        if isinstance(extra, dict) and isinstance(extra.get("agentId"), str):
            call.agent_id = extra["agentId"]
