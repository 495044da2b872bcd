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


def resume_command(session: Session) -> str:
    """`cd <cwd> && claude --resume <id>` (`qwen --resume <id>`, `codex resume <id>`), quoted."""
    return _in_folder(session, _resume(session))


def fresh_command(session: Session) -> str:
    """`cd <cwd> && claude` (or `qwen`): a new session in the folder `session` ran in."""
    return _in_folder(session, _cli(session))


def in_legacy_folder(session: Session) -> bool:
    """Whether the session lies in an older release's folder (`~/.qwen/tmp/<hash>/chats/`),
    which today's CLI no longer resumes from (Qwen Code 0.24 reads `~/.qwen/projects`)."""
    return legacy_root_agent(Path(session.project.root)) is not None
