"""Codex tool calls shown the way the page shows the other CLIs' tools, pure.

A shell call becomes `{"command": "<the command line>"}` (shown as `$ command`, with its
exit code from the output), `apply_patch` an edit (shown as a diff), `update_plan` a todo
list (shown as a checklist), a web search its query.
"""

from __future__ import annotations

import re
import shlex
from typing import Any

import orjson

from .agent import AssistantPart, ToolOutcome

SHELL_TOOLS = frozenset({"shell", "shell_command", "exec_command", "container.exec", "local_shell"})
PLAN_STATUSES = {"pending": "pending", "in_progress": "in_progress", "completed": "completed"}
EXIT_RE = re.compile(r"^(?:Exit code|Process exited with code):? (-?\d+)", re.M)
PATCH_FILE_RE = re.compile(r"^\*\*\* (Add|Update|Delete) File: (.+)$")


def _arguments(item: dict[str, Any]) -> dict[str, Any]:
    """A function call's arguments: a JSON string (or, in some releases, an object)."""
    args = item.get("arguments")
    if isinstance(args, str):
        try:
            args = orjson.loads(args)
        except orjson.JSONDecodeError:
            return {"arguments": args}
    return args if isinstance(args, dict) else {}


def _command_line(command: Any) -> str:
    """`["bash", "-lc", "ls -la"]` as the user reads it: the script a shell ran, else joined."""
    if isinstance(command, str):
        return command
    if not isinstance(command, list) or not all(isinstance(c, str) for c in command):
        return ""
    if len(command) == 3 and command[1] in ("-lc", "-c") and command[0].endswith("sh"):
        return command[2]
    return shlex.join(command)


def patch_edit(patch: str) -> dict[str, Any]:
    """An `apply_patch` patch as an edit: the files it names, their old and new lines."""
    files: list[str] = []
    old: list[str] = []
    new: list[str] = []
    for line in patch.splitlines():
        found = PATCH_FILE_RE.match(line)
        if found:
            files.append(found.group(2).strip())
            if len(files) > 1:
                old.append(f"--- {files[-1]}")
                new.append(f"+++ {files[-1]}")
        elif line.startswith("*** ") or line.startswith("@@"):
            continue
        elif line.startswith("-"):
            old.append(line[1:])
        elif line.startswith("+"):
            new.append(line[1:])
        elif line.startswith(" "):
            old.append(line[1:])
            new.append(line[1:])
    return {
        "path": ", ".join(files),
        "old_string": "\n".join(old),
        "new_string": "\n".join(new),
    }


def _action(item: dict[str, Any]) -> dict[str, Any]:
    """A local shell or web search call's `action` object ({} when it has none)."""
    action = item.get("action")
    return action if isinstance(action, dict) else {}


def data_image(block: dict[str, Any]) -> tuple[str, str] | None:
    """(media type, base64 data) of an `input_image` block holding a data URL."""
    url = block.get("image_url") if block.get("type") == "input_image" else None
    if isinstance(url, str) and url.startswith("data:") and ";base64," in url[:100]:
        head, _, payload = url.partition(";base64,")
        return head.removeprefix("data:"), payload
    return None


def call_part(item: dict[str, Any]) -> AssistantPart | None:
    """The tool call a response item makes, shaped for the page; None when it is none."""
    item_type = item.get("type")
    call_id = str(item.get("call_id") or item.get("id") or "")
    if item_type == "function_call":
        name = str(item.get("name") or "tool")
        args = _arguments(item)
        if name in SHELL_TOOLS:
            line = _command_line(args.get("command") or args.get("cmd"))
            shown = {"command": line, **{k: v for k, v in args.items() if k != "command"}}
            return AssistantPart("tool", call_id=call_id, name=name, input=shown)
        if name == "update_plan" and isinstance(args.get("plan"), list):
            todos = [
                {"content": step.get("step"), "status": str(step.get("status") or "pending")}
                for step in args["plan"]
                if isinstance(step, dict) and isinstance(step.get("step"), str)
            ]
            return AssistantPart("tool", call_id=call_id, name=name, input={"todos": todos})
        return AssistantPart("tool", call_id=call_id, name=name, input=args)
    if item_type == "custom_tool_call":
        name = str(item.get("name") or "tool")
        text = item.get("input")
        text = text if isinstance(text, str) else ""
        if name == "apply_patch":
            # "edit" is how the page knows a call that changed files: shown as a diff.
            return AssistantPart("tool", call_id=call_id, name="edit", input=patch_edit(text))
        return AssistantPart("tool", call_id=call_id, name=name, input={"input": text})
    if item_type == "local_shell_call":
        action = _action(item)
        line = _command_line(action.get("command"))
        return AssistantPart("tool", call_id=call_id, name="shell", input={"command": line})
    if item_type == "web_search_call":
        action = _action(item)
        query = action.get("query")
        shown = {"query": query} if isinstance(query, str) else dict(action)
        return AssistantPart("tool", call_id=call_id, name="web_search", input=shown)
    return None


def outcome_of(item: dict[str, Any]) -> ToolOutcome | None:
    """A call's output: its text, and for a shell command how it ended."""
    if item.get("type") not in ("function_call_output", "custom_tool_call_output"):
        return None
    call_id = str(item.get("call_id") or "")
    output = item.get("output")
    exit_code: str | None = None
    if isinstance(output, dict):
        # Some releases write {content, success} unencoded.
        text = str(output.get("content") or "")
        return ToolOutcome(call_id, text, output.get("success") is False)
    if isinstance(output, list):
        # 0.144-0.146 `exec`: a list of content items ({type: "input_text", text}, images).
        texts = [
            p["text"] for p in output if isinstance(p, dict) and isinstance(p.get("text"), str)
        ]
        text = "".join(texts)
        found = EXIT_RE.search(text[:500])
        exit_code = found.group(1) if found else None
        images = tuple(i for p in output if isinstance(p, dict) and (i := data_image(p)))
        return ToolOutcome(call_id, text, exit_code not in (None, "0"), images, exit=exit_code)
    text = output if isinstance(output, str) else ""
    if text.startswith("{"):
        try:
            decoded = orjson.loads(text)
        except orjson.JSONDecodeError:
            decoded = None
        # 0.3x-0.4x: {"output": ..., "metadata": {"exit_code": 0, "duration_seconds": ...}}
        if isinstance(decoded, dict) and isinstance(decoded.get("output"), str):
            text = decoded["output"]
            meta = decoded.get("metadata")
            code = meta.get("exit_code") if isinstance(meta, dict) else None
            if isinstance(code, int) and not isinstance(code, bool):
                exit_code = str(code)
    if exit_code is None:
        found = EXIT_RE.search(text[:500])
        exit_code = found.group(1) if found else None
    failed = exit_code is not None and exit_code != "0"
    return ToolOutcome(call_id, text, failed, exit=exit_code)
