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
from array import array
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

import orjson
from django.conf import settings
from django.db import connection, transaction
from django.db.models import Max, Min, Q
from django.utils import timezone

from ..formats import (
    ASSISTANT,
    COMMAND,
    PROMPT,
    QWEN,
    TOOL_RESULT,
    collapse,
    is_session_id,
    parse_line,
)
from ..formats.writing import (
    claude_title_line,
    qwen_rewind_line,
    qwen_title_line,
    restamp_into,
    unstamp,
)
from ..models import Project, Record, Session
from .discovery import SessionFile
from .files import append_durably, create_exclusive, replace_atomically
from .importing import (
    HEAD_BYTES,
    ImportReport,
    head_digest,
    projects_refresh,
    records_insert,
    session_file_import,
)

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
        written = array("q")
        try:
            with create_exclusive(target) as out:
                last_uuid = _write_kept(
                    session, out, cut=cut, mode=FORK, new_id=new_id, written=written
                )
                title_line = _title_line(session, new_id, chosen, last_uuid)
                out.write(title_line)
                _check_unchanged(session)
        except FileExistsError:
            raise TargetExists(f"{target} already exists; nothing was written") from None
        try:
            return _register_copy(
                session,
                target,
                new_id,
                kind=kind,
                turn=turn or cut,
                cut=cut,
                written=written,
                title_line=title_line,
                last_uuid=last_uuid,
            )
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


# line, offset, length, uuid, active, sidechain, turn, raw_type
Row = tuple[int, int, int, str, bool, bool, int | None, str]


def _rows(session: Session, *, after_turn: int | None = None) -> Iterator[Row]:
    """The session's records in file order; with `after_turn`, none that lies past it."""
    table = Record._meta.db_table
    sql = (
        f'SELECT line, "offset", length, uuid, active, sidechain, turn, raw_type FROM {table} '  # noqa: S608 (table from _meta)
        "WHERE session_id = %s"
    )
    params: list = [session.pk]
    if after_turn is not None:
        # Records past the cut are never kept, except session-wide bookkeeping.
        types = sorted(SESSION_LEVEL_TYPES)
        sql += (
            f" AND (turn IS NULL OR turn <= %s OR raw_type IN ({', '.join(['%s'] * len(types))}))"
        )
        params += [after_turn, *types]
    with connection.cursor() as cursor:
        cursor.execute(sql + " ORDER BY line", params)
        while batch := cursor.fetchmany(5_000):
            yield from batch


def _wanted(row: Row, *, cut: int, mode: str) -> bool:
    """Whether a record survives a cut after turn `cut` (before looking at its bytes)."""
    _line, _offset, _length, uuid_, active, sidechain, turn, raw_type = row
    within = turn is None or turn <= cut
    if uuid_ and not sidechain:
        return active and within
    if sidechain:
        # Inline subagent transcripts: the CLI never resumes them; a rewind keeps
        # the ones of kept turns, a fork (like the CLI's /branch) drops them.
        return mode == REWIND and within
    if raw_type in DROPPED_TYPES:
        return False
    if mode == FORK:
        return raw_type in REFERRING_TYPES and within
    return within or raw_type in SESSION_LEVEL_TYPES


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


class _Reader:
    """Reads records by offset, a large block at a time when they lie back to back."""

    BLOCK = 4 << 20

    def __init__(self, f: BinaryIO) -> None:
        self.f = f
        self.start = 0
        self.block = b""

    def read(self, offset: int, length: int) -> bytes:
        start = offset - self.start
        if start >= 0 and start + length <= len(self.block):
            return self.block[start : start + length]
        self.f.seek(offset)
        self.start = offset
        self.block = self.f.read(max(length, self.BLOCK))
        return self.block[:length]


def _write_kept(
    session: Session,
    out: BinaryIO,
    *,
    cut: int,
    mode: str,
    new_id: str | None,
    written: array | None = None,
) -> str | None:
    """Stream the kept records into `out`; returns the last kept uuid.

    `written`, when given, receives (source line, bytes written) for each kept record.
    """
    kept: set[str] = set()
    last_uuid = None
    source_id = str(session.session_id)
    # Pieces gather in a buffer written out in large blocks: one write call per
    # piece would cost more than copying the bytes.
    pending = bytearray()
    write = pending.extend
    with open(session.path, "rb", buffering=0) as src:
        reader = _Reader(src)
        for row in _rows(session, after_turn=cut):
            if not _wanted(row, cut=cut, mode=mode):
                continue
            _line, offset, length, uuid_, _active, sidechain, _turn, raw_type = row
            raw = reader.read(offset, length)
            if len(raw) != length:
                raise SourceChanged(f"{session.path} is shorter than when it was imported")
            if not uuid_ and raw_type in REFERRING_TYPES and not _refers_to_kept(raw, kept):
                continue
            if uuid_ and not sidechain:
                last_uuid = uuid_
                if raw_type == "user":
                    # Bookkeeping refers to prompts (file-history-snapshot.messageId);
                    # remembering only user records keeps this set small.
                    kept.add(uuid_)
            before = len(pending)
            if new_id is None:
                write(raw if raw.endswith(b"\n") else raw + b"\n")
            else:
                restamp_into(
                    write, raw, source_id=source_id, new_id=new_id, message_uuid=uuid_ or None
                )
            if written is not None:
                written.append(_line)
                written.append(len(pending) - before)
            if len(pending) >= 4 << 20:
                out.write(pending)
                pending.clear()
    out.write(pending)
    if last_uuid is None:
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
        # A title lands in a database column and a file the CLI reads: no control characters.
        cleaned = collapse("".join(ch if ch.isprintable() else " " for ch in title), 300)
        if cleaned:
            return cleaned
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


