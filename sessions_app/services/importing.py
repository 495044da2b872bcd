"""Importing session files into the database, incrementally.

An unchanged file (same size, mtime and inode) is skipped without being opened; a
file that provably only grew is read from the last imported byte; anything else
is imported again from the start (the rule is `import_plan`). Each file is
imported in its own transaction, so a failure leaves what was imported before
untouched, and a file that cannot be imported is reported and skipped: one bad
file never stops the import.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import BinaryIO

import orjson
from django.db import IntegrityError, connection, transaction
from django.db.backends.utils import CursorWrapper
from django.db.models import Count, Max
from django.utils import timezone

from ..conversation import Analysis, Node, analyse, node_from_record
from ..formats import (
    ASSISTANT,
    INVALID,
    TITLE,
    ParsedRecord,
    agent_for,
    collapse,
)
from ..models import TITLE_LIMIT, Project, Record, Session
from .discovery import RootError, SessionFile, discover
from .import_plan import HEAD_BYTES, FileState, Plan, StoredState, digest, import_plan
from .roots import UnsafePath, open_regular

BATCH = 2000
MAX_ERRORS_PER_FILE = 5


@dataclass
class ImportReport:
    """What one import run did; `errors` name the file (and line) of each problem."""

    files: int = 0
    sessions: int = 0
    records: int = 0
    skipped: int = 0
    invalid: int = 0
    dropped: int = 0  # fields of otherwise good records dropped or clamped
    errors: list[str] = field(default_factory=list)

    def summary(self) -> str:
        """The one-line summary printed at the end of an import."""
        return (
            f"{self.files} files, {self.sessions} sessions imported, {self.records} records, "
            f"{self.skipped} unchanged, {self.invalid} invalid lines, "
            f"{self.dropped} bad fields dropped, {len(self.errors)} errors"
        )


Progress = Callable[[SessionFile, int], None]


def sessions_import(*, roots: Iterable[Path], progress: Progress | None = None) -> ImportReport:
    """Import every session file under `roots`; problems are reported, never fatal."""
    report = ImportReport()
    found: list[SessionFile] = []
    for root in roots:
        try:
            files, problems = discover(Path(root))
        except RootError as exc:
            report.errors.append(str(exc))
            continue
        found.extend(files)
        report.errors.extend(problems)
    # Sessions first, so a subagent file finds its parent already imported.
    found.sort(key=lambda f: f.is_subagent)
    # One query for the import state of every known file: an unchanged file then
    # costs a stat() and nothing else.
    known = {
        path: (size, mtime, inode)
        for path, size, mtime, inode in Session.objects.values_list(
            "path", "file_size", "file_mtime_ns", "file_inode"
        )
    }
    touched: set[int] = set()
    for source in found:
        report.files += 1
        state = known.get(str(source.path))
        if state is not None and _unchanged(source.path, state):
            report.skipped += 1
        elif (session := session_file_import(source=source, report=report)) is not None:
            touched.add(session.project_id)
        if progress is not None:
            progress(source, _size(source.path))
    projects_refresh(project_ids=touched)
    return report


def _unchanged(path: Path, state: tuple[int, int, int]) -> bool:
    try:
        stat = os.lstat(path)
    except OSError:
        return False  # the per-file import reports it
    return (stat.st_size, stat.st_mtime_ns, stat.st_ino) == state


def _size(path: Path) -> int:
    try:
        return os.lstat(path).st_size
    except OSError:
        return 0


def projects_refresh(*, project_ids: Iterable[int]) -> None:
    """Recount the sessions and last activity of the given projects."""
    for project in Project.objects.filter(id__in=list(project_ids)):
        listed = project.sessions.filter(is_subagent=False)
        agg = listed.aggregate(n=Count("id"), last=Max("updated_at"))
        latest = listed.exclude(cwd="").order_by("-updated_at").values_list("cwd", flat=True)
        project.session_count = agg["n"]
        project.last_activity = agg["last"]
        project.path = next(iter(latest), "") or project.path
        project.save(update_fields=["session_count", "last_activity", "path"])


@dataclass
class Indexed:
    """A file just indexed, with what a check of a file the dashboard wrote needs."""

    session: Session
    foreign_ids: int  # records whose sessionId is not the file's session id
    plan: Plan


def session_file_import(*, source: SessionFile, report: ImportReport) -> Session | None:
    """Import one file; returns its session, or None when it could not be read."""
    indexed = session_file_index(source=source, report=report)
    return indexed.session if indexed is not None else None


def session_file_index(
    *,
    source: SessionFile,
    report: ImportReport,
    read_from: Path | None = None,
    full: bool = False,
) -> Indexed | None:
    """Bring the index of one file up to date; None (and a report entry) when it cannot be.

    `read_from` names another file to read in its place: the dashboard indexes a
    file it writes from the temporary file, before that is renamed into place.
    `full` reads the file from the start whatever its state says (the index was
    found wrong about it).
    """
    path = source.path
    try:
        f = open_regular(read_from or path, root=source.root)
    except FileNotFoundError:
        report.errors.append(f"{path}: file vanished before it could be read; nothing changed")
        return None
    except UnsafePath as exc:
        report.errors.append(f"{exc}; skipped")
        return None
    except OSError as exc:
        report.errors.append(f"{path}: cannot read ({exc.strerror}); skipped")
        return None
    try:
        with f, transaction.atomic():
            return _import_open_file(source, f, report, fresh=full or read_from is not None)
    except OSError as exc:
        report.errors.append(f"{path}: cannot read ({exc.strerror}); nothing changed")
    except IntegrityError as exc:
        other = (
            Session.objects.filter(session_id=source.session_id, is_subagent=False)
            .exclude(path=str(path))
            .first()
        )
        if other is not None:
            report.errors.append(f"{path}: session id already imported from {other.path}; skipped")
        else:
            report.errors.append(f"{path}: could not be imported ({exc}); skipped")
    except Exception as exc:  # one bad file never stops the import
        problem = f"{type(exc).__name__}: {exc}"
        report.errors.append(f"{path}: could not be imported ({problem}); skipped")
    return None


def head_digest(head: bytes) -> str:
    """The digest a fully imported file's head is compared with on the next import."""
    return digest(head[:HEAD_BYTES])


