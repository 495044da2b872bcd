"""The family tree of sessions (branches, forks, rewind backups) as an SVG."""

from __future__ import annotations

from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

from .models import Session

NODE_W, NODE_H, GAP_X, GAP_Y = 230, 44, 60, 16
KIND_LABELS = {
    "branch": "branch",
    "fork": "fork at turn {turn}",
    "fork_before": "edit & fork before turn {turn}",
    "rewind_backup": "backup before rewind to turn {turn}",
}


def split_label(session: Session) -> str:
    """How a session came from its parent, e.g. "fork at turn 4"."""
    label = KIND_LABELS.get(session.kind, "")
    return label.format(turn=session.fork_turn or "?") if label else "original"


def lineage_svg(family: list[Session], *, current: Session) -> SafeString:
    """Draw `family` (a root first, then descendants) left to right."""
    by_parent: dict[int | None, list[Session]] = {}
    ids = {s.pk for s in family}
    for s in family:
        parent = s.parent_id if s.parent_id in ids else None
        by_parent.setdefault(parent, []).append(s)
    positions: dict[int, tuple[int, int]] = {}
    row = 0

    def place(node: Session, depth: int) -> None:
        nonlocal row
        positions[node.pk] = (depth, row)
        kids = by_parent.get(node.pk, [])
        if not kids:
            row += 1
        for kid in kids:
            place(kid, depth + 1)

    for root in by_parent.get(None, []):
        place(root, 0)
    width = (max(d for d, _ in positions.values()) + 1) * (NODE_W + GAP_X)
    height = max(row, 1) * (NODE_H + GAP_Y)

    def xy(s: Session) -> tuple[int, int]:
        depth, r = positions[s.pk]
        return depth * (NODE_W + GAP_X) + 4, r * (NODE_H + GAP_Y) + 4

    edges = []
    for s in family:
        if s.parent_id in positions:
            px, py = xy(next(p for p in family if p.pk == s.parent_id))
            cx, cy = xy(s)
            x1, y1, x2, y2 = px + NODE_W, py + NODE_H // 2, cx, cy + NODE_H // 2
            mid = (x1 + x2) // 2
            edges.append((x1, y1, mid, y1, mid, y2, x2, y2))
    nodes = []
    for s in family:
        x, y = xy(s)
        title = s.title or str(s.session_id)
        nodes.append(
            (
                reverse("sessions:session_detail", args=[s.session_id]),
                "node current" if s.pk == current.pk else f"node {s.kind or 'original'}",
                x,
                y,
                x + 10,
                y + 18,
                title if len(title) <= 30 else title[:29] + "…",
                x + 10,
                y + 35,
                f"{split_label(s)} · {s.turn_count} turns",
                title,
            )
        )
    edge_html = format_html_join("", '<path class="edge" d="M{} {} C{} {} {} {} {} {}"/>', edges)
    node_html = format_html_join(
        "",
        '<a href="{}" class="{}"><rect x="{}" y="{}" width="'
        + str(NODE_W)
        + '" height="'
        + str(NODE_H)
        + '" rx="6"/><text x="{}" y="{}" class="title">{}</text>'
        '<text x="{}" y="{}" class="meta">{}</text><title>{}</title></a>',
        nodes,
    )
    return format_html(
        '<svg class="lineage" xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" '
        'viewBox="0 0 {} {}" role="img" aria-label="Session family tree">{}{}</svg>',
        width + 8,
        height + 8,
        width + 8,
        height + 8,
        mark_safe(edge_html),  # noqa: S308 (built by format_html_join)
        mark_safe(node_html),  # noqa: S308 (built by format_html_join)
    )
