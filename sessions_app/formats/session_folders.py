"""The folder a session owns beside its file, pure: where its CLI keeps what belongs to the
session besides its lines, and which files in it are sessions of their own.

Claude Code: `<project>/<session id>/` holds `subagents/agent-<id>.jsonl` (subagent
transcripts) with their `agent-<id>.meta.json`, `custom-title.json` (the name `/rename` or
`/branch` gave it) and `tool-results/` (tool outputs too large for the transcript, which the
transcript points at). Gemini CLI: `chats/<session id>/<agent id>.jsonl`, its sub-agents'
chats. Qwen Code and Codex CLI keep no such folder.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from .agent import Agent


def keeps_session_folders(agent: Agent) -> bool:
    """Whether the CLI keeps a folder beside a session's file for it."""
    return agent.subagent_files or agent.subagent_folders


def session_folder(agent: Agent, path: Path, session_id: str) -> Path | None:
    """The folder session `session_id`, whose file is at `path`, owns; None: its CLI has none."""
    return path.parent / session_id if keeps_session_folders(agent) else None


def is_session_in_folder(agent: Agent, relative: PurePosixPath) -> bool:
    """Whether the file at `relative` in a session's folder is a session of its own (a
    subagent's transcript: imported, and archived, as one), by the layout discovery reads."""
    parts = relative.parts
    if agent.subagent_files and len(parts) == 2 and parts[0] == "subagents":
        return parts[1].startswith("agent-") and parts[1].endswith(".jsonl")
    return agent.subagent_folders and len(parts) == 1 and parts[0].endswith(".jsonl")