def _stored_state(session: Session) -> StoredState:
    return StoredState(
        size=session.file_size,
        mtime_ns=session.file_mtime_ns,
        inode=session.file_inode,
        bytes_imported=session.bytes_imported,
        head_digest=session.head_digest,
        tail_offset=session.tail_offset,
        tail_digest=session.tail_digest,
    )


def _import_open_file(
    source: SessionFile, f: BinaryIO, report: ImportReport, *, fresh: bool
) -> Indexed:
    stat = os.fstat(f.fileno())
    session = Session.objects.select_for_update().filter(path=str(source.path)).first()

    def read(offset: int, length: int) -> bytes:
        f.seek(offset)
        return f.read(length)

    state = FileState(stat.st_size, stat.st_mtime_ns, stat.st_ino)
    # A file read from elsewhere (a temporary file about to replace it) is new.
    stored = _stored_state(session) if session and not fresh else None
    plan = import_plan(state, stored, read)
    if plan is Plan.SKIP:
        report.skipped += 1
        return Indexed(session, 0, plan)
    start = 0
    if session is None:
        session = _new_session(source)
    elif plan is Plan.APPEND:
        start = session.bytes_imported
        # The unterminated tail of the last import is read again, now complete.
        session.records.filter(line__gte=session.line_count).delete()
    else:
        session.records.all().delete()
        _reset(session)
    head = read(0, HEAD_BYTES)
    f.seek(start)

    reader = _FileReader(source, session, report)
    new_rows = reader.read(f, start, first_line=session.line_count if start else 0)

    existing = _existing_nodes(session) if start else []
    nodes = existing + reader.nodes
    analysis = analyse(nodes, source.agent)
    # The session row is written once, with everything the file said, before its records.
    _update_session(session, source, reader, analysis, nodes, stat, head)
    _store_records(session, nodes, len(existing), new_rows, analysis)
    report.sessions += 1
    report.records += len(new_rows)
    report.invalid += reader.invalid
    return Indexed(session, reader.foreign_ids, plan)


