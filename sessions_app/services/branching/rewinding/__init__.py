"""Rewind a session in place so the CLI resumes after turn N-1, and undo that rewind.

The agent says which (`Agent.rewinds_by_appending`). Qwen Code and Gemini CLI have
their own mechanism (`rewinding.appending`: an appended `system/rewind` record, an
appended `$rewindTo` that the undo cuts away). Claude Code has none: the whole old file
is first saved as a backup session, then the file is rewritten to the kept records;
undo rebuilds the old file byte for byte from it.
Codex has none either (`rewinding.prefix`): the same, its backup written as its forks are.
"""

from __future__ import annotations

import hashlib
import os
import uuid
from pathlib import Path

from django.db import transaction
from django.utils import timezone

from ....formats import INVALID, agent_for
from ....formats.shape import REWIND
from ....formats.writing import restamp_into, unstamp
from ....models import Project, Session
from ...errors import (
    NothingToUndo,
    SourceChanged,
    StaleIndex,
    TargetExists,
    WriteCheckFailed,
)
from ...files import create_exclusive, replace_atomically
from ...importing import projects_refresh
from ...roots import open_regular
from ..copying import RecordReader, base_fields, intended_prompts, rows, write_kept
from ..guards import file_stat, own_write
from ..registering import Expected, index_written, session_file_of
from ..titles import backup_title, title_line
from .appending import append_checked, rewind_appending, rewind_marking, undo_marking
from .prefix import restore_prefix, rewind_prefix


def rewind(session: Session, turn: int) -> Session:
    """Rewind with the agent's own mechanism (guards already passed)."""
    agent = agent_for(session.agent)
    if agent.rewind_line is not None:
        return rewind_appending(session, turn, agent.rewind_line)
    if agent.rewind_marker is not None:
        return rewind_marking(session, turn, agent.rewind_marker)
    if agent.prefix_fork is not None:
        return rewind_prefix(session, turn)
    return _rewind_rewriting(session, turn)


def undo(session: Session) -> Session:
    """Undo the last rewind while the file is exactly as the rewind left it."""
    state = session.rewind_undo or {}
    if not state:
        raise NothingToUndo(f"session {session.session_id} has no rewind to undo")
    st = file_stat(session)
    if (st.st_size, st.st_mtime_ns) != (state["size"], state["mtime_ns"]):
        backup = state.get("backup_id")
        kept = f"; the backup session {backup} keeps the old history" if backup else ""
        raise SourceChanged(f"session {session.session_id} changed since the rewind{kept}")
    with transaction.atomic():
        locked = Session.objects.select_for_update().get(pk=session.pk)
        if locked.rewind_undo != state:
            raise NothingToUndo(f"the rewind of session {session.session_id} was already undone")
        if (rewind_line := agent_for(session.agent).rewind_line) is not None:
            restored = append_checked(
                session,
                rewind_line(
                    session_id=str(session.session_id),
                    parent_uuid=state["leaf_uuid"],
                    removed_turns=0,
                    undo=True,
                    base=base_fields(session),
                ),
                turns=state.get("turns"),
            )
        elif state.get("marker"):
            restored = undo_marking(session, state)
        elif state.get("prefix"):
            restored = restore_prefix(session, state)
        else:
            restored = _restore_from_backup(session, state)
        restored.rewind_undo = {}
        restored.own_write = own_write(file_stat(restored))
        restored.save(update_fields=["rewind_undo", "own_write"])
        projects_refresh(project_ids=[session.project_id])
    return restored


def _kept_invalid(session: Session, cut: int) -> int:
    return session.records.filter(kind=INVALID, sidechain=False).through(cut).count()


