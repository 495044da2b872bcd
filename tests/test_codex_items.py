"""Codex items from rollouts in the wild, shown and found as what they are (issue 42, 4-9)."""

from __future__ import annotations

import html as html_lib
import re
import shutil
from pathlib import Path

import pytest

from sessions_app.models import Session
from sessions_app.services.importing import sessions_import
from sessions_app.services.searching import search_refresh

pytestmark = pytest.mark.django_db(transaction=True)

FIXTURES = Path(__file__).parent / "fixtures" / "codex_items" / "sessions"
ITEMS = "019f5000-1111-7222-8333-944455556666"


@pytest.fixture
def items_root(tmp_path: Path, settings) -> Path:
    root = tmp_path / "sessions"
    shutil.copytree(FIXTURES, root)
    settings.SESSION_ROOTS = [root]
    sessions_import(roots=[root])
    return root


def _page(client) -> str:
    response = client.get(f"/sessions/{ITEMS}/")
    assert response.status_code == 200
    return response.content.decode()


def _hits(client, token: str, query: str) -> list[dict]:
    search_refresh()
    api = client.get("/api/search", {"q": query}, HTTP_AUTHORIZATION=f"Bearer {token}").json()
    return [hit for s in api["sessions"] if s["session_id"] == ITEMS for hit in s["hits"]]


def test_the_fixture_has_its_three_turns(items_root: Path) -> None:
    assert Session.objects.get(session_id=ITEMS).turn_count == 3


# 4 -------------------------------------------------------------------------------------


def test_a_list_output_of_a_custom_tool_is_shown_and_found(
    client, items_root: Path, token: str
) -> None:
    page = _page(client)

    assert "wombatcount 42 quokkas found" in page
    assert "Script ran in 0.2 s" in page
    assert [h["part"] for h in _hits(client, token, "wombatcount")] == ["output"]


# 5 -------------------------------------------------------------------------------------


def test_plain_reasoning_is_shown_and_found(client, items_root: Path, token: str) -> None:
    page = _page(client)

    assert "marsupial arithmetic" in page
    assert "the reasoning is encrypted" not in page
    assert [h["part"] for h in _hits(client, token, '"marsupial arithmetic"')] == ["thinking"]


# 6 -------------------------------------------------------------------------------------


def test_a_pasted_image_is_drawn_and_its_tags_are_not_text(client, items_root: Path) -> None:
    page = _page(client)

    found = re.search(r'<img class="inline-image"[^>]*src="([^"]+)"', page)
    assert found is not None
    image = client.get(html_lib.unescape(found.group(1)))
    assert image.status_code == 200 and image.content.startswith(b"\x89PNG")
    assert "&lt;image&gt;" not in page and "&lt;/image&gt;" not in page


def test_an_image_the_view_image_tool_showed_the_model_is_drawn(client, items_root: Path) -> None:
    page = _page(client)

    shown = re.search(r'<details class="context"[^>]*><summary>An image.*?</details>', page, re.S)
    assert shown is not None and '<img class="inline-image"' in shown.group(0)


# 7 -------------------------------------------------------------------------------------


def test_a_patch_is_one_diff_per_file_each_hunk_numbered_from_its_own_start() -> None:
    patch = (
        "*** Begin Patch\n*** Update File: a.py\n@@ def one():\n-x = 1\n+x = 2\n y = 3\n"
        "@@ def two():\n-return 0\n+return 42\n*** Add File: b.md\n+# B\n+two\n"
        "*** Delete File: c.txt\n*** End Patch\n"
    )

    from sessions_app.rendering.diffs import patch_html

    shown = str(patch_html(patch))

    tables = re.findall(r'<table class="diff"[^>]*>.*?</table>', shown, re.S)
    assert [re.search(r"<caption>(.*?)</caption>", t).group(1) for t in tables] == [
        "a.py (changed)",
        "b.md (new file)",
        "c.txt (deleted)",
    ]
    hunks = re.findall(r'<tr class="hunk"><td colspan="4">(.*?)</td>', tables[0])
    assert hunks == ["@@ def one():", "@@ def two():"]
    # Each hunk counts its own lines: the second starts again at 1.
    rows = re.findall(r'<tr class="(del|add|ctx)"><td class="ln">(\d*)</td>', tables[0])
    assert rows == [("del", "1"), ("add", ""), ("ctx", "2"), ("del", "1"), ("add", "")]
    new_file = re.findall(r'<tr class="add"><td class="ln"></td><td class="ln">(\d+)', tables[1])
    assert new_file == ["1", "2"]
    assert "---" not in shown and "+++" not in shown


def test_every_form_of_apply_patch_is_a_diff_and_exec_input_is_code(
    client, items_root: Path
) -> None:
    page = _page(client)

    for path in ("src/zoo.py (changed)", "docs/new.md (new file)", "old.txt (deleted)"):
        assert f"<caption>{path}</caption>" in page
    # The legacy function call and the patch handed to the shell tool: diffs, not JSON.
    assert "<caption>legacy.py (changed)</caption>" in page
    assert "<caption>viashell.py (changed)</caption>" in page
    assert "&quot;input&quot;" not in page and "*** Begin Patch" not in page
    # The exec tool's JavaScript as code, its newlines real, not JSON-escaped.
    assert 'class="code"' in page and "console" in page
    assert "lines.split(&#x27;\\\\n&#x27;)" not in page


# 8 -------------------------------------------------------------------------------------


def test_injected_context_is_folded_and_said_in_words(client, items_root: Path) -> None:
    page = _page(client)

    for tag in (
        "model_switch",
        "permissions instructions",
        "collaboration_mode",
        "subagent_notification",
        "turn_aborted",
        "user_action",
        "environment_context",
    ):
        assert f"&lt;{tag}&gt;" not in page, tag
    context = re.findall(r'<details class="context[^"]*"[^>]*><summary>(.*?)</summary>', page)
    # One developer message of two parts: both said.
    assert (
        "The model was switched: new instructions for it; Collaboration mode for the model"
        in context
    )
    assert "Sandbox and approval rules for the model" in context
    assert "Collaboration mode for the model" in context
    assert "Sub-agent 019f5001-aaaa-7bbb-8ccc-9ddd0000eeee completed" in context
    assert "Review result" in context
    # The notification's text as text: real line breaks, no JSON.
    assert "The sub-agent found 3 koalas." in page and "koalas.\\nAll" not in page
    # The review's result is folded: drawn once, by the reply that says it.
    shown = re.sub(r'<details class="context.*?</details>', "", page, flags=re.S)
    assert shown.count("The platypus module lacks tests.") == 1


def test_the_markdown_export_says_injected_context_in_words(client, items_root: Path) -> None:
    response = client.get(f"/sessions/{ITEMS}/export.md")
    text = b"".join(response.streaming_content).decode()

    assert "<model_switch>" not in text and "subagent_notification" not in text
    assert "The model was switched: new instructions for it" in text
    assert "The sub-agent found 3 koalas." in text


# 9 -------------------------------------------------------------------------------------


def test_a_compaction_is_marked_and_its_encrypted_summary_said(client, items_root: Path) -> None:
    page = _page(client)

    assert "Conversation compacted" in page
    summary = re.search(r'<details class="summary-item".*?</details>', page, re.S)
    assert summary is not None and "the summary is encrypted" in summary.group(0).lower()
