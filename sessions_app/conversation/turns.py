"""The one turn rule: which record starts a turn. Every count of turns goes through it."""

from __future__ import annotations

import re

from ..formats import COMMAND, PROMPT
from .nodes import Node

# Built-in Claude Code commands that never reach the model. A command the model
# answered (custom commands expand into a prompt) is a turn; these are not, even
# when the file lacks the `<local-command-stdout>` record that usually follows them.
LOCAL_COMMANDS = frozenset(
    [
        "add-dir",
        "agents",
        "bashes",
        "branch",
        "clear",
        "compact",
        "config",
        "context",
        "cost",
        "doctor",
        "exit",
        "export",
        "help",
        "hooks",
        "ide",
        "login",
        "logout",
        "mcp",
        "memory",
        "model",
        "output-style",
        "permissions",
        "plugin",
        "privacy-settings",
        "quit",
        "release-notes",
        "resume",
        "rewind",
        "stats",
        "status",
        "statusline",
        "terminal-setup",
        "theme",
        "upgrade",
        "usage",
        "vim",
    ]
)
COMMAND_NAME_RE = re.compile(r"<command-name>/?([^<\s]+)</command-name>")


def is_turn_start(node: Node, *, answered_locally: bool) -> bool:
    """Whether `node` starts a turn: a user prompt a human typed.

    The rule (docs/design.md, "One definition of a turn"): the record must be on the
    branch being numbered and not in a sidechain (the caller walks only that
    branch); the reader must have classified it as a prompt by its shape, which
    already excludes tool results, `isMeta` records, compaction summaries, local
    command output, interruption notices, task notifications, attachments and
    system records, and Qwen's mid-turn messages; and if it is a slash command it
    counts only when the model answered it, not when a built-in local command did.
    """
    if node.sidechain:
        return False
    if node.kind == PROMPT:
        return True
    if node.kind != COMMAND:
        return False
    if answered_locally:
        return False
    match = COMMAND_NAME_RE.search(node.text or "")
    return not (match and match.group(1) in LOCAL_COMMANDS)