def _rewind_rewriting(session: Session, turn: int) -> Session:
    backup_id = str(uuid.uuid4())
    path = Path(session.path)
    backup_path = path.with_name(f"{backup_id}.jsonl")
    source_id = str(session.session_id)
    made: dict[str, Session] = {}
    with transaction.atomic():
        Project.objects.select_for_update().get(pk=session.project_id)
        Session.objects.select_for_update().get(pk=session.pk)
        named = backup_title(session, turn)
        title = title_line(session, backup_id, named, session.leaf_uuid, base_fields(session))
        digest = hashlib.blake2b(digest_size=20)
        everything = Expected(
            turns=session.turn_count,
            prompts=intended_prompts(session, cut=session.turn_count),
            invalid=session.invalid_count,
            check_ids=False,  # a line the restamp cannot edit exactly stays as it was
            whole_chain=False,  # the backup keeps abandoned branches too
            lines=session.record_count + 1,
        )

        def verify_backup(temp: Path) -> None:
            made["backup"] = index_written(
                source=session_file_of(session, backup_path, backup_id),
                temp=temp,
                expected=everything,
            )
            if _unstamped_digest(temp, session.record_count, source_id, backup_id) != (
                digest.hexdigest()
            ):
                raise WriteCheckFailed(
                    f"{backup_path}: the backup does not rebuild the session exactly; "
                    "nothing was changed"
                )

        # 1. The whole old file, as a session of its own, before anything changes.
        try:
            with (
                open_regular(path, root=session.project.root) as src,
                create_exclusive(backup_path, verify=verify_backup) as out,
            ):
                reader = RecordReader(src, session.path)
                end = 0
                for row in rows(session):
                    raw = reader.read(row)
                    end = row.offset + row.length
                    digest.update(raw)
                    restamp_into(
                        out.write,
                        raw,
                        source_id=source_id,
                        new_id=backup_id,
                        message_uuid=row.uuid or None,
                        reversible=True,
                    )
                if os.fstat(src.fileno()).st_size != end:
                    raise StaleIndex(session.path)
                out.write(title)
        except FileExistsError:
            raise TargetExists(f"{backup_path} already exists; nothing was written") from None
        try:
            backup = made["backup"]
            backup.parent, backup.kind, backup.fork_turn = (
                session,
                Session.Kind.REWIND_BACKUP,
                turn,
            )
            backup.own_write = own_write(os.lstat(backup_path))
            backup.made_at = timezone.now()
            backup.save(update_fields=["parent", "kind", "fork_turn", "own_write", "made_at"])
            # 2. The session itself, cut after turn - 1, renamed over the original.
            kept = Expected(
                turns=turn - 1,
                prompts=intended_prompts(session, cut=turn - 1),
                invalid=_kept_invalid(session, turn - 1),
            )

            def verify_source(temp: Path) -> None:
                made["source"] = index_written(
                    source=session_file_of(session, path, source_id), temp=temp, expected=kept
                )

            with replace_atomically(path, verify=verify_source) as out:
                write_kept(session, out, cut=turn - 1, mode=REWIND, new_id=None)
            rewound = made["source"]
            st = os.lstat(path)
            rewound.rewind_undo = {
                "turn": turn,
                "turns": session.turn_count,
                "invalid": session.invalid_count,
                "backup_id": backup_id,
                "backup_path": str(backup_path),
                "lines": session.record_count,
                "digest": digest.hexdigest(),
                "size": st.st_size,
                "mtime_ns": st.st_mtime_ns,
            }
            rewound.own_write = own_write(st)
            rewound.save(update_fields=["rewind_undo", "own_write"])
            projects_refresh(project_ids=[session.project_id])
        except BaseException:
            backup_path.unlink(missing_ok=True)
            raise
    return rewound


def _unstamped_digest(path: Path, lines: int, source_id: str, backup_id: str) -> str:
    """The digest of the first `lines` lines of a backup, turned back into the source's."""
    digest = hashlib.blake2b(digest_size=20)
    with path.open("rb") as f:  # our own temporary file, made exclusively
        for n, raw in enumerate(f):
            if n >= lines:
                break
            digest.update(unstamp(raw, source_id=source_id, new_id=backup_id))
    return digest.hexdigest()


def _restore_from_backup(session: Session, state: dict) -> Session:
    backup_path = Path(state["backup_path"])
    source_id = str(session.session_id)
    path = Path(session.path)
    digest = hashlib.blake2b(digest_size=20)
    lines = state.get("lines")
    if lines is None:  # a rewind made before the state kept its line count
        with open_regular(backup_path, root=session.project.root) as f:
            lines = sum(1 for _ in f) - 1
    try:
        src = open_regular(backup_path, root=session.project.root)
    except FileNotFoundError:
        raise NothingToUndo(f"the backup {backup_path} is gone; cannot undo") from None
    made: list[Session] = []
    expected = Expected(
        turns=state.get("turns", 0),
        prompts=None,  # the digest below proves the bytes are the old file's exactly
        invalid=state.get("invalid", 0),
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
                source=session_file_of(session, path, source_id), temp=temp, expected=expected
            )
        )

    with src, replace_atomically(path, verify=verify) as out:
        for n, raw in enumerate(src):
            if n >= lines:
                break
            line = unstamp(raw, source_id=source_id, new_id=state["backup_id"])
            digest.update(line)
            out.write(line)
    return made[0]
