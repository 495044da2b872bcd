"""What one API message cost in tokens, as each CLI records it, pure.

A message is counted once, by its key: Claude Code's message id (a streamed
message is written as several records sharing it, each with the usage so far,
so the largest count of each kind is the message's), or, where the CLI keeps no
message id (Qwen Code), the record's uuid. A fork copies records with their ids
and uuids, so the same message has the same key in every session of a family.

Older Claude Code releases also copy each API message of a running subagent into
the parent's file, nested in a `progress` record (`data.type: agent_progress`,
the assistant message in `data.message`); for a subagent with no file of its own
that copy is the only record of it. It counts under the same key, so a message
that the subagent's file holds as well is still one message.

Token kinds: `input` (not from the cache), `output` (thinking included; `reasoning` says how
many of those were reasoning where the CLI tells),
`cache_write` (written to the prompt cache; `cache_write_1h` says how many of
those were kept for an hour, at a dearer rate) and `cache_read` (read from it).
"""

from __future__ import annotations

from typing import Any, NamedTuple

KEY_LIMIT = 128
MODEL_LIMIT = 128
MAX_TOKENS = 2**53  # beyond any real count; a bigger one is a damaged value, not usage


class MessageUsage(NamedTuple):
    key: str
    model: str
    input: int
    output: int
    cache_write: int
    cache_read: int
    cache_write_1h: int = 0  # of cache_write: written for an hour (a dearer rate)
    agent: str = ""  # the subagent's id, when the record is the parent's copy (progress)
    reasoning: int = 0  # of output: the model's reasoning (Codex names it; billed as output)

    def merged(self, other: MessageUsage) -> MessageUsage:
        """The same message seen again: the larger count of each kind (streaming grows them)."""
        return MessageUsage(
            self.key,
            self.model or other.model,
            max(self.input, other.input),
            max(self.output, other.output),
            max(self.cache_write, other.cache_write),
            max(self.cache_read, other.cache_read),
            max(self.cache_write_1h, other.cache_write_1h),
            self.agent or other.agent,
            max(self.reasoning, other.reasoning),
        )

    @property
    def total(self) -> int:
        return self.input + self.output + self.cache_write + self.cache_read


def _count(data: Any, key: str) -> int:
    value = data.get(key) if isinstance(data, dict) else None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_TOKENS:
        return 0
    return value


def _text(value: Any, limit: int) -> str:
    return value[:limit].replace("\x00", "") if isinstance(value, str) else ""


def claude_usage(data: dict[str, Any]) -> MessageUsage | None:
    """An assistant record's usage, keyed by its message id (else its uuid); None without one.

    A `progress` record carrying a subagent's assistant message is that message's usage.
    """
    if data.get("type") == "progress":
        return _progress_usage(data)
    return _message_usage(data)


def _progress_usage(data: dict[str, Any]) -> MessageUsage | None:
    progress = data.get("data")
    if not isinstance(progress, dict) or progress.get("type") != "agent_progress":
        return None
    inner = progress.get("message")
    if not isinstance(inner, dict) or inner.get("type") != "assistant":
        return None
    usage = _message_usage(inner)
    agent = _text(progress.get("agentId"), KEY_LIMIT)
    return usage._replace(agent=agent or "?") if usage is not None else None


def _message_usage(data: dict[str, Any]) -> MessageUsage | None:
    message = data.get("message")
    if not isinstance(message, dict) or not isinstance(message.get("usage"), dict):
        return None
    usage = message["usage"]
    creation = usage.get("cache_creation")
    key = _text(message.get("id"), KEY_LIMIT) or _text(data.get("uuid"), KEY_LIMIT)
    if not key:
        return None
    return MessageUsage(
        key,
        _text(message.get("model"), MODEL_LIMIT),
        _count(usage, "input_tokens"),
        _count(usage, "output_tokens"),
        _count(usage, "cache_creation_input_tokens"),
        _count(usage, "cache_read_input_tokens"),
        _count(creation, "ephemeral_1h_input_tokens"),
    )


def qwen_usage(data: dict[str, Any]) -> MessageUsage | None:
    """A Qwen Code assistant record's `usageMetadata` (Gemini's counts), keyed by its uuid.

    `promptTokenCount` includes the cached tokens; thinking is billed as output.
    """
    usage = data.get("usageMetadata")
    key = _text(data.get("uuid"), KEY_LIMIT)
    if not isinstance(usage, dict) or not key:
        return None
    cached = _count(usage, "cachedContentTokenCount")
    prompt = _count(usage, "promptTokenCount")
    return MessageUsage(
        key,
        _text(data.get("model"), MODEL_LIMIT),
        max(0, prompt - cached),
        _count(usage, "candidatesTokenCount") + _count(usage, "thoughtsTokenCount"),
        0,
        min(cached, prompt) if prompt else cached,
    )


def no_usage(data: dict[str, Any]) -> MessageUsage | None:
    """For an agent whose records carry no usage."""
    return None
