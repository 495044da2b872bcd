"""Codex CLI sessions: read, turned, priced and shown like the other agents' (issue 29)."""

from __future__ import annotations

import io
import re
import shutil
from decimal import Decimal
from pathlib import Path

import orjson
import pytest
from django.core.management import CommandError, call_command

from sessions_app.formats import PROMPT, USER_OTHER, agent_for, parse_line
from sessions_app.models import Record, Session, Usage
from sessions_app.selectors.usage.sessions import session_usage
from sessions_app.services.branching import (
    BranchingUnsupported,
    NothingToUndo,
    session_rewind,
    session_rewind_undo,
)
from sessions_app.services.branching.registering import reindex
from sessions_app.services.importing import sessions_import
from sessions_app.services.searching import search_refresh
from sessions_app.services.usage import usage_refresh

from .facts import CODEX_TURNS

pytestmark = pytest.mark.django_db(transaction=True)

FIXTURES = Path(__file__).parent / "fixtures"
CLI = FIXTURES / "cli/codex/sessions"
SYNTHETIC = FIXTURES / "synthetic/codex/sessions"
# Turn counts from tests/fixtures/cli/codex/README.md and synthetic/codex/README.md.
TURNS = {Path(relpath).stem[-36:]: turns for relpath, turns in CODEX_TURNS.items()}
ROLLED_BACK = "0199aa00-1111-7222-8333-944455556666"


def _copy(tmp_path: Path, source: Path) -> Path:
    root = tmp_path / "sessions"
    shutil.copytree(source, root)
    return root


def test_every_codex_fixture_imports_with_its_stated_turns(tmp_path: Path) -> None:
    report = sessions_import(roots=[_copy(tmp_path, CLI), _copy(tmp_path / "s", SYNTHETIC)])

    found = {str(s.session_id): s.turn_count for s in Session.objects.filter(agent="codex")}
    assert found == TURNS, report.errors
    assert not report.errors


def test_projects_come_from_the_session_cwd(tmp_path: Path) -> None:
    sessions_import(roots=[_copy(tmp_path, SYNTHETIC)])

    session = Session.objects.get(session_id=ROLLED_BACK)
    assert session.cwd == "/home/dev/code/codexdemo"
    assert session.project.path == "/home/dev/code/codexdemo"
    assert session.git_branch == "main"


def test_injected_context_is_no_prompt() -> None:
    line = (CLI / "2026/11/26").glob("*a9c0*.jsonl").__next__().read_bytes().splitlines()
    kinds = [parse_line("codex", raw).kind for raw in line]
    texts = [
        parse_line("codex", raw).text for raw in line if parse_line("codex", raw).kind == PROMPT
    ]
    assert texts == ["RUN: ls -1", "PATCH: notes.txt :: first note", "thanks, that is all"]
    assert kinds[2] == USER_OTHER and kinds[3] == USER_OTHER  # instructions, environment


def test_a_rollback_leaves_the_rolled_back_turn_as_an_abandoned_branch(tmp_path: Path) -> None:
    sessions_import(roots=[_copy(tmp_path, SYNTHETIC)])

    session = Session.objects.get(session_id=ROLLED_BACK)
    prompts = Record.objects.filter(session=session, kind=PROMPT).order_by("line")
    active = [(r.text, r.active, r.turn) for r in prompts]
    assert active == [
        ("first question about <b>apples</b>", True, 1),
        ("second question, later rolled back", False, None),
        ("second question, asked again", True, 2),
    ]
    assert session.title.startswith("first question")


def test_usage_counts_each_model_response_once(tmp_path: Path) -> None:
    sessions_import(roots=[_copy(tmp_path, SYNTHETIC)])

    session = Session.objects.get(session_id=ROLLED_BACK)
    # Three responses (the repeated token_count is the same one): 1,000 in, 100 out each.
    assert (session.input_tokens, session.output_tokens) == (3000, 300)
    assert "gpt-5.5" in (session.models_used or [])


