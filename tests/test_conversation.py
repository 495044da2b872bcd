"""The readers and the one turn function on real transcripts (no database)."""

from __future__ import annotations

import orjson
import pytest

from sessions_app.conversation import Node, analyse, is_turn_start
from sessions_app.formats import (
    CLAUDE,
    COMMAND,
    LOCAL_OUTPUT,
    OTHER,
    PROMPT,
    QWEN,
    TOOL_RESULT,
    USER_OTHER,
    parse_line,
)

from .corpus import FIXTURES
from .facts import (
    COMPACTED,
    FORKS_TREE,
    IDEAS_REWIND,
    QWEN_MID_TURN,
    SIDECHAIN_INLINE,
    SUBAGENT_FILES,
    TURNS,
)
from .reading import analyse_file


@pytest.mark.parametrize("relpath", sorted(TURNS))
def test_turn_count_matches_corpus_facts(relpath: str) -> None:
    _, analysis = analyse_file(FIXTURES / relpath)
    assert analysis.turn_count == TURNS[relpath]


@pytest.mark.parametrize("relpath", sorted(SUBAGENT_FILES))
def test_subagent_transcripts_have_no_turns_of_their_own(relpath: str) -> None:
    _, analysis = analyse_file(FIXTURES / relpath)
    assert analysis.turn_count == 0


def test_in_cli_rewind_tree_follows_the_newest_branch() -> None:
    nodes, analysis = analyse_file(FIXTURES / FORKS_TREE)
    prompts = [nodes[i].text for i in analysis.prompt_lines]
    assert prompts == ["first prompt here", "second prompt here", "a different prompt after rewind"]
    abandoned_prompt = next(n for n in nodes if n.text == "one more prompt in the branch")
    assert analysis.active[abandoned_prompt.line] is False
    assert [(b.at_turn, b.turns, b.prompt) for b in analysis.abandoned] == [
        (3, 1, "one more prompt in the branch")
    ]


def test_rewind_with_shared_parent_marks_three_abandoned_turns() -> None:
    nodes, analysis = analyse_file(FIXTURES / IDEAS_REWIND)
    assert analysis.turn_count == 4
    assert len(analysis.abandoned) == 1
    branch = analysis.abandoned[0]
    assert (branch.at_turn, branch.turns) == (2, 3)
    assert branch.prompt.startswith("I very much like this idea")
    second = nodes[analysis.prompt_lines[1]].text or ""
    assert second.startswith("I actually don't like much this idea")


def test_qwen_mid_turn_message_is_not_a_turn() -> None:
    nodes, analysis = analyse_file(FIXTURES / QWEN_MID_TURN)
    mid = next(n for n in nodes if n.kind == USER_OTHER)
    raw = (FIXTURES / QWEN_MID_TURN).read_bytes().splitlines()[mid.line]
    assert b"mid_turn_user_message" in raw and b"during tool execution" in raw
    assert analysis.active[mid.line] and analysis.turn[mid.line] == 1
    assert analysis.turn_count == 3


def test_compaction_keeps_history_before_the_boundary() -> None:
    nodes, analysis = analyse_file(FIXTURES / COMPACTED)
    first_prompt = nodes[analysis.prompt_lines[0]]
    assert first_prompt.text and first_prompt.text.startswith("Work on bead spotter-dov")
    boundary = next(n for n in nodes if n.kind == "compact_boundary")
    assert analysis.active[boundary.line]
    summary = next(n for n in nodes if n.kind == "compact_summary")
    assert analysis.active[summary.line] and analysis.turn[summary.line] == 2


def test_inline_sidechains_are_not_turns_and_custom_command_is() -> None:
    nodes, analysis = analyse_file(FIXTURES / SIDECHAIN_INLINE)
    first = nodes[analysis.prompt_lines[0]]
    assert first.kind == COMMAND and "/orchestrator" in (first.text or "")
    sidechain_prompts = [n for n in nodes if n.sidechain and n.kind == PROMPT]
    assert len(sidechain_prompts) == 5
    assert not any(analysis.active[n.line] for n in sidechain_prompts)


