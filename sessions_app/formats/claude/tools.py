"""Claude Code's tool results and compaction records: their text and images, how a
shell command ended, what a compaction says about itself; and where a subagent's
messages lie in the session's own file. Pure Python."""

from __future__ import annotations

import re
from typing import Any

from ..agent import ToolOutcome
from .records import content_blocks, image_of


def tool_results(data: dict[str, Any]) -> list[ToolOutcome]:
    """The `tool_result` blocks of a user record, with the record's `toolUseResult`."""
    details = data.get("toolUseResult")
    outcomes: list[ToolOutcome] = []
    for block in content_blocks(data):
        if block.get("type") != "tool_result":
            continue
        text, images = _result_content(block.get("content"))
        call_id = str(block.get("tool_use_id") or "")
        failed = block.get("is_error") is True
        exit = _shell_exit(details, text, failed)
        outcomes.append(ToolOutcome(call_id, text, failed, images, details, exit))
    return outcomes


def compaction_of(data: dict[str, Any]) -> str:
    """What started a compaction and how many tokens the context held before it."""
    meta = data.get("compactMetadata")
    if not isinstance(meta, dict):
        return ""
    said = []
    trigger = meta.get("trigger")
    if isinstance(trigger, str) and trigger:
        said.append("automatically" if trigger == "auto" else trigger[:20])
    tokens = meta.get("preTokens")
    if isinstance(tokens, int) and not isinstance(tokens, bool) and tokens >= 0:
        said.append(f"{tokens:,} tokens before")
    return " · ".join(said)


EXIT_CODE_RE = re.compile(r"^(?:Error: )?Exit code (\d{1,3})\b")


def _shell_exit(details: Any, text: str, failed: bool) -> str | None:
    """How a Bash call ended: a failed command's output starts "Exit code N" (its
    `toolUseResult` is then that error text); a finished one keeps stdout, stderr and
    whether it was interrupted."""
    found = EXIT_CODE_RE.match(text)
    if found and failed:
        return found.group(1)
    if not isinstance(details, dict) or not {"stdout", "stderr"} <= details.keys():
        return None
    if details.get("interrupted") is True:
        return "interrupted"
    return "failed" if failed else "0"


def _result_content(content: Any) -> tuple[str, tuple[tuple[str, str], ...]]:
    if isinstance(content, str):
        return content, ()
    texts: list[str] = []
    images: list[tuple[str, str]] = []
    if isinstance(content, list):
        for block in content:
            if not isinstance(block, dict):
                continue
            if isinstance(block.get("text"), str):
                texts.append(block["text"])
            image = image_of(block)
            if image:
                images.append(image)
    return "\n".join(texts), tuple(images)


def subagent_step(data: dict[str, Any], call_id: str) -> dict[str, Any] | None:
    """The subagent's record an `agent_progress` line carries for the Task call `call_id`."""
    if not call_id or data.get("parentToolUseID") != call_id:
        return None
    progress = data.get("data")
    if not isinstance(progress, dict) or progress.get("type") != "agent_progress":
        return None
    step = progress.get("message")
    if not isinstance(step, dict) or not isinstance(step.get("message"), dict):
        return None
    return step


def subagent_prompt(call_input: dict[str, Any]) -> str:
    """The prompt a Task (or Agent) call gave its subagent."""
    prompt = call_input.get("prompt")
    return prompt if isinstance(prompt, str) else ""
