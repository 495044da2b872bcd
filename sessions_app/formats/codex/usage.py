"""What one Codex model response cost in tokens, pure.

Codex 0.169 writes a `token_usage_record` line per model response: its `response_id`
and that response's `usage`; that is the key and the count. Every release also writes an
`event_msg` `token_count` after each response, with the response's counts
(`info.last_token_usage`) and the thread's running total (`total_token_usage`), and may
write it again (a rate-limit update, an interrupted turn) with the total unchanged; a
file with `token_usage_record` lines is counted from those alone (each response once),
an older one from its `token_count` events, keyed by the running total and the start of the
thread whose history the line belongs to (the `timestamp` inside the `session_meta` before
it): a repeat is the same response, and two sessions with equal totals are not copies.

Keys name the response, not the file, so a copy counts once (the usage store's "same key,
copied" rule): branchboard's forks and rewind backups copy the lines unchanged under a first
line that keeps the thread's start, and Codex's own copies (a resumed 0.3x-0.5x rollout, a
`thread_spawn` sub-agent replaying its parent, a backtrack fork) write the older thread's
`session_meta` unchanged before the lines they replay (restamping only the envelopes). A
`token_count` whose response used no token at all is no response.

OpenAI's `input_tokens` include the cached ones (`cached_input_tokens`), and
`output_tokens` the reasoning (`reasoning_output_tokens`, kept apart as `reasoning`).
Neither line names a model: the `turn_context` line before them does, and `CodexUsage`
carries it forward.
"""

from __future__ import annotations

from typing import Any

from ..usage import KEY_LIMIT, MODEL_LIMIT, MessageUsage, _count

TOKEN_COUNTS = ("input_tokens", "cached_input_tokens", "output_tokens")


def _envelope(data: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    payload = data.get("payload")
    kind = data.get("type")
    if isinstance(payload, dict) and isinstance(kind, str):
        return kind, payload
    return "", {}


def _counted(key: str, last: dict[str, Any], model: str) -> MessageUsage | None:
    prompt, cached = _count(last, "input_tokens"), _count(last, "cached_input_tokens")
    output = _count(last, "output_tokens")
    if not (prompt or cached or output):
        return None  # no response: an event with nothing in it
    return MessageUsage(
        key[:KEY_LIMIT],
        model,
        max(0, prompt - cached),
        output,
        0,
        min(cached, prompt) if prompt else cached,
        reasoning=min(_count(last, "reasoning_output_tokens"), output),
    )


def codex_usage(data: dict[str, Any]) -> MessageUsage | None:
    """A `token_count` event's usage alone, keyed by the thread's running total (no model,
    no session: the importer's per-line count; `CodexUsage` is the usage pass's)."""
    kind, payload = _envelope(data)
    if kind != "event_msg" or payload.get("type") != "token_count":
        return None
    info = payload.get("info")
    if not isinstance(info, dict):
        return None  # a rate-limit update alone
    last, total = info.get("last_token_usage"), info.get("total_token_usage")
    if not isinstance(last, dict) or not isinstance(total, dict):
        return None
    counts = [_count(total, k) for k in TOKEN_COUNTS]
    key = f"codex-total:{_count(total, 'total_tokens')}:{':'.join(map(str, counts))}"
    return _counted(key, last, "")


class CodexUsage:
    """Reads one session's lines in order: each response's usage once, with its model.

    `types` are the raw types of the lines it must see besides the assistant records
    (the usage pass feeds it those of earlier lines first, so it knows the model and
    whether the file keys responses by id).
    """

    types = frozenset({"session_meta", "turn_context", "token_usage_record"})

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self.model = ""
        self.by_response = False  # the file has `token_usage_record` lines (0.169)
        self.origin = ""  # the start of the thread whose lines these are

    def read(self, data: dict[str, Any]) -> MessageUsage | None:
        """The usage line `data` adds (None: none), after the lines read before it."""
        kind, payload = _envelope(data)
        if kind == "session_meta":
            inner = payload.get("meta")
            meta = inner if isinstance(inner, dict) else payload
            started = meta.get("timestamp")
            # A line with no start of its own leaves the thread's as it was.
            if isinstance(started, str) and started and "\x00" not in started:
                self.origin = started[:40]
            return None
        if kind == "turn_context":
            model = payload.get("model")
            if isinstance(model, str) and model.strip() and "\x00" not in model:
                self.model = model[:MODEL_LIMIT]
            return None
        if kind == "token_usage_record":
            response, usage = payload.get("response_id"), payload.get("usage")
            if not isinstance(response, str) or not response or not isinstance(usage, dict):
                return None
            self.by_response = True
            return _counted(f"codex:{response}", usage, self.model)
        if self.by_response:
            return None  # the same responses again, as running totals
        found = codex_usage(data)
        if found is None:
            return None
        origin = self.origin or self.session_id  # no session_meta read: the file's own
        return found._replace(key=f"codex@{origin}:{found.key}"[:KEY_LIMIT], model=self.model)
