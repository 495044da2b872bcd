"""Two sessions of a family side by side: the split, each side's turns, files and failures."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.test import Client

from sessions_app.models import Session
from sessions_app.selectors.compare import compare
from sessions_app.services.branching import session_fork
from sessions_app.services.importing import sessions_import

from .factories import assistant_record, jsonl, tool_result, user_record

pytestmark = pytest.mark.django_db
WEBAPP = "cli/claude/-home-dev-code-webapp/d62afd75-12b1-4077-921c-1fa1eda79364.jsonl"


def go_on(session: Session, prompt: str, path_written: str, *, fail: bool = False) -> None:
    """The CLI carries the session on by one turn that writes a file (and maybe fails a tool)."""
    sid, parent = str(session.session_id), session.leaf_uuid
    user = user_record(prompt, sid=sid, parent=parent, timestamp="2026-12-01T00:00:00.000Z")
    call = {
        "type": "tool_use",
        "id": "w1",
        "name": "Write",
        "input": {"file_path": path_written, "content": "x"},
    }
    answer = assistant_record(
        [call], sid=sid, parent=user["uuid"], timestamp="2026-12-01T00:00:01.000Z"
    )
    result = user_record(tool_result("w1", "Error: denied" if fail else "ok"), sid=sid, parent=answer["uuid"],
                         timestamp="2026-12-01T00:00:02.000Z")  # fmt: skip
    if fail:
        result["message"]["content"][0]["is_error"] = True
    done = assistant_record(
        "done", sid=sid, parent=result["uuid"], timestamp="2026-12-01T00:00:03.000Z"
    )
    with Path(session.path).open("ab") as f:
        f.write(jsonl([user, answer, result, done]))


def test_two_forks_compare_from_their_split(imported: Path) -> None:
    source = Session.objects.get(path=str(imported / WEBAPP))
    left = session_fork(session=source, turn=2)
    right = session_fork(session=source, turn=2)
    go_on(left, "try the left way", "/home/dev/code/webapp/left.py")
    go_on(right, "try the right way", "/home/dev/code/webapp/right.py", fail=True)
    sessions_import(roots=[imported / "cli/claude"])
    left.refresh_from_db()
    right.refresh_from_db()
    cmp = compare(left, right)
    assert cmp.split == 2 and len(cmp.shared) == 2
    assert (cmp.a.total_turns, cmp.b.total_turns) == (1, 1)
    assert cmp.a.turns[0].prompt == "try the left way" and cmp.b.turns[0].number == 3
    assert cmp.only_a == ["/home/dev/code/webapp/left.py"]
    assert cmp.only_b == ["/home/dev/code/webapp/right.py"] and cmp.both == []
    assert (cmp.a.failed, cmp.b.failed) == (0, 1)
    # With the source: its own turn 3 against the fork's, and the file its turn 2 edited
    # before the split is not counted.
    with_source = compare(source, left)
    assert with_source.split == 2 and with_source.a.total_turns == 1
    assert "/home/dev/code/webapp/app.py" not in with_source.only_a


def test_the_compare_page_and_the_link_from_a_fork(imported: Path, client: Client) -> None:
    source = Session.objects.get(path=str(imported / WEBAPP))
    fork = session_fork(session=source, turn=1)
    page = client.get(f"/sessions/{fork.session_id}/").content.decode()
    url = f"/sessions/{source.session_id}/compare/{fork.session_id}/"
    assert f'href="{url}" id="compare-parent"' in page
    page = client.get(url).content.decode()
    assert 'id="compare-summary"' in page and "The shared history: 1 turn<" in page
    assert 'id="compare-left"' in page and 'id="compare-right"' in page
    assert "Now run the tests" in page  # the source's turn 2, on the left only
    # Its reply starts as Markdown, rendered as in the transcript, not its raw syntax.
    left = page[page.index('id="compare-left"') : page.index('id="compare-right"')]
    assert "<strong>no tests</strong>" in left and "**no tests**" not in left
    assert "<table" in left and "|---|" not in left
    assert (
        client.get(f"/sessions/{source.session_id}/compare/{source.session_id}x/").status_code
        == 404
    )
    lineage = client.get(f"/sessions/{fork.session_id}/lineage/").content.decode()
    assert url in lineage


def test_any_two_of_a_family_can_be_picked_from_the_lineage_page(
    imported: Path, client: Client
) -> None:
    source = Session.objects.get(path=str(imported / WEBAPP))
    one = session_fork(session=source, turn=1)
    two = session_fork(session=source, turn=2)
    page = client.get(f"/sessions/{two.session_id}/lineage/").content.decode()
    assert 'id="compare-pick"' in page and str(one.session_id) in page
    response = client.get(
        f"/sessions/{two.session_id}/compare/", {"a": str(one.session_id), "b": str(two.session_id)}
    )
    assert response.status_code == 302
    assert response["Location"] == f"/sessions/{one.session_id}/compare/{two.session_id}/"
    page = client.get(response["Location"]).content.decode()
    assert "Two directions, split after turn 1" in page
    assert client.get(f"/sessions/{two.session_id}/compare/", {"a": "x"}).status_code == 404
    # The form starts on a pair, never on one session twice: a fork with its parent, the
    # original with its first fork.
    for current, pair in ((two, (source, two)), (source, (source, one))):
        page = client.get(f"/sessions/{current.session_id}/lineage/").content.decode()
        picked = re.findall(r'<option value="([^"]+)" selected>', page)
        assert picked == [str(pair[0].session_id), str(pair[1].session_id)], current.title


def test_a_session_compares_with_a_branch_its_cli_rewind_abandoned(
    imported: Path, client: Client
) -> None:
    from sessions_app.services.reading.branches import abandoned_branch

    from .facts import FORKS_TREE

    session = Session.objects.get(path=str(imported / FORKS_TREE))
    [left] = session.abandoned
    branch = abandoned_branch(session, left["leaf_uuid"])

    cmp = compare(session, session, None, branch)

    assert cmp.split == 2 and len(cmp.shared) == 2
    assert (cmp.a.total_turns, cmp.b.total_turns) == (1, 1)
    assert "a different prompt after rewind" in cmp.a.turns[0].prompt
    assert "one more prompt in the branch" in cmp.b.turns[0].prompt
    assert cmp.a.branch is None and cmp.b.branch is branch

    url = f"/sessions/{session.session_id}/compare/{session.session_id}/"
    page = client.get(f"{url}?leaf_b={left['leaf_uuid']}").content.decode()
    assert "Two directions, split after turn 2" in page and "abandoned branch" in page
    assert "a different prompt after rewind" in page and "one more prompt in the branch" in page
    assert f'?leaf={left["leaf_uuid"]}"' in page  # the branch's side links to its own page
    # Reached from the branch's page and from the tree.
    branch_page = client.get(f"/sessions/{session.session_id}/?leaf={left['leaf_uuid']}")
    assert f'{url}?leaf_b={left["leaf_uuid"]}" id="compare-branch"' in branch_page.content.decode()
    tree = client.get(f"/sessions/{session.session_id}/lineage/").content.decode()
    assert f'class="meta compare-branch" href="{url}?leaf_b={left["leaf_uuid"]}"' in tree
    # A leaf that names no abandoned branch, and the same direction twice, are not pages.
    assert client.get(f"{url}?leaf_b={session.leaf_uuid}").status_code == 404
    assert client.get(f"{url}?leaf_b=../x").status_code == 404
    assert client.get(url).status_code == 404


def test_two_sessions_in_worktrees_of_one_repository_show_the_real_git_diff(
    tmp_path: Path, client: Client
) -> None:
    from .test_worktrees import claude_session, commit, make_repo, run

    repo = make_repo(tmp_path / "code" / "app")
    root = tmp_path / "claude-projects"
    for name in ("left", "right"):
        run("worktree", "add", "-q", "-b", f"try-{name}", str(tmp_path / name), cwd=repo)
    commit(tmp_path / "left", "app.py", "print('left')\n", "left's way")
    commit(tmp_path / "right", "new.py", "x = 2\n", "right's way")
    a = claude_session(root, tmp_path / "left")
    b = claude_session(root, tmp_path / "right")

    page = client.get(f"/sessions/{a.session_id}/compare/{b.session_id}/").content.decode()

    assert 'id="compare-git"' in page and "git diff try-left try-right" in page
    assert "app.py" in page and "new.py" in page
    assert (
        '<span class="del">-print(&#x27;left&#x27;)</span>' in page
    )  # left's line, gone on the right
    assert '<span class="add">+print(&#x27;v1&#x27;)</span>' in page
    assert '<span class="add">+x = 2</span>' in page
    # Not in git worktrees of one repository (the corpus sessions): no such section.
    other = make_repo(tmp_path / "code" / "other")
    c = claude_session(root, other)
    page = client.get(f"/sessions/{a.session_id}/compare/{c.session_id}/").content.decode()
    assert 'id="compare-git"' not in page


def test_two_unrelated_sessions_share_no_history(client, imported: Path) -> None:
    from django.urls import reverse

    a = Session.objects.get(
        path=str(
            imported / "cli/claude/-home-dev-code-webapp/d62afd75-12b1-4077-921c-1fa1eda79364.jsonl"
        )
    )
    b = Session.objects.get(
        path=str(
            imported / "cli/claude/-home-dev-code-agents/04fa9149-8141-4f34-8bc2-f6d11b8fa354.jsonl"
        )
    )
    html = client.get(
        reverse("sessions:compare", args=[a.session_id, b.session_id])
    ).content.decode()
    assert "These two sessions share no history" in html and "from turn 0" not in html


def test_sessions_outside_git_are_told_so_in_words(tmp_path: Path, client: Client) -> None:
    from .test_worktrees import claude_session

    plain = tmp_path / "plain"
    plain.mkdir()
    root = tmp_path / "claude-projects"
    a, b = claude_session(root, plain), claude_session(root, plain)

    page = client.get(f"/sessions/{a.session_id}/compare/{b.session_id}/").content.decode()

    section = re.search(r'<section class="compare-git".*?</section>', page, re.S)
    assert section, page
    assert f"{plain} is not in a git repository" in section.group(0)
    assert "fatal" not in section.group(0) and "rev-parse" not in section.group(0)
    assert "unpriced" not in section.group(0)  # information, not an error in red
