"""What the pages read of an assistant record and of a tool's answer, as every agent gives
them: its parts in order, and each result paired with its call.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from .forks import PrefixFork as PrefixFork


class AssistantPart(NamedTuple):
    """One piece of an assistant message: `kind` is "text", "thinking" or "tool"."""

    kind: str
    text: str = ""
    call_id: str = ""  # for "tool": the id its result names
    name: str = ""
    input: dict | None = None


class ToolOutcome(NamedTuple):
    """One tool result, paired with its call by `call_id`."""

    call_id: str
    text: str
    is_error: bool
    images: tuple[tuple[str, str], ...] = ()  # (media type, base64 data), unchecked
    details: Any = None  # structured result the CLI keeps beside it (e.g. a subagent's id)
    # How a shell command ended: "0", "2", "interrupted", "signal SIGTERM"; None when the
    # tool is no shell or the CLI did not say.
    exit: str | None = None
