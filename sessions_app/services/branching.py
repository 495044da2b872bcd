"""Branch, fork and rewind sessions, and undo a rewind.

Every new session is a new file beside its source, shaped like the CLI's own
branch, written atomically and exclusively, then imported with its lineage. The
source file is only ever changed by a rewind, and a Claude Code rewind first
saves the whole old file as a backup session.
"""

from __future__ import annotations

import hashlib
import os
import re
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import orjson
from django.conf import settings
from django.db import transaction

from ..formats import ASSISTANT, COMMAND, PROMPT, QWEN, TOOL_RESULT, collapse, is_session_id
from ..formats.writing import (
    claude_title_line,
    qwen_rewind_line,
    qwen_title_line,
    restamp,
    unstamp,
)
from ..models import Project, Record, Session
from .discovery import SessionFile
from .files import append_durably, create_exclusive, replace_atomically
from .importing import ImportReport, projects_refresh, session_file_import

FORK = "fork"
REWIND = "rewind"
DEFAULT_NAME = "Branched conversation"
# Bookkeeping that names records it belongs to; copied only if they are kept.
REFERRING_TYPES = frozenset({"file-history-snapshot", "summary"})
# Bookkeeping about the whole session, kept by a rewind wherever it sits.
SESSION_LEVEL_TYPES = frozenset({"custom-title", "agent-name", "mode", "permission-mode", "tag"})
# Never copied: a stale pointer at a leaf would steer the CLI's resume.
DROPPED_TYPES = frozenset({"last-prompt"})
BRANCH_SUFFIX_RE = re.compile(r" \(Branch(?: \d+)?\)$")


class BranchError(Exception):
    """A refused branch, fork or rewind; the message says what to do. Nothing was written."""

    status = 400


class UnknownSession(BranchError):
    status = 404


class InvalidSessionId(BranchError):
    status = 400


class InvalidTurn(BranchError):
    status = 400


class SourceChanged(BranchError):
    status = 409


class SessionBusy(BranchError):
    status = 409


class TargetExists(BranchError):
    status = 409


class NothingToUndo(BranchError):
    status = 409


class OutsideRoots(BranchError):
    status = 400


def session_lookup(*, ref: str) -> Session:
    """The listed session with id `ref`; ids are UUIDs, nothing else."""
    if not is_session_id(ref):
        raise InvalidSessionId(f"{ref!r} is not a session id (a UUID)")
    session = Session.objects.listed().filter(session_id=ref).select_related("project").first()
    if session is None:
        raise UnknownSession(f"no session {ref}; import it first (manage.py import_sessions)")
    return session


def session_fork(
    *,
    session: Session,
    turn: int | None = None,
    include_turn: bool = True,
    title: str | None = None,
) -> Session:
    """Copy turns 1..turn (1..turn-1 with include_turn=False; all without turn) to a new session."""
    _check_paths(session)
    if turn is None:
        if session.turn_count == 0:
            raise InvalidTurn(f"session {session.session_id} has no turns to branch")
        cut, kind = session.turn_count, Session.Kind.BRANCH
    else:
        _check_turn(session, turn, lowest=1 if include_turn else 2)
        cut = turn if include_turn else turn - 1
        kind = Session.Kind.FORK if include_turn else Session.Kind.FORK_BEFORE
    _check_unchanged(session)
    new_id = str(uuid.uuid4())
    target = Path(session.path).with_name(f"{new_id}.jsonl")
    with transaction.atomic():
        Project.objects.select_for_update().get(pk=session.project_id)
        chosen = _unique_title(session, title)
        try:
            with create_exclusive(target) as out:
                last_uuid = _write_kept(session, out, cut=cut, mode=FORK, new_id=new_id)
                out.write(_title_line(session, new_id, chosen, last_uuid))
                _check_unchanged(session)
        except FileExistsError:
            raise TargetExists(f"{target} already exists; nothing was written") from None
        try:
            return _register(session, target, new_id, kind=kind, turn=turn or cut)
        except BaseException:
            target.unlink(missing_ok=True)
            raise


def session_rewind(*, session: Session, turn: int) -> Session:
    """Rewind the session in place so that the CLI resumes after turn `turn - 1`."""
    _check_paths(session)
    _check_turn(session, turn, lowest=2)
    _check_unchanged(session)
    _check_not_busy(session)
    if session.agent == QWEN:
        return _rewind_qwen(session, turn)
    return _rewind_claude(session, turn)


