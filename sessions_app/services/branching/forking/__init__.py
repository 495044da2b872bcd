"""Branch a whole session, fork it from a turn, or fork it before a turn (edit & fork)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, replace
from pathlib import Path

from django.db import transaction

from ....formats import agent_for
from ....formats.shape import FORK
from ....formats.writing import moved_cwd, relocate
from ....models import Project, Session
from ...archive.making import PieceMaker
from ...errors import (
    BranchingUnsupported,
    InvalidTurn,
    OutsideRoots,
    TargetExists,
    WriteCheckFailed,
)
from ...files import NewFile, new_file
from ...roots import UnsafePath, check_inside
from ..copying import base_fields, intended_prompts, write_kept
from ..deriving import (
    count_tokens,
    insert_kept_rows,
    insert_rows,
    insert_title_row,
    new_session_row,
    session_row_early,
)
from ..guards import check_paths, check_readable, check_turn, check_unchanged
from ..kept import Written
from ..prefixing import fork_prefix
from ..readback import ReadBack
from ..registering import (
    Expected,
    fork_put_in_place,
    index_written,
    session_file_of,
    times_from_rows,
)
from ..reviving import revived_branch
from ..titles import title_line, unique_title
from .threads import Behind as _Behind
from .threads import NotPlain as _NotPlain
from .threads import ReadingBack as _ReadingBack


def new_session_id() -> str:
    """A fresh session id: a UUID, as the CLIs make them."""
    return str(uuid.uuid4())


@dataclass(frozen=True)
class Elsewhere:
    """A fork that goes on in another folder (a new git worktree of the same repository).

    Its file goes to the project folder the CLI keeps that folder's sessions in,
    under the source's session root; each record's `cwd` under `old_top` moves to
    the same place under `new_top`, and its `gitBranch` becomes `branch`.
    """

    project_folder: Path
    old_top: str
    new_top: str
    branch: str

    def edit(self, line: bytes) -> bytes:
        return relocate(line, old_top=self.old_top, new_top=self.new_top, branch=self.branch)


def fork(
    session: Session,
    turn: int | None,
    include_turn: bool,
    title: str | None,
    elsewhere: Elsewhere | None = None,
    leaf: str | None = None,
) -> Session:
    """Copy turns 1..turn (1..turn-1 with include_turn=False; all without turn) to a new session.

    With `leaf`: the branch an in-CLI rewind left that ends at record `leaf`, brought
    back as a session of its own whose active branch it is (`Revived`).
    """
    check_paths(session)
    prefix = agent_for(session.agent).prefix_fork is not None
    if prefix and (leaf is not None or elsewhere is not None):
        raise BranchingUnsupported(
            "this agent's sessions are forked as copies of their first turns only "
            "(not an abandoned branch, not into a worktree)"
        )
    revived = revived_branch(session, leaf) if leaf is not None else None
    if revived is not None:
        cut, kind, turn = revived.turns, Session.Kind.REVIVED, revived.split
    elif turn is None:
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
    if prefix:
        new = fork_prefix(session, cut=cut, kind=kind, fork_turn=turn or cut)
        return _titled(new, unique_title(session, title))
    new_id = new_session_id()
    target = Path(session.path).with_name(f"{new_id}.jsonl")
    prompts = revived.prompts if revived else intended_prompts(session, cut=cut)
    base = base_fields(session)
    edit = None
    if elsewhere is not None:
        target = _folder_for(session, elsewhere) / f"{new_id}.jsonl"
        edit = elsewhere.edit
        if isinstance(base.get("cwd"), str):
            base["cwd"] = moved_cwd(
                base["cwd"], old_top=elsewhere.old_top, new_top=elsewhere.new_top
            )
        base["gitBranch"] = elsewhere.branch
    # A first choice, made without a lock; checked again when the fork is registered.
    chosen = unique_title(session, title)
    written = Written(off_branch=revived is not None)
    try:
        with (
            new_file(target) as temp,
            PieceMaker() as maker,
            _Behind(temp.out, maker if elsewhere is None else None) as out,
        ):
            # No database lock is held while the file is streamed, fsynced and read back.
            # The file is written, and the archive's pieces of the kept lines are made,
            # in threads meanwhile (a fork elsewhere is archived by its full import).
            last_uuid = write_kept(
                session,
                out,
                cut=cut,
                mode=FORK,
                new_id=new_id,
                log=written,
                edit=edit,
                lines=revived.lines if revived else None,
            )
            if revived is not None:
                last_uuid = revived.leaf  # the branch's end, whatever follows it in the file
            out.drain()
            line = title_line(session, new_id, chosen, last_uuid, base)
            temp.out.write(line)
            check_unchanged(session)
            temp.finish()
            # A fork elsewhere differs from its source in more than the read-back
            # checks: it is indexed from scratch and checked (`index_written`).
            reading = _ReadingBack(
                session, temp.path, written, new_id=new_id, title_line=line, turns=cut,
                prompts=prompts, skip=elsewhere is not None,
            )  # fmt: skip
            try:
                with transaction.atomic():
                    Project.objects.select_for_update().get(pk=session.project_id)
                    again = unique_title(session, title)
                    if again != chosen:
                        # Another fork took the title meanwhile: the title line, the
                        # file's last, is written again with the next free one.
                        found = reading.result()
                        line = title_line(session, new_id, again, last_uuid, base)
                        _retitle(session, temp, sum(written.length), line, new_id, found)
                    new = _register(
                        session, temp, target, new_id, written, reading, cut, prompts, maker
                    )
                    # A branch brought back split after its `split` turn, 0 included.
                    split = turn if revived is not None else (turn or cut)
                    fork_put_in_place(session, new, temp, target, kind=kind, fork_turn=split)
            except BaseException:
                if temp.linked:
                    target.unlink(missing_ok=True)
                raise
            finally:
                reading.close()
    except FileExistsError:
        raise TargetExists(f"{target} already exists; nothing was written") from None
    return new


def _register(
    session: Session,
    temp: NewFile,
    target: Path,
    new_id: str,
    written: Written,
    reading: _ReadingBack,
    cut: int,
    prompts: list[str],
    maker: PieceMaker,
) -> Session:
    """The new session's index: derived from the source's, or (unproven) a full import."""
    if reading.early:
        try:
            # The kept rows are inserted while the read-back runs (SQLite and PostgreSQL
            # let go of the GIL); undone unless it vouches for the file on its bytes.
            with transaction.atomic():
                row = session_row_early(session, path=target, new_id=new_id)
                insert_kept_rows(session, row, written, None)
                found = reading.result()
                if found is None or not found.plain:
                    raise _NotPlain
                insert_title_row(row, written, found)
                return new_session_row(
                    session, path=temp.path, new_id=new_id, written=written, found=found,
                    maker=maker, row=row, name=target,
                )  # fmt: skip
        except _NotPlain:
            pass
    found = reading.result()
    if found is None:
        expected = Expected(turns=cut, prompts=prompts)
        source = session_file_of(session, target, new_id)
        agent = agent_for(session.agent)
        folder = agent.project_folder_of(target)
        if folder is not None and folder != Path(session.project.folder):
            source = replace(source, project_folder=folder)
        return index_written(source=source, temp=temp.path, expected=expected)
    new = new_session_row(
        session, path=temp.path, new_id=new_id, written=written, found=found, maker=maker
    )
    new.path = str(target)
    new.save(update_fields=["path"])
    insert_rows(session, new, written, found)
    count_tokens(new)
    if found.plain:
        times_from_rows(new)
    return new


def _folder_for(session: Session, elsewhere: Elsewhere) -> Path:
    """The folder a fork elsewhere is written to (made if new), inside the source's root."""
    root = Path(session.project.root)
    folder = agent_for(session.agent).sessions_folder(elsewhere.project_folder)
    try:
        check_inside(folder, root)
        folder.mkdir(parents=True, exist_ok=True)
        check_inside(folder, root)  # made, and still no link on the way
    except UnsafePath as exc:
        raise OutsideRoots(f"{exc}; nothing was written") from None
    return folder


def _retitle(
    session: Session, temp: NewFile, offset: int, line: bytes, new_id: str, found: ReadBack | None
) -> None:
    """Write the title line again and read it back."""
    temp.replace_tail(offset, line)
    with temp.path.open("rb") as f:
        f.seek(offset)
        back = f.read()
    record = agent_for(session.agent).parse_line(back)
    if back != line or record.session_id != new_id or not record.title:
        raise WriteCheckFailed(f"{temp.path}: the title line did not read back as written")
    if found is not None:
        found.retitle(line, record)


def _titled(new: Session, title: str) -> Session:
    """A prefix fork (Codex) named as the other agents' forks are: its file holds no title
    (Codex keeps names in its own databases), so the row keeps it as the user's title."""
    new.custom_title = new.title = title
    Session.objects.filter(pk=new.pk).update(custom_title=title, title=title)
    return new