def test_the_transcript_page_shows_codex_turns_tools_and_hidden_reasoning(
    tmp_path: Path, client
) -> None:
    sessions_import(roots=[_copy(tmp_path, CLI)])
    session = Session.objects.get(session_id="01a21760-a9c0-7191-881d-5cbb883febdf")

    page = client.get(f"/sessions/{session.session_id}/")

    assert page.status_code == 200
    html = page.content.decode()
    assert "RUN: ls -1" in html and "done: README.md" in html
    assert "$ ls -1" in html  # the shell command as a command
    assert "exit 0" in html
    assert "notes.txt" in html and 'class="diff"' in html  # apply_patch as a diff


def test_codex_is_offered_branch_fork_and_rewind() -> None:
    assert agent_for("codex").can_branch is True and agent_for("codex").can_rewind is True


def test_an_append_reads_only_the_new_line_and_keeps_the_chain(tmp_path: Path) -> None:
    root = _copy(tmp_path, SYNTHETIC)
    sessions_import(roots=[root])
    path = next(root.rglob("*.jsonl"))
    before = Record.objects.filter(session__session_id=ROLLED_BACK).count()
    with path.open("ab") as f:
        f.write(b'{"timestamp":"2026-01-15T10:01:00Z","type":"response_item","payload":')
        f.write(
            b'{"type":"message","role":"user","content":[{"type":"input_text","text":"third"}]}}\n'
        )

    report = sessions_import(roots=[root])

    session = Session.objects.get(session_id=ROLLED_BACK)
    assert report.records == 1
    assert Record.objects.filter(session=session).count() == before + 1
    assert session.turn_count == 3
    last = Record.objects.filter(session=session).order_by("-line").first()
    before_last = Record.objects.get(session=session, line=last.line - 1 if last else -1)
    assert last is not None and last.parent_uuid == before_last.uuid
    # The append hashed on from the stored line before it: a full read gives the same uuids.
    appended = dict(Record.objects.filter(session=session).values_list("line", "uuid"))
    reindex(session, full=True)
    assert dict(Record.objects.filter(session=session).values_list("line", "uuid")) == appended


def test_bad_lines_are_never_fatal(tmp_path: Path) -> None:
    root = _copy(tmp_path, SYNTHETIC)
    path = next(root.rglob("*.jsonl"))
    with path.open("ab") as f:
        f.write(b'{"timestamp":"x","type":"brand_new_kind","payload":{"a":1}}\n')
        f.write(
            b'{"type":"event_msg","payload":{"type":"thread_rolled_back","num_turns":"many"}}\n'
        )
        f.write(b"\xff\xfe not json\n")
        f.write(b'{"timestamp":"2026-01-15T10:02:00Z","type":"response_item","payl')

    report = sessions_import(roots=[root])

    session = Session.objects.get(session_id=ROLLED_BACK)
    assert session.turn_count == 2
    assert session.invalid_count >= 1
    assert report.sessions == 1


# --- Branch, fork (tests/test_codex_fork.py), rewind (tests/test_codex_rewind.py) and runs
# (tests/test_runs.py) are offered for Codex; worktrees are not yet. A session codex's own
# fork reads into is not rewound: each door refuses, with the reason.

REFUSAL = "continues the history of session 01a21760-a9c0-7191-881d-5cbb883febdf"
WORKTREE_REFUSAL = "Codex CLI sessions cannot be forked into a worktree"
THREE_TURNS = "01a21760-a9c0-7191-881d-5cbb883febdf"


@pytest.fixture
def codex_root(tmp_path: Path, settings) -> Path:
    root = _copy(tmp_path, CLI)
    settings.SESSION_ROOTS = [root]
    sessions_import(roots=[root])
    return root


