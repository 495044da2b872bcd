"""A family as one tree: every session made from the same original, and the branches an
in-CLI rewind left inside each file, children in the order they were made.

Parent links come from the files, so they can be anything (a long chain, a cycle):
the walk is iterative, visits each session once and stops at `MAX_NODES`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime

from ..models import Session
from .lists import undone_rewind
from .usage import Totals
from .usage.sessions import FamilyUsage

MAX_NODES = 200
EPOCH = datetime.min.replace(tzinfo=UTC)


@dataclass
class TreeNode:
    """A session, or (`session` None) a branch left inside its parent's file."""

    depth: int
    session: Session | None = None
    own: Totals | None = None  # what this session spent after its split
    made: datetime | None = None
    abandoned: dict | None = None  # at_turn, turns, leaf_uuid, prompt
    owner: Session | None = None  # the session whose file holds an abandoned branch
    parent_sid: str = ""  # its parent's ref (for "compare with parent")
    children: list[TreeNode] = field(default_factory=list)

    @property
    def pk(self) -> int:
        return self.session.pk if self.session is not None else 0

    @property
    def size(self) -> int:
        """Nodes below this one."""
        total, stack = 0, list(self.children)
        while stack:
            node = stack.pop()
            total += 1
            stack.extend(node.children)
        return total


@dataclass
class FamilyTree:
    root: TreeNode
    trail: list[Session]  # from the root down to the current session
    nodes: int
    left_out: int  # sessions past MAX_NODES


def made_at(session: Session) -> datetime | None:
    """When a session was made: a fork when it was registered, an original when it began."""
    if session.parent_id is not None:
        return session.made_at or session.imported_at or session.started_at
    return session.started_at or session.imported_at


def family_tree(current: Session, usage: FamilyUsage | None = None) -> FamilyTree:
    """The whole family of `current` from its root, at most MAX_NODES nodes."""
    parent_of = dict(Session.objects.filter(parent__isnull=False).values_list("pk", "parent_id"))
    trail_pks = [current.pk]
    seen = {current.pk}
    while (up := parent_of.get(trail_pks[-1])) is not None and up not in seen:
        trail_pks.append(up)
        seen.add(up)
    trail_pks.reverse()
    children: dict[int, list[int]] = {}
    for child, of in parent_of.items():
        children.setdefault(of, []).append(child)
    # The whole family, depth first from the root, each session once.
    order: list[int] = []
    members, stack = {trail_pks[0]}, [trail_pks[0]]
    while stack:
        pk = stack.pop()
        order.append(pk)
        kids = [kid for kid in children.get(pk, ()) if kid not in members]
        members.update(kids)
        stack.extend(reversed(kids))
    left_out = max(0, len(order) - MAX_NODES)
    order = order[:MAX_NODES]
    sessions = Session.objects.in_bulk(order)
    # Backups of undone rewinds are marked (no separate direction any more).
    undone = Session.objects.filter(pk__in=order).filter(undone_rewind())
    for backup in undone.values_list("pk", flat=True):
        sessions[backup].undone = True  # type: ignore[attr-defined]
    own = {m.session.pk: m.own for m in usage.members} if usage else {}
    nodes: dict[int, TreeNode] = {}
    root_session = sessions[trail_pks[0]]
    root = _node(root_session, 0, own)
    nodes[root_session.pk] = root
    count = 1
    for pk in order[1:]:
        session = sessions[pk]
        above = nodes.get(session.parent_id) if session.parent_id is not None else None
        if above is None:
            continue
        node = _node(session, above.depth + 1, own)
        node.parent_sid = sessions[session.parent_id].ref
        above.children.append(node)
        nodes[pk] = node
        count += 1
    for pk, node in nodes.items():
        node.children.sort(key=lambda n: (n.made is None, n.made or EPOCH, n.pk))
        for branch in sessions[pk].abandoned or []:
            if isinstance(branch, dict):
                node.children.append(TreeNode(node.depth + 1, abandoned=branch, owner=sessions[pk]))
                count += 1
    trail = [sessions[pk] for pk in trail_pks if pk in sessions]
    return FamilyTree(root, trail, count, left_out)


def _node(session: Session, depth: int, own: dict[int, Totals]) -> TreeNode:
    return TreeNode(depth, session, own.get(session.pk), made_at(session))