def _new_session(source: SessionFile) -> Session:
    project, _ = Project.objects.get_or_create(
        folder=str(source.project_folder),
        defaults={"agent": source.agent, "root": str(source.root)},
    )
    return Session(
        project=project,
        path=str(source.path),
        agent=source.agent,
        session_id=source.session_id or source.owner_session_id or "0" * 32,
        is_subagent=source.is_subagent,
        owner_session_id=source.owner_session_id,
    )


def _reset(session: Session) -> None:
    for name in (
        "turn_count",
        "record_count",
        "invalid_count",
        "input_tokens",
        "output_tokens",
        "bytes_imported",
        "line_count",
        "tail_offset",
    ):
        setattr(session, name, 0)
    session.tail_digest = ""
    session.models_used = []
    session.custom_title = ""
    session.last_message_id = ""
    session.started_at = session.updated_at = None


class _FileReader:
    """Streams lines from an offset into row tuples, graph nodes and session facts."""

    def __init__(self, source: SessionFile, session: Session, report: ImportReport) -> None:
        self.source = source
        self.session = session
        self.report = report
        self.nodes: list[Node] = []
        self.own_id = source.session_id
        self.foreign_ids = 0
        self.tail_offset = -1
        self.tail = b""
        self.bytes_end = 0
        self.line_end = 0
        self.invalid = 0
        self.errors_reported = 0
        self.models: list[str] = list(session.models_used or [])
        self.input_tokens = 0
        self.output_tokens = 0
        self.last_message_id = session.last_message_id
        self.first_time: datetime | None = None
        self.last_time: datetime | None = None
        self.cwd = ""
        self.git_branch = ""
        self.title: str | None = None
        self.owner_id: str | None = None
        self.forked_from: str | None = None

    def read(self, f: BinaryIO, offset: int, first_line: int) -> list[tuple]:
        rows: list[tuple] = []
        line_no = first_line
        parse_line = agent_for(self.source.agent).parse_line  # looked up once, not per line
        for raw in f:
            length = len(raw)
            complete = raw.endswith(b"\n")
            record = parse_line(raw)
            tokens_in, tokens_out = self._note(record, line_no)
            if record.session_id and self.own_id and record.session_id != self.own_id:
                self.foreign_ids += 1
            node = node_from_record(line_no, record)
            self.nodes.append(node)
            # Only what the row needs beyond the node: a parsed record is large, and a
            # 300 MB session has a hundred thousand of them.
            rows.append(
                (
                    line_no,
                    offset,
                    length,
                    record.raw_type,
                    record.subtype,
                    record.error,
                    tokens_in,
                    tokens_out,
                    zlib.crc32(raw),
                )
            )
            if complete:
                self.tail_offset, self.tail = offset, raw
            offset += length
            line_no += 1
            if complete:
                # Only whole lines count as imported; a half-written tail is read
                # again next time.
                self.bytes_end = offset
                self.line_end = line_no
        return rows

    def _note(self, record: ParsedRecord, line_no: int) -> tuple[int, int]:
        """Collect the session facts of one record; returns the tokens it adds."""
        counted = (0, 0)
        if record.dropped:
            self.report.dropped += len(record.dropped)
            for problem in record.dropped:
                if self.errors_reported < MAX_ERRORS_PER_FILE:
                    self.report.errors.append(f"{self.source.path}:{line_no + 1}: {problem}")
                    self.errors_reported += 1
        if record.kind == INVALID:
            self.invalid += 1
            if self.errors_reported < MAX_ERRORS_PER_FILE:
                self.report.errors.append(f"{self.source.path}:{line_no + 1}: {record.error}")
                self.errors_reported += 1
            return counted
        if record.kind == ASSISTANT:
            if record.model and record.model not in self.models:
                self.models.append(record.model)
            # One streamed message is written as several records sharing its id.
            if not record.message_id or record.message_id != self.last_message_id:
                self.input_tokens += record.input_tokens
                self.output_tokens += record.output_tokens
                counted = (record.input_tokens, record.output_tokens)
            self.last_message_id = record.message_id or ""
        elif record.kind == TITLE and record.title:
            self.title = record.title
        if record.cwd and not self.cwd:
            self.cwd = record.cwd
        if record.git_branch:
            self.git_branch = record.git_branch
        if record.session_id and not self.owner_id:
            self.owner_id = record.session_id
        if record.forked_from and not self.forked_from:
            self.forked_from = record.forked_from
        return counted


