"""What a transcript page is made of: turns, items, tool calls paired with results, images.

Also the small readings of a record these need: a record's
images, the edit a call made, a value as indented JSON. Pure Python.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from .images import BASE64_RE as BASE64_RE
from .images import IMAGE_TYPES as IMAGE_TYPES
from .images import Image as Image
from .images import image_of as image_of
from .images import images_of as images_of
from .images import numbered_images as numbered_images
from .images import record_images as record_images
from .limits import Cut

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
    cut_at: int | None = None  # the line is longer than this: `data` is its cut stand-in


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
    # Branches that split off after this turn, the session's last: what a Qwen or Gemini
    # rewind left in the file, before a new turn takes its place (then it is `abandoned`).
    abandoned_after: list[dict] = field(default_factory=list)
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