def test_local_commands_are_not_turns() -> None:
    path = FIXTURES / "public/claude/-src-deep-manifest/a7da6a22-facc-4fcd-8bab-f83c87862004.jsonl"
    nodes, analysis = analyse_file(path)
    commands = [n for n in nodes if n.kind == COMMAND]
    assert {"/context", "/model"} <= {
        t for n in commands for t in ("/context", "/model") if t in (n.text or "")
    }
    assert not any(i in analysis.prompt_lines for i in (n.line for n in commands))


def test_unknown_record_type_is_carried_as_other() -> None:
    raw = b'{"type":"brand-new-thing","uuid":"x","payload":{"a":1}}\n'
    record = parse_line(CLAUDE, raw)
    assert record.kind == OTHER and record.raw_type == "brand-new-thing"


@pytest.mark.parametrize(
    ("raw", "kind"),
    [
        (b'{"type":"user","message":{"role":"user","content":"hi"}}', PROMPT),
        (b'{"type":"user","isMeta":true,"message":{"content":"x"}}', USER_OTHER),
        (
            b'{"type":"user","message":{"content":[{"type":"tool_result","content":"x"}]}}',
            TOOL_RESULT,
        ),
        (
            b'{"type":"user","message":{"content":"<local-command-stdout>ok</local-command-stdout>"}}',
            LOCAL_OUTPUT,
        ),
        (
            b'{"type":"user","message":{"content":"<task-notification>x</task-notification>"}}',
            USER_OTHER,
        ),
        (
            b'{"type":"user","message":{"content":[{"type":"text","text":"[Request interrupted by user]"}]}}',
            USER_OTHER,
        ),
        (
            b'{"type":"user","turnOrigin":"task_notification","message":{"content":"done"}}',
            USER_OTHER,
        ),
        (b'{"type":"user","message":{"content":"<command-name>/review</command-name>"}}', COMMAND),
    ],
)
def test_claude_user_records_are_classified_by_shape(raw: bytes, kind: str) -> None:
    assert parse_line(CLAUDE, raw).kind == kind


def test_qwen_tool_response_and_mid_turn_are_not_prompts() -> None:
    response = {"type": "user", "message": {"parts": [{"functionResponse": {"name": "x"}}]}}
    mid = {
        "type": "user",
        "subtype": "mid_turn_user_message",
        "message": {"parts": [{"text": "hi"}]},
    }
    assert parse_line(QWEN, orjson.dumps(response)).kind == TOOL_RESULT
    assert parse_line(QWEN, orjson.dumps(mid)).kind == USER_OTHER


def test_builtin_command_without_output_is_not_a_turn() -> None:
    node = Node(0, "a", None, COMMAND, text="<command-name>/model</command-name>")
    assert not is_turn_start(node, answered_locally=False)
    custom = Node(0, "a", None, COMMAND, text="<command-name>/orchestrator</command-name>")
    assert is_turn_start(custom, answered_locally=False)
    assert not is_turn_start(custom, answered_locally=True)


def test_cycle_in_damaged_file_does_not_hang() -> None:
    nodes = [
        Node(0, "a", "b", PROMPT),
        Node(1, "b", "a", PROMPT),
    ]
    analysis = analyse(nodes, CLAUDE)
    assert analysis.turn_count <= 2


def test_explicit_leaf_opens_an_abandoned_branch() -> None:
    nodes, analysis = analyse_file(FIXTURES / FORKS_TREE)
    branch = analysis.abandoned[0]
    agent = CLAUDE
    reopened = analyse(nodes, agent, leaf_uuid=branch.leaf_uuid)
    prompts = [nodes[i].text for i in reopened.prompt_lines]
    assert prompts[-1] == "one more prompt in the branch"
    assert reopened.turn_count == 3
