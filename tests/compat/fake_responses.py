"""The OpenAI Responses API side of the fake model, for driving the real `codex` CLI.

Codex 0.169 talks only the Responses API (`POST /v1/responses`, streamed SSE).
It first tries a WebSocket on the same path; `fake_model` answers that upgrade
with 426 so Codex falls back to HTTP streaming at once.

Scripted replies, decided from the last input item:

* a tool output (`function_call_output` / `custom_tool_call_output`) -> text
  `done: <first 40 chars of the output>`;
* last user text contains `RUN: <command>` -> a call to Codex's shell tool;
* `PATCH: <relative path> :: <content>` -> an `apply_patch` call adding that file;
* a `compaction_trigger` item (Codex's remote compaction, `/compact` or
  app-server `thread/compact/start`) -> one `compaction` item whose
  `encrypted_content` is `fake-compaction: <the typed prompts so far>`;
* `STALL` -> the stream sends `response.created` and then nothing until the
  server stops (a turn that a test interrupts by killing the CLI);
* otherwise -> text `reply to: <the prompt text>`.

Every streamed response ends with `response.completed` carrying `usage`.
"""

from __future__ import annotations

import itertools
import json
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

_RUN_RE = re.compile(r"RUN:\s*(.+)")
_PATCH_RE = re.compile(r"PATCH:\s*(\S+)\s*::\s*(.*)", re.DOTALL)
STALL_MARKER = "STALL"

# User-role text Codex writes itself (context, not something a person typed).
# Seen in 0.169's requests: the environment context and the AGENTS.md /
# user-instructions blocks, and the notice left after an interrupted turn.
INJECTED_PREFIXES = (
    "<environment_context>",
    "<user_instructions>",
    "# AGENTS.md instructions",
    "<turn_aborted>",
    "<user_action>",
    "<permissions instructions>",
    "<collaboration_mode>",
    "<skills_instructions>",
    "<apps_instructions>",
    "<personality_spec>",
)

_ids = itertools.count(1)


def _new_id(prefix: str) -> str:
    return f"{prefix}{next(_ids):06d}{int(time.time() * 1000) % 10**8:08d}"


def is_injected(text: str) -> bool:
    """True for user-role text Codex adds itself rather than a typed prompt."""
    return text.lstrip().startswith(INJECTED_PREFIXES)


