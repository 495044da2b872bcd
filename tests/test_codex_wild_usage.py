"""Codex usage counted once per model response, whichever file holds it (issue 42, item 1):
branchboard's forks and rewind backups, and Codex's own copies (a `thread_spawn` sub-agent
replaying its parent, a resumed rollout replaying the older session), add nothing."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from sessions_app.models import Session, Usage
from sessions_app.selectors.usage import Totals, usage_by_day
from sessions_app.selectors.usage.sessions import family_usage
from sessions_app.services.branching import session_fork, session_rewind
from sessions_app.services.importing import sessions_import
from sessions_app.services.usage import usage_refresh

pytestmark = pytest.mark.django_db(transaction=True)

FIXTURES = Path(__file__).parent / "fixtures"
WILD = FIXTURES / "codex_wild/sessions"
CLI = FIXTURES / "cli/codex/sessions"
PARENT = "019a0000-aaaa-7aaa-8aaa-00000000000a"
CHILD = "019a0000-bbbb-7bbb-8bbb-00000000000b"
THREE_TURNS = "01a21760-a9c0-7191-881d-5cbb883febdf"  # 0.169: token_usage_record lines
# The parent's three responses (tests/fixtures/codex_wild/make_fixtures.py): input, cached,
# output, reasoning of each.
RESPONSES = [(7000, 5888, 383, 320), (8000, 6400, 393, 330), (9000, 6912, 403, 340)]
OWN = (1200, 1024, 90, 64)  # the sub-agent's own response


def _root(tmp_path: Path, settings, source: Path, *names: str) -> Path:
    root = tmp_path / "sessions"
    for path in sorted(source.rglob("*.jsonl")):
        if not names or any(n in path.name for n in names):
            copy = root / path.relative_to(source)
            copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, copy)
    settings.SESSION_ROOTS = [root]
    sessions_import(roots=[root])
    usage_refresh()
    return root


def _everything() -> Totals:
    """What /usage/ sums: every day, every message once."""
    total = Totals()
    for day in usage_by_day():
        total.merge(day.total)
    return total


def _family() -> Totals:
    return family_usage({s.pk: s for s in Session.objects.all()}).total


def _figures(totals: Totals) -> tuple:
    return (totals.messages, totals.input, totals.output, totals.cache_read, totals.cost)


@pytest.mark.parametrize(("source", "session_id"), [(WILD, PARENT), (CLI, THREE_TURNS)])
def test_a_fork_then_a_rewind_leaves_the_family_and_usage_totals_unchanged(
    tmp_path: Path, settings, source: Path, session_id: str
) -> None:
    _root(tmp_path, settings, source, session_id)
    before = _figures(_everything())
    assert before == _figures(_family()) and before[0] > 0 and before[-1] > 0

    fork = session_fork(
        session=Session.objects.get(session_id=session_id), turn=2, include_turn=True
    )
    usage_refresh()
    assert Usage.objects.filter(session=fork).exists()  # the fork holds the copied responses
    assert _figures(_everything()) == before
    assert _figures(_family()) == before

    session_rewind(session=Session.objects.get(session_id=session_id), turn=2)
    usage_refresh()
    assert Session.objects.filter(kind=Session.Kind.REWIND_BACKUP).count() == 1
    assert _figures(_everything()) == before
    assert _figures(_family()) == before


def test_a_sub_agent_replaying_its_parents_token_counts_adds_only_its_own_response(
    tmp_path: Path, settings
) -> None:
    _root(tmp_path, settings, WILD, PARENT)
    alone = _everything()
    Session.objects.all().delete()
    Usage.objects.all().delete()

    _root(tmp_path / "both", settings, WILD, PARENT, CHILD)

    both = _everything()
    assert both.messages == alone.messages + 1 == len(RESPONSES) + 1
    assert both.input == alone.input + OWN[0] - OWN[1]
    assert both.cache_read == alone.cache_read + OWN[1]
    assert both.output == alone.output + OWN[2]
    # The replayed responses have the same keys as the parent's: one of each pair is the copy.
    child = set(Usage.objects.filter(session__session_id=CHILD).values_list("key", flat=True))
    parent = set(Usage.objects.filter(session__session_id=PARENT).values_list("key", flat=True))
    assert len(child) == 3 and len(child & parent) == 2
    assert Usage.objects.filter(copy=True).count() == 2


def test_token_counts_are_counted_once_each_with_their_reasoning(tmp_path: Path, settings) -> None:
    _root(tmp_path, settings, WILD, PARENT)

    rows = Usage.objects.filter(session__session_id=PARENT).order_by("line")
    # The all-zero count before the first response, the rate-limit updates and each
    # response's repeated count are no messages.
    got = [
        (
            r.input_tokens + r.cache_read_tokens,
            r.cache_read_tokens,
            r.output_tokens,
            r.reasoning_tokens,
        )
        for r in rows
    ]
    assert got == RESPONSES
    assert {r.model for r in rows} == {"gpt-5"}
