"""Rewind in place for an agent whose forks are prefixes of their source's file (Codex).

Checked against the real `codex` 0.169 (`tests/compat/test_codex_rewind_compat.py`): it
writes no rollback event (its own `thread/revert` writes a second file of the same thread,
with a `history_base` into the first one's bytes), and `codex exec resume <id>` reads the
rollout file again on every resume, even after a row for the thread is in its databases.
So a rewind is Claude's: the whole old file is first saved as a backup session (a fork of
every line, written as the agent's own forks are), then the file is rewritten to the
lines before turn N (where a fork before turn N cuts) through a fsynced temporary file
renamed over it. The first line stays the session's own, so undo rebuilds the old file
from it and the backup's other lines, and proves it byte for byte with a digest.
"""

from __future__ import annotations

import base64
import hashlib
import os
from pathlib import Path

from django.db import transaction

from ....formats.agent import PrefixFork
from ....models import Session
from ...errors import BranchingUnsupported, NothingToUndo, SourceChanged
from ...files import replace_atomically
from ...importing import projects_refresh
from ...roots import open_regular
from ..copying import read_records
from ..guards import own_write
from ..prefixing import fork_prefix, prefix_end, prefix_writer
from ..registering import Expected, index_written, session_file_of
from ..titles import backup_title


def _check_nothing_reads_into(session: Session, writer: PrefixFork) -> None:
    """No other file's history starts in this one's bytes (the CLI's own fork or rollback
    segment: a first line the agent does not copy alone, naming this session), which a
    shorter file would break."""
    others = (
        Session.objects.filter(project_id=session.project_id, agent=session.agent)
        .exclude(pk=session.pk)
        .order_by("pk")
    )
    named = str(session.session_id).encode()
    for other in others.iterator(chunk_size=200):
        first = other.records.filter(line=0).values_list("offset", "length", "digest")
        try:
            (line,) = read_records(other, first)
        except (OSError, ValueError):
            continue  # gone or empty: it reads nothing any more
        if named in line and writer.refusal(line, source_id=str(other.session_id)):
            raise BranchingUnsupported(
                f"the file of session {other.session_id} continues the history of session "
                f"{session.session_id} (the CLI's own fork or rollback) and reads this "
                "file's bytes; it is not rewound (fork before the turn instead)"
            )


def rewind_prefix(session: Session, turn: int) -> Session:
    """Back up the whole file as a new session, then cut the file before `turn` (guards passed)."""
    writer = prefix_writer(session)
    (first,) = read_records(
        session, session.records.filter(line=0).values_list("offset", "length", "digest")
    )
    refusal = writer.refusal(first, source_id=str(session.session_id))
    if refusal:
        raise BranchingUnsupported(refusal)
    _check_nothing_reads_into(session, writer)
    end = prefix_end(session, turn - 1, writer.turn_opening)
    rows = list(
        session.records.order_by("line")
        .values_list("offset", "length", "digest")
        .iterator(chunk_size=5000)
    )
    path = Path(session.path)
    source_id = str(session.session_id)
    # The later metadata lines the backup restamps (`PrefixFork.restamp`): the undo puts
    # these bytes back; those naming another session stay in the cut file as they were.
    originals: dict[str, str] = {}
    foreign = 0
    if writer.restamp is not None and writer.meta_type:
        metas = session.records.filter(line__gt=0, raw_type=writer.meta_type).order_by("line")
        for line, raw in zip(
            metas.values_list("line", flat=True),
            read_records(session, metas.values_list("offset", "length", "digest")),
            strict=True,
        ):
            originals[str(line)] = base64.b64encode(raw).decode()
            foreign += line < end and source_id.encode() not in raw
    digest = hashlib.blake2b(digest_size=20)
    made: dict[str, Session] = {}
    with transaction.atomic():
        Session.objects.select_for_update().get(pk=session.pk)
        # 1. The whole old file, as a session of its own, before anything changes.
        backup = fork_prefix(
            session,
            cut=session.turn_count,
            kind=Session.Kind.REWIND_BACKUP,
            fork_turn=turn,
            whole=True,
        )
        # Named as Claude Code's backup is; Codex keeps names out of the rollout (`_titled`).
        named = backup_title(session, turn)
        Session.objects.filter(pk=backup.pk).update(custom_title=named, title=named)
        try:
            for raw in read_records(session, rows):
                digest.update(raw)  # the bytes the undo must give back
            kept = Expected(
                turns=turn - 1,
                prompts=list(
                    session.records.turn_starts()
                    .order_by("line")
                    .values_list("text", flat=True)[: turn - 1]
                ),
                invalid=session.records.filter(kind="invalid", line__lt=end).count(),
                foreign=foreign,
            )

            def verify(temp: Path) -> None:
                made["source"] = index_written(
                    source=session_file_of(session, path, source_id), temp=temp, expected=kept
                )

            # 2. The session itself, cut before turn `turn`, renamed over the original.
            with replace_atomically(path, verify=verify) as out:
                for raw in read_records(session, rows[:end]):
                    out.write(raw if raw.endswith(b"\n") else raw + b"\n")
            rewound = made["source"]
            st = os.lstat(path)
            rewound.rewind_undo = {
                "turn": turn,
                "turns": session.turn_count,
                "invalid": session.invalid_count,
                "backup_id": str(backup.session_id),
                "backup_path": backup.path,
                "lines": session.record_count,
                "old_size": session.file_size,
                "prefix": True,
                "digest": digest.hexdigest(),
                "originals": originals,
                "size": st.st_size,
                "mtime_ns": st.st_mtime_ns,
            }
            rewound.own_write = own_write(st)
            rewound.save(update_fields=["rewind_undo", "own_write"])
            projects_refresh(project_ids=[session.project_id])
        except BaseException:
            Path(backup.path).unlink(missing_ok=True)
            raise
    return rewound


def restore_prefix(session: Session, state: dict) -> Session:
    """The old file again: its own first line (still the rewound file's), then the backup's
    other lines; refused unless the digest proves every byte (called under the undo's lock)."""
    backup_path = Path(state["backup_path"])
    path = Path(session.path)
    try:
        backup = open_regular(backup_path, root=session.project.root)
    except FileNotFoundError:
        raise NothingToUndo(f"the backup {backup_path} is gone; cannot undo") from None
    with open_regular(path, root=session.project.root) as current:
        first = current.readline()
    digest = hashlib.blake2b(digest_size=20)
    made: list[Session] = []
    expected = Expected(
        turns=state["turns"],
        prompts=None,  # the digest below proves the bytes are the old file's exactly
        invalid=state["invalid"],
        check_ids=False,
        whole_chain=False,
    )

    def verify(temp: Path) -> None:
        if digest.hexdigest() != state["digest"]:
            raise SourceChanged(
                f"the backup {backup_path} does not rebuild the old file exactly "
                "(was it edited?); nothing was changed"
            )
        made.append(
            index_written(
                source=session_file_of(session, path, str(session.session_id)),
                temp=temp,
                expected=expected,
            )
        )

    left = state["old_size"]
    originals = state.get("originals") or {}
    with backup, replace_atomically(path, verify=verify) as out:
        backup.readline()  # the backup's own session_meta
        line = first
        for k in range(state["lines"]):
            if str(k) in originals:
                line = base64.b64decode(originals[str(k)])  # restamped in the backup
            # The old file's last line may have had no newline; the backup's has one.
            line = line[:left]
            digest.update(line)
            out.write(line)
            left -= len(line)
            line = backup.readline()
    return made[0]