def _existing_nodes(session: Session) -> list[Node]:
    rows = session.records.order_by("line").values_list(
        "line",
        "uuid",
        "parent_uuid",
        "kind",
        "timestamp",
        "sidechain",
        "logical_parent_uuid",
        "text",
    )
    return [
        Node(line, uuid or None, parent or None, kind, ts, side, logical or None, text or None)
        for line, uuid, parent, kind, ts, side, logical, text in rows.iterator(chunk_size=5000)
    ]


def _datetime_adapter() -> Callable[[datetime], object]:
    """How this database wants an aware UTC datetime in a raw query."""
    if connection.vendor == "sqlite":
        # What Django's adapter produces for an aware UTC value, without its checks:
        # this runs once per record.
        return lambda value: str(value.astimezone(UTC).replace(tzinfo=None))
    return connection.ops.adapt_datetimefield_value


RECORD_COLUMNS = (
    "session_id",
    "line",
    '"offset"',
    "length",
    "uuid",
    "parent_uuid",
    "logical_parent_uuid",
    "raw_type",
    "subtype",
    "kind",
    "turn",
    "active",
    "sidechain",
    "timestamp",
    "text",
    "error",
    "input_tokens",
    "output_tokens",
    "digest",
    "starts_turn",
)


def records_insert(cursor: CursorWrapper, rows: list[tuple]) -> None:
    """Insert record rows (values in RECORD_COLUMNS order) in one round trip."""
    if not rows:
        return
    # Plain executemany: the ORM's bulk_create costs more than the parsing.
    table = Record._meta.db_table
    sql = (
        f"INSERT INTO {table} ({', '.join(RECORD_COLUMNS)}) "  # noqa: S608 (names are ours)
        f"VALUES ({', '.join(['%s'] * len(RECORD_COLUMNS))})"
    )
    cursor.executemany(sql, rows)


def _store_records(
    session: Session, nodes: list[Node], n_old: int, new_rows: list[tuple], analysis: Analysis
) -> None:
    table = Record._meta.db_table
    adapt = _datetime_adapter()
    starts = set(analysis.prompt_lines)
    with connection.cursor() as cursor:
        if n_old:
            # Only rows whose place in the graph moved need writing, but finding
            # them costs a read; an append changes few, so compare in Python.
            old = {
                line: (turn, active, start)
                for line, turn, active, start in session.records.values_list(
                    "line", "turn", "active", "starts_turn"
                )
            }
            updates = []
            for i in range(n_old):
                now = (analysis.turn[i], analysis.active[i], i in starts)
                if old.get(nodes[i].line) != now:
                    updates.append((*now, session.pk, nodes[i].line))
            if updates:
                cursor.executemany(
                    f"UPDATE {table} SET turn = %s, active = %s, starts_turn = %s "  # noqa: S608 (table from _meta)
                    "WHERE session_id = %s AND line = %s",
                    updates,
                )
        batch: list[tuple] = []
        for k, row in enumerate(new_rows):
            line, offset, length, raw_type, subtype, error, t_in, t_out, crc = row
            i = n_old + k
            node = nodes[i]
            batch.append(
                (
                    session.pk,
                    line,
                    offset,
                    length,
                    node.uuid or "",
                    node.parent_uuid or "",
                    node.logical_parent_uuid or "",
                    raw_type[:64],
                    subtype[:64],
                    node.kind,
                    analysis.turn[i],
                    analysis.active[i],
                    node.sidechain,
                    adapt(node.timestamp) if node.timestamp else None,
                    node.text or "",
                    (error or "")[:255],
                    min(t_in, 2**31 - 1),
                    min(t_out, 2**31 - 1),
                    crc,
                    i in starts,
                )
            )
            if len(batch) >= BATCH:
                records_insert(cursor, batch)
                batch.clear()
        records_insert(cursor, batch)


