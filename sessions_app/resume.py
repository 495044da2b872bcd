"""How to carry on in the real CLI: the exact command for a session, or a fresh start."""

from __future__ import annotations

import shlex
from pathlib import Path

from .formats import agent_for, legacy_root_agent
from .models import Session


def _cli(session: Session) -> str:
    return agent_for(session.agent).cli


def _resume(session: Session) -> str:
    agent = agent_for(session.agent)
    return f"{agent.cli} {agent.resume_word} {session.session_id}"


def _in_folder(session: Session, command: str) -> str:
    if not session.cwd:
        return command
    folder = shlex.quote(session.cwd)
    # A folder whose name starts with "-" would be read by cd as an option.
    return f"cd {'-- ' if session.cwd.startswith('-') else ''}{folder} && {command}"


# What stands for the command where there is none (`folder_unknown`).
NO_COMMAND = (
    "no command (the folder it ran in is not known, and its CLI resumes it only from there)"
)


def folder_unknown(session: Session) -> bool:
    """Whether its CLI finds a session by the folder it ran in (one folder of sessions per
    project: all but Codex), and that folder is unknown (an older Gemini CLI's hashed
    project folder): a resume command from anywhere else would not find it."""
    return not session.cwd and not session.agent_profile.sessions_root


def resume_command(session: Session) -> str:
    """`cd <cwd> && claude --resume <id>` (`qwen --resume <id>`, `codex resume <id>`), quoted;
    "" when no command would find it (`folder_unknown`)."""
    if folder_unknown(session):
        return ""
    return _in_folder(session, _resume(session))


def fresh_command(session: Session) -> str:
    """`cd <cwd> && claude` (or `qwen`): a new session in the folder `session` ran in."""
    return _in_folder(session, _cli(session))


def in_legacy_folder(session: Session) -> bool:
    """Whether the session lies in an older release's folder (`~/.qwen/tmp/<hash>/chats/`),
    which today's CLI no longer resumes from (Qwen Code 0.24 reads `~/.qwen/projects`)."""
    return legacy_root_agent(Path(session.project.root)) is not None
