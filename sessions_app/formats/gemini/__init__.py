"""Gemini CLI session files (`~/.gemini/tmp/<slug>/chats/session-*.jsonl`, 0.4x-0.61; `.json`).

Line 1 is the session's metadata `{sessionId, projectHash, startTime, lastUpdated, kind}`;
then one line per message `{id, timestamp, type: user|gemini|info|error|warning,
content}` (a `gemini` message with `thoughts`, `toolCalls` holding their results,
`tokens`, `model`), `{"$set": {...}}` metadata updates (`summary`: the CLI's title for
the session; `messages`: the whole history, replacing the list) and `{"$rewindTo": id}`
rewinds. `order.MessageChain` chains the lines as the CLI replays them. Sub-agent chats
(`chats/<parent id>/<agent id>.jsonl`, metadata `kind: subagent`) are the parent's
subagents (`subagent_folders`). A rewind appends the CLI's own `$rewindTo` (`rewind.py`),
and a run from the page is `gemini --resume <id> --prompt=...` (`running.gemini_run_args`).

The turn rule in the CLI's own words (`convertSessionToClientHistory`): a turn starts at a
`user` message the CLI sends again on resume, i.e. whose text is not blank and does not
start with `/`, `?`, `<session_context>` or `<hook_context>`. A user message holding only
`functionResponse` parts is a tool result. Older releases' one-document `session-*.json`
files are read as records that are spans of their bytes (`document.py`: the document,
then each message); `/chat save` checkpoints (`tmp/<slug>/checkpoint-<tag>.json`) and
`/restore` points are no sessions: they are listed on their project's page
(`checkpoints.py`), never imported.
"""

from __future__ import annotations

from typing import Any

import orjson

from ..agent import LAST_RECORD, Agent, DocumentFiles, PrefixFork
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
from ..running import gemini_run_args
from .checkpoints import saved_checkpoints
from .document import DOCUMENT_SUFFIX, REFUSAL, continuation, document_records, message_line
from .order import MESSAGE_TYPES, MessageChain
from .project import head_session_id, project_path
from .rewind import rewind_marker
from .tools import _calls as _calls
from .tools import _response_text as _response_text
from .tools import _result_text as _result_text
from .tools import assistant_parts as assistant_parts
from .tools import message_text as message_text
from .tools import tool_results as tool_results
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
        messages = data["$set"].get("messages")
        if isinstance(messages, list):
            # The CLI's replay drops every message and keeps these, in this order.
            record.raw_type = "$set.messages"
            record.replaces = tuple(
                m["id"] for m in messages if isinstance(m, dict) and isinstance(m.get("id"), str)
            )
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
        summary = data.get("summary")  # a one-document file's, or a conversion's first line
        if isinstance(summary, str) and summary.strip():
            record.kind, record.subtype, record.title = TITLE, "summary", clip(summary)
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
    rewind_marker=rewind_marker,
    run_args=gemini_run_args,
    usage_of=gemini_usage,
    line_chain=MessageChain,
    projects_root="tmp",
    head_session_id=head_session_id,
    file_prefix="session-",
    project_path=project_path,
    results_in_reply=True,
    replaces_by_id=True,
    subagent_folders=True,
    documents=DocumentFiles(DOCUMENT_SUFFIX, document_records, continuation, message_line, REFUSAL),
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
    # (tests/compat/test_gemini_compat.py); after a rewind (an appended `$rewindTo`, also on
    # a file the CLI resumed) and its undo (cut away) it sends exactly turns 1..N-1, or all
    # of them again, and a run from the page goes on in the session's own file
    # (tests/compat/test_gemini_rewind_compat.py).
    can_branch=True,
    can_rewind=True,
    checkpoints=saved_checkpoints,
)