def _files(root: Path) -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_the_page_offers_branch_and_fork(client, codex_root: Path) -> None:
    html = client.get(f"/sessions/{THREE_TURNS}/").content.decode()

    assert 'id="branch-refusal"' not in html
    for action in ('id="branch-session"', 'class="branch-here"', 'class="edit-fork"'):
        assert action in html, action
    assert 'id="run-panel"' in html  # carried on in the browser: codex exec resume
    assert 'class="rewind-here"' in html  # rewound the way Claude's sessions are
    assert 'class="worktree-fork"' not in html  # not offered: no button to be refused


@pytest.mark.parametrize(
    ("url", "data", "reason"),
    [
        ("fork/", {"turn": "2", "worktree": "1"}, WORKTREE_REFUSAL),
        ("rewind/", {"turn": "2"}, REFUSAL),
    ],
)
def test_every_page_action_not_offered_is_refused_with_the_reason(
    client, codex_root: Path, url: str, data: dict, reason: str
) -> None:
    before = _files(codex_root)

    response = client.post(f"/sessions/{THREE_TURNS}/{url}", data, HTTP_HX_REQUEST="true")

    assert response.status_code == 400
    assert reason in response.content.decode()
    assert _files(codex_root) == before and Session.objects.count() == len(before)


def test_the_rewind_confirmation_is_offered(client, codex_root: Path) -> None:
    response = client.get(f"/sessions/{THREE_TURNS}/rewind/", {"turn": "2"})

    assert response.status_code == 200 and "RUN: ls -1" in response.content.decode()


@pytest.mark.parametrize(
    ("url", "body", "reason"),
    [
        ("fork", {"turn": 2, "worktree": ""}, WORKTREE_REFUSAL),
        ("rewind", {"turn": 2}, REFUSAL),
    ],
)
def test_the_api_refuses_with_the_reason(
    client, codex_root: Path, token: str, url: str, body: dict, reason: str
) -> None:
    before = _files(codex_root)

    response = client.post(
        f"/api/sessions/{THREE_TURNS}/{url}",
        data=orjson.dumps(body),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )

    assert response.status_code == 400, response.content
    assert reason in response.json()["error"]
    assert _files(codex_root) == before and Session.objects.count() == len(before)


@pytest.mark.parametrize(
    ("command", "args", "reason"),
    [
        ("fork_session", ["--worktree"], WORKTREE_REFUSAL),
        ("rewind_session", ["--turn", "2"], REFUSAL),
    ],
)
def test_the_commands_refuse_with_the_reason(
    codex_root: Path, command: str, args: list, reason: str
) -> None:
    before = _files(codex_root)

    with pytest.raises(CommandError, match=reason) as refused:
        call_command(command, THREE_TURNS, *args, stdout=io.StringIO())

    assert refused.value.returncode == 2
    assert _files(codex_root) == before and Session.objects.count() == len(before)


def test_the_services_refuse_with_the_reason(codex_root: Path) -> None:
    session = Session.objects.get(session_id=THREE_TURNS)
    with pytest.raises(BranchingUnsupported, match=re.escape(REFUSAL)):
        session_rewind(session=session, turn=2)
    with pytest.raises(NothingToUndo, match="has no rewind to undo"):
        session_rewind_undo(session=session)


# --- Archived sessions (`codex archive` moves a rollout to `archived_sessions/`).


