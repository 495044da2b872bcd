"""Compare in a real browser: from the family tree, "compare with parent", both sides shown."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from playwright.sync_api import Page, expect

from sessions_app.models import Session
from sessions_app.services.branching import session_fork
from sessions_app.services.importing import sessions_import
from sessions_app.services.usage import usage_refresh

from ..factories import assistant_record, jsonl, tool_result, user_record
from .conftest import shot

WEBAPP = "cli/claude/-home-dev-code-webapp/d62afd75-12b1-4077-921c-1fa1eda79364.jsonl"


def _carry_on(session: Session, prompt: str, path: str) -> None:
    """One more turn, written to the session's file as its CLI would: a Write, then done."""
    sid, now = str(session.session_id), datetime.now(UTC)
    stamp = [(now + timedelta(seconds=n)).isoformat().replace("+00:00", "Z") for n in range(4)]
    user = user_record(prompt, sid=sid, parent=session.leaf_uuid, timestamp=stamp[0])
    call = {"type": "tool_use", "id": "w1", "name": "Write",
            "input": {"file_path": path, "content": "def multiply(a, b):\n    return a * b\n"}}  # fmt: skip
    answer = assistant_record([call], sid=sid, parent=user["uuid"], timestamp=stamp[1])
    answer["message"]["model"] = "claude-opus-4-5"
    result = user_record(
        tool_result("w1", "ok"), sid=sid, parent=answer["uuid"], timestamp=stamp[2]
    )
    done = assistant_record("Added multiply() in multiply.py.", sid=sid, parent=result["uuid"],
                            timestamp=stamp[3])  # fmt: skip
    done["message"]["model"] = "claude-opus-4-5"
    with Path(session.path).open("ab") as f:
        f.write(jsonl([user, answer, result, done]))


def test_open_the_tree_compare_with_parent_see_both_sides(
    page: Page, live_server, session_root: Path
) -> None:
    source = Session.objects.get(path=str(session_root / WEBAPP))
    fork = session_fork(session=source, turn=1)
    # The fork goes its own way for a turn (as its CLI would write it), priced.
    _carry_on(fork, "Add a multiply function instead", "/home/dev/code/webapp/multiply.py")
    sessions_import(roots=[session_root / "cli/claude"])
    usage_refresh()
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(f"{live_server.url}/sessions/{fork.session_id}/lineage/")
    expect(page.locator("#family-tree")).to_be_visible()
    expect(page.locator("#family-tree .tree-node.current")).to_contain_text("2 turns")
    shot(page, "lineage")
    expect(page.locator("#family-tree")).to_contain_text("this session")
    page.locator("#family-tree .tree-node.current a.compare-parent").click()
    expect(page.locator("h1")).to_have_text("Two directions, split after turn 1")
    left, right = page.locator("#compare-left"), page.locator("#compare-right")
    expect(left).to_contain_text("Now run the tests")
    expect(left).to_contain_text("Bash")
    expect(right).to_contain_text("Add a multiply function instead")
    expect(right).to_contain_text("multiply.py")
    expect(page.locator("#compare-shared")).to_contain_text("The shared history: 1 turn")
    box_l, box_r = left.bounding_box(), right.bounding_box()
    assert box_l["x"] + box_l["width"] <= box_r["x"]  # side by side
    shot(page, "compare")
    page.set_viewport_size({"width": 390, "height": 844})  # a phone: one above the other
    box_l, box_r = left.bounding_box(), right.bounding_box()
    assert box_l["y"] + box_l["height"] <= box_r["y"]
    wide = page.evaluate(
        "Array.from(document.querySelectorAll('body *')).filter(e => e.getBoundingClientRect().right > window.innerWidth + 1).slice(0, 8).map(e => e.tagName + '.' + e.className + '#' + e.id + ' ' + Math.round(e.getBoundingClientRect().right))"
    )
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"), wide


def test_a_deep_family_tree_stays_readable_on_a_phone(
    page: Page, live_server, session_root: Path
) -> None:
    """40 generations: the page never scrolls sideways, the tree scrolls inside itself, a
    subtree collapses without script."""
    chain = [Session.objects.get(path=str(session_root / WEBAPP))]
    for _ in range(40):
        chain.append(session_fork(session=chain[-1], turn=1))
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"{live_server.url}/sessions/{chain[-1].session_id}/lineage/")
    tree = page.locator("#family-tree")
    expect(tree.locator(".tree-node")).to_have_count(41)
    wide = page.evaluate(
        "Array.from(document.querySelectorAll('body *')).filter(e => e.getBoundingClientRect()"
        ".right > window.innerWidth + 1).slice(0, 6).map(e => e.tagName + '.' + e.className)"
    )
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"), wide
    current = tree.locator(".tree-node.current > .tree-card")
    current.scroll_into_view_if_needed()
    box = current.bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= 390
    expect(current).to_contain_text("level 40")
    # Collapsing the root's branches hides all 40 below it.
    tree.locator("details > summary").first.click()
    expect(tree.locator(".tree-node.current")).to_be_hidden()


def test_a_branch_left_inside_a_file_compares_with_the_active_one_from_the_tree(
    page: Page, live_server, session_root: Path
) -> None:
    forks_tree = "cli/claude/-home-dev-code-forks/ff61fa45-6bd0-4f30-be46-c8dcac5a359b.jsonl"
    session = Session.objects.get(path=str(session_root / forks_tree))
    page.goto(f"{live_server.url}/sessions/{session.session_id}/lineage/")
    page.locator("#family-tree a.compare-branch").first.click()
    expect(page.locator("h1")).to_have_text("Two directions, split after turn 2")
    expect(page.locator("#compare-left")).to_contain_text("a different prompt after rewind")
    expect(page.locator("#compare-right")).to_contain_text("one more prompt in the branch")
    expect(page.locator("#compare-right h2")).to_contain_text("abandoned branch")
    # The right side's title opens that branch's own page.
    page.locator("#compare-right h2 a").click()
    expect(page.locator("#compare-branch")).to_be_visible()