COPY_FIELDS = (
    "line, uuid, parent_uuid, logical_parent_uuid, raw_type, subtype, kind, turn, active, "
    "sidechain, timestamp, text, error, input_tokens, output_tokens"
)


def _register_copy(
    source: Session,
    target: Path,
    new_id: str,
    *,
    kind: str,
    turn: int,
    cut: int,
    written: array,
    title_line: bytes,
    last_uuid: str | None,
) -> Session:
    """Record a new fork in the database from its source's rows, without re-reading it.

    Every kept line was copied from a source record whose place in the graph is
    known, so the new rows are the source rows renumbered, plus the title record.
    Memory stays flat: the source rows stream past, `written` is two integers a line.
    """
    stat = target.stat()
    with target.open("rb") as f:
        head = f.read(HEAD_BYTES)
    kept = source.records.filter(active=True).filter(Q(turn__lte=cut) | Q(turn__isnull=True))
    span = kept.aggregate(first=Min("timestamp"), last=Max("timestamp"))
    lines = len(written) // 2
    new = Session.objects.create(
        project=source.project,
        session_id=new_id,
        path=str(target),
        agent=source.agent,
        title=_title_of(title_line, source.agent),
        custom_title=_title_of(title_line, source.agent),
        first_prompt=source.first_prompt if cut else "",
        cwd=source.cwd,
        git_branch=source.git_branch,
        models_used=source.models_used,
        turn_count=cut,
        record_count=lines + 1,
        started_at=span["first"] or source.started_at,
        updated_at=span["last"] or source.updated_at,
        parent=source,
        kind=kind,
        fork_turn=turn,
        file_size=stat.st_size,
        file_mtime_ns=stat.st_mtime_ns,
        bytes_imported=stat.st_size,
        head_digest=head_digest(head),
        line_count=lines + 1,
        imported_at=timezone.now(),
    )
    tokens_in = tokens_out = 0
    table = Record._meta.db_table
    picks = iter(range(0, len(written), 2))
    next_pick = next(picks, None)
    batch: list[tuple] = []
    offset = 0
    with connection.cursor() as read, connection.cursor() as write:
        read.execute(
            f"SELECT {COPY_FIELDS} FROM {table} WHERE session_id = %s AND line >= %s "  # noqa: S608
            "ORDER BY line",
            [source.pk, written[0] if written else 0],
        )
        while next_pick is not None and (rows := read.fetchmany(5_000)):
            for row in rows:
                if next_pick is None or row[0] != written[next_pick]:
                    continue
                length = written[next_pick + 1]
                new_line = next_pick // 2
                batch.append((new.pk, new_line, offset, length, *row[1:]))
                tokens_in += row[13]
                tokens_out += row[14]
                offset += length
                next_pick = next(picks, None)
                if len(batch) >= 2000:
                    records_insert(write, batch)
                    batch.clear()
        title = parse_line(source.agent, title_line)
        on_chain = bool(title.uuid)  # Qwen's title record is the new leaf
        batch.append(
            (new.pk, lines, offset, len(title_line), title.uuid or "", title.parent_uuid or "",
             "", title.raw_type, title.subtype, title.kind, cut or None, on_chain, False,
             None, "", "", 0, 0)
        )  # fmt: skip
        records_insert(write, batch)
    new.input_tokens, new.output_tokens = tokens_in, tokens_out
    new.leaf_uuid = title.uuid or last_uuid or ""
    new.save(update_fields=["input_tokens", "output_tokens", "leaf_uuid"])
    projects_refresh(project_ids=[source.project_id])
    return new


def _title_of(title_line: bytes, agent: str) -> str:
    return (parse_line(agent, title_line).title or "")[:300]


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
                    for _line, offset, length, uuid_, *_rest in _rows(session):
                        if position != offset:
                            src.seek(offset)
                        raw = src.read(length)
                        position = offset + len(raw)
                        digest.update(raw)
                        restamp_into(
                            out.write,
                            raw,
                            source_id=source_id,
                            new_id=backup_id,
                            message_uuid=uuid_ or None,
                            reversible=True,
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
