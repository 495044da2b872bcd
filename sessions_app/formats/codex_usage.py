"""What one Codex model response cost in tokens, from its `token_count` event, pure.

Codex writes `event_msg` `token_count` after each model response, with the response's
counts (`info.last_token_usage`) and the thread's running total (`total_token_usage`);
it may write the same event again (a rate-limit update) with the total unchanged, so
the key is the running total: a repeat is the same response, counted once. OpenAI's
`input_tokens` include the cached ones (`cached_input_tokens`), and `output_tokens` the
reasoning. The event names no model (it is in the `turn_context` before it).
"""

from __future__ import annotations

from typing import Any

from .usage import KEY_LIMIT, MessageUsage, _count


def codex_usage(data: dict[str, Any]) -> MessageUsage | None:
    """A `token_count` event's usage, keyed by the thread's running total; None otherwise."""
    payload = data.get("payload")
    if not isinstance(payload, dict) or payload.get("type") != "token_count":
        return None
    info = payload.get("info")
    if not isinstance(info, dict):
        return None  # a rate-limit update alone
    last, total = info.get("last_token_usage"), info.get("total_token_usage")
    if not isinstance(last, dict) or not isinstance(total, dict):
        return None
    counts = [_count(total, k) for k in ("input_tokens", "cached_input_tokens", "output_tokens")]
    key = f"codex-total:{_count(total, 'total_tokens')}:{':'.join(map(str, counts))}"
    prompt, cached = _count(last, "input_tokens"), _count(last, "cached_input_tokens")
    return MessageUsage(
        key[:KEY_LIMIT],
        "",
        max(0, prompt - cached),
        _count(last, "output_tokens"),
        0,
        min(cached, prompt) if prompt else cached,
    )
