"""What a machine may push: the session files under its roots that the include and exclude
lists let go, named by their path under the home folder; one id in two project folders said
once.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import orjson
from django.conf import settings

from ...formats import agents
from ..discovery import RootError, SessionFile, discover
from ..roots import open_regular
from .namespaces import BadHubPath, hub_folder, hub_path_check

CWD_RE = re.compile(rb'"cwd"\s*:\s*"((?:[^"\\]|\\.)*)"')


@dataclass(frozen=True)
class Local:
    """A session file of this machine, and its name on the hub."""

    path: Path
    root: Path
    hub_path: str
    project: str  # its project's folder (the cwd), for the include and exclude lists


@dataclass
class PushReport:
    sent_files: list[str] = field(default_factory=list)
    up_to_date: int = 0
    bytes_sent: int = 0  # raw bytes
    wire_bytes: int = 0  # compressed
    left_out: list[str] = field(default_factory=list)  # by the include or exclude list
    problems: list[str] = field(default_factory=list)
    planned: list[tuple[str, str]] = field(default_factory=list)  # (what, path) on a dry run
    notes: list[str] = field(default_factory=list)  # what the user should know, not failures


def root_key(root: Path) -> str | None:
    """The name a configured root has on the hub (`.claude/projects`), None for a root
    that is none of the CLIs' own session folders."""
    real = root.resolve()
    for agent in agents():
        for folder in agent.root_folders:
            default = agent.home(os.environ, Path.home()) / folder
            if default.resolve() == real or (
                real.name == folder and real.parent.name == agent.home_folder
            ):
                return f"{agent.home_folder}/{folder}"
    return None


def local_root(key: str) -> Path | None:
    """Where this machine's CLI looks for the session folder named `key` on the hub."""
    for agent in agents():
        for folder in agent.root_folders:
            if key == f"{agent.home_folder}/{folder}":
                return agent.home(os.environ, Path.home()) / folder
    return None


def local_files(report: PushReport) -> list[Local]:
    """This machine's session files that may go, by the include and exclude lists."""
    found: list[Local] = []
    hub = hub_folder().resolve()
    for configured in settings.SESSION_ROOTS:
        root = Path(configured)
        if not root.exists() or root.resolve().is_relative_to(hub):
            continue
        key = root_key(root)
        if key is None:
            report.problems.append(f"{root}: not a CLI's own session folder; not pushed")
            continue
        try:
            files, problems, _ = discover(root)
        except RootError as exc:
            report.problems.append(str(exc))
            continue
        report.problems.extend(problems)
        for source in files:
            local = _local(source, key)
            try:
                hub_path_check(local.hub_path)  # the hub's own rule: said before sending
            except BadHubPath as exc:
                report.problems.append(f"{local.path}: not pushed: {exc}")
                continue
            if _may_go(local.project):
                found.append(local)
            else:
                report.left_out.append(str(local.path))
    return found


def _local(source: SessionFile, key: str) -> Local:
    relative = source.path.relative_to(source.root).as_posix()
    return Local(source.path, source.root, f"{key}/{relative}", _project_of(source))


def _project_of(source: SessionFile) -> str:
    """The folder the session ran in, from the first `cwd` its file names."""
    try:
        with open_regular(source.path, root=source.root) as f:
            head = f.read(1 << 16)
    except OSError:
        head = b""
    if match := CWD_RE.search(head):
        try:
            return str(orjson.loads(b'"' + match.group(1) + b'"'))
        except orjson.JSONDecodeError:
            pass
    return str(source.project_folder)


def _may_go(project: str) -> bool:
    def matches(patterns: Iterable[str]) -> bool:
        return any(
            fnmatch.fnmatchcase(project, p) or fnmatch.fnmatchcase(project, p.rstrip("/") + "/*")
            for p in patterns
        )

    return matches(settings.HUB_PROJECTS) and not matches(settings.HUB_EXCLUDE)


def _twins(files: list[Local], report: PushReport) -> set[Path]:
    """The files whose session id is also in another project folder of the same root: the
    hub shows one session per id and machine, so the others are kept there but not shown.
    One note per id says so."""
    by_id: dict[tuple[str, str], list[Local]] = {}
    for local in files:
        parts = PurePosixPath(local.hub_path).parts
        if len(parts) == 4:  # <cli home>/<root>/<project>/<id>.jsonl: a session, not a subagent
            by_id.setdefault((parts[0] + parts[1], local.path.stem), []).append(local)
    twins: set[Path] = set()
    for (_, session_id), same in by_id.items():
        if len(same) < 2:
            continue
        folders = ", ".join(str(local.path.parent) for local in same)
        report.notes.append(
            f"session {session_id} is in {len(same)} project folders on this machine "
            f"({folders}): the hub keeps every file but shows one session per id from a "
            "machine, the one it received first; rename or remove the copy you do not need "
            "to see the other"
        )
        twins.update(local.path for local in same)
    return twins
