"""One name for where a session split from its parent, and one word for its kind.

A child of each kind (branch, branch from a turn, edit & fork, revived branch, rewind
backup): the lineage page (tree, table, drawing), the parent's and the child's
transcript, the project's list and the compare page all name the same last shared
turn, the one the compare page finds; and the badges say what the buttons and the
titles say ("branch" for a "Branch from here" result titled "(Branch)").
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

import pytest
from django.test import Client

from sessions_app.models import Session
from sessions_app.rendering.splits import after_turn, kind_label, last_shared_turn
from sessions_app.services.branching import session_fork, session_rewind

from .facts import FORKS_TREE

pytestmark = pytest.mark.django_db

VOID = {"br", "img", "input", "meta", "link", "hr", "col", "source", "wbr", "area", "base"}
SPLIT = re.compile(r"after turn (\d+)|before any turn")


@dataclass
class Element:
    tag: str
    attrs: dict[str, str]
    children: list[Element] = field(default_factory=list)
    text_parts: list[str] = field(default_factory=list)

    @property
    def classes(self) -> list[str]:
        return self.attrs.get("class", "").split()

    def text(self) -> str:
        """All the text inside, in order (children's text where they stand is not needed)."""
        out = list(self.text_parts)
        for child in self.children:
            out.append(child.text())
        return " ".join(" ".join(out).split())

    def walk(self) -> list[Element]:
        found, stack = [], [self]
        while stack:
            element = stack.pop()
            found.append(element)
            stack.extend(reversed(element.children))
        return found

    def find_all(self, tag: str, cls: str = "") -> list[Element]:
        return [e for e in self.walk() if e.tag == tag and (not cls or cls in e.classes)]

    def links_to(self, href: str) -> bool:
        return any(e.attrs.get("href") == href for e in self.find_all("a"))


class Page(HTMLParser):
    """A page as a tree of elements (enough of HTML for the app's own pages)."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.root = Element("root", {})
        self.open = [self.root]
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        element = Element(tag, {k: v or "" for k, v in attrs})
        self.open[-1].children.append(element)
        if tag not in VOID:
            self.open.append(element)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.open[-1].children.append(Element(tag, {k: v or "" for k, v in attrs}))

    def handle_endtag(self, tag: str) -> None:
        for i in range(len(self.open) - 1, 0, -1):
            if self.open[i].tag == tag:
                del self.open[i:]
                return

    def handle_data(self, data: str) -> None:
        self.open[-1].text_parts.append(data)


def named_split(text: str) -> int:
    """The one split a piece of a page names (0: before any turn)."""
    found = SPLIT.findall(text)
    assert len(found) == 1, text
    return int(found[0] or 0)


def get(client: Client, url: str) -> Element:
    response = client.get(url)
    assert response.status_code == 200, url
    return Page(response.content.decode()).root


def url(session: Session) -> str:
    return f"/sessions/{session.session_id}/"


def test_every_page_names_the_split_the_compare_page_finds(
    imported: Path, client: Client, settings
) -> None:
    settings.BRANCHBOARD_BUSY_SECONDS = 0
    source = Session.objects.select_related("project").get(path=str(imported / FORKS_TREE))
    assert source.turn_count == 3
    leaf = source.abandoned[0]["leaf_uuid"]
    children = {
        "branch": session_fork(session=source),
        "fork": session_fork(session=source, turn=2),
        "edit": session_fork(session=source, turn=2, include_turn=False),
        "revived": session_fork(session=source, leaf=leaf),
    }
    # What the compare page finds, before the rewind below changes the parent.
    found = {}
    for name, child in children.items():
        (h1,) = get(client, f"{url(source)}compare/{child.session_id}/").find_all("h1")
        found[name] = named_split(h1.text())
    source.refresh_from_db()
    session_rewind(session=source, turn=2)
    children["backup"] = Session.objects.get(kind=Session.Kind.REWIND_BACKUP, parent=source)
    (h1,) = get(client, f"{url(source)}compare/{children['backup'].session_id}/").find_all("h1")
    found["backup"] = named_split(h1.text())
    # Turns 1..3 whole, 1..2 kept, 1 before the edited 2, 1..2 before the abandoned
    # prompt, 1 before the rewind to 2.
    assert found == {"branch": 3, "fork": 2, "edit": 1, "revived": 2, "backup": 1}

    lineage = get(client, f"{url(source)}lineage/")
    cards = lineage.find_all("div", "tree-card")
    (table,) = lineage.find_all("table", "family")
    drawn = [a for a in lineage.find_all("a") if "node" in a.classes]
    parent_page = get(client, url(source))
    (kids,) = parent_page.find_all("div", "children")
    listed = get(client, f"/projects/{source.project_id}/")
    for name, child in children.items():
        child.refresh_from_db()
        want = found[name]
        assert last_shared_turn(child) == want, name
        href = url(child)
        (card,) = [c for c in cards if c.links_to(href)]
        assert named_split(card.text()) == want, (name, "tree")
        (row,) = [r for r in table.find_all("tr") if r.links_to(href)]
        assert named_split(row.text()) == want, (name, "table")
        (node,) = [a for a in drawn if a.attrs.get("href") == href]
        assert named_split(node.text()) == want, (name, "drawing")
        (item,) = [li for li in kids.find_all("li") if li.links_to(href)]
        assert named_split(item.text()) == want, (name, "children list")
        (head,) = get(client, href).find_all("header", "session-head")
        (note,) = head.find_all("span", "lineage-note")
        assert named_split(note.text()) == want, (name, "transcript header")
        (list_row,) = [
            r for r in listed.find_all("tr") if r.attrs.get("id") == f"session-{child.session_id}"
        ]
        (list_note,) = [d for d in list_row.find_all("div", "lineage-note") if "split" in d.text()]
        assert named_split(list_note.text()) == want, (name, "project list")


def test_the_badge_says_what_the_button_and_title_say(
    imported: Path, client: Client, settings
) -> None:
    settings.BRANCHBOARD_BUSY_SECONDS = 0
    source = Session.objects.select_related("project").get(path=str(imported / FORKS_TREE))
    leaf = source.abandoned[0]["leaf_uuid"]
    made = {
        "branch": session_fork(session=source),
        "branch from a turn": session_fork(session=source, turn=2),
        "edit & fork": session_fork(session=source, turn=2, include_turn=False),
        "revived branch": session_fork(session=source, leaf=leaf),
    }
    source.refresh_from_db()
    session_rewind(session=source, turn=2)
    made["rewind backup"] = Session.objects.get(kind=Session.Kind.REWIND_BACKUP, parent=source)
    want = {
        "branch": "branch",
        "branch from a turn": "branch",
        "edit & fork": "edit & fork",
        "revived branch": "revived branch",
        "rewind backup": "rewind backup",
    }
    # "Branch from here" makes a fork titled "... (Branch)": its badge says branch.
    assert made["branch from a turn"].kind == Session.Kind.FORK
    assert re.search(r"\(Branch( \d+)?\)$", made["branch from a turn"].title)
    listed = get(client, f"/projects/{source.project_id}/")
    recent = get(client, "/recent/")
    for name, child in made.items():
        assert kind_label(child) == want[name]
        (badge,) = [
            b
            for b in get(client, url(child)).find_all("span", "badge")
            if b.attrs["class"].startswith("badge kind-")
        ]
        assert badge.text() == want[name], name
        (row,) = [
            r for r in listed.find_all("tr") if r.attrs.get("id") == f"session-{child.session_id}"
        ]
        (badge,) = [b for b in row.find_all("span", "badge") if "kind-" in b.attrs["class"]]
        assert badge.text() == want[name], name
        (item,) = [
            li for li in recent.find_all("li") if li.attrs.get("id") == f"recent-{child.session_id}"
        ]
        (badge,) = [b for b in item.find_all("span", "badge") if "kind-" in b.attrs["class"]]
        assert badge.text() == want[name], name
    fork = made["branch from a turn"]
    page = get(client, f"{url(source)}compare/{fork.session_id}/")
    (summary,) = page.find_all("table", "compare-summary")
    (kinds,) = [r for r in summary.find_all("tr") if r.find_all("th")[0].text() == "kind"]
    # The source is itself a branch the CLI made (`/branch`).
    assert [td.text() for td in kinds.find_all("td")] == ["branch", "branch"]
    (card,) = [c for c in get(client, f"{url(source)}lineage/").find_all("div", "tree-card")
               if c.links_to(url(fork))]  # fmt: skip
    (meta,) = card.find_all("span", "meta")
    assert meta.text().startswith("branch, split after turn 2 · 2 turns")


def test_a_split_before_any_turn_and_an_unknown_one() -> None:
    assert after_turn(0) == "before any turn"
    assert after_turn(1) == "after turn 1"
    assert after_turn(None) == ""
    original = Session(kind=Session.Kind.ORIGINAL, fork_turn=None)
    assert last_shared_turn(original) is None and kind_label(original) == "original"
    # A CLI branch whose source was not read: no split to name.
    assert last_shared_turn(Session(kind=Session.Kind.BRANCH, fork_turn=None)) is None
    assert last_shared_turn(Session(kind=Session.Kind.REVIVED, fork_turn=0)) == 0
    assert last_shared_turn(Session(kind=Session.Kind.FORK_BEFORE, fork_turn=2)) == 1
    assert last_shared_turn(Session(kind=Session.Kind.REWIND_BACKUP, fork_turn=4)) == 3
