"""What every reader shares: the agents' names, record kinds, `ParsedRecord`, ids and times."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime

CLAUDE = "claude"
QWEN = "qwen"
CODEX = "codex"
GEMINI = "gemini"

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
    # A line that replaces the whole history (Gemini CLI's `$set.messages`): the message
    # ids it keeps, in order; None for any other line.
    replaces: tuple[str, ...] | None = None


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
