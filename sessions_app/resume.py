"""How to carry on in the real CLI: the exact command for a session."""

from __future__ import annotations

import shlex

from .formats import QWEN
from .models import Session


def resume_command(session: Session) -> str:
    """`cd <cwd> && claude --resume <id>` (or `qwen --resume <id>`), shell-quoted."""
    cli = "qwen" if session.agent == QWEN else "claude"
    command = f"{cli} --resume {session.session_id}"
    return f"cd {shlex.quote(session.cwd)} && {command}" if session.cwd else command
