"""A project's checkpoints for its page: what the CLI keeps beside its sessions (no sessions)."""

from __future__ import annotations

from pathlib import Path

from ..formats import agent_for
from ..formats.checkpoints import Checkpoint
from ..models import Project

SHOWN = 50  # the newest; the page says how many more there are


def project_checkpoints(project: Project) -> tuple[list[Checkpoint], int]:
    """The newest checkpoints of the project's folder on this machine, and how many in all
    (none for a CLI that keeps none, or a project pushed from another machine)."""
    read = agent_for(project.agent).checkpoints
    if read is None or project.namespace:
        return [], 0
    found = read(Path(project.folder))
    return found[:SHOWN], len(found)
