"""Gemini CLI session files (`~/.gemini/tmp/<slug>/chats/session-*.jsonl`, 0.4x-0.61).

Line 1 is the session's metadata `{sessionId, projectHash, startTime, lastUpdated, kind}`;
then one line per message `{id, timestamp, type: user|gemini|info|error|warning,
content}` (a `gemini` message with `thoughts`, `toolCalls` holding their results,
`tokens`, `model`), `{"$set": {...}}` metadata updates (`summary`: the CLI's title for
the session) and `{"$rewindTo": id}` rewinds. `order.MessageChain` chains the lines as
the CLI replays them.

The turn rule in the CLI's own words (`convertSessionToClientHistory`): a turn starts at a
`user` message the CLI sends again on resume, i.e. whose text is not blank and does not
start with `/`, `?`, `<session_context>` or `<hook_context>`. A user message holding only
`functionResponse` parts is a tool result. The older one-document `.json` files, sub-agent
chats (`chats/<parent id>/`) and `/chat save` checkpoints are not read here.
"""

from __future__ import annotations

from typing import Any

import orjson

from ..agent import LAST_RECORD, Agent, AssistantPart, PrefixFork, ToolOutcome
from ..common import MODEL_LIMIT, base_record, bounded, clip, load
from ..kinds import (
    ASSISTANT,
    BOOKKEEPING,
    GEMINI,
    PROMPT,
    REWIND,
    TITLE,
    TOOL_RESULT,
    USER_OTHER,
    ParsedRecord,
)
from .order import MESSAGE_TYPES, MessageChain
from .project import head_session_id, project_path
from .usage import gemini_usage
from .writing import (
    fork_meta_line,
    fork_refusal,
    keeps,
    new_session_id,
    no_folder,
    session_name,
)

IGNORED_PREFIXES = ("/", "?", "<session_context>", "<hook_context>")
NOTE_TYPES = frozenset({"info", "error", "warning"})
MAX_TOKENS = 2**31 - 1


def part_text(part: Any) -> str:
    """One content part as the CLI's `partToString(verbose)` reads it."""
    if isinstance(part, str):
        return part
    if isinstance(part, list):
        return "".join(part_text(p) for p in part)
    if not isinstance(part, dict):
        return ""
    if "thought" in part and not isinstance(part.get("text"), str):
        return f"[Thought: {part['thought']}]"
    if isinstance(part.get("functionCall"), dict):
        return f"[Function Call: {part['functionCall'].get('name')}]"
    if isinstance(part.get("functionResponse"), dict):
        return f"[Function Response: {part['functionResponse'].get('name')}]"
    if isinstance(part.get("inlineData"), dict):
        return f"[Media: {part['inlineData'].get('mimeType') or 'unknown'}]"
    text = part.get("text")
    return text if isinstance(text, str) else ""


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


def is_tool_response(content: Any) -> bool:
    """Whether a user message's parts are all `functionResponse` parts (a tool result)."""
    return (
        isinstance(content, list)
        and bool(content)
        and all(
            isinstance(p, dict) and isinstance(p.get("functionResponse"), dict) for p in content
        )
    )


def is_sent_again(content: Any) -> bool:
    """Whether the CLI sends a user message again on resume (`isIgnoredUserContent`)."""
    text = part_text(content).strip()
    return bool(text) and not text.startswith(IGNORED_PREFIXES)


def parse_line(raw: bytes) -> ParsedRecord:
    """Parse one Gemini CLI line; never raises (the chain is added by `MessageChain`)."""
    data = load(raw)
    if isinstance(data, ParsedRecord):
        return data
    record = base_record({"timestamp": data.get("timestamp")})
    record.kind = BOOKKEEPING
    message_type = data.get("type")
    if isinstance(data.get("$rewindTo"), str):
        record.raw_type = "$rewindTo"
        record.kind = REWIND
        record.message_id = bounded(record, data, "$rewindTo", 128)
    elif isinstance(data.get("$set"), dict):
        record.raw_type = "$set"
        summary = data["$set"].get("summary")
        if isinstance(summary, str) and summary.strip():
            # The CLI's model wrote it, as Claude Code's ai-title: a person's title wins.
            record.kind = TITLE
            record.subtype = "summary"
            record.raw_type = "ai-title"
            record.title = clip(summary)
    elif isinstance(data.get("id"), str) and message_type in MESSAGE_TYPES:
        record.raw_type = message_type
        record.message_id = bounded(record, data, "id", 128)
        _message(record, data, message_type)
    elif isinstance(data.get("sessionId"), str) and isinstance(data.get("projectHash"), str):
        record.raw_type = "metadata"
        record.session_id = bounded(record, data, "sessionId", 64)
        record.timestamp = None
        started = base_record({"timestamp": data.get("startTime")})
        record.timestamp, record.time = started.timestamp, started.time
    return record