def _content_text(content: Any) -> str:
    """The text of a Responses message `content` (string or list of parts)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict) and part.get("type") in (
                "input_text",
                "output_text",
                "text",
            ):
                parts.append(str(part.get("text", "")))
        return "\n".join(p for p in parts if p)
    return ""


def _output_text(output: Any) -> str:
    """A tool output: a string, a `{content: ...}` object, or a list of parts."""
    if isinstance(output, str):
        return output
    if isinstance(output, dict):
        return _output_text(output.get("content", ""))
    return _content_text(output)


def conversation(body: dict[str, Any]) -> list[tuple[str, str]]:
    """The conversation in a Responses request, as (role, text) pairs.

    Roles: `user`, `assistant`, `tool_use` (`"<name> <arguments or input>"`)
    and `tool_result`. Developer/system messages and reasoning items are
    dropped; Codex's injected user-role context is kept (see `prompts`).
    """
    entries: list[tuple[str, str]] = []
    for item in body.get("input") or []:
        if not isinstance(item, dict):
            continue
        kind = item.get("type", "message")
        if kind == "message":
            role = str(item.get("role", ""))
            if role in ("system", "developer"):
                continue
            text = _content_text(item.get("content")).strip()
            if text:
                entries.append((role, text))
        elif kind in ("function_call", "custom_tool_call", "local_shell_call"):
            detail = item.get("arguments") or item.get("input") or item.get("action") or ""
            if not isinstance(detail, str):
                detail = json.dumps(detail, sort_keys=True)
            entries.append(("tool_use", f"{item.get('name', kind)} {detail}"))
        elif kind in ("function_call_output", "custom_tool_call_output"):
            entries.append(("tool_result", _output_text(item.get("output")).strip()))
        elif kind == "compaction":
            entries.append(("compaction", str(item.get("encrypted_content", ""))))
    return entries


def prompts(body: dict[str, Any]) -> list[str]:
    """The typed prompts a Responses request carries: user messages minus injected context."""
    return [text for role, text in conversation(body) if role == "user" and not is_injected(text)]


@dataclass
class ResponsesReply:
    """What the fake model answers: text, or one function or custom tool call."""

    text: str = ""
    tool_name: str | None = None
    arguments: dict[str, Any] = field(default_factory=dict)
    custom_input: str | None = None
    compaction: str | None = None
    stall: bool = False


def _tools(body: dict[str, Any]) -> dict[str, str]:
    """{tool name: tool type} offered by the request (`function`, `custom`, ...)."""
    out: dict[str, str] = {}
    for tool in body.get("tools") or []:
        if isinstance(tool, dict) and tool.get("name"):
            out[str(tool["name"])] = str(tool.get("type", "function"))
    return out


def _shell_call(tools: dict[str, str], command: str) -> ResponsesReply:
    """A call to whichever shell tool this Codex offers, with its argument shape."""
    if "exec_command" in tools:
        return ResponsesReply(tool_name="exec_command", arguments={"cmd": command})
    if "shell_command" in tools:
        return ResponsesReply(tool_name="shell_command", arguments={"command": command})
    name = "shell" if "shell" in tools else next(iter(tools), "shell")
    return ResponsesReply(tool_name=name, arguments={"command": ["bash", "-lc", command]})


def patch_text(path: str, content: str) -> str:
    """An apply_patch body that adds `path` with `content`."""
    lines = "".join(f"+{line}\n" for line in content.splitlines() or [""])
    return f"*** Begin Patch\n*** Add File: {path}\n{lines}*** End Patch\n"


def script(body: dict[str, Any]) -> ResponsesReply:
    """Decide the scripted reply for a Responses request body."""
    items = [i for i in body.get("input") or [] if isinstance(i, dict)]
    items = [
        i
        for i in items
        if not (i.get("type", "message") == "message" and i.get("role") in ("system", "developer"))
        and i.get("type") != "reasoning"
    ]
    last = items[-1] if items else {}
    if last.get("type") == "compaction_trigger":
        return ResponsesReply(compaction="fake-compaction: " + " | ".join(prompts(body)))
    if last.get("type") in ("function_call_output", "custom_tool_call_output"):
        output = _output_text(last.get("output"))
        # exec_command's output comes after a header (chunk id, wall time, exit code).
        output = output.split("\nOutput:\n", 1)[-1]
        return ResponsesReply(text=f"done: {output.strip()[:40]}")
    text = _content_text(last.get("content")) if last.get("type", "message") == "message" else ""
    tools = _tools(body)
    if STALL_MARKER in text and not is_injected(text):
        return ResponsesReply(stall=True)
    patch = _PATCH_RE.search(text)
    if patch and "apply_patch" in tools:
        body_text = patch_text(patch.group(1), patch.group(2).strip())
        if tools["apply_patch"] == "custom":
            return ResponsesReply(tool_name="apply_patch", custom_input=body_text)
        return ResponsesReply(tool_name="apply_patch", arguments={"input": body_text})
    run = _RUN_RE.search(text)
    if run and tools:
        return _shell_call(tools, run.group(1).strip())
    return ResponsesReply(text=f"reply to: {text}")


def _usage(body: dict[str, Any], output: Any) -> dict[str, Any]:
    """Usage in the Responses shape; numbers are deterministic in the request size."""
    prompt = max(1, len(json.dumps(body.get("input"))) // 4)
    completion = max(1, len(json.dumps(output)) // 4)
    cached = prompt // 2
    return {
        "input_tokens": prompt,
        "input_tokens_details": {"cached_tokens": cached},
        "output_tokens": completion,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": prompt + completion,
    }


def _item(reply: ResponsesReply) -> dict[str, Any]:
    if reply.compaction is not None:
        return {
            "type": "compaction",
            "id": _new_id("cmp_fake"),
            "encrypted_content": reply.compaction,
        }
    if reply.tool_name and reply.custom_input is not None:
        return {
            "type": "custom_tool_call",
            "id": _new_id("ctc_fake"),
            "status": "completed",
            "call_id": _new_id("call_fake"),
            "name": reply.tool_name,
            "input": reply.custom_input,
        }
    if reply.tool_name:
        return {
            "type": "function_call",
            "id": _new_id("fc_fake"),
            "status": "completed",
            "call_id": _new_id("call_fake"),
            "name": reply.tool_name,
            "arguments": json.dumps(reply.arguments),
        }
    return {
        "type": "message",
        "id": _new_id("msg_fake"),
        "status": "completed",
        "role": "assistant",
        "content": [{"type": "output_text", "text": reply.text, "annotations": []}],
    }


def events(body: dict[str, Any], reply: ResponsesReply) -> Iterator[dict[str, Any]]:
    """The SSE events of one streamed response, in the Responses API's order.

    A stalled reply yields only `response.created`; the server then holds the
    stream open.
    """
    response_id = _new_id("resp_fake")
    base = {
        "id": response_id,
        "object": "response",
        "created_at": int(time.time()),
        "model": body.get("model", "fake-model"),
        "status": "in_progress",
        "output": [],
    }
    seq = itertools.count()
    yield {"type": "response.created", "sequence_number": next(seq), "response": base}
    if reply.stall:
        return
    item = _item(reply)
    pending = dict(item, status="in_progress")
    if item["type"] == "message":
        pending["content"] = []
    elif item["type"] == "function_call":
        pending["arguments"] = ""
    elif item["type"] == "custom_tool_call":
        pending["input"] = ""
    yield {
        "type": "response.output_item.added",
        "sequence_number": next(seq),
        "output_index": 0,
        "item": pending,
    }
    if item["type"] == "message":
        text = reply.text
        yield {
            "type": "response.content_part.added",
            "sequence_number": next(seq),
            "item_id": item["id"],
            "output_index": 0,
            "content_index": 0,
            "part": {"type": "output_text", "text": "", "annotations": []},
        }
        for i in range(0, max(len(text), 1), 16):
            yield {
                "type": "response.output_text.delta",
                "sequence_number": next(seq),
                "item_id": item["id"],
                "output_index": 0,
                "content_index": 0,
                "delta": text[i : i + 16],
            }
        yield {
            "type": "response.output_text.done",
            "sequence_number": next(seq),
            "item_id": item["id"],
            "output_index": 0,
            "content_index": 0,
            "text": text,
        }
    elif item["type"] == "function_call":
        yield {
            "type": "response.function_call_arguments.delta",
            "sequence_number": next(seq),
            "item_id": item["id"],
            "output_index": 0,
            "delta": item["arguments"],
        }
        yield {
            "type": "response.function_call_arguments.done",
            "sequence_number": next(seq),
            "item_id": item["id"],
            "output_index": 0,
            "arguments": item["arguments"],
        }
    elif item["type"] == "custom_tool_call":
        yield {
            "type": "response.custom_tool_call_input.delta",
            "sequence_number": next(seq),
            "item_id": item["id"],
            "output_index": 0,
            "delta": item["input"],
        }
        yield {
            "type": "response.custom_tool_call_input.done",
            "sequence_number": next(seq),
            "item_id": item["id"],
            "output_index": 0,
            "input": item["input"],
        }
    yield {
        "type": "response.output_item.done",
        "sequence_number": next(seq),
        "output_index": 0,
        "item": item,
    }
    done = dict(base, status="completed", output=[item], usage=_usage(body, item))
    yield {"type": "response.completed", "sequence_number": next(seq), "response": done}