def _update_session(
    session: Session,
    source: SessionFile,
    reader: _FileReader,
    analysis: Analysis,
    nodes: list[Node],
    stat: os.stat_result,
    head: bytes,
) -> None:
    session.bytes_imported = reader.bytes_end or session.bytes_imported
    session.line_count = reader.line_end or session.line_count
    session.head_digest = digest(head[: min(HEAD_BYTES, session.bytes_imported)])
    if reader.tail_offset >= 0:
        session.tail_offset, session.tail_digest = reader.tail_offset, digest(reader.tail)
    session.file_size = stat.st_size
    session.file_mtime_ns = stat.st_mtime_ns
    session.file_inode = stat.st_ino
    session.record_count = len(nodes)
    session.invalid_count = sum(1 for n in nodes if n.kind == INVALID)
    session.turn_count = analysis.turn_count
    session.leaf_uuid = analysis.leaf_uuid or ""
    session.abandoned = [
        {
            "at_turn": b.at_turn,
            "turns": b.turns,
            "line": b.first_line,
            "leaf_uuid": b.leaf_uuid,
            "prompt": collapse(b.prompt, 200),
        }
        for b in analysis.abandoned
    ]
    session.models_used = reader.models
    session.input_tokens += reader.input_tokens
    session.output_tokens += reader.output_tokens
    session.last_message_id = (reader.last_message_id or "")[:128]
    if reader.title:
        session.custom_title = collapse(reader.title, TITLE_LIMIT)
    first = nodes[analysis.prompt_lines[0]].text if analysis.prompt_lines else None
    session.first_prompt = first or ""
    session.title = (
        session.custom_title or (collapse(first) if first else "") or _fallback_title(nodes)
    )[:TITLE_LIMIT]
    times = [n.timestamp for n in reader.nodes if n.timestamp]
    if times:
        lo, hi = min(times), max(times)
        session.started_at = min(session.started_at, lo) if session.started_at else lo
        session.updated_at = max(session.updated_at, hi) if session.updated_at else hi
    if session.updated_at is None:
        session.updated_at = datetime.fromtimestamp(stat.st_mtime, tz=UTC)
    session.cwd = session.cwd or reader.cwd
    session.git_branch = (reader.git_branch or session.git_branch)[:255]
    if source.is_subagent:
        session.owner_session_id = session.owner_session_id or _uuid_or_none(reader.owner_id)
        session.agent_name = session.agent_name or _subagent_name(source.path, source.root)
    elif reader.forked_from and session.parent_id is None and not session.kind:
        # A branch made inside the CLI (`/branch`) says where it came from.
        parent = Session.objects.filter(session_id=_uuid_or_none(reader.forked_from)).first()
        if parent is not None and parent.pk != session.pk:
            session.parent = parent
            session.kind = Session.Kind.BRANCH
    session.imported_at = timezone.now()
    session.save()


def _fallback_title(nodes: list[Node]) -> str:
    for node in nodes:
        if node.kind == "summary" and node.text:
            return collapse(node.text)
    return ""


def _uuid_or_none(value: str | None) -> str | None:
    from ..formats import is_session_id

    return value if value and is_session_id(value) else None


def _subagent_name(path: Path, root: Path) -> str:
    meta = path.with_suffix(".meta.json")
    try:
        with open_regular(meta, root=root) as f:
            data = orjson.loads(f.read(1 << 20))
    except (OSError, UnsafePath, orjson.JSONDecodeError):
        return path.stem
    if isinstance(data, dict):
        for key in ("description", "agentType"):
            value = data.get(key)
            if isinstance(value, str):
                # Untrusted text bound for a database column: printable, bounded.
                cleaned = collapse("".join(c if c.isprintable() else " " for c in value), 255)
                if cleaned:
                    return cleaned
    return path.stem
