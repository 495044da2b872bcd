"""Gemini CLI's tool calls and their results as the page shows the other CLIs' tools, pure."""

from __future__ import annotations

from typing import Any

from ..agent import AssistantPart, ToolOutcome


def message_text(content: Any) -> str:
    """The text parts of a message's `content` (a string or a list of parts), joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        content = [content]
    if not isinstance(content, list):
        return ""
    return "".join(
        p if isinstance(p, str) else p["text"]
        for p in content
        if isinstance(p, str) or (isinstance(p, dict) and isinstance(p.get("text"), str))
    )


def assistant_parts(data: dict[str, Any]) -> list[AssistantPart]:
    """A reply's thoughts, its text, then its tool calls (the order the CLI sends them)."""
    parts: list[AssistantPart] = []
    thoughts = data.get("thoughts")
    for thought in thoughts if isinstance(thoughts, list) else []:
        if not isinstance(thought, dict):
            continue
        subject, description = thought.get("subject"), thought.get("description")
        pieces = [s for s in (subject, description) if isinstance(s, str) and s.strip()]
        if pieces:
            parts.append(AssistantPart("thinking", "\n\n".join(pieces)))
    text = message_text(data.get("content"))
    if text.strip():
        parts.append(AssistantPart("text", text))
    for call in _calls(data):
        args = call.get("args")
        parts.append(
            AssistantPart(
                "tool",
                call_id=str(call.get("id") or ""),
                name=str(call.get("name") or "tool"),
                input=args if isinstance(args, dict) else {},
            )
        )
    return parts


def _calls(data: dict[str, Any]) -> list[dict[str, Any]]:
    calls = data.get("toolCalls")
    return [c for c in calls if isinstance(c, dict)] if isinstance(calls, list) else []


def tool_results(data: dict[str, Any]) -> list[ToolOutcome]:
    """The results a reply's tool calls hold, or a tool-result user message's responses."""
    outcomes: list[ToolOutcome] = []
    if data.get("type") == "gemini":
        for call in _calls(data):
            if "result" not in call:
                continue
            call_id = str(call.get("id") or "")
            failed = call.get("status") in ("error", "cancelled")
            outcomes.append(ToolOutcome(call_id, _result_text(call.get("result")), failed))
        return outcomes
    content = data.get("content")
    for part in content if isinstance(content, list) else []:
        response = part.get("functionResponse") if isinstance(part, dict) else None
        if isinstance(response, dict):
            text = _response_text(response.get("response"))
            outcomes.append(ToolOutcome(str(response.get("id") or ""), text, False))
    return outcomes


def _result_text(result: Any) -> str:
    """A tool call's `result`: a string, a `functionResponse`, or a list of parts."""
    if isinstance(result, str):
        return result
    items = result if isinstance(result, list) else [result]
    texts: list[str] = []
    for item in items:
        if not isinstance(item, dict):
            texts.append(item if isinstance(item, str) else "")
        elif isinstance(item.get("functionResponse"), dict):
            texts.append(_response_text(item["functionResponse"].get("response")))
        elif isinstance(item.get("text"), str):
            texts.append(item["text"])
    return "\n".join(t for t in texts if t)


def _response_text(response: Any) -> str:
    if not isinstance(response, dict):
        return response if isinstance(response, str) else ""
    output, error = response.get("output"), response.get("error")
    texts = [t for t in (output, error) if isinstance(t, str) and t]
    return "\n".join(texts)
