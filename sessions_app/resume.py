"""How to carry on in the real CLI: the exact command for a session, or a fresh start."""

from __future__ import annotations

import shlex

from .formats import agent_for
from .models import Session


def _cli(session: Session) -> str:
    return agent_for(session.agent).cli


def _in_folder(session: Session, command: str) -> str:
    if not session.cwd:
        return command
    folder = shlex.quote(session.cwd)
    # A folder whose name starts with "-" would be read by cd as an option.
    return f"cd {'-- ' if session.cwd.startswith('-') else ''}{folder} && {command}"


def resume_command(session: Session) -> str:
    """`cd <cwd> && claude --resume <id>` (or `qwen --resume <id>`), shell-quoted."""
    return _in_folder(session, f"{_cli(session)} --resume {session.session_id}")


def fresh_command(session: Session) -> str:
    """`cd <cwd> && claude` (or `qwen`): a new session in the folder `session` ran in."""
    return _in_folder(session, _cli(session))