def session_rewind_undo(*, session: Session) -> Session:
    """Bring a rewound session back to exactly what it was before the rewind."""
    _check_paths(session)
    state = session.rewind_undo or {}
    if not state:
        raise NothingToUndo(f"session {session.session_id} has no rewind to undo")
    stat = _stat(session)
    if (stat.st_size, stat.st_mtime_ns) != (state["size"], state["mtime_ns"]):
        backup = state.get("backup_id")
        kept = f"; the backup session {backup} keeps the old history" if backup else ""
        raise SourceChanged(f"session {session.session_id} changed since the rewind{kept}")
    path = Path(session.path)
    with transaction.atomic():
        locked = Session.objects.select_for_update().get(pk=session.pk)
        if locked.rewind_undo != state:
            raise NothingToUndo(f"the rewind of session {session.session_id} was already undone")
        if session.agent == QWEN:
            base = _base_fields(session)
            append_durably(
                path,
                qwen_rewind_line(
                    session_id=str(session.session_id),
                    parent_uuid=state["leaf_uuid"],
                    payload={"truncatedCount": 0, "undo": True},
                    base=base,
                ),
            )
        else:
            _restore_from_backup(session, state)
        session = _reimport(session)
        session.rewind_undo = {}
        session.save(update_fields=["rewind_undo"])
    return session


# -- guards -----------------------------------------------------------------


def _check_paths(session: Session) -> None:
    path = Path(session.path)
    try:
        resolved = path.resolve(strict=True)
    except FileNotFoundError:
        raise SourceChanged(f"{path} no longer exists; re-import first") from None
    root = Path(session.project.root).resolve()
    folder = Path(session.project.folder).resolve()
    if (
        not resolved.is_relative_to(root)
        or not resolved.is_relative_to(folder)
        or path.name != f"{session.session_id}.jsonl"
    ):
        raise OutsideRoots(f"{path} is outside the session roots; refusing to write near it")


def _check_turn(session: Session, turn: int, *, lowest: int) -> None:
    if isinstance(turn, bool) or not isinstance(turn, int):
        raise InvalidTurn(f"turn must be a number, not {turn!r}")
    if session.turn_count < lowest:
        raise InvalidTurn(
            f"session {session.session_id} has {session.turn_count} turn(s); "
            f"this needs a turn from {lowest} on"
        )
    if not lowest <= turn <= session.turn_count:
        raise InvalidTurn(
            f"turn {turn} is out of range: session {session.session_id} has turns "
            f"1..{session.turn_count}" + (" and this needs turn 2 or later" if lowest == 2 else "")
        )


def _stat(session: Session) -> os.stat_result:
    try:
        return Path(session.path).stat()
    except FileNotFoundError:
        raise SourceChanged(f"{session.path} no longer exists; re-import first") from None


def _check_unchanged(session: Session) -> None:
    stat = _stat(session)
    if (stat.st_size, stat.st_mtime_ns) != (session.file_size, session.file_mtime_ns):
        raise SourceChanged(
            f"{session.path} changed on disk since it was imported; re-import it first "
            "(manage.py import_sessions) and try again"
        )


def _check_not_busy(session: Session) -> None:
    age = time.time() - _stat(session).st_mtime
    if age < settings.BRANCHBOARD_BUSY_SECONDS:
        raise SessionBusy(
            f"session {session.session_id} was written {age:.1f}s ago; a CLI may still be "
            "running in it. Wait until it is idle and try again"
        )
    last = (
        session.records.filter(active=True, kind__in=[ASSISTANT, TOOL_RESULT, PROMPT, COMMAND])
        .order_by("-line")
        .values_list("offset", "length", "kind")
        .first()
    )
    if last and last[2] == ASSISTANT and _has_tool_call(_read(session, last[0], last[1])):
        raise SessionBusy(
            f"session {session.session_id} ends with a tool call that has no result; "
            "a CLI may still be running in it"
        )


def _has_tool_call(raw: bytes) -> bool:
    return b'"type":"tool_use"' in raw or b'"functionCall"' in raw


# -- copying ----------------------------------------------------------------


@dataclass(slots=True)
class _Row:
    line: int
    offset: int
    length: int
    uuid: str
    active: bool
    sidechain: bool
    turn: int | None
    raw_type: str


def _rows(session: Session) -> Iterator[_Row]:
    fields = ("line", "offset", "length", "uuid", "active", "sidechain", "turn", "raw_type")
    for values in (
        Record.objects.filter(session=session)
        .order_by("line")
        .values_list(*fields)
        .iterator(chunk_size=10_000)
    ):
        yield _Row(*values)


