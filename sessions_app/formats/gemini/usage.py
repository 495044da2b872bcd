"""What one Gemini CLI reply cost in tokens, pure.

A `gemini` message records `tokens {input, output, cached, thoughts, tool, total}`:
`input` is the prompt including the cached part (`cached`), `tool` the tool-use prompt
(billed as input), `thoughts` the thinking (billed as output). Keyed by the message id:
a message re-recorded under its id, or copied into a fork, is one message (the usage
pass keeps the largest count of each kind).
"""

from __future__ import annotations

from typing import Any

from ..usage import KEY_LIMIT, MODEL_LIMIT, MessageUsage, _count, _text


def gemini_usage(data: dict[str, Any]) -> MessageUsage | None:
    """A `gemini` message's token counts; None for any other line or one without them."""
    tokens = data.get("tokens")
    key = _text(data.get("id"), KEY_LIMIT)
    if data.get("type") != "gemini" or not isinstance(tokens, dict) or not key:
        return None
    prompt, cached = _count(tokens, "input"), _count(tokens, "cached")
    thoughts = _count(tokens, "thoughts")
    return MessageUsage(
        key,
        _text(data.get("model"), MODEL_LIMIT),
        max(0, prompt - cached) + _count(tokens, "tool"),
        _count(tokens, "output") + thoughts,
        0,
        min(cached, prompt) if prompt else cached,
        reasoning=thoughts,  # of the output, shown apart as Codex's reasoning is
    )
