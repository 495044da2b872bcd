"""Branch a whole session, fork it from a turn, or fork it before a turn (edit & fork)."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

from django.db import transaction

from ...formats.shape import FORK
from ...models import Project, Session
from ..files import create_exclusive
from ..importing import projects_refresh
from .copying import base_fields, intended_prompts, write_kept
from .errors import InvalidTurn, TargetExists
from .guards import check_paths, check_readable, check_turn, check_unchanged, own_write
from .registering import Expected, index_written, session_file_of
from .titles import title_line, unique_title


def new_session_id() -> str:
    """A fresh session id: a UUID, as the CLIs make them."""
    return str(uuid.uuid4())


def fork(session: Session, turn: int | None, include_turn: bool, title: str | None) -> Session:
    """Copy turns 1..turn (1..turn-1 with include_turn=False; all without turn) to a new session."""
    check_paths(session)
    if turn is None:
        if session.turn_count == 0:
            raise InvalidTurn(f"session {session.session_id} has no turns to branch")
        cut, kind = session.turn_count, Session.Kind.BRANCH
    else:
        if not include_turn and turn == 1:
            raise InvalidTurn(
                "there is nothing before turn 1 to keep: edit its prompt and start a fresh "
                "session in the same folder instead"
            )
        check_turn(session, turn, lowest=1 if include_turn else 2)
        cut = turn if include_turn else turn - 1
        kind = Session.Kind.FORK if include_turn else Session.Kind.FORK_BEFORE
    check_readable(session)
    check_unchanged(session)
    new_id = new_session_id()
    target = Path(session.path).with_name(f"{new_id}.jsonl")
    expected = Expected(turns=cut, prompts=intended_prompts(session, cut=cut))
    base = base_fields(session)
    made: list[Session] = []

    def verify(temp: Path) -> None:
        made.append(
            index_written(
                source=session_file_of(session, target, new_id), temp=temp, expected=expected
            )
        )

    with transaction.atomic():
        Project.objects.select_for_update().get(pk=session.project_id)
        chosen = unique_title(session, title)
        try:
            with create_exclusive(target, verify=verify) as out:
                last_uuid = write_kept(session, out, cut=cut, mode=FORK, new_id=new_id)
                out.write(title_line(session, new_id, chosen, last_uuid, base))
                check_unchanged(session)
        except FileExistsError:
            raise TargetExists(f"{target} already exists; nothing was written") from None
        try:
            new = made[0]
            new.parent, new.kind, new.fork_turn = session, kind, turn or cut
            new.own_write = own_write(os.lstat(target))
            new.save(update_fields=["parent", "kind", "fork_turn", "own_write"])
            projects_refresh(project_ids=[session.project_id])
        except BaseException:
            target.unlink(missing_ok=True)
            raise
    return new
