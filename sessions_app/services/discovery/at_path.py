"""Finding the session file at one path, by the rules `discovery.discover` finds them all.

The watcher is told which paths changed; this says what a whole scan would have found
at each, without listing anything else: the same links refused, the same FIFOs
reported, the same names left out, the same agent by the project's layout.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ...formats import Agent, dated_root_agent, is_session_id, legacy_root_agent
from ..roots import resolve_root
from . import (
    DATED_DEPTH,
    DATED_FOLDER_RE,
    SessionFile,
    _dated_file,
    _dated_files,
    _project_agent,
    _project_files,
    _real_folder,
    _regular,
    _session_file,
    discover,
)

Found = tuple[list[SessionFile], list[str], list[Path]]


def discover_path(root: Path, path: Path) -> Found:
    """What `discover(root)` finds at `path` alone: the session file there, or every
    session file of the project when `path` is a folder in one (a new project, a folder
    moved in); nothing when `path` lies outside `root` or is gone."""
    given = Path(root)
    root = resolve_root(given)
    try:
        # The watcher names paths under the root as configured, which may be a link.
        parts = path.relative_to(given if path.is_relative_to(given) else root).parts
    except ValueError:
        return [], [], []
    if not parts:
        return discover(root)
    path = root.joinpath(*parts)
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return [], [], []  # gone: a whole scan would not find it either
    dated = dated_root_agent(root)
    if dated is not None:
        return _dated_path(root, dated, path, parts, mode)
    return _project_path(root, path, parts, mode)


def _project_path(root: Path, path: Path, parts: tuple[str, ...], mode: int) -> Found:
    """At `path` in a root of project folders (Claude Code's and Qwen Code's layouts)."""
    files: list[SessionFile] = []
    problems: list[str] = []
    misnamed: list[Path] = []
    folder = root / parts[0]
    if not _real_folder(folder, problems):
        return files, problems, misnamed  # a file beside the projects, or a link (said)
    only = legacy_root_agent(root)
    if stat.S_ISDIR(mode):
        files.extend(_project_files(root, folder, problems, misnamed, only))
        return files, problems, misnamed
    if len(parts) == 1 or not path.name.endswith(".jsonl"):
        return files, problems, misnamed
    agent: Agent | None
    if only is None:
        agent = _project_agent(folder, problems)
    else:
        agent = only if _real_folder(only.sessions_folder(folder), problems) else None
    if agent is None:
        return files, problems, misnamed
    inner = parts[1:]
    if path.parent == agent.sessions_folder(folder):
        if _regular(path, mode, problems):
            found = _session_file(root, folder, agent, path)
            files.extend([found] if found is not None else [])
            misnamed.extend([path] if found is None else [])
    elif (
        agent.subagent_folders
        and len(inner) == 3
        and inner[0] == agent.sessions_subfolder
        and is_session_id(inner[1])
        and _real_folder(path.parent, problems)
        and _regular(path, mode, problems)
    ):
        files.append(SessionFile(path, agent.name, root, folder, None, inner[1].lower()))
    elif (
        agent.subagent_files
        and len(inner) == 3
        and is_session_id(inner[0])
        and inner[1] == "subagents"
        and inner[2].startswith("agent-")
        and _real_folder(folder / inner[0], problems)
        and _real_folder(folder / inner[0] / "subagents", problems)
        and _regular(path, mode, problems)
    ):
        files.append(SessionFile(path, agent.name, root, folder, None, owner_session_id=inner[0]))
    return files, problems, misnamed


def _dated_path(root: Path, agent: Agent, path: Path, parts: tuple[str, ...], mode: int) -> Found:
    """At `path` in a dated root (Codex CLI's `YYYY/MM/DD/` folders)."""
    problems: list[str] = []
    misnamed: list[Path] = []
    if stat.S_ISDIR(mode):
        # A new day's folder, maybe with its first file already in it: a whole scan,
        # kept to what lies under the folder (once a day, not once a tick).
        files = [
            f for f in _dated_files(root, agent, problems, misnamed) if f.path.is_relative_to(path)
        ]
        inside = [p for p in problems if Path(p.split(":", 1)[0]).is_relative_to(path)]
        return files, inside, [p for p in misnamed if p.is_relative_to(path)]
    folders = parts[:-1]
    if (
        len(folders) > DATED_DEPTH
        or not path.name.endswith(".jsonl")
        or not all(DATED_FOLDER_RE.match(name) for name in folders)
        or not all(
            _real_folder(root.joinpath(*folders[: n + 1]), problems) for n in range(len(folders))
        )
        or not _regular(path, mode, problems)
    ):
        return [], problems, misnamed
    one = _dated_file(root, agent, path)
    return ([one], problems, misnamed) if one is not None else ([], problems, [path])
