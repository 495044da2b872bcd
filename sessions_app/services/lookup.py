"""Finding the session a command means: by id, or by a file on disk (imported first)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from django.conf import settings

from ..formats import agents
from ..formats.documents import SESSION_SUFFIXES
from ..models import Session
from .branching import InvalidSessionId, OutsideRoots, UnknownSession, session_lookup
from .discovery import SessionFile
from .discovery.at_path import discover_path
from .importing import ImportReport, projects_refresh, session_file_import
from .roots import UnsafePath, check_inside, file_kind, resolve_root, roots_hint


def session_resolve(*, ref: str) -> Session:
    """The session with id `ref`, or the one in the .jsonl file at path `ref`."""
    if ref.endswith(".jsonl") or "/" in ref:
        return _session_from_file(Path(ref))
    return session_lookup(ref=ref)


def _session_from_file(path: Path) -> Session:
    path = path.expanduser().absolute()
    if not path.name.endswith(SESSION_SUFFIXES):
        raise InvalidSessionId(
            f"{path}: a session file's name ends in .jsonl (or .json, Gemini CLI's older "
            "one-document sessions)"
        )
    # A file outside the roots is refused: its folder would become a root, and the
    # fork would be written there.
    source = _source_under_roots(path) or _source_imported(path)
    if source is None:
        raise OutsideRoots(f"{path} is outside the session roots; {roots_hint()}")
    try:
        check_inside(source.path, source.root)
        mode = os.lstat(source.path).st_mode
    except UnsafePath as exc:
        raise OutsideRoots(str(exc)) from None
    except FileNotFoundError:
        raise UnknownSession(f"{path}: no such session file") from None
    except OSError as exc:
        raise UnknownSession(f"{path}: cannot read ({exc.strerror})") from None
    if not stat.S_ISREG(mode):
        raise UnknownSession(f"{path}: not a regular file ({file_kind(mode)})")
    report = ImportReport()
    session = session_file_import(source=source, report=report)
    if session is None:
        raise UnknownSession("; ".join(report.errors) or f"{path}: could not be imported")
    projects_refresh(project_ids=[session.project_id])
    return Session.objects.select_related("project").get(pk=session.pk)


def _source_under_roots(path: Path) -> SessionFile | None:
    """The file as discovery names it under the configured root that holds it (by the same
    rules a whole scan follows: every agent's layout and names, Codex's dated rollouts,
    Gemini CLI's `session-<minute>-<id[:8]>` names whose first line holds the id)."""
    # The folders are resolved, the file name is not: a link is refused, not followed.
    real = Path(os.path.realpath(path.parent)) / path.name
    for configured in settings.SESSION_ROOTS:
        root = resolve_root(Path(configured))
        real_root = Path(os.path.realpath(root))
        if not real.is_relative_to(real_root):
            continue
        target = root.joinpath(*real.relative_to(real_root).parts)
        if not os.path.lexists(target):
            raise UnknownSession(f"{path}: no such session file")
        files, problems, _ = discover_path(root, target)
        for found in files:
            if found.path == target and found.session_id is not None:
                return found
        if problems:
            raise UnknownSession("; ".join(problems))
        layouts = ", ".join(
            f"{a.session_file(Path('<project>'), '<id>')} for {a.label}" for a in agents()
        )
        raise InvalidSessionId(
            f"{path}: not a session file where a session file lives under the root {root} "
            f"({layouts})"
        )
    return None


def _source_imported(path: Path) -> SessionFile | None:
    """An already imported session's file, under the root it was imported from."""
    session = (
        Session.objects.filter(path=str(path), is_subagent=False).select_related("project").first()
    )
    if session is None:
        return None
    project = session.project
    return SessionFile(
        path, session.agent, Path(project.root), Path(project.folder), str(session.session_id)
    )
