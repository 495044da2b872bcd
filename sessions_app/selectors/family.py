"""A session's relatives: the fork lineage it belongs to and its subagent transcripts."""

from __future__ import annotations

import re

from ..models import Session
from ..rendering.lineage import Box, box_pks, family_boxes

# What an agent id may look like in a URL (`subagents/<id>/`).
AGENT_ID_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}\Z")  # \Z: `$` takes a final line break


def lineage_of(session: Session) -> tuple[Box, dict[int, Session]]:
    """The family of `session` as bounded boxes to draw, and the sessions they show."""
    parent_of = dict(Session.objects.filter(parent__isnull=False).values_list("pk", "parent_id"))
    root = family_boxes(parent_of, session.pk)
    sessions = Session.objects.filter(pk__in=box_pks(root)).only(
        "session_id", "title", "kind", "fork_turn", "turn_count", "parent_id"
    )
    return root, {s.pk: s for s in sessions}


def subagents_of(session: Session) -> dict[str, Session]:
    """The session's subagent transcripts by agent id (from `agent-<id>.jsonl`)."""
    subs = Session.objects.subagents_of(session)
    out = {}
    for sub in subs.only("id", "path", "agent_name", "record_count", "session_id"):
        out[agent_id_of(sub)] = sub
    return out


def agent_id_of(sub: Session) -> str:
    """A subagent transcript's agent id, from its file name (`agent-<id>.jsonl`)."""
    return sub.path.rsplit("/", 1)[-1].removesuffix(".jsonl").removeprefix("agent-")
