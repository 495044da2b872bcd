"""A fork's index, derived from its source's: rows copied in SQL with new lines, offsets, lengths.

The read-back (`readback`) has shown that the new file is the source's kept
records, restamped, in the same places of the graph; so the new rows are the
source rows (`INSERT ... SELECT`) with the new session, line number, offset,
length and CRC-32 of the bytes written, plus the title record. The session row
gets what a fresh import of the file would give it.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
from django.db import connection
from django.db.models import Max, Min, Sum
from django.utils import timezone

from ...formats import collapse
from ...formats.markup import title_text
from ...models import TITLE_LIMIT, Record, Session
from ..archive import archive_written
from ..archive.making import PieceMaker, archive_made
from ..importing import RECORD_COLUMNS
from ..importing.plan import HEAD_BYTES, digest
from .kept import Written
from .readback import ReadBack

# The columns a kept record carries over unchanged: its place in the graph and what
# it says; line, offset, length, tokens and CRC are the new file's own.
COPIED = RECORD_COLUMNS[RECORD_COLUMNS.index("uuid") : RECORD_COLUMNS.index("error") + 1]


def _mapping(
    written: Written, found_tokens: list[tuple[int, int, int]] | None
) -> list[list[int | None]]:
    """[source line, new line, offset, length, CRC-32, tokens in, tokens out] per kept line."""
    tokens = {k: (t_in, t_out) for k, t_in, t_out in found_tokens or ()}
    out: list[list[int | None]] = []
    offset = 0
    for k, (line, length, crc) in enumerate(
        zip(written.src, written.length, written.digest, strict=True)
    ):
        t_in, t_out = tokens.get(k, (None, None))
        out.append([line, k, offset, length, crc, t_in, t_out])
        offset += length
    return out


def insert_rows(source: Session, new: Session, written: Written, found: ReadBack) -> None:
    """The new session's record rows: the kept source rows, renumbered, and the title's."""
    insert_kept_rows(source, new, written, found.tokens)
    insert_title_row(new, written, found)


def insert_kept_rows(
    source: Session, new: Session, written: Written, tokens: list[tuple[int, int, int]] | None
) -> None:
    """The kept source rows, renumbered, in one statement (`tokens`: the read-back's, where
    they differ from the source rows')."""
    table = Record._meta.db_table
    mapping = _mapping(written, tokens)
    copied = ", ".join(f'r."{c}"' if c == "timestamp" else f"r.{c}" for c in COPIED)
    head = (
        f"INSERT INTO {table} ({', '.join(RECORD_COLUMNS)}) "
        f"SELECT %s, m.l, m.o, m.n, {copied}, "
        "COALESCE(m.ti, r.input_tokens), COALESCE(m.tx, r.output_tokens), m.d, r.starts_turn "
    )
    if connection.vendor == "postgresql":
        columns = [list(c) for c in zip(*mapping, strict=True)] if mapping else [[]] * 7
        rows = (
            "unnest(%s::int[], %s::int[], %s::bigint[], %s::int[], %s::bigint[], %s::int[], "
            "%s::int[]) AS m(s, l, o, n, d, ti, tx)"
        )
        params: list = [new.pk, *columns, source.pk]
    else:
        rows = (
            "(SELECT value ->> 0 AS s, value ->> 1 AS l, value ->> 2 AS o, value ->> 3 AS n, "
            "value ->> 4 AS d, value ->> 5 AS ti, value ->> 6 AS tx FROM json_each(%s)) AS m"
        )
        params = [new.pk, orjson.dumps(mapping).decode(), source.pk]
    # Table and column names are ours; every value is a parameter.
    # CROSS JOIN keeps SQLite from putting the mapping in the inner loop.
    sql = head + f"FROM {rows} CROSS JOIN {table} r WHERE r.session_id = %s AND r.line = m.s"
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        if cursor.rowcount not in (-1, len(mapping)):
            raise RuntimeError(f"{cursor.rowcount} rows copied instead of {len(mapping)}")


def insert_title_row(new: Session, written: Written, found: ReadBack) -> None:
    """The title record's row, the file's last line."""
    k = len(written.src)
    node = found.nodes[-1]  # the title's, the file's last line
    title = found.title_record
    values: dict[str, Any] = {
        "session_id": new.pk,
        "line": k,
        '"offset"': sum(written.length),
        "length": len(found.title_line),
        "uuid": node.uuid or "",
        "parent_uuid": node.parent_uuid or "",
        "logical_parent_uuid": node.logical_parent_uuid or "",
        "raw_type": title.raw_type[:64],
        "subtype": title.subtype[:64],
        "kind": node.kind,
        "turn": found.analysis.turn[k],
        "active": found.analysis.active[k],
        "sidechain": node.sidechain,
        "timestamp": connection.ops.adapt_datetimefield_value(node.timestamp)
        if node.timestamp
        else None,
        "text": node.text or "",
        "error": (title.error or "")[:255],
        "input_tokens": 0,
        "output_tokens": 0,
        "digest": found.title_digest,
        "starts_turn": k in found.analysis.prompt_lines,
    }
    table = Record._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {table} ({', '.join(RECORD_COLUMNS)}) "  # noqa: S608 (names are ours)
            f"VALUES ({', '.join(['%s'] * len(RECORD_COLUMNS))})",
            [values[c] for c in RECORD_COLUMNS],
        )