def _message(record: ParsedRecord, data: dict[str, Any], message_type: str) -> None:
    content = data.get("content")
    if message_type == "gemini":
        record.kind = ASSISTANT
        record.model = bounded(record, data, "model", MODEL_LIMIT)
        usage = gemini_usage(data)
        if usage is not None:
            record.input_tokens = min(usage.input + usage.cache_read, MAX_TOKENS)
            record.output_tokens = min(usage.output, MAX_TOKENS)
    elif message_type in NOTE_TYPES:
        record.kind = USER_OTHER
    elif is_tool_response(content):
        record.kind = TOOL_RESULT
    elif is_sent_again(content):
        record.kind = PROMPT
        record.text = clip(message_text(content))
    else:
        record.kind = USER_OTHER  # a slash command, `?`, context the CLI injected, blank


def record_text(data: dict[str, Any]) -> str:
    """What a line shows: a message's text (a note's with its type), a rewind, a title."""
    if isinstance(data.get("$rewindTo"), str):
        return f"Rewound to before message {data['$rewindTo']}"
    message_type = data.get("type")
    text = message_text(data.get("content"))
    if message_type in NOTE_TYPES and text:
        return f"{message_type}: {text}"
    return text


def content_blocks(data: dict[str, Any]) -> list[dict]:
    """A message's content parts (a string is one text part)."""
    content = data.get("content")
    if isinstance(content, str):
        return [{"text": content}]
    return [p for p in content if isinstance(p, dict)] if isinstance(content, list) else []


def image_of(block: dict[str, Any]) -> tuple[str, str] | None:
    """(media type, base64 data) of an `inlineData` image part."""
    inline = block.get("inlineData")
    if isinstance(inline, dict):
        media, payload = inline.get("mimeType"), inline.get("data")
        if isinstance(media, str) and media.startswith("image/") and isinstance(payload, str):
            return media, payload
    return None


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


def title_line(*, session_id: str, title: str, parent_uuid: str | None, base: dict) -> bytes:
    """Gemini CLI keeps its title as `$set.summary`."""
    return orjson.dumps({"$set": {"summary": title}}) + b"\n"


AGENT: Agent = Agent(
    name=GEMINI,
    label="Gemini CLI",
    cli="gemini",
    home_folder=".gemini",
    sessions_subfolder="chats",
    subagent_files=False,
    leaf_rule=LAST_RECORD,
    parse_line=parse_line,
    message_text=message_text,
    record_text=record_text,
    content_blocks=content_blocks,
    image_of=image_of,
    assistant_parts=assistant_parts,
    tool_results=tool_results,
    title_line=title_line,
    rewind_line=None,
    usage_of=gemini_usage,
    line_chain=MessageChain,
    projects_root="tmp",
    head_session_id=head_session_id,
    file_prefix="session-",
    project_path=project_path,
    results_in_reply=True,
    replaces_by_id=True,
    prefix_fork=PrefixFork(
        turn_opening=frozenset(),
        refusal=fork_refusal,
        meta_line=fork_meta_line,
        new_id=new_session_id,
        folder=no_folder,
        file_name=session_name,
        beside_source=True,
        keeps=keeps,
    ),
    # Branch and fork: `gemini --resume <new id>` sends exactly the kept turns
    # (tests/compat/test_gemini_compat.py). Rewind and runs from the page are not offered
    # until the real CLI is shown to resume them as intended.
    can_branch=True,
    can_rewind=False,
)