def _wanted(row: _Row, *, cut: int, mode: str) -> bool:
    """Whether a record survives a cut after turn `cut` (before looking at its bytes)."""
    if row.uuid and not row.sidechain:
        return row.active and (row.turn is None or row.turn <= cut)
    within = row.turn is None or row.turn <= cut
    if row.sidechain:
        # Inline subagent transcripts: the CLI never resumes them; a rewind keeps
        # the ones of kept turns, a fork (like the CLI's /branch) drops them.
        return mode == REWIND and within
    if row.raw_type in DROPPED_TYPES:
        return False
    if mode == FORK:
        return row.raw_type in REFERRING_TYPES and within
    return within or row.raw_type in SESSION_LEVEL_TYPES


def _refers_to_kept(raw: bytes, kept: set[str]) -> bool:
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return False
    if not isinstance(data, dict):
        return False
    refs = [data.get(k) for k in ("leafUuid", "messageId")]
    refs = [r for r in refs if isinstance(r, str)]
    return bool(refs) and all(r in kept for r in refs)


def _write_kept(
    session: Session, out: BinaryIO, *, cut: int, mode: str, new_id: str | None
) -> str | None:
    """Stream the kept records into `out`; returns the last kept uuid."""
    kept: set[str] = set()
    last_uuid = None
    source_id = str(session.session_id)
    position = 0
    with open(session.path, "rb", buffering=1024 * 1024) as src:
        for row in _rows(session):
            if not _wanted(row, cut=cut, mode=mode):
                continue
            if position != row.offset:
                src.seek(row.offset)
            raw = src.read(row.length)
            position = row.offset + len(raw)
            if len(raw) != row.length:
                raise SourceChanged(f"{session.path} is shorter than when it was imported")
            if not row.uuid and row.raw_type in REFERRING_TYPES and not _refers_to_kept(raw, kept):
                continue
            if row.uuid and not row.sidechain:
                kept.add(row.uuid)
                last_uuid = row.uuid
            if not raw.endswith(b"\n"):
                raw += b"\n"
            if new_id is not None:
                raw = restamp(
                    raw, source_id=source_id, new_id=new_id, message_uuid=row.uuid or None
                )
            out.write(raw)
    if not kept:
        raise InvalidTurn(f"nothing to keep from session {session.session_id} at that turn")
    return last_uuid


def _read(session: Session, offset: int, length: int) -> bytes:
    with open(session.path, "rb") as f:
        f.seek(offset)
        return f.read(length)


def _base_fields(session: Session) -> dict:
    """cwd, version and gitBranch as the session's own records carry them."""
    row = (
        session.records.filter(active=True)
        .exclude(uuid="")
        .order_by("-line")
        .values_list("offset", "length")
        .first()
    )
    if row is None:
        return {"cwd": session.cwd}
    try:
        data = orjson.loads(_read(session, *row))
    except orjson.JSONDecodeError:
        return {"cwd": session.cwd}
    return {k: data.get(k) for k in ("cwd", "version", "gitBranch") if data.get(k)}


# -- titles and registration --------------------------------------------------


def _unique_title(session: Session, title: str | None) -> str:
    """`<name> (Branch)`, then `(Branch 2)`... unique within the project."""
    if title:
        return collapse(title, 300)
    name = session.custom_title or collapse(session.first_prompt or "") or DEFAULT_NAME
    name = BRANCH_SUFFIX_RE.sub("", name)
    taken = set(
        Session.objects.filter(project_id=session.project_id, title__startswith=name).values_list(
            "title", flat=True
        )
    )
    candidate, n = f"{name} (Branch)", 1
    while candidate in taken:
        n += 1
        candidate = f"{name} (Branch {n})"
    return candidate


def _title_line(session: Session, new_id: str, title: str, last_uuid: str | None) -> bytes:
    if session.agent == QWEN:
        return qwen_title_line(
            session_id=new_id, parent_uuid=last_uuid, title=title, base=_base_fields(session)
        )
    return claude_title_line(session_id=new_id, title=title)


def _register(
    source: Session, target: Path, new_id: str, *, kind: str, turn: int | None
) -> Session:
    project = source.project
    report = ImportReport()
    new = session_file_import(
        source=SessionFile(target, source.agent, Path(project.root), Path(project.folder), new_id),
        report=report,
    )
    if new is None:
        raise BranchError("; ".join(report.errors) or f"could not import {target}")
    new.parent = source
    new.kind = kind
    new.fork_turn = turn
    new.save(update_fields=["parent", "kind", "fork_turn"])
    projects_refresh(project_ids=[project.pk])
    return new


def _reimport(session: Session) -> Session:
    project = session.project
    report = ImportReport()
    result = session_file_import(
        source=SessionFile(
            Path(session.path),
            session.agent,
            Path(project.root),
            Path(project.folder),
            str(session.session_id),
        ),
        report=report,
    )
    if result is None:
        raise BranchError("; ".join(report.errors) or f"could not re-import {session.path}")
    projects_refresh(project_ids=[project.pk])
    return result


