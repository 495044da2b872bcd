"""Rewinds that append the CLI's own record, checked by re-importing the file.

Qwen Code: a `system/rewind` record whose parent is the last record to keep; its undo
appends another one pointing back at the old leaf (the file keeps growing).

Gemini CLI: `{"$rewindTo": <id of prompt N's message>}` (`formats/gemini/rewind.py`),
which `gemini --resume` replays by dropping that message and every later one; the CLI's
own `/rewind` writes exactly this line. Nothing is removed, so no backup session is made:
the old turns stay in the file, shown as an abandoned branch. Its undo cuts the marker
away: the file's first bytes, which must hash to the digest taken before the marker was
appended, are copied to a fsynced temporary file that is re-indexed and renamed over
the file, so the file is byte for byte what it was before the rewind.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path

from django.db import transaction

from ....models import Session
from ...errors import BranchingUnsupported, InvalidTurn, SourceChanged, WriteCheckFailed
from ...files import append_durably, replace_atomically
from ...roots import open_regular
from ..copying import base_fields, intended_prompts, read_record
from ..guards import file_stat, own_write
from ..registering import Expected, index_written, reindex, session_file_of

BLOCK = 1 << 20


def append_checked(
    session: Session, line: bytes, *, turns: int | None, prompts: list[str] | None = None
) -> Session:
    """Append one record the CLI's own way, re-index, and take it back if it misreads."""
    path = Path(session.path)
    before = file_stat(session).st_size
    append_durably(path, line)
    appended = reindex(session)
    problem = ""
    if turns is not None and appended.turn_count != turns:
        are = appended.turn_count
        problem = f"the session has {are} turn{'' if are == 1 else 's'}, not {turns}"
    elif prompts is not None and _prompts(appended) != prompts:
        problem = "its turns' prompts are not the intended ones"
    if problem:
        # The append is ours alone (the file was idle and unchanged): take it back.
        if file_stat(session).st_size == before + len(line):
            os.truncate(path, before)
        reindex(session)
        raise WriteCheckFailed(
            f"{path}: after the rewind record {problem}; the record was taken back and "
            "nothing changed"
        )
    return appended


def _prompts(session: Session) -> list[str]:
    return list(session.records.turn_starts().order_by("line").values_list("text", flat=True))


def rewind_appending(session: Session, turn: int, rewind_line: Callable[..., bytes]) -> Session:
    """Qwen Code's rewind: a record whose parent is the record before prompt `turn`."""
    prompt = (
        session.records.filter(active=True, turn=turn, starts_turn=True)
        .values_list("parent_uuid", flat=True)
        .first()
    )
    if not prompt:
        raise InvalidTurn(f"turn {turn} of {session.session_id} has no earlier record to return to")
    removed = session.turn_count - turn + 1
    with transaction.atomic():
        Session.objects.select_for_update().get(pk=session.pk)
        state = {"turn": turn, "turns": session.turn_count, "leaf_uuid": session.leaf_uuid}
        rewound = append_checked(
            session,
            rewind_line(
                session_id=str(session.session_id),
                parent_uuid=prompt,
                removed_turns=removed,
                undo=False,
                base=base_fields(session),
            ),
            turns=turn - 1,
        )
        st = file_stat(rewound)
        rewound.rewind_undo = {**state, "size": st.st_size, "mtime_ns": st.st_mtime_ns}
        rewound.own_write = own_write(st)
        rewound.save(update_fields=["rewind_undo", "own_write"])
    return rewound


def _digest_of(path: Path, session: Session) -> tuple[str, int, bool]:
    """The file's digest and size, and whether it ends a line (a crashed CLI's half line)."""
    digest = hashlib.blake2b(digest_size=20)
    size, last = 0, b"\n"
    with open_regular(path, root=session.project.root) as f:
        while block := f.read(BLOCK):
            digest.update(block)
            size += len(block)
            last = block[-1:]
    return digest.hexdigest(), size, last == b"\n"


def rewind_marking(
    session: Session, turn: int, rewind_marker: Callable[[bytes], bytes | None]
) -> Session:
    """Gemini CLI's rewind: its marker naming prompt `turn`'s message, appended."""
    row = (
        session.records.filter(active=True, turn=turn, starts_turn=True)
        .values_list("offset", "length", "digest")
        .first()
    )
    if row is None:
        raise InvalidTurn(f"turn {turn} of {session.session_id} has no prompt to rewind before")
    marker = rewind_marker(read_record(session, *row))
    if marker is None:
        raise BranchingUnsupported(
            f"the prompt of turn {turn} of {session.session_id} names no message id to "
            "rewind to (fork before the turn instead)"
        )
    path = Path(session.path)
    with transaction.atomic():
        Session.objects.select_for_update().get(pk=session.pk)
        digest, size, whole = _digest_of(path, session)
        if size != file_stat(session).st_size:
            raise SourceChanged(f"{path} changed while it was read; nothing was written")
        line = marker if whole else b"\n" + marker  # never glued to a half line
        rewound = append_checked(
            session, line, turns=turn - 1, prompts=intended_prompts(session, cut=turn - 1)
        )
        st = file_stat(rewound)
        rewound.rewind_undo = {
            "turn": turn,
            "turns": session.turn_count,
            "invalid": session.invalid_count,
            "marker": line.decode(),
            "old_size": size,
            "digest": digest,
            "size": st.st_size,
            "mtime_ns": st.st_mtime_ns,
        }
        rewound.own_write = own_write(st)
        rewound.save(update_fields=["rewind_undo", "own_write"])
    return rewound


def undo_marking(session: Session, state: dict) -> Session:
    """The file as it was before the marker: its first bytes, proven by the digest (called
    under the undo's lock, the file's size and time as the rewind left them)."""
    path = Path(session.path)
    marker, old_size = state["marker"].encode(), state["old_size"]
    digest = hashlib.blake2b(digest_size=20)
    made: list[Session] = []
    expected = Expected(
        turns=state["turns"],
        prompts=None,  # the digest below proves the bytes are the old file's exactly
        invalid=state["invalid"],
        check_ids=False,
        whole_chain=False,
    )
    with open_regular(path, root=session.project.root) as src:

        def verify(temp: Path) -> None:
            src.seek(old_size)
            if digest.hexdigest() != state["digest"] or src.read(len(marker) + 1) != marker:
                raise SourceChanged(
                    f"{path} is not the file the rewind left (its bytes before the rewind "
                    "record, or the record itself, differ); nothing was changed"
                )
            made.append(
                index_written(
                    source=session_file_of(session, path, str(session.session_id)),
                    temp=temp,
                    expected=expected,
                )
            )

        with replace_atomically(path, verify=verify) as out:
            left = old_size
            while left:
                block = src.read(min(BLOCK, left))
                if not block:
                    raise SourceChanged(
                        f"{path} is shorter than before the rewind; nothing changed"
                    )
                digest.update(block)
                out.write(block)
                left -= len(block)
    return made[0]