def test_an_archived_session_is_marked_on_its_page_and_in_the_lists(
    tmp_path: Path, client, settings
) -> None:
    home = tmp_path / ".codex"
    sessions = _copy(home, CLI)
    archive = home / "archived_sessions"
    archive.mkdir()
    moved = next(sessions.rglob(f"*{THREE_TURNS}.jsonl"))
    moved.rename(archive / moved.name)  # as `codex archive` leaves it: the file at the top
    settings.SESSION_ROOTS = [sessions, archive]

    report = sessions_import(roots=[sessions, archive])

    assert not report.errors
    archived = Session.objects.get(session_id=THREE_TURNS)
    assert archived.cli_archived and archived.turn_count == 3
    assert not Session.objects.filter(agent="codex", cli_archived=True).exclude(pk=archived.pk)
    badge = 'class="badge cli-archived"'
    assert badge in client.get(f"/sessions/{THREE_TURNS}/").content.decode()
    listing = client.get(f"/projects/{archived.project.pk}/").content.decode()
    assert listing.count(badge) == 1
    recent = client.get("/recent/").content.decode()
    assert recent.count(badge) == 1 and THREE_TURNS in recent
    # Two words for two things: Codex's own archive is not branchboard's "file removed".
    page = client.get(f"/sessions/{THREE_TURNS}/").content.decode()
    assert f"{badge} " in page or badge in page
    assert "archived in Codex CLI</span>" in page and "removed from disk" not in page
    other = Session.objects.get(session_id="01a21760-ac42-7d62-8bb2-5e68454e4bcc")
    assert badge not in client.get(f"/sessions/{other.session_id}/").content.decode()


# --- Usage: each model response once, with the model its turn named, priced.

# From the `token_usage_record` lines of tests/fixtures/cli/codex (0.169): per file, the
# responses and the sums of their `usage` (input includes cached), all on gpt-5.5.
RESPONSES = {
    "01a21760-a9c0-7191-881d-5cbb883febdf": (5, 37220, 18609, 244),
    "01a21760-ac42-7d62-8bb2-5e68454e4bcc": (2, 14609, 7304, 97),  # 3 token_count events
    "01a21760-ae74-71f1-9af0-3a9c6ff18f96": (1, 7946, 3973, 48),
    "01a21766-d893-7641-a0b8-5e71d683dc54": (3, 21816, 10908, 143),
    "01a21766-dc52-7f20-bfbb-04c2731abefd": (1, 7436, 3718, 51),
    "01a21766-de59-75e3-9552-c2130690b4b1": (5, 36643, 18320, 216),
}


def test_usage_rows_are_one_per_response_id_with_the_turns_model_and_a_price(
    tmp_path: Path,
) -> None:
    sessions_import(roots=[_copy(tmp_path, CLI)])
    usage_refresh()

    for sid, (responses, prompt, cached, output) in RESPONSES.items():
        rows = Usage.objects.filter(session__session_id=sid)
        assert rows.count() == responses, sid
        assert all(r.key.startswith("codex:resp_") for r in rows)  # the same in any copy
        assert set(rows.values_list("model", flat=True)) == {"gpt-5.5"}
        got = [sum(rows.values_list(k, flat=True)) for k in ("input_tokens", "cache_read_tokens")]
        assert got == [prompt - cached, cached], sid
        assert sum(rows.values_list("output_tokens", flat=True)) == output
        total, per_model = session_usage(Session.objects.get(session_id=sid))
        assert list(per_model) == ["gpt-5.5"] and total.priced and total.cost > 0
        assert total.messages == responses
    # gpt-5.5 at genai-prices' rates: $5 input, $0.50 cached, $30 output per million.
    total, _ = session_usage(Session.objects.get(session_id=THREE_TURNS))
    expected = (Decimal(18611) * 5 + Decimal(18609) / 2 + Decimal(244) * 30) / 1_000_000
    assert total.cost == expected


def test_without_response_ids_usage_is_keyed_by_the_threads_start_and_the_running_total(
    tmp_path: Path,
) -> None:
    root = _copy(tmp_path, SYNTHETIC)
    source = next(root.rglob("*.jsonl"))
    # A second session with the same token counts (the same prompts asked twice, later).
    twin = "0199aa00-1111-7222-8333-000000000002"
    started = '"timestamp": "2026-01-15T10:00:00.000Z", "cwd"'
    text = source.read_text().replace(ROLLED_BACK, twin)
    assert text.count(started) == 1
    text = text.replace(started, started.replace("10:00:00", "11:00:00"))
    source.with_name(source.name.replace(ROLLED_BACK, twin)).write_text(text)
    sessions_import(roots=[root])
    usage_refresh()

    for sid in (ROLLED_BACK, twin):
        rows = Usage.objects.filter(session__session_id=sid)
        # Three responses (the repeated token_count is the same one), none a copy.
        assert rows.count() == 3 and not rows.filter(copy=True).exists()
        assert set(rows.values_list("model", flat=True)) == {"gpt-5.5"}
        assert sum(rows.values_list("input_tokens", flat=True)) == 3 * 600
        assert sum(rows.values_list("cache_read_tokens", flat=True)) == 3 * 400
        total, _ = session_usage(Session.objects.get(session_id=sid))
        assert total.priced and total.cost > 0


