"""Readers for the session files the CLIs write: one module per agent, pure Python.

Each agent is one `Agent` object (`agent.py` lists what it provides), found with
`agent_for(name)`; `REGISTRY` at the end of this file names them all. Nothing
outside this package branches on an agent's name.

A reader turns one raw line into a `ParsedRecord`: the fields the graph, the turn
function and the pages need. The raw bytes themselves are never changed; unknown
record types come through as kind "other" and are carried along untouched. Each
agent reads a line in two ways that give the same record: a selective decode of
only those fields (`claude_index`, `qwen_index`: msgspec, the rest of the line
skipped unbuilt), and, for any line that decode is not sure of, the whole line
(orjson), which alone drops and names bad values.

Every value a reader returns is safe to store in either database: a field that is
out of range, too long, of the wrong type or holds a NUL is dropped (or clamped)
and named in `ParsedRecord.dropped`, so the importer can report it with file and
line and go on. One bad value never costs more than itself.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

CLAUDE = "claude"
QWEN = "qwen"
CODEX = "codex"

# Record kinds, normalised across agents.
PROMPT = "prompt"  # a human-typed message, by its shape
COMMAND = "command"  # a slash command; a turn unless a local command answered it
LOCAL_OUTPUT = "local_output"  # output of a built-in local command (/model, /exit ...)
USER_OTHER = "user"  # meta, interruptions, notifications, mid-turn messages ...
TOOL_RESULT = "tool_result"
COMPACT_SUMMARY = "compact_summary"
ASSISTANT = "assistant"
SYSTEM = "system"
COMPACT_BOUNDARY = "compact_boundary"
REWIND = "rewind"  # Qwen's system/rewind marker
ATTACHMENT = "attachment"
PROGRESS = "progress"
SUMMARY = "summary"
TITLE = "title"
BOOKKEEPING = "bookkeeping"  # records the CLIs keep for themselves
INVALID = "invalid"
OTHER = "other"

CONVERSATION_KINDS = frozenset(
    {PROMPT, COMMAND, LOCAL_OUTPUT, USER_OTHER, TOOL_RESULT, COMPACT_SUMMARY, ASSISTANT}
)

UUID_RE = re.compile(
    r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\Z"
)
TEXT_LIMIT = 2000
MAX_COUNT = 2**31 - 1  # token counts fit a 32-bit integer column on every database
# A time this close to the ends of datetime's range could overflow when converted to
# UTC or to any local zone (offsets stay under a day), so it is dropped instead.
EARLIEST = datetime(1, 1, 2, tzinfo=UTC)
LATEST = datetime(9999, 12, 30, tzinfo=UTC)


def is_session_id(value: str) -> bool:
    """Session ids are UUIDs, nothing else: they end up in file paths."""
    return bool(UUID_RE.match(value))


@dataclass(slots=True)
class ParsedRecord:
    """What one line says, normalised; `kind` is one of the constants above.

    `dropped` names each field the reader dropped or clamped and why, e.g.
    "message.usage.input_tokens: out of range (18446744073709551615)"; it stays the
    shared empty tuple when nothing was wrong.
    """

    kind: str
    raw_type: str = ""
    subtype: str = ""
    uuid: str | None = None
    parent_uuid: str | None = None
    logical_parent_uuid: str | None = None
    timestamp: str | None = None
    time: datetime | None = None  # `timestamp` parsed: aware, within EARLIEST..LATEST
    sidechain: bool = False
    session_id: str | None = None
    text: str | None = None
    message_id: str | None = None
    model: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cwd: str | None = None
    git_branch: str | None = None
    title: str | None = None
    leaf_uuid: str | None = None
    forked_from: str | None = None  # the source session of a CLI-made branch
    error: str | None = None
    dropped: tuple[str, ...] = ()


def collapse(text: str, limit: int = 100) -> str:
    """Whitespace collapsed and cut to `limit` characters, for titles."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def parse_timestamp(value: str | None) -> datetime | None:
    """An aware datetime from an ISO timestamp; None when missing, malformed or out of range."""
    if not value or value.__class__ is not str:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    if 1 < parsed.year < 9999:
        return parsed
    # Aware datetimes compare without converting, so this cannot overflow.
    return parsed if EARLIEST <= parsed <= LATEST else None


def detect_agent_from_path(path: Path) -> str:
    """The agent whose layout holds the file at `path`, by its folder (Qwen's `chats/`)."""
    for agent in REGISTRY.values():
        if agent.sessions_subfolder and path.parent.name == agent.sessions_subfolder:
            return agent.name
    return flat_layout_agent().name


def parse_line(agent: str, raw: bytes) -> ParsedRecord:
    """Parse one line of a session file written by `agent`."""
    try:
        parse = REGISTRY[agent].parse_line
    except KeyError:
        raise ValueError(_unknown(agent)) from None
    return parse(raw)


def agent_for(name: str) -> Agent:
    """The agent called `name` ("claude", "qwen")."""
    try:
        return REGISTRY[name]
    except KeyError:
        raise ValueError(_unknown(name)) from None


def agents() -> tuple[Agent, ...]:
    """Every known agent, in registry order."""
    return tuple(REGISTRY.values())


def legacy_root_agent(root: Path) -> Agent | None:
    """The agent whose older releases kept their projects in `root` (`~/.qwen/tmp`), or None."""
    for agent in REGISTRY.values():
        if root.name in agent.legacy_roots and root.parent.name == agent.home_folder:
            return agent
    return None


def dated_root_agent(root: Path) -> Agent | None:
    """The agent whose sessions lie in dated folders under `root` (Codex's `sessions/`,
    `archived_sessions/`), by what the root holds: year folders or its session files.

    Not by the root's name: any agent's root may be called `sessions` (a backup, a copy);
    None for a root of projects, and for an empty root (it has no sessions either way).
    """
    for agent in REGISTRY.values():
        if not agent.sessions_root:
            continue
        try:
            names = [p.name for p in root.iterdir()]
        except OSError:
            continue
        if any(len(n) == 4 and n.isdigit() for n in names) or any(
            agent.session_id_of(Path(n)) for n in names if n.endswith(".jsonl")
        ):
            return agent
    return None


def flat_layout_agent() -> Agent:
    """The agent that keeps session files in the project folder itself (Claude Code)."""
    for agent in REGISTRY.values():
        if not agent.sessions_subfolder:
            return agent
    raise LookupError("no agent keeps its sessions in the project folder itself")


def agent_of_session_path(path: Path) -> Agent | None:
    """The agent whose layout puts a session file at `path` (relative to a session root)."""
    for agent in REGISTRY.values():
        if agent.is_session_path(path):
            return agent
    return None


def _unknown(name: str) -> str:
    return f"unknown agent {name!r}; known agents: {', '.join(REGISTRY)}"


# The agent modules import the names above, so they are bound last.
from . import claude, codex, qwen  # noqa: E402
from .agent import LAST_RECORD as LAST_RECORD  # noqa: E402
from .agent import NEWEST_LEAF as NEWEST_LEAF  # noqa: E402
from .agent import Agent as Agent  # noqa: E402
from .agent import AssistantPart as AssistantPart  # noqa: E402
from .agent import ToolOutcome as ToolOutcome  # noqa: E402

# One entry per agent; a new agent is one module and one line here.
REGISTRY: dict[str, Agent] = {a.name: a for a in (claude.AGENT, qwen.AGENT, codex.AGENT)}
AGENTS = tuple(REGISTRY)
AGENT_LABELS = {a.name: a.label for a in REGISTRY.values()}
