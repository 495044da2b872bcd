"""A Codex CLI transcript in a real browser: numbered prompts, a shell call with its
output, an `apply_patch` as a diff, branch, fork, rewind and runs offered (issue 29)."""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Page, expect

from .conftest import shot

# Three turns recorded with the real codex 0.169 (tests/fixtures/cli/codex/README.md):
# a shell call (`ls -1`), an apply_patch of notes.txt, a closing prompt.
THREE_TURNS = "01a21760-a9c0-7191-881d-5cbb883febdf"


def test_a_codex_transcript_shows_its_turns_shell_call_and_diff_and_its_actions(
    page: Page, live_server, session_root: Path
) -> None:
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(f"{live_server.url}/sessions/{THREE_TURNS}/")

    expect(page.locator("span.agent.agent-codex")).to_have_text("Codex CLI")
    prompts = page.locator(".prompt .prompt-text")
    expect(prompts).to_have_text(
        ["RUN: ls -1", "PATCH: notes.txt :: first note", "thanks, that is all"]
    )
    expect(page.locator(".turn-no")).to_have_text(["1", "2", "3"])
    # The injected <environment_context> is no prompt of its own.
    expect(page.locator(".prompt", has_text="environment_context")).to_have_count(0)

    shell = page.locator("details.tool", has=page.locator("pre.command", has_text="$ ls -1"))
    expect(shell).to_have_count(1)
    expect(shell.locator(".badge.exit")).to_have_text("exit 0")
    shell.locator("summary").click()
    expect(shell.locator(".tool-body")).to_contain_text("README.md")

    patch = page.locator("details.tool", has=page.locator(".diff"))
    expect(patch).to_have_count(1)
    patch.locator("summary").click()
    expect(patch.locator(".diff")).to_contain_text("first note")
    expect(patch.locator("summary")).to_contain_text("notes.txt")

    # Branch, fork (a new rollout), rewind (from turn 2 on) and runs are offered.
    expect(page.locator("#branch-session")).to_have_count(1)
    expect(page.locator(".branch-here")).to_have_count(3)
    expect(page.locator(".edit-fork")).to_have_count(3)
    expect(page.locator("#run-panel")).to_have_count(1)
    expect(page.locator(".rewind-here")).to_have_count(2)
    expect(page.locator("#branch-refusal")).to_have_count(0)
    shot(page, "transcript-codex")
