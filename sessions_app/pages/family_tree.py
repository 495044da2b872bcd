"""The family tree as nested lists of links, built without recursion (a chain can be deep)."""

from __future__ import annotations

from urllib.parse import quote

from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe

from ..models import Session
from ..rendering.lineage import how_made
from ..rendering.numbers import usd, when
from ..rendering.splits import after_turn
from ..selectors.tree import FamilyTree, TreeNode

DEEP = 8  # from this level on, branches are not indented further (a phone stays readable)


def _plural(n: int, word: str, many: str = "") -> str:
    return f"{n} {word}" if n == 1 else f"{n} {many or word + 's'}"


def _when(label: str, at) -> SafeString:
    if at is None:
        return mark_safe("")
    return format_html(" · {} {}", label, when(at))


def _card(node: TreeNode, current: Session) -> SafeString:
    if node.session is None:
        branch, owner = node.abandoned or {}, node.owner
        assert owner is not None
        prompt = str(branch.get("prompt") or "")
        url = reverse("sessions:session_detail", args=[owner.ref])
        against = reverse("sessions:compare", args=[owner.ref, owner.ref])
        leaf = quote(str(branch.get("leaf_uuid") or ""), safe="")
        # It replaced turn `at_turn` of the active branch: they share the turns before it.
        at_turn = branch.get("at_turn")
        split = after_turn(at_turn - 1) if isinstance(at_turn, int) and at_turn > 0 else ""
        return format_html(
            '<span class="tree-title">“{}”</span> <span class="meta">left by a rewind inside '
            "the CLI{} · {} · still in this file</span> "
            '<a class="meta" href="{}?leaf={}">open it</a> · '
            '<a class="meta compare-branch" href="{}?leaf_b={}">compare with the active branch</a>',
            prompt if len(prompt) <= 160 else prompt[:159] + "…",
            f", split {split}" if split else "",
            _plural(int(branch.get("turns") or 0), "turn"),
            url,
            leaf,
            against,
            leaf,
        )
    s = node.session
    kind = how_made(s)
    if getattr(s, "undone", False):
        kind += " · rewind undone: its session holds this history again"
    own = node.own
    cost = format_html(" · own cost {}", usd(own.cost)) if own and own.messages else ""
    level = f" · level {node.depth}" if node.depth >= DEEP else ""
    compare = (
        format_html(
            ' <a class="compare-parent meta" href="{}">compare with parent</a>',
            reverse("sessions:compare", args=[node.parent_sid, s.ref]),
        )
        if node.parent_sid
        else ""
    )
    return format_html(
        '<a href="{}" class="tree-title">{}</a>{} <span class="meta">{} · {}{}{}{}{}</span>{}',
        reverse("sessions:session_detail", args=[s.ref]),
        s.title or str(s.session_id),
        mark_safe(' <span class="badge">this session</span>') if s.pk == current.pk else "",
        kind,
        _plural(s.turn_count, "turn"),
        _when("made", node.made),
        _when("last activity", s.updated_at),
        cost,
        level,
        compare,
    )


def tree_html(tree: FamilyTree, current: Session) -> SafeString:
    """`<ul class="tree">` with one `<li>` per node; each node's branches in an open
    `<details>`, so a subtree collapses without script."""
    out: list[str] = ['<ul class="tree">']
    stack: list[tuple[TreeNode, bool]] = [(tree.root, False)]
    while stack:
        node, closing = stack.pop()
        if closing:
            out.append("</ul></details></li>")
            continue
        classes = ["tree-node"]
        if node.session is not None and node.session.pk == current.pk:
            classes.append("current")
        if node.session is None:
            classes.append("in-file")
        if node.depth >= DEEP:
            classes.append("deep")
        out.append(format_html('<li class="{}"><div class="tree-card">', " ".join(classes)))
        out.append(_card(node, current))
        out.append("</div>")
        if not node.children:
            out.append("</li>")
            continue
        size = node.size
        extra = f", {size} in all" if size != len(node.children) else ""
        out.append(
            format_html(
                '<details open><summary class="meta">{}{}</summary><ul>',
                _plural(len(node.children), "branch", "branches"),
                extra,
            )
        )
        stack.append((node, True))
        stack.extend((child, False) for child in reversed(node.children))
    out.append("</ul>")
    return mark_safe("".join(out))  # noqa: S308 (every piece built by format_html)
