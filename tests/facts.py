"""The facts each corpus file must yield (tests/fixtures mirrors shared/corpus)."""

from __future__ import annotations

# relative path under tests/fixtures -> turns on the active branch
TURNS = {
    "cli/claude/-home-dev-code-webapp/d62afd75-12b1-4077-921c-1fa1eda79364.jsonl": 3,
    "cli/claude/-home-dev-code-bigrepo/ad8024e4-83f0-4ff3-82f8-4e19f6c9127b.jsonl": 30,
    "cli/claude/-home-dev-code-agents/04fa9149-8141-4f34-8bc2-f6d11b8fa354.jsonl": 2,
    "cli/claude/-home-dev-code-forks/1d4a52d5-4001-489b-b03d-81bd7cf462c5.jsonl": 2,
    "cli/claude/-home-dev-code-forks/ff61fa45-6bd0-4f30-be46-c8dcac5a359b.jsonl": 3,
    "cli/qwen/-home-dev-code-qwenproj/chats/6fbeb39a-1e79-43ef-995c-46eedd93e6fe.jsonl": 3,
    "synthetic/qwen/-home-dev-code-btwdemo/chats/5b0c1d2e-3f40-4a51-8b62-7c8d9e0fa1b2.jsonl": 3,
    "public/claude/-experiments-worktrees/ef958aa1-0e93-49f0-bb71-150f63befcd1.jsonl": 2,
    "public/claude/-experiments-ideas/03eb5929-52b3-4b13-ada3-b93ae35806b8.jsonl": 4,
    "public/claude/-experiments-ideas/a95fea4a-b88a-4e49-ac07-4cc323d8700c.jsonl": 0,
    "public/claude/-Users-dain-workspace-claude-code-log-sample/0d3a8e6f-290f-4105-a327-a2496e5e2a83.jsonl": 4,
    "public/claude/-Users-dain-workspace-claude-code-log-sample/4e27c414-a885-46a0-b5c8-d58e1417377d.jsonl": 0,
    "public/claude/-src-deep-manifest/a7da6a22-facc-4fcd-8bab-f83c87862004.jsonl": 7,
    "public/claude/-home-USER-projects-spotter-worktrees-spotter-dov/4d5611e5-241a-462a-8d15-5122611a9569.jsonl": 2,
    "public/claude/-path-to-Demo/fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl": 2,
}

# Codex rollouts (read, not branched: not in TURNS, whose files every fork test forks):
# turns on the active branch, from tests/fixtures/cli/codex/README.md and
# synthetic/codex/README.md.
CODEX_TURNS = {
    "cli/codex/sessions/2026/11/26/rollout-2026-11-26T10-22-20-01a21760-a9c0-7191-881d-5cbb883febdf.jsonl": 3,
    "cli/codex/sessions/2026/11/26/rollout-2026-11-26T10-22-21-01a21760-ac42-7d62-8bb2-5e68454e4bcc.jsonl": 3,
    # a fork: its own turn (3 more inherited from its parent's file)
    "cli/codex/sessions/2026/11/26/rollout-2026-11-26T10-22-21-01a21760-ae74-71f1-9af0-3a9c6ff18f96.jsonl": 1,
    # thread/revert leaves its file whole (3) and writes a second segment file of the same
    # thread, read as a session of its own named by the segment id: its 1 turn.
    "cli/codex/sessions/2026/11/26/rollout-2026-11-26T10-29-05-01a21766-d893-7641-a0b8-5e71d683dc54.jsonl": 3,
    "cli/codex/sessions/2026/11/26/rollout-2026-11-26T10-29-06-01a21766-d893-7641-a0b8-5e71d683dc54_01a21766-dc52-7f20-bfbb-04c2731abefd.jsonl": 1,
    "cli/codex/sessions/2026/11/26/rollout-2026-11-26T10-29-07-01a21766-de59-75e3-9552-c2130690b4b1.jsonl": 3,
    # a rollback of one turn: its second prompt is an abandoned branch
    "synthetic/codex/sessions/2026/01/15/rollout-2026-01-15T10-00-00-0199aa00-1111-7222-8333-944455556666.jsonl": 2,
}

