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

from ..agent import AssistantPart, ToolOutcome

SHELL_TOOLS = frozenset({"shell", "shell_command", "exec_command", "container.exec", "local_shell"})
PLAN_STATUSES = {"pending": "pending", "in_progress": "in_progress", "completed": "completed"}
EXIT_RE = re.compile(r"^(?:Exit code|Process exited with code):? (-?\d+)", re.M)
PATCH_FILE_RE = re.compile(r"^\*\*\* (Add|Update|Delete) File: (.+)$", re.M)
PATCH_COMMANDS = ("apply_patch", "applypatch")
BEGIN_PATCH, END_PATCH = "*** Begin Patch", "*** End Patch"
PATCH_SCAN = 2_000_000  # characters of a patch searched for the files it names


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


def patch_input(patch: str) -> dict[str, Any]:
    """An `apply_patch` patch as an edit's input: the files it names, and the patch itself
    (the page draws one diff per file from it)."""
    files = [m.group(2).strip() for m in PATCH_FILE_RE.finditer(patch[:PATCH_SCAN])]
    return {"path": ", ".join(files), "patch": patch}


def shell_patch(command: Any) -> str | None:
    """The patch a shell call hands to `apply_patch` (`["apply_patch", patch]`, or a
    heredoc in a shell script), else None."""
    if isinstance(command, list) and len(command) == 2 and command[0] in PATCH_COMMANDS:
        return command[1] if isinstance(command[1], str) else None
    line = _command_line(command)
    if line.lstrip().startswith(PATCH_COMMANDS) and BEGIN_PATCH in line:
        start = line.index(BEGIN_PATCH)
        end = line.find(END_PATCH, start)
        return line[start : end + len(END_PATCH) if end >= 0 else len(line)]
    return None


def _edit(call_id: str, patch: str) -> AssistantPart:
    # "edit" is how the page knows a call that changed files: shown as a diff per file.
    return AssistantPart("tool", call_id=call_id, name="edit", input=patch_input(patch))


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
        if name in PATCH_COMMANDS and isinstance(args.get("input") or args.get("patch"), str):
            return _edit(call_id, args.get("input") or args["patch"])  # the legacy tool
        if name in SHELL_TOOLS:
            patch = shell_patch(args.get("command") or args.get("cmd"))
            if patch is not None:
                return _edit(call_id, patch)
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
        if name in PATCH_COMMANDS:
            return _edit(call_id, text)
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