# -- rewind -----------------------------------------------------------------


def _rewind_claude(session: Session, turn: int) -> Session:
    backup_id = str(uuid.uuid4())
    path = Path(session.path)
    backup_path = path.with_name(f"{backup_id}.jsonl")
    source_id = str(session.session_id)
    with transaction.atomic():
        Project.objects.select_for_update().get(pk=session.project_id)
        Session.objects.select_for_update().get(pk=session.pk)
        name = session.custom_title or collapse(session.first_prompt or "") or DEFAULT_NAME
        title = f"{BRANCH_SUFFIX_RE.sub('', name)} (before rewind to turn {turn})"
        title_line = claude_title_line(session_id=backup_id, title=title)
        digest = hashlib.blake2b(digest_size=20)
        # 1. The whole old file, as a session of its own, before anything changes.
        try:
            with create_exclusive(backup_path) as out:
                position = 0
                with open(path, "rb", buffering=1024 * 1024) as src:
                    for row in _rows(session):
                        if position != row.offset:
                            src.seek(row.offset)
                        raw = src.read(row.length)
                        position = row.offset + len(raw)
                        digest.update(raw)
                        out.write(
                            restamp(
                                raw,
                                source_id=source_id,
                                new_id=backup_id,
                                message_uuid=row.uuid or None,
                                reversible=True,
                            )
                        )
                    if src.read(1):
                        raise SourceChanged(f"{path} grew while it was being saved; try again")
                out.write(title_line)
        except FileExistsError:
            raise TargetExists(f"{backup_path} already exists; nothing was written") from None
        try:
            _check_unchanged(session)
            # 2. The session itself, cut after turn - 1, renamed over the original.
            with replace_atomically(path) as out:
                _write_kept(session, out, cut=turn - 1, mode=REWIND, new_id=None)
                _check_unchanged(session)
        except BaseException:
            backup_path.unlink(missing_ok=True)
            raise
        _register(session, backup_path, backup_id, kind=Session.Kind.REWIND_BACKUP, turn=turn)
        session = _reimport(session)
        stat = path.stat()
        session.rewind_undo = {
            "turn": turn,
            "backup_id": backup_id,
            "backup_path": str(backup_path),
            "title_bytes": len(title_line),
            "digest": digest.hexdigest(),
            "size": stat.st_size,
            "mtime_ns": stat.st_mtime_ns,
        }
        session.save(update_fields=["rewind_undo"])
    return session


def _restore_from_backup(session: Session, state: dict) -> None:
    backup_path = Path(state["backup_path"])
    source_id = str(session.session_id)
    digest = hashlib.blake2b(digest_size=20)
    try:
        size = backup_path.stat().st_size - state["title_bytes"]
        src = open(backup_path, "rb", buffering=1024 * 1024)  # noqa: SIM115
    except FileNotFoundError:
        raise NothingToUndo(f"the backup {backup_path} is gone; cannot undo") from None
    with src, replace_atomically(Path(session.path)) as out:
        read = 0
        for raw in src:
            if read >= size:
                break
            read += len(raw)
            line = unstamp(raw, source_id=source_id, new_id=state["backup_id"])
            digest.update(line)
            out.write(line)
        if digest.hexdigest() != state["digest"]:
            raise SourceChanged(
                f"the backup {backup_path} does not rebuild the old file exactly "
                "(was it edited?); nothing was changed"
            )


def _rewind_qwen(session: Session, turn: int) -> Session:
    path = Path(session.path)
    prompt = (
        session.records.filter(active=True, turn=turn, kind__in=[PROMPT, COMMAND])
        .order_by("line")
        .values_list("parent_uuid", flat=True)
        .first()
    )
    if not prompt:
        raise InvalidTurn(f"turn {turn} of {session.session_id} has no earlier record to return to")
    removed = session.turn_count - turn + 1
    with transaction.atomic():
        Session.objects.select_for_update().get(pk=session.pk)
        old_leaf = session.leaf_uuid
        append_durably(
            path,
            qwen_rewind_line(
                session_id=str(session.session_id),
                parent_uuid=prompt,
                payload={"truncatedCount": removed},
                base=_base_fields(session),
            ),
        )
        session = _reimport(session)
        stat = path.stat()
        session.rewind_undo = {
            "turn": turn,
            "leaf_uuid": old_leaf,
            "size": stat.st_size,
            "mtime_ns": stat.st_mtime_ns,
        }
        session.save(update_fields=["rewind_undo"])
    return session
