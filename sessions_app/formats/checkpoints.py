"""What a CLI keeps beside its sessions that is no session, shown as what it is: the
interface's part for checkpoints (Gemini CLI's `/chat save` files and `/restore` points).
"""

from __future__ import annotations

from datetime import datetime
from typing import NamedTuple


class Checkpoint(NamedTuple):
    """One checkpoint file of a project folder, read to be listed (never imported)."""

    kind: str  # "saved" (the user saved the conversation) or "restore" (before a tool's edit)
    name: str  # what the CLI calls it: the tag, or the restore point's name
    path: str
    modified: datetime
    size: int
    # The user's prompts it holds, in order; None when it was not read (too big, or
    # not the shape the CLI writes).
    prompts: tuple[str, ...] | None
    # The command that takes it up in the CLI, e.g. `/chat resume <tag>`.
    command: str
    # What else there is to say of it (a restore point's tool and file), or "".
    about: str = ""
