"""What a machine may push: the session files under its roots that the include and exclude
lists let go, named by their path under the home folder; one id in two project folders said
once.

A file's project is its session's, as its page shows it once imported
(`formats.projects`: the first cwd its records name, else the folder its CLI recorded for
its project folder). A file whose project nobody can know goes only while every project
may go: with a list that narrows what goes, it stays (and a dry run says why).
"""

from __future__ import annotations

import dataclasses
import fnmatch
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from django.conf import settings

from ...formats import agent_for, agents
from ...formats.projects import file_project
from ..discovery import RootError, SessionFile, discover
from ..roots import open_regular
from .namespaces import BadHubPath, hub_folder, hub_path_check


@dataclass(frozen=True)
class Local:
    """A session file of this machine, and its name on the hub."""

    path: Path
    root: Path
    hub_path: str
    source: SessionFile
    project: str = ""  # its session's folder, for the include and exclude lists ("": unknown)


@dataclass
class PushReport:
    sent_files: list[str] = field(default_factory=list)
    up_to_date: int = 0
    bytes_sent: int = 0  # raw bytes
    wire_bytes: int = 0  # compressed
    left_out: list[str] = field(default_factory=list)  # "<path>: why", by the lists
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


def local_files(report: PushReport, only: Iterable[Path] | None = None) -> list[Local]:
    """This machine's session files (of `only`, when given) that the include and exclude
    lists let go, each with its project."""
    found = session_files(report)
    if only is not None:
        wanted = {Path(p) for p in only}
        found = [local for local in found if local.path in wanted]
    return let_go(found, report)


def session_files(report: PushReport) -> list[Local]:
    """Every session file under this machine's roots with its name on the hub; their
    projects not read yet (`let_go` reads them)."""
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
            relative = source.path.relative_to(source.root).as_posix()
            local = Local(source.path, source.root, f"{key}/{relative}", source)
            try:
                hub_path_check(local.hub_path)  # the hub's own rule: said before sending
            except BadHubPath as exc:
                report.problems.append(f"{local.path}: not pushed: {exc}")
                continue
            found.append(local)
    return found


def let_go(files: Iterable[Local], report: PushReport) -> list[Local]:
    """The files whose project the include and exclude lists let go, each with its
    project; the others go to `report.left_out` with the reason."""
    going: list[Local] = []
    for local in files:
        project = project_of(local.source)
        why = left_out_why(project)
        if why is None:
            going.append(dataclasses.replace(local, project=project))
        else:
            report.left_out.append(f"{local.path}: {why}")
    return going


def project_of(source: SessionFile) -> str:
    """The project of a session file as its page shows it; "" when nobody can know it."""
    try:
        with open_regular(source.path, root=source.root) as f:
            return file_project(agent_for(source.agent), f, source.path, source.project_folder)
    except OSError:
        return ""  # unread: not known (its push would fail as well)


def left_out_why(project: str) -> str | None:
    """Why the lists keep a file of `project` on this machine; None when it may go."""

    def matches(patterns: Iterable[str]) -> bool:
        return any(
            fnmatch.fnmatchcase(project, p) or fnmatch.fnmatchcase(project, p.rstrip("/") + "/*")
            for p in patterns
        )

    if not project:
        if "*" in settings.HUB_PROJECTS and not settings.HUB_EXCLUDE:
            return None  # every project may go: so may one nobody knows
        return (
            "its project cannot be known (no record names its folder, nor does its CLI "
            "for its project folder); not pushed while BRANCHBOARD_HUB_PROJECTS or "
            "BRANCHBOARD_HUB_EXCLUDE narrows what goes"
        )
    if matches(settings.HUB_EXCLUDE):
        return f"project {project} is excluded by BRANCHBOARD_HUB_EXCLUDE"
    if not matches(settings.HUB_PROJECTS):
        return f"project {project} is not in BRANCHBOARD_HUB_PROJECTS"
    return None


def twins(files: list[Local], report: PushReport) -> set[Path]:
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
