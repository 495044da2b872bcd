"""Finding session files under the configured roots (no database)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ..formats import CLAUDE, QWEN, is_session_id
from .files import stale_temp_files_remove

AGENT_FILE_RE = re.compile(r"^agent-[A-Za-z0-9_-]+\.jsonl$")


@dataclass(frozen=True, slots=True)
class SessionFile:
    """A file that holds one session, or one subagent transcript of a session."""

    path: Path
    agent: str
    root: Path
    project_folder: Path
    session_id: str | None  # from the file name; None for subagent files
    owner_session_id: str | None = None  # known from the layout for `<id>/subagents/`

    @property
    def is_subagent(self) -> bool:
        return self.session_id is None


class RootError(Exception):
    """A configured root that cannot be scanned."""


def resolve_root(root: Path) -> Path:
    """Accept `~/.claude` as well as `~/.claude/projects`."""
    root = root.expanduser()
    if (root / "projects").is_dir() and root.name in (".claude", ".qwen"):
        return root / "projects"
    return root


def discover(root: Path) -> tuple[list[SessionFile], list[str]]:
    """Every session file under `root`, and a message for each thing skipped."""
    root = resolve_root(root)
    if not root.exists():
        raise RootError(f"{root}: session root does not exist")
    if not root.is_dir():
        raise RootError(f"{root}: session root is not a folder")
    files: list[SessionFile] = []
    problems: list[str] = []
    try:
        folders = sorted(p for p in root.iterdir() if p.is_dir())
    except OSError as exc:
        raise RootError(f"{root}: cannot list folder ({exc.strerror})") from None
    for folder in folders:
        try:
            files.extend(_project_files(root, folder, problems))
        except OSError as exc:
            problems.append(f"{folder}: cannot list folder ({exc.strerror})")
    return files, problems


def _project_files(root: Path, folder: Path, problems: list[str]) -> Iterator[SessionFile]:
    chats = folder / "chats"
    for stale in stale_temp_files_remove(chats if chats.is_dir() else folder):
        problems.append(f"{stale}: removed, left over by an interrupted fork")
    if chats.is_dir():
        for path in sorted(chats.glob("*.jsonl")):
            yield from _session_or_problem(path, QWEN, root, folder, problems)
        return
    for path in sorted(folder.glob("*.jsonl")):
        if AGENT_FILE_RE.match(path.name):
            # The older layout: subagent transcripts beside the session files.
            yield SessionFile(path, CLAUDE, root, folder, None)
        else:
            yield from _session_or_problem(path, CLAUDE, root, folder, problems)
    for path in sorted(folder.glob("*/subagents/agent-*.jsonl")):
        owner = path.parent.parent.name
        if is_session_id(owner):
            yield SessionFile(path, CLAUDE, root, folder, None, owner_session_id=owner)


def _session_or_problem(
    path: Path, agent: str, root: Path, folder: Path, problems: list[str]
) -> Iterator[SessionFile]:
    if not path.is_file():
        return
    if is_session_id(path.stem):
        yield SessionFile(path, agent, root, folder, path.stem.lower())
    else:
        problems.append(f"{path}: skipped, the file name is not a session id")