def new_session_row(
    source: Session,
    *,
    path: Path,
    new_id: str,
    written: Written,
    found: ReadBack,
    maker: PieceMaker | None = None,
    row: Session | None = None,
    name: Path | None = None,
) -> Session:
    """The new session's row, as a fresh import of the file would write it (saved), and its
    archive (from the pieces `maker` made of the kept lines as they were written, if any).

    `row`: the row saved for it beforehand (`session_row_early`), which this completes,
    its records all inserted: its token totals and times are taken from them. `name`: the
    path the file will have (else `path`, where it is now).
    """
    st = os.lstat(path)
    nodes, analysis = found.nodes, found.analysis
    title = found.title_record
    size = sum(written.length) + len(found.title_line)
    custom = collapse(title.title, TITLE_LIMIT) if title.title else ""
    first = found.first_prompt
    times = [n.timestamp for n in nodes if n.timestamp]
    new = Session(
        project_id=source.project_id,
        session_id=new_id,
        namespace=source.namespace,
        path=str(name or path),
        agent=source.agent,
        custom_title=custom,
        title=(custom or title_text(first))[:TITLE_LIMIT],
        first_prompt=first or "",
        cwd=found.cwd,
        git_branch=found.git_branch[:255],
        models_used=source.models_used if found.models is None else found.models,
        turn_count=analysis.turn_count,
        record_count=found.line_count,
        invalid_count=0,
        started_at=min(times) if times else None,
        updated_at=max(times) if times else datetime.fromtimestamp(st.st_mtime, tz=UTC),
        leaf_uuid=analysis.leaf_uuid or "",
        abandoned=[],
        file_size=st.st_size,
        file_mtime_ns=st.st_mtime_ns,
        file_inode=st.st_ino,
        bytes_imported=size,
        line_count=found.line_count,
        head_digest=digest(found.head[: min(HEAD_BYTES, size)]),
        tail_offset=size - len(found.title_line),
        tail_digest=digest(found.title_line),
        last_message_id=(
            source.last_message_id if found.last_message_id is None else found.last_message_id
        )[:128],
        imported_at=timezone.now(),
    )
    if row is not None:
        new.pk, new.made_at = row.pk, row.made_at
        _totals_from_rows(new)
        new.save(force_update=True)
    else:
        new.save()
    if maker is None or not archive_made(session=new, maker=maker, tail=found.title_line):
        archive_written(session=new, path=path)
    return new


def session_row_early(source: Session, *, path: Path, new_id: str) -> Session:
    """The new session's row before its read-back is done, for its records to name; only
    `new_session_row(row=...)` makes it what an import would write (same transaction)."""
    new = Session(project_id=source.project_id, session_id=new_id, path=str(path))
    new.namespace, new.agent = source.namespace, source.agent
    new.save()
    return new


def _totals_from_rows(new: Session) -> None:
    """Token totals (`count_tokens`) and first and last times (`times_from_rows`) from the
    session's rows, in one query; not saved."""
    sums = Record.objects.filter(session_id=new.pk).aggregate(
        i=Sum("input_tokens"), o=Sum("output_tokens"), first=Min("timestamp"), last=Max("timestamp")
    )
    new.input_tokens, new.output_tokens = sums["i"] or 0, sums["o"] or 0
    if sums["first"] is not None:
        new.started_at, new.updated_at = sums["first"], sums["last"]


def count_tokens(new: Session) -> None:
    """The session's token totals: the sum of its rows, as the importer counts them."""
    sums = new.records.aggregate(i=Sum("input_tokens"), o=Sum("output_tokens"))
    new.input_tokens, new.output_tokens = sums["i"] or 0, sums["o"] or 0
    new.save(update_fields=["input_tokens", "output_tokens"])
