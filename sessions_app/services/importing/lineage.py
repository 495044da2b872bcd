"""Links the CLIs' own branches to their parents once both are imported: where each split, by
the prompts they share.
"""

from __future__ import annotations

from datetime import datetime

from ...formats import agent_for
from ...models import Record, Session


def cli_branches_link(unlinked: list[tuple[int, str, int | None, datetime | None]]) -> None:
    """Link the CLI branches read before the session they came from, if it is imported now."""
    for pk, parent_id, copied_turns, made in unlinked:
        namespace = Session.objects.filter(pk=pk).values_list("namespace", flat=True).first()
        parent = (
            Session.objects.listed()
            .filter(session_id=parent_id, namespace=namespace or "")
            .exclude(pk=pk)
            .first()
        )
        if parent is None or _descends_from(parent.pk, pk):
            continue  # not among the files (yet), or a link that would close a circle
        prompts = list(
            Record.objects.filter(session_id=pk, active=True)
            .turn_starts()
            .order_by("line")
            .values_list("text", flat=True)
        )
        agent = Session.objects.filter(pk=pk).values_list("agent", flat=True).first() or ""
        fields: dict[str, object] = {
            "parent": parent,
            "kind": Session.Kind.BRANCH,
            "fork_turn": _split_turn(agent, copied_turns, prompts, parent),
        }
        if made is not None:
            fields["made_at"] = made
        Session.objects.filter(pk=pk, parent__isnull=True, kind="").update(**fields)


def _split_turn(agent: str, copied: int | None, prompts: list[str], parent: Session) -> int | None:
    """The last turn a CLI branch shares with its parent: the turns whose records say they
    were copied; for Codex, whose copies say so only in a `session_meta` line (a 0.3x-0.5x
    fork, a `thread_spawn` sub-agent given its parent's history), the leading prompts it
    shares with the parent's active branch."""
    if agent_for(agent).line_chain is None or not prompts:
        return copied
    theirs = (
        Record.objects.filter(session=parent, active=True)
        .turn_starts()
        .order_by("line")
        .values_list("text", flat=True)[: len(prompts)]
    )
    shared = 0
    for mine, their in zip(prompts, theirs, strict=False):
        if (mine or "") != (their or ""):
            break
        shared += 1
    return max(copied or 0, shared)


def _descends_from(start: int, ancestor: int) -> bool:
    """Whether `ancestor` is up the parent links from session `start` (or is it)."""
    seen: set[int] = set()
    at: int | None = start
    while at is not None and at not in seen:
        if at == ancestor:
            return True
        seen.add(at)
        at = Session.objects.filter(pk=at).values_list("parent_id", flat=True).first()
    return False
