"""Messages count in words: "1 turn", "2 turns", never "turn(s)"."""

from __future__ import annotations

from pathlib import Path

from sessions_app.services.git import Changes
from sessions_app.services.searching import SearchReport
from sessions_app.services.usage import UsageReport
from sessions_app.services.worktrees.removing import Removal


def test_the_usage_summary_counts_in_words() -> None:
    assert UsageReport(sessions=1, messages=1).summary() == (
        "usage: 1 session counted, 1 assistant record read"
    )
    assert UsageReport(sessions=2, messages=0).summary() == (
        "usage: 2 sessions counted, 0 assistant records read"
    )


def test_a_kept_worktree_branch_counts_its_commits_in_words() -> None:
    def said(commits: int) -> str:
        return Removal(
            Path("/r/.claude/worktrees/x"), "worktree-x", False, commits, Changes()
        ).describe()

    assert said(1).endswith(
        "kept its branch worktree-x: 1 commit on it is on no other branch or remote"
    )
    assert said(3).endswith(
        "kept its branch worktree-x: 3 commits on it are on no other branch or remote"
    )
    assert "(s)" not in said(1) + said(3)


def test_the_search_summary_counts_in_words() -> None:
    assert SearchReport(sessions=1, stored=1, linked=1).summary() == (
        "search: 1 session indexed, 1 text stored, 1 copied record linked, 0 problems"
    )
    assert SearchReport(sessions=2, stored=3, errors=["x"]).summary() == (
        "search: 2 sessions indexed, 3 texts stored, 0 copied records linked, 1 problem"
    )
