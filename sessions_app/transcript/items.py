"""What a transcript page is made of: turns, items, tool calls paired with results, images.

Also the small readings of a record these need: a record's
images, the edit a call made, a value as indented JSON. Pure Python.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import orjson

from ..formats import Agent
from .limits import Cut

IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
BASE64_RE = re.compile(r"^[A-Za-z0-9+/=\s]+$")
EDIT_TOOLS = ("Edit", "MultiEdit", "replace", "edit")
WRITE_TOOLS = ("Write", "write_file")
READ_TOOLS = ("Read", "read_file")
# Tools that run a subagent: their result is the subagent's report, written in Markdown.
SUBAGENT_TOOLS = ("Task", "Agent", "task")
# Custom tools whose free-form input is a script, by the language it is written in.
CODE_TOOLS = {"exec": "javascript", "js": "javascript", "python": "python"}
TODO_STATUSES = {"pending": "pending", "in_progress": "in progress", "completed": "done"}


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
    starts_turn: bool | None = None  # the index's turn rule; None: not read through it


@dataclass(slots=True)
class Image:
    """An image a record holds; pages load it by URL (its record's line and its number)."""

    media_type: str
    data: str
    line: int = 0  # the record that holds it
    number: int = 0  # its place among the record's images (`record_images`)

    @property
    def src(self) -> str:
        """The image inline, for a self-contained export; pages use its URL instead."""
        return f"data:{self.media_type};base64,{self.data}"

    @property
    def kind(self) -> str:
        """ "PNG", "JPEG", ...: for its alternative text."""
        return self.media_type.removeprefix("image/").upper()

    @property
    def size_label(self) -> str:
        """Its size decoded, e.g. "297 KB"."""
        size = len(self.data) * 3 // 4
        return f"{size / 1_048_576:.1f} MB" if size >= 1_048_576 else f"{size // 1024 or 1} KB"


@dataclass(slots=True)
class ToolCall:
    id: str
    name: str
    input: dict
    line: int
    index: int = 0  # of the call within its record
    result: str | None = None  # as shown: cut on a page
    is_error: bool = False
    result_data: Any = None
    result_line: int | None = None
    result_index: int = 0
    images: list[Image] = field(default_factory=list)
    agent_id: str | None = None
    command: str | None = None  # the input as shown: a shell command, or else JSON
    input_json: str = ""
    edit: tuple[str, str, str] | None = None  # (file, old, new) when it changed a file
    input_cut: Cut | None = None
    result_cut: Cut | None = None
    later: bool = False  # no result yet on a page that ends before the turn does
    exit: str | None = None  # how a shell command ended ("0", "2", "interrupted")
    subagent: list[Turn] | None = None  # the subagent's turns, nested (exports only)
    task_prompt: str | None = None  # the prompt a subagent was started with, as shown
    patch: str | None = None  # an `apply_patch` patch, as shown: one diff per file
    code: str | None = None  # a custom tool's free-form input (Codex `exec`'s script)

    @property
    def task_kind(self) -> str:
        """The kind of subagent a call started ("general-purpose", "Explore"), if it says."""
        kind = self.input.get("subagent_type")
        return kind if isinstance(kind, str) else ""

    @property
    def task_title(self) -> str:
        title = self.input.get("description")
        return title if isinstance(title, str) else ""

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
                return value[:1000].splitlines()[0][:200]  # a command may be megabytes long
        return ""

    @property
    def place(self) -> str:
        """ "<line>-<index>" of the call, for element ids (text renders faster than numbers)."""
        return f"{self.line}-{self.index}"

    @property
    def result_place(self) -> str:
        return f"{self.result_line}-{self.result_index}"

    @property
    def todos(self) -> list[tuple[str, str, str]] | None:
        """A todo list the call wrote (TodoWrite, todo_write): (status, label, text) each."""
        items = self.input.get("todos")
        if not isinstance(items, list) or not items:
            return None
        out = []
        for item in items[:500]:
            if not isinstance(item, dict) or not isinstance(item.get("content"), str):
                return None
            status = str(item.get("status") or "pending")
            out.append((status, TODO_STATUSES.get(status, status), item["content"]))
        return out

    @property
    def todo_summary(self) -> str:
        todos = self.todos or []
        done = sum(1 for status, _, _ in todos if status == "completed")
        return f"{len(todos)} task{'s' if len(todos) != 1 else ''}, {done} done"

    @property
    def code_language(self) -> str:
        """The language of a custom tool's script, for highlighting ("" when unknown)."""
        return CODE_TOOLS.get(self.name, "")

    @property
    def is_report(self) -> bool:
        """Whether the result is a subagent's report (Markdown)."""
        return self.name in SUBAGENT_TOOLS

    @property
    def exit_failed(self) -> bool:
        return self.exit is not None and self.exit != "0"

    @property
    def is_listing(self) -> bool:
        """Whether the result is a file's content, shown highlighted with line numbers."""
        return self.name in READ_TOOLS


@dataclass(slots=True)
class Item:
    """One thing shown inside a turn."""

    # prompt (show all only), text, thinking, tool, note, context, boundary, summary, record
    kind: str
    line: int
    text: str = ""
    tool: ToolCall | None = None
    record: RawRecord | None = None
    images: list[Image] = field(default_factory=list)
    index: int = 0  # of the item within its record
    cut: Cut | None = None
    label: str = ""  # what a "context" item is, in words

    @property
    def place(self) -> str:
        """ "<line>-<index>" of the item, for element ids."""
        return f"{self.line}-{self.index}"


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
    prompt_cut: Cut | None = None
    continued: bool = False  # the page starts inside this turn, after its prompt


@dataclass(slots=True)
class Page:
    """A page of turns, and where the next page starts when this one ended inside a turn."""

    turns: list[Turn]
    next_turn: int | None = None  # the turn the next page starts in (None: before turn 1)
    next_line: int | None = None  # None: this page showed every record it was given
    next_index: int = 0  # items of the record at `next_line` this page showed


def as_json(value: Any) -> str:
    try:
        return orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()
    except TypeError:
        return repr(value)


def edit_of(call: ToolCall) -> tuple[str, str, str] | None:
    """(file, old, new) when the call changed a file and the change is known."""
    args = call.input
    data = call.result_data if isinstance(call.result_data, dict) else {}
    path = str(args.get("file_path") or args.get("filePath") or args.get("path") or "")
    if call.name in EDIT_TOOLS:
        old = args.get("old_string", args.get("oldString"))
        new = args.get("new_string", args.get("newString"))
        if isinstance(old, str) and isinstance(new, str):
            return path, old, new
        edits = args.get("edits")
        if isinstance(edits, list):
            olds = [e.get("old_string", "") for e in edits if isinstance(e, dict)]
            news = [e.get("new_string", "") for e in edits if isinstance(e, dict)]
            return path, "\n".join(map(str, olds)), "\n".join(map(str, news))
    if call.name in WRITE_TOOLS:
        content, original = args.get("content"), data.get("originalFile")
        if isinstance(content, str):
            return path, original if isinstance(original, str) else "", content
    return None


def record_images(data: Any, agent: Agent) -> list[tuple[str, str]]:
    """Every image a record holds, unchecked (media type, base64 data), in one fixed order:
    its blocks in order, each searched depth first (a tool result's images are inside it).
    An image's number is its place here; the page and the image's URL both count this way."""
    found: list[tuple[str, str]] = []
    stack: list[Any] = list(reversed(agent.content_blocks(data))) if isinstance(data, dict) else []
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            image = agent.image_of(value)
            if image is not None:
                found.append(image)
                continue
            stack.extend(reversed(list(value.values())))
        elif isinstance(value, list):
            stack.extend(reversed(value))
    return found


def numbered_images(
    line: int, data: Any, agent: Agent, pairs: list[tuple[str, str]] | tuple[tuple[str, str], ...]
) -> list[Image]:
    """The images of `pairs` a page may show, each with its place among the record's images."""
    # Matched by value, not identity: a reader may cut the data out of a data URL anew on
    # each call (Codex), so the same image is a different string each time. The same image
    # twice in a record takes the numbers in order.
    numbers: dict[str, list[int]] = {}
    for n, (_, payload) in enumerate(record_images(data, agent)):
        numbers.setdefault(payload, []).append(n)
    images = []
    for media, payload in pairs:
        image = image_of(media, payload)
        free = numbers.get(payload) if image is not None else None
        if image is not None and free:
            image.line, image.number = line, free.pop(0)
            images.append(image)
    return images


def images_of(data: dict, agent: Agent, line: int = 0) -> list[Image]:
    """The images of a record's own blocks (a prompt's), not those inside a tool result."""
    pairs = [found for block in agent.content_blocks(data) if (found := agent.image_of(block))]
    return numbered_images(line, data, agent, pairs)


def image_of(media: str, payload: str) -> Image | None:
    """An image the page may show: a known type and base64 data, nothing else."""
    if media in IMAGE_TYPES and isinstance(payload, str) and BASE64_RE.match(payload[:4096]):
        return Image(media, payload)
    return None