# The typed prompts of each whole-history Codex rollout, by turn (the fixtures' READMEs):
# (folder under tests/fixtures, prompts). The synthetic one is no file codex 0.169 resumes.
CODEX_PROMPTS = {
    "01a21760-a9c0-7191-881d-5cbb883febdf": (
        "cli/codex/sessions",
        ["RUN: ls -1", "PATCH: notes.txt :: first note", "thanks, that is all"],
    ),
    "01a21760-ac42-7d62-8bb2-5e68454e4bcc": (
        "cli/codex/sessions",
        ["hello before an interrupt", "STALL: count to a million", "after the interrupt"],
    ),
    "01a21766-d893-7641-a0b8-5e71d683dc54": (
        "cli/codex/sessions",
        ["first prompt", "second prompt", "third prompt, to be rolled back"],
    ),
    "01a21766-de59-75e3-9552-c2130690b4b1": (
        "cli/codex/sessions",
        ["before compaction one", "RUN: echo two", "after compaction"],
    ),
    "0199aa00-1111-7222-8333-944455556666": (
        "synthetic/codex/sessions",
        ["first question about <b>apples</b>", "second question, asked again"],
    ),
}
# Those the real codex resumes from their own file (compat tests).
CODEX_RESUMABLE = {
    sid: prompts for sid, (folder, prompts) in CODEX_PROMPTS.items() if folder.startswith("cli/")
}

SUBAGENT_FILES = {
    "cli/claude/-home-dev-code-agents/04fa9149-8141-4f34-8bc2-f6d11b8fa354/subagents/agent-a0751b2961eeab05e.jsonl": "04fa9149-8141-4f34-8bc2-f6d11b8fa354",
    "public/claude/-experiments-worktrees/ef958aa1-0e93-49f0-bb71-150f63befcd1/subagents/agent-a4ca7529859c158c2.jsonl": "ef958aa1-0e93-49f0-bb71-150f63befcd1",
    "public/claude/-home-USER-projects-spotter-worktrees-spotter-dov/4d5611e5-241a-462a-8d15-5122611a9569/subagents/agent-a2898e3.jsonl": "4d5611e5-241a-462a-8d15-5122611a9569",
    "public/claude/-home-USER-projects-spotter-worktrees-spotter-dov/4d5611e5-241a-462a-8d15-5122611a9569/subagents/agent-acompact-e1f845.jsonl": "4d5611e5-241a-462a-8d15-5122611a9569",
    "public/claude/-src-deep-manifest/agent-c8d9b115.jsonl": "a7da6a22-facc-4fcd-8bab-f83c87862004",
}

FORKS_TREE = "cli/claude/-home-dev-code-forks/ff61fa45-6bd0-4f30-be46-c8dcac5a359b.jsonl"
IDEAS_REWIND = "public/claude/-experiments-ideas/03eb5929-52b3-4b13-ada3-b93ae35806b8.jsonl"
QWEN_MID_TURN = (
    "synthetic/qwen/-home-dev-code-btwdemo/chats/5b0c1d2e-3f40-4a51-8b62-7c8d9e0fa1b2.jsonl"
)
COMPACTED = "public/claude/-home-USER-projects-spotter-worktrees-spotter-dov/4d5611e5-241a-462a-8d15-5122611a9569.jsonl"
SIDECHAIN_INLINE = "public/claude/-path-to-Demo/fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl"

# Sessions made for cases the corpus lacks, in the shapes the CLIs wrote (tests/fixtures/made/,
# described in its README). Not under the corpus roots: the corpus counts above stay true.
MADE_ROOT = "made/claude"
INIT_1_0 = "made/claude/-home-dev-code-initdemo/1b0c2d3e-4f50-4a61-8b72-93a4b5c6d7e8.jsonl"
SCREENSHOTS = "made/claude/-home-dev-code-screenshots/2c1d3e4f-5061-4b72-8c83-a4b5c6d7e8f9.jsonl"
MADE_TURNS = {INIT_1_0: 2, SCREENSHOTS: 2}
