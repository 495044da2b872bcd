"""What a Codex record shows, pure: its text, blocks and images, an assistant's parts, tool
results, injected context and compactions.
"""

from __future__ import annotations

import re
from typing import Any

from ..agent import AssistantPart, ToolOutcome
from .context import context_of
from .tools import call_part, data_image, outcome_of

# User-role text Codex writes itself: context for the model, never a person's prompt.
INJECTED_PREFIXES = (
    "<environment_context>",
    "<user_instructions>",
    "<user_shell_command>",
    "<turn_aborted>",
    "<user_action>",
    "<subagent_notification>",
    "# AGENTS.md instructions",
    "<INSTRUCTIONS>",
)


IMAGE_TAG_RE = re.compile(r"\A\s*</?image\b[^>\n]{0,200}>\s*\Z")


RESPONSE_TYPES = frozenset(
    {
        "message",
        "reasoning",
        "function_call",
        "function_call_output",
        "custom_tool_call",
        "custom_tool_call_output",
        "local_shell_call",
        "web_search_call",
        "compaction",
        "ghost_snapshot",
    }
)


def payload_of(data: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """(envelope type, payload) of a line in either shape; a bare item is a response item."""
    payload = data.get("payload")
    if isinstance(payload, dict) and isinstance(data.get("type"), str):
        return data["type"], payload
    if data.get("type") in RESPONSE_TYPES:
        return "response_item", data  # before the envelope
    if "record_type" in data:
        return "state", data
    if "id" in data and "instructions" in data:
        return "session_meta", data  # the first line before the envelope
    return str(data.get("type") or ""), {}


def message_text(message: Any) -> str:
    """The text parts of a response item message, joined."""
    if not isinstance(message, dict):
        return ""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    texts = [
        b["text"]
        for b in content
        if isinstance(b, dict)
        and isinstance(b.get("text"), str)
        # The `<image>`/`</image>` parts around a pasted image frame it for the model: the
        # page draws the image itself.
        and not IMAGE_TAG_RE.match(b["text"])
    ]
    return "\n".join(texts)


def is_injected(text: str) -> bool:
    """Whether user-role text is context Codex added, not a prompt."""
    return text.lstrip().startswith(INJECTED_PREFIXES)


def record_text(data: dict[str, Any]) -> str:
    """The text a record shows: a message's text, a compaction's summary, an abort's reason."""
    kind, payload = payload_of(data)
    if kind == "compacted":
        message = payload.get("message")
        if isinstance(message, str) and message.strip():
            return message
        # Remote compaction (every public `compacted` line): `message` is "" and the
        # summary is an encrypted item only the model can read; say so, not nothing.
        said = compaction_of(data)
        return f"({said[:1].upper()}{said[1:]}: Codex keeps it for the model alone.)"
    if kind == "event_msg" and payload.get("type") == "turn_aborted":
        reason = payload.get("reason")
        return f"Turn aborted ({reason})" if isinstance(reason, str) else "Turn aborted"
    if kind == "event_msg" and payload.get("type") == "thread_rolled_back":
        return f"Rolled back {payload.get('num_turns')} turn(s)"
    return message_text(payload) if payload.get("type") == "message" else ""


def content_blocks(data: dict[str, Any]) -> list[dict]:
    """The content blocks of a message item."""
    _, payload = payload_of(data)
    content = payload.get("content")
    if isinstance(content, str):
        return [{"type": "input_text", "text": content}]
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def image_of(block: dict[str, Any]) -> tuple[str, str] | None:
    """(media type, base64 data) of an `input_image` block holding a data URL."""
    return data_image(block)


def assistant_parts(data: dict[str, Any]) -> list[AssistantPart]:
    """A reply's text, a reasoning summary (encrypted reasoning: "hidden"), or one tool call."""
    _, item = payload_of(data)
    item_type = item.get("type")
    if item_type == "message":
        text = message_text(item)
        return [AssistantPart("text", text)] if text else []
    if item_type == "reasoning":
        summary = item.get("summary")
        texts = [
            s["text"]
            for s in (summary if isinstance(summary, list) else [])
            if isinstance(s, dict) and isinstance(s.get("text"), str)
        ]
        if not texts:
            # Plain reasoning (`reasoning_text` parts, no summary): the words themselves.
            content = item.get("content")
            texts = [
                c["text"]
                for c in (content if isinstance(content, list) else [])
                if isinstance(c, dict) and isinstance(c.get("text"), str)
            ]
        if texts:
            return [AssistantPart("thinking", "\n\n".join(texts))]
        if item.get("encrypted_content"):
            return [AssistantPart("thinking", "(hidden: the reasoning is encrypted)")]
        return []
    part = call_part(item)
    return [part] if part is not None else []


def tool_results(data: dict[str, Any]) -> list[ToolOutcome]:
    """The output of a function or custom tool call."""
    _, item = payload_of(data)
    outcome = outcome_of(item)
    return [outcome] if outcome is not None else []


def injected_context(data: dict[str, Any]) -> tuple[str, str] | None:
    """(what it is, what it says) of a message Codex wrote for the model, not a prompt."""
    _, item = payload_of(data)
    if item.get("type") != "message" or item.get("role") not in ("user", "developer"):
        return None
    text = message_text(item)
    role = str(item.get("role"))
    if not text.strip() and any(image_of(b) for b in content_blocks(data)):
        # 0.5x `view_image`: the image alone, in the user's name, for the model to see.
        return "An image Codex showed the model (view_image)", ""
    if not text.strip() or (role == "user" and not is_injected(text) and "<" not in text[:3]):
        return None
    # One message may hold several blocks, a part each (Codex Desktop sends sandbox rules,
    # app context, collaboration mode, skills and plugins as one developer message).
    parts = [
        b for b in content_blocks(data) if isinstance(b.get("text"), str) and b["text"].strip()
    ]
    found = [context_of(b["text"], role) for b in parts] if len(parts) > 1 else []
    if not found or any(f is None for f in found):
        return context_of(text, role)
    known = [f for f in found if f is not None]
    label = "; ".join(dict.fromkeys(label for label, _ in known))
    return label, "\n\n".join(f"[{label}]\n{body}" for label, body in known)


def compaction_of(data: dict[str, Any]) -> str:
    """What a compaction says of its summary: encrypted for the model alone, or nothing
    when the `compacted` line holds the summary as text."""
    kind, payload = payload_of(data)
    if kind != "compacted":
        return "the summary is encrypted"  # a `compaction` item: encrypted_content only
    message = payload.get("message")
    if isinstance(message, str) and message.strip():
        return ""
    history = payload.get("replacement_history")
    encrypted = any(
        isinstance(item, dict) and item.get("encrypted_content")
        for item in (history if isinstance(history, list) else [])[-50:]
    )
    return "the summary is encrypted" if encrypted else "no summary was written"
