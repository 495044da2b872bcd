"""A fork written as the first lines of its source's file under a new first line (Codex).

For an agent with `prefix_fork`: the new file is the source's first line made the new
session's (`PrefixFork.meta_line`), then the source's lines up to the cut, each checked
against the index (length and CRC-32) and copied byte for byte, in the dated folder of the
source's session root (an older release's one-document file: each record made one line,
`DocumentFiles.as_line`). It is created exclusively, fsynced, indexed from scratch from its
temporary file and checked (turns, prompts, ids, chain) before it is linked into place.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from django.db import transaction

from ...formats import PROMPT, agent_for
from ...formats.agent import PrefixFork
from ...formats.documents import is_document
from ...models import Project, Session
from ..errors import BranchingUnsupported, InvalidTurn, OutsideRoots, StaleIndex, TargetExists
from ..files import new_file
from ..roots import UnsafePath, check_inside
from .copying import read_records
from .guards import check_unchanged
from .registering import Expected, fork_put_in_place, index_written, session_file_of


def prefix_end(session: Session, cut: int, opening: frozenset[tuple[str, str]]) -> int:
    """The first line a cut after turn `cut` leaves out: the next prompt (the next turn's, or
    one a rollback took back), or the records before it that open its turn (where the CLI's
    own rollback cuts); the line count when nothing follows."""
    if cut < 1:
        raise InvalidTurn(f"session {session.session_id} has no turn {cut}")
    last = session.records.turn_starts().filter(turn=cut).values_list("line", flat=True).first()
    if last is None:
        raise InvalidTurn(f"session {session.session_id} has no turn {cut}")
    following = (
        session.records.filter(line__gt=last, kind=PROMPT, sidechain=False)
        .order_by("line")
        .values_list("line", flat=True)
        .first()
    )
    if following is None:
        return session.line_count
    end = following
    between = (
        session.records.filter(line__gt=last, line__lt=end)
        .order_by("-line")
        .values_list("line", "raw_type", "subtype")
    )
    for line, raw_type, subtype in between.iterator(chunk_size=100):
        if (raw_type, subtype) not in opening:
            break
        end = line
    return end


def prefix_writer(session: Session) -> PrefixFork:
    """The agent's prefix writer; refused for an agent that does not fork by copying a prefix."""
    agent = agent_for(session.agent)
    if agent.prefix_fork is None:
        raise BranchingUnsupported(f"{agent.label} sessions are not forked by copying a prefix")
    return agent.prefix_fork


def fork_prefix(
    session: Session, *, cut: int, kind: str, fork_turn: int, whole: bool = False
) -> Session:
    """Write and register the fork of `session` keeping turns 1..`cut` (see the module);
    `whole`: every line of the file, abandoned ones too (a rewind's backup)."""
    writer = prefix_writer(session)
    end = session.line_count if whole else prefix_end(session, cut, writer.turn_opening)
    rows = list(
        session.records.filter(line__lt=end)
        .order_by("line")
        .values_list("offset", "length", "digest")
        .iterator(chunk_size=5000)
    )
    # The later metadata lines, which the copy restamps with its own id (`PrefixFork`).
    restamped = set()
    if writer.restamp is not None and writer.meta_type:
        metas = session.records.filter(line__gt=0, line__lt=end, raw_type=writer.meta_type)
        restamped = set(metas.values_list("line", flat=True))
    if len(rows) != end or not rows:
        raise InvalidTurn(f"nothing to keep from session {session.session_id} at that turn")
    if whole and rows[-1][0] + rows[-1][1] != session.file_size:
        raise StaleIndex(session.path)  # the backup must hold every byte of the file
    source_id = str(session.session_id)
    (first,) = read_records(session, rows[:1])
    refusal = writer.refusal(first, source_id=source_id)
    if refusal:
        raise BranchingUnsupported(refusal)
    prompts = list(
        session.records.turn_starts().order_by("line").values_list("text", flat=True)[:cut]
    )
    now = datetime.now(UTC)
    new_id = writer.new_id(now)
    root = Path(session.project.root)
    folder = Path(session.path).parent if writer.beside_source else root / writer.folder(now)
    try:
        check_inside(folder, root)
        folder.mkdir(parents=True, exist_ok=True)
        check_inside(folder, root)  # made, and still no link on the way
    except UnsafePath as exc:
        raise OutsideRoots(f"{exc}; nothing was written") from None
    target = folder / writer.file_name(new_id, now)
    try:
        with new_file(target) as temp:
            temp.out.write(
                writer.meta_line(first, source_id=source_id, new_id=new_id, kept_lines=end, now=now)
            )
            keeps = writer.keeps
            documents = agent_for(session.agent).documents
            # An older release's one document: each record becomes a line (`DocumentFiles`).
            as_line = None
            if documents is not None and is_document(documents, Path(session.path)):
                as_line = documents.as_line
            for line, raw in enumerate(read_records(session, rows[1:]), start=1):
                if as_line is not None:
                    raw = as_line(raw)
                if keeps is not None and not keeps(raw):
                    continue
                if line in restamped and writer.restamp is not None:
                    raw = writer.restamp(raw, new_id=new_id)
                temp.out.write(raw if raw.endswith(b"\n") else raw + b"\n")
            check_unchanged(session)
            temp.finish()
            try:
                with transaction.atomic():
                    Project.objects.select_for_update().get(pk=session.project_id)
                    new = index_written(
                        source=session_file_of(session, target, new_id),
                        temp=temp.path,
                        expected=Expected(
                            turns=cut,
                            prompts=prompts,
                            whole_chain=not session.abandoned,
                            origin=session.path,
                        ),
                    )
                    fork_put_in_place(session, new, temp, target, kind=kind, fork_turn=fork_turn)
            except BaseException:
                if temp.linked:
                    target.unlink(missing_ok=True)
                raise
    except FileExistsError:
        raise TargetExists(f"{target} already exists; nothing was written") from None
    return new
