"""The family tree of sessions (branches, forks, rewind backups) as an SVG.

The parent links come from the files (`forkedFrom`), so they can be anything: a
chain a thousand forks deep, or a cycle. Every walk here is iterative and visits
a session once, and the drawing is bounded: the way from the root to the current
session keeps its first and last boxes, and an ellipsis box stands for what is
left out there, below the deepest column and past the box budget.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import pairwise

from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

from ..models import Session
from .splits import kind_label, split_label

NODE_W, NODE_H, GAP_X, GAP_Y = 230, 44, 60, 16
MAX_CHAIN = 8  # boxes from the root down to the current session
MAX_DEPTH = 12  # columns
MAX_BOXES = 120  # sessions drawn besides that way down


@dataclass(slots=True)
class Box:
    """One box of the drawing: a session (`pk`), or an ellipsis for `hidden` sessions."""

    pk: int | None
    hidden: int = 0
    children: list[Box] = field(default_factory=list)


def how_made(session: Session) -> str:
    """How a session came from its parent, e.g. "branch, split after turn 4"."""
    split = split_label(session)
    return f"{kind_label(session)}, split {split}" if split else kind_label(session)


def family_boxes(parent_of: dict[int, int], current: int) -> Box:
    """The bounded drawing of the family of `current`, given every child -> parent link."""
    children: dict[int, list[int]] = {}
    for child, of in sorted(parent_of.items()):
        children.setdefault(of, []).append(child)
    chain = [current]
    seen = {current}
    while (parent := parent_of.get(chain[-1])) is not None and parent not in seen:
        chain.append(parent)
        seen.add(parent)
    chain.reverse()
    kids, size = _tree(chain[0], children)

    root = Box(chain[0])
    # The way down to `current`: each kept box's next one on that way.
    next_on_chain: dict[int, tuple[int, Box]] = {}
    boxes = {chain[0]: root}
    if len(chain) > MAX_CHAIN:
        tail = chain[-(MAX_CHAIN - 2) :]
        cut = Box(None, hidden=size[chain[1]] - size[tail[0]])
        next_on_chain[chain[0]] = (chain[1], cut)
        boxes[tail[0]] = Box(tail[0])
        cut.children.append(boxes[tail[0]])
    else:
        tail = chain
    for upper, lower in pairwise(tail):
        boxes[lower] = Box(lower)
        next_on_chain[upper] = (lower, boxes[lower])

    budget = MAX_BOXES
    stack = [(chain[0], root, 0)]
    if len(chain) > MAX_CHAIN:
        stack.append((tail[0], boxes[tail[0]], 2))
    while stack:
        pk, box, depth = stack.pop()
        on_chain = next_on_chain.get(pk)
        hidden = 0
        expand = []
        for kid in kids.get(pk, ()):
            if on_chain and kid == on_chain[0]:
                box.children.append(on_chain[1])
                if on_chain[1].pk is not None:
                    expand.append((kid, on_chain[1], depth + 1))
            elif depth + 1 >= MAX_DEPTH or budget <= 0:
                hidden += size[kid]
            else:
                budget -= 1
                kid_box = Box(kid)
                box.children.append(kid_box)
                expand.append((kid, kid_box, depth + 1))
        if hidden:
            box.children.append(Box(None, hidden=hidden))
        stack.extend(reversed(expand))
    return root


def _tree(root: int, children: dict[int, list[int]]) -> tuple[dict[int, list[int]], dict[int, int]]:
    """Children and subtree sizes of the tree under `root`, each session visited once."""
    kids: dict[int, list[int]] = {}
    order = [root]
    visited = {root}
    stack = [root]
    while stack:
        pk = stack.pop()
        mine = [kid for kid in children.get(pk, ()) if kid not in visited]
        visited.update(mine)
        kids[pk] = mine
        order.extend(mine)
        stack.extend(mine)
    size: dict[int, int] = {}
    for pk in reversed(order):
        size[pk] = 1 + sum(size[kid] for kid in kids[pk])
    return kids, size


def box_pks(root: Box) -> set[int]:
    """Every session drawn."""
    found: set[int] = set()
    stack = [root]
    while stack:
        box = stack.pop()
        if box.pk is not None:
            found.add(box.pk)
        stack.extend(box.children)
    return found


def lineage_svg(root: Box, sessions: dict[int, Session], *, current: Session) -> SafeString:
    """Draw the boxes under `root` left to right, one column per generation."""
    placed: list[tuple[Box, int, int]] = []
    edges = []
    row = 0
    stack: list[tuple[Box, int, tuple[int, int] | None]] = [(root, 0, None)]
    while stack:
        box, depth, parent_xy = stack.pop()
        x, y = depth * (NODE_W + GAP_X) + 4, row * (NODE_H + GAP_Y) + 4
        placed.append((box, x, y))
        if parent_xy is not None:
            x1, y1, x2, y2 = parent_xy[0] + NODE_W, parent_xy[1] + NODE_H // 2, x, y + NODE_H // 2
            mid = (x1 + x2) // 2
            edges.append((x1, y1, mid, y1, mid, y2, x2, y2))
        if not box.children:
            row += 1
        stack.extend((kid, depth + 1, (x, y)) for kid in reversed(box.children))
    width = max(x for _, x, _ in placed) + NODE_W + 4
    height = max(row, 1) * (NODE_H + GAP_Y)

    nodes = []
    for box, x, y in placed:
        session = sessions.get(box.pk) if box.pk is not None else None
        if session is None:
            nodes.append(_ellipsis(box, x, y))
        else:
            nodes.append(_node(session, x, y, current=session.pk == current.pk))
    edge_html = format_html_join("", '<path class="edge" d="M{} {} C{} {} {} {} {} {}"/>', edges)
    return format_html(
        '<svg class="lineage" xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" '
        'viewBox="0 0 {} {}" role="img" aria-label="Session family tree">{}{}</svg>',
        width + 4,
        height + 8,
        width + 4,
        height + 8,
        mark_safe(edge_html),  # noqa: S308 (built by format_html_join)
        mark_safe("".join(nodes)),  # noqa: S308 (each built by format_html)
    )


def _node(session: Session, x: int, y: int, *, current: bool) -> str:
    title = session.title or str(session.session_id)
    return format_html(
        '<a href="{}" class="{}"><rect x="{}" y="{}" width="{}" height="{}" rx="6"/>'
        '<text x="{}" y="{}" class="title">{}</text>'
        '<text x="{}" y="{}" class="meta">{}</text><title>{}</title></a>',
        reverse("sessions:session_detail", args=[session.ref]),
        "node current" if current else f"node {session.kind or 'original'}",
        x,
        y,
        NODE_W,
        NODE_H,
        x + 10,
        y + 18,
        title if len(title) <= 30 else title[:29] + "…",
        x + 10,
        y + 35,
        f"{how_made(session)} · {turns(session.turn_count)}",
        title,
    )


def turns(n: int) -> str:
    """ "1 turn", "2 turns"."""
    return f"{n} turn" if n == 1 else f"{n} turns"


def _ellipsis(box: Box, x: int, y: int) -> str:
    count = max(box.hidden, 1)
    return format_html(
        '<g class="node more"><rect x="{}" y="{}" width="{}" height="{}" rx="6" '
        'stroke-dasharray="4 3"/><text x="{}" y="{}" class="meta">… {} more session{} '
        "not drawn</text></g>",
        x,
        y,
        NODE_W,
        NODE_H,
        x + 10,
        y + 27,
        f"{count:,}",
        "" if count == 1 else "s",
    )
