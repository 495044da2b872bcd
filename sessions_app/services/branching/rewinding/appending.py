"""Rewind by appending the CLI's own marker (Qwen Code, Gemini CLI), and its undo.

Qwen Code's undo appends another marker. Gemini CLI's `{"$rewindTo": id}` drops a message
and every later one when the CLI replays the file, and the CLI has no line that brings them
back: there the undo takes the marker back off the file's end (`Agent.undo_truncates`).
The rewind appended that one line and nothing else, and the undo is offered only while the
file's size and time are as the rewind left them, so the undo removes exactly those bytes:
the file is then the old file byte for byte, proved by its length and the line read back
before the cut. The archive keeps both versions.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Callable
from pathlib import Path

from django.db import transaction

from ....formats import agent_for
from ....models import Session
from ...files import append_durably, truncate_durably
from ..copying import base_fields
from ..errors import InvalidTurn, SourceChanged, WriteCheckFailed
from ..guards import file_stat, own_write
from ..registering import reindex


def append_checked(session: Session, line: bytes, *, turns: int | None) -> Session:
    """Append one record the CLI's own way, re-index, and take it back if it misreads."""
    path = Path(session.path)
    before = file_stat(session).st_size
    append_durably(path, line)
    appended = reindex(session)
    if turns is not None and appended.turn_count != turns:
        # The append is ours alone (the file was idle and unchanged): take it back.
        if file_stat(session).st_size == before + len(line):
            os.truncate(path, before)
        reindex(session)
        raise WriteCheckFailed(
            f"{path}: after the rewind record the session has {appended.turn_count} "
            f"turn{'' if appended.turn_count == 1 else 's'}, "
            f"not {turns}; the record was taken back and nothing changed"
        )
    return appended


def rewind_appending(session: Session, turn: int, rewind_line: Callable[..., bytes]) -> Session:
    found = (
        session.records.filter(active=True, turn=turn, starts_turn=True)
        .values_list("uuid", "parent_uuid")
        .first()
    )
    if not found or not found[1]:
        raise InvalidTurn(f"turn {turn} of {session.session_id} has no earlier record to return to")
    try:
        line = rewind_line(
            session_id=str(session.session_id),
            parent_uuid=found[1],
            turn_uuid=found[0],
            removed_turns=session.turn_count - turn + 1,
            undo=False,
            base=base_fields(session),
        )
    except ValueError as e:
        raise InvalidTurn(f"turn {turn} of {session.session_id}: {e}") from None
    with transaction.atomic():
        Session.objects.select_for_update().get(pk=session.pk)
        state = {"turn": turn, "turns": session.turn_count, "leaf_uuid": session.leaf_uuid}
        before = file_stat(session).st_size
        rewound = append_checked(session, line, turns=turn - 1)
        if agent_for(session.agent).undo_truncates:
            state.update(appended_at=before, appended=base64.b64encode(line).decode())
        st = file_stat(rewound)
        rewound.rewind_undo = {**state, "size": st.st_size, "mtime_ns": st.st_mtime_ns}
        rewound.own_write = own_write(st)
        rewound.save(update_fields=["rewind_undo", "own_write"])
    return rewound


def truncate_back(session: Session, state: dict) -> Session:
    """The file without the marker the rewind appended (under the undo's lock)."""
    path = Path(session.path)
    line = base64.b64decode(state["appended"])
    if not truncate_durably(path, state["appended_at"], line):
        raise SourceChanged(
            f"{path} does not end with the rewind's line any more; nothing was changed"
        )
    restored = reindex(session)
    if restored.turn_count != state["turns"]:
        raise WriteCheckFailed(
            f"{path}: after the undo the session has {restored.turn_count} turns, not "
            f"{state['turns']}; the file is the one from before the rewind"
        )
    return restored