def test_a_usage_pass_that_starts_mid_file_still_knows_the_model(tmp_path: Path) -> None:
    root = _copy(tmp_path, CLI)
    sessions_import(roots=[root])
    session = Session.objects.get(session_id=THREE_TURNS)
    # As if a pass had counted the lines up to turn 2's first response and stopped there.
    first_usage = Record.objects.get(session=session, raw_type="token_usage_record", line=10)
    Session.objects.filter(pk=session.pk).update(usage_lines=first_usage.line + 1)
    Usage.objects.filter(session=session).delete()

    usage_refresh()

    rows = Usage.objects.filter(session=session)
    assert rows.count() == 4 and set(rows.values_list("model", flat=True)) == {"gpt-5.5"}


# --- Search: Codex text in the same index as the other agents'.


@pytest.mark.parametrize(
    ("query", "part"),
    [
        ('"done: README.md"', "reply"),  # the model's reply after the shell call
        ('"Wall time"', "output"),  # only in the shell call's output
    ],
)
def test_a_codex_reply_and_shell_output_are_found_by_the_page_and_the_api(
    client, codex_root: Path, token: str, query: str, part: str
) -> None:
    search_refresh()

    page = client.get("/search/", {"q": query})
    api = client.get("/api/search", {"q": query}, HTTP_AUTHORIZATION=f"Bearer {token}").json()

    assert page.status_code == 200 and f"/sessions/{THREE_TURNS}/" in page.content.decode()
    hits = {s["session_id"]: s["hits"] for s in api["sessions"]}
    assert THREE_TURNS in hits and hits[THREE_TURNS][0]["part"] == part
    assert api["sessions"][0]["agent"] == "codex"


def test_injected_context_is_never_a_prompt_hit(client, codex_root: Path, token: str) -> None:
    search_refresh()

    api = client.get(
        "/api/search",
        {"q": "environment_context", "all": "1"},
        HTTP_AUTHORIZATION=f"Bearer {token}",
    ).json()
    typed = client.get("/api/search", {"q": '"RUN: ls -1"'}, HTTP_AUTHORIZATION=f"Bearer {token}")

    parts = {hit["part"] for s in api["sessions"] for hit in s["hits"]}
    assert "prompt" not in parts
    prompt_hits = [h for s in typed.json()["sessions"] for h in s["hits"]]
    assert prompt_hits and prompt_hits[0]["part"] == "prompt"  # a typed prompt is one


def test_line_uuids_are_unique_across_sessions(codex_root: Path) -> None:
    # The index takes two records with one uuid for one record copied into a fork.
    uuids = list(Record.objects.filter(session__agent="codex").values_list("uuid", flat=True))
    assert len(uuids) > 100 and len(set(uuids)) == len(uuids)


def test_a_root_named_sessions_holding_projects_is_read_as_projects(tmp_path: Path) -> None:
    """Only what a root holds says it is Codex's: a copy of Claude's projects in `sessions/`."""
    from .factories import make_session

    root = tmp_path / "sessions"
    path, _ = make_session(root, 2)
    report = sessions_import(roots=[root])
    assert report.errors == []
    session = Session.objects.get(path=str(path))
    assert session.agent == "claude" and session.turn_count == 2
