"""Readers for the session files the CLIs write: one package per agent, pure Python.

Each agent is one `Agent` object (`agent.py` lists what it provides), found with
`agent_for(name)`; `REGISTRY` at the end of this file names them all. Nothing
outside this package branches on an agent's name.

A reader turns one raw line into a `ParsedRecord`: the fields the graph, the turn
function and the pages need. The raw bytes themselves are never changed; unknown
record types come through as kind "other" and are carried along untouched. Each
agent reads a line in two ways that give the same record: a selective decode of
only those fields (`claude.index`, `qwen.index`: msgspec, the rest of the line
skipped unbuilt), and, for any line that decode is not sure of, the whole line
(orjson), which alone drops and names bad values.

Every value a reader returns is safe to store in either database: a field that is
out of range, too long, of the wrong type or holds a NUL is dropped (or clamped)
and named in `ParsedRecord.dropped`, so the importer can report it with file and
line and go on. One bad value never costs more than itself.
"""

from __future__ import annotations

from pathlib import Path

from .kinds import (
    ASSISTANT as ASSISTANT,
)
from .kinds import (
    ATTACHMENT as ATTACHMENT,
)
from .kinds import (
    BOOKKEEPING as BOOKKEEPING,
)
from .kinds import (
    CLAUDE as CLAUDE,
)
from .kinds import (
    CODEX as CODEX,
)
from .kinds import (
    COMMAND as COMMAND,
)
from .kinds import (
    COMPACT_BOUNDARY as COMPACT_BOUNDARY,
)
from .kinds import (
    COMPACT_SUMMARY as COMPACT_SUMMARY,
)
from .kinds import (
    CONVERSATION_KINDS as CONVERSATION_KINDS,
)
from .kinds import (
    EARLIEST as EARLIEST,
)
from .kinds import (
    GEMINI as GEMINI,
)
from .kinds import (
    INVALID as INVALID,
)
from .kinds import (
    LATEST as LATEST,
)
from .kinds import (
    LOCAL_OUTPUT as LOCAL_OUTPUT,
)
from .kinds import (
    MAX_COUNT as MAX_COUNT,
)
from .kinds import (
    OTHER as OTHER,
)
from .kinds import (
    PROGRESS as PROGRESS,
)
from .kinds import (
    PROMPT as PROMPT,
)
from .kinds import (
    QWEN as QWEN,
)
from .kinds import (
    REWIND as REWIND,
)
from .kinds import (
    SUMMARY as SUMMARY,
)
from .kinds import (
    SYSTEM as SYSTEM,
)
from .kinds import (
    TEXT_LIMIT as TEXT_LIMIT,
)
from .kinds import (
    TITLE as TITLE,
)
from .kinds import (
    TOOL_RESULT as TOOL_RESULT,
)
from .kinds import (
    USER_OTHER as USER_OTHER,
)
from .kinds import (
    UUID_RE as UUID_RE,
)
from .kinds import (
    ParsedRecord as ParsedRecord,
)
from .kinds import (
    collapse as collapse,
)
from .kinds import (
    is_session_id as is_session_id,
)
from .kinds import (
    parse_timestamp as parse_timestamp,
)


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


def _unknown(name: str) -> str:
    return f"unknown agent {name!r}; known agents: {', '.join(REGISTRY)}"


# The agent modules import the names above, so they are bound last.
from . import claude, codex, gemini, qwen  # noqa: E402
from .agent import LAST_RECORD as LAST_RECORD  # noqa: E402
from .agent import NEWEST_LEAF as NEWEST_LEAF  # noqa: E402
from .agent import Agent as Agent  # noqa: E402
from .agent import AssistantPart as AssistantPart  # noqa: E402
from .agent import ToolOutcome as ToolOutcome  # noqa: E402

# One entry per agent; a new agent is one module and one line here.
REGISTRY: dict[str, Agent] = {
    a.name: a for a in (claude.AGENT, qwen.AGENT, codex.AGENT, gemini.AGENT)
}
AGENTS = tuple(REGISTRY)
AGENT_LABELS = {a.name: a.label for a in REGISTRY.values()}
