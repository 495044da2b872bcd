"""Finding session files under the configured roots (no database).

Nothing under a root is followed through a link, and only regular files are
taken: a link could lead outside the root, and a FIFO would hang the import.
Both are skipped with a message in the problems list.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ...formats import (
    Agent,
    agents,
    dated_root_agent,
    flat_layout_agent,
    is_session_id,
    legacy_root_agent,
)
from ..files import stale_temp_files_remove
from ..roots import file_kind, resolve_root

AGENT_FILE_RE = re.compile(r"^agent-[A-Za-z0-9_-]+\.jsonl\Z")


@dataclass(frozen=True, slots=True)
class SessionFile:
    """A file that holds one session, or one subagent transcript of a session."""

    path: Path
    agent: str
    root: Path
    project_folder: Path
    session_id: str | None  # from the file name; None for subagent files
    owner_session_id: str | None = None  # known from the layout for `<id>/subagents/`
    archived: bool = False  # under the CLI's archive root (Codex's `archived_sessions/`)

    @property
    def is_subagent(self) -> bool:
        return self.session_id is None


class RootError(Exception):
    """A configured root that cannot be scanned."""


def discover(root: Path) -> tuple[list[SessionFile], list[str], list[Path]]:
    """Every session file under `root`, a message for each thing skipped, and the
    `*.jsonl` files in session folders whose name is no session id (left out)."""
    # The root itself is named by the operator, so a link there is followed.
    root = resolve_root(root)
    if not root.exists():
        raise RootError(f"{root}: session root does not exist")
    if not root.is_dir():
        raise RootError(f"{root}: session root is not a folder")
    files: list[SessionFile] = []
    problems: list[str] = []
    misnamed: list[Path] = []
    dated = dated_root_agent(root)
    if dated is not None:
        # Codex: session files in dated folders, their project named inside each file.
        files.extend(_dated_files(root, dated, problems, misnamed))
        return files, problems, misnamed
    # An older release's root (`~/.qwen/tmp`) holds other things beside projects.
    only = legacy_root_agent(root)
    try:
        entries = _entries(root)
    except OSError as exc:
        raise RootError(f"{root}: cannot list folder ({exc.strerror})") from None
    for entry in entries:
        if entry.is_symlink():
            problems.append(_link_skipped(entry.path))
        elif entry.is_dir(follow_symlinks=False):
            folder = root / entry.name
            try:
                files.extend(_project_files(root, folder, problems, misnamed, only))
            except OSError as exc:
                problems.append(f"{folder}: cannot list folder ({exc.strerror})")
    return files, problems, misnamed


def _entries(folder: Path) -> list[os.DirEntry[str]]:
    with os.scandir(folder) as it:
        return sorted(it, key=lambda e: e.name)


def _link_skipped(path: str | Path) -> str:
    return f"{path}: skipped, a symbolic link (links are never followed)"


def _real_folder(path: Path, problems: list[str]) -> bool:
    """Whether `path` is a folder itself; a link to one is reported and refused."""
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return False
    if stat.S_ISLNK(mode):
        problems.append(_link_skipped(path))
        return False
    return stat.S_ISDIR(mode)


def _jsonl_files(folder: Path, problems: list[str], prefix: str = "") -> Iterator[Path]:
    """The regular `<prefix>*.jsonl` files of `folder`; links and FIFOs are reported."""
    for entry in _entries(folder):
        name = entry.name
        if not (name.startswith(prefix) and name.endswith(".jsonl")):
            continue
        path = folder / name
        try:
            mode = entry.stat(follow_symlinks=False).st_mode
        except OSError:
            continue  # gone since the listing
        if _regular(path, mode, problems):
            yield path


def _regular(path: Path, mode: int, problems: list[str]) -> bool:
    """Whether `path` (of `mode`, from lstat) is a regular file; a link or a FIFO is reported."""
    if stat.S_ISLNK(mode):
        problems.append(_link_skipped(path))
    elif not stat.S_ISREG(mode):
        problems.append(f"{path}: skipped, not a regular file ({file_kind(mode)})")
    else:
        return True
    return False


def _project_agent(folder: Path, problems: list[str]) -> Agent | None:
    """The agent whose layout `folder` has (Qwen Code's `chats/`, else Claude Code's).

    None when the agent's sessions folder is a link: that project's sessions live
    elsewhere, and nothing of it is read.
    """
    # An agent whose files have a name of their own (Gemini CLI's `session-*`) claims a
    # sessions folder holding such a file before an agent sharing its folder's name.
    for agent in sorted(agents(), key=lambda a: not a.file_prefix):
        if not agent.sessions_subfolder:
            continue
        sessions = agent.sessions_folder(folder)
        if os.path.islink(sessions):
            problems.append(_link_skipped(sessions))
            return None
        if not os.path.isdir(sessions):
            continue
        if agent.file_prefix and not _holds_prefixed(sessions, agent.file_prefix):
            continue
        return agent
    return flat_layout_agent()


def _holds_prefixed(folder: Path, prefix: str) -> bool:
    """Whether `folder` holds a `<prefix>*.jsonl` file."""
    try:
        return any(n.startswith(prefix) and n.endswith(".jsonl") for n in os.listdir(folder))
    except OSError:
        return False


def _project_files(
    root: Path, folder: Path, problems: list[str], misnamed: list[Path], only: Agent | None = None
) -> Iterator[SessionFile]:
    if only is None:
        agent = _project_agent(folder, problems)
    elif _real_folder(only.sessions_folder(folder), problems):
        agent = only
    else:
        return  # not a project of that agent: its other folders are none of ours
    if agent is None:
        return
    sessions = agent.sessions_folder(folder)
    for stale in stale_temp_files_remove(sessions):
        problems.append(f"{stale}: removed, left over by an interrupted fork")
    for path in _jsonl_files(sessions, problems):
        if (found := _session_file(root, folder, agent, path)) is not None:
            yield found
        else:
            misnamed.append(path)
    if agent.subagent_folders:  # `chats/<session id>/<agent id>.jsonl` (Gemini CLI)
        for entry in _entries(sessions):
            owner, inner = entry.name, sessions / entry.name
            if is_session_id(owner) and _real_folder(inner, problems):
                for path in _jsonl_files(inner, problems):
                    yield SessionFile(path, agent.name, root, folder, None, owner.lower())
    if not agent.subagent_files:
        return
    for entry in _entries(folder):
        if not is_session_id(entry.name):
            continue
        if entry.is_symlink():
            problems.append(_link_skipped(entry.path))
            continue
        subagents = folder / entry.name / "subagents"
        if entry.is_dir(follow_symlinks=False) and _real_folder(subagents, problems):
            for path in _jsonl_files(subagents, problems, prefix="agent-"):
                yield SessionFile(path, agent.name, root, folder, None, owner_session_id=entry.name)


def _session_file(root: Path, folder: Path, agent: Agent, path: Path) -> SessionFile | None:
    """The `*.jsonl` file `path` in the sessions folder of `folder`; None: no session id."""
    if agent.subagent_files and AGENT_FILE_RE.match(path.name):
        # The older layout: subagent transcripts beside the session files.
        return SessionFile(path, agent.name, root, folder, None)
    if agent.head_session_id is not None:
        # The name holds part of the id (Gemini CLI): the first line names it.
        session_id = agent.head_session_id(path)
        return SessionFile(path, agent.name, root, folder, session_id) if session_id else None
    if is_session_id(path.stem):
        return SessionFile(path, agent.name, root, folder, path.stem.lower())
    return None


# A dated layout's folders: a year, a month, a day.
DATED_FOLDER_RE = re.compile(r"^[0-9]{2,4}\Z")  # ASCII, in full
DATED_DEPTH = 3
HEAD_LIMIT = 256 * 1024  # the first line (session meta) is read for the project's folder
HEAD_LINES = 8  # lines read for a cwd when the first names none (before Codex's envelope)
WINDOWS_DRIVE_RE = re.compile(r"^[a-z]:[\\/]")


def _dated_files(
    root: Path, agent: Agent, problems: list[str], misnamed: list[Path], depth: int = 0
) -> Iterator[SessionFile]:
    """The session files of `agent` under `root`, in `YYYY/MM/DD/` folders or at the top."""
    folder = root
    stack = [(root, 0)]
    while stack:
        folder, depth = stack.pop()
        try:
            entries = _entries(folder)
        except OSError as exc:
            problems.append(f"{folder}: cannot list folder ({exc.strerror})")
            continue
        for entry in entries:
            path = folder / entry.name
            if entry.is_symlink():
                problems.append(_link_skipped(path))
            elif (
                entry.is_dir(follow_symlinks=False)
                and depth < DATED_DEPTH
                and DATED_FOLDER_RE.match(entry.name)
            ):
                stack.append((path, depth + 1))
        for path in _jsonl_files(folder, problems):
            if (found := _dated_file(root, agent, path)) is not None:
                yield found
            else:
                misnamed.append(path)


def _dated_file(root: Path, agent: Agent, path: Path) -> SessionFile | None:
    """The session file `path` of a dated layout; None: its name is no session file's."""
    session_id = agent.session_id_of(path)
    if session_id is None:
        return None
    archived = bool(agent.archive_root) and root.name == agent.archive_root
    project = root / agent.project_folder_name(_head_cwd(agent, path) or "unknown")
    return SessionFile(path, agent.name, root, project, session_id, archived=archived)


def _head_cwd(agent: Agent, path: Path) -> str | None:
    """The working folder a session file names in its first lines, if it names one (a Codex
    rollout from before the envelope names it only in its `<environment_context>`)."""
    try:
        with open(path, "rb", opener=_no_follow) as f:
            for _ in range(HEAD_LINES):
                head = f.readline(HEAD_LIMIT)
                if not head:
                    return None
                if cwd := agent.parse_line(head).cwd:
                    return _drive_upper(cwd)
    except OSError:
        return None
    return None


def _drive_upper(cwd: str) -> str:
    """`c:\\x` as `C:\\x`: Windows folders whose drive letter an IDE wrote in lower case are
    the same project as those a shell wrote in upper case."""
    return cwd[0].upper() + cwd[1:] if WINDOWS_DRIVE_RE.match(cwd) else cwd


def _no_follow(path: str, flags: int) -> int:
    return os.open(path, flags | os.O_NOFOLLOW)
