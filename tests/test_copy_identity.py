"""A copied record is the same record for every agent: compare, search, undone rewinds, usage.

A fork (and a rewind's backup) copies its source's first turns; the index must know those
records for the source's, whichever CLI wrote them (Codex writes no ids: `codex.order`), and
know it when the action returns, not after the watcher's next pass.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest
from django.db.models import Sum

from sessions_app.models import Session, Usage
from sessions_app.selectors.compare import compare
from sessions_app.selectors.lists import rewind_undone, undone_backups
from sessions_app.services.branching import session_fork, session_rewind, session_rewind_undo
from sessions_app.services.searching import search_refresh
from sessions_app.services.usage import usage_refresh

from .corpus import ALL_ROOTS

pytestmark = pytest.mark.django_db

# A session of three turns with usage, of each agent in the corpus that forks.
SOURCES = {
    "claude": "d62afd75-12b1-4077-921c-1fa1eda79364",
    "qwen": "6fbeb39a-1e79-43ef-995c-46eedd93e6fe",
    "codex": "01a21760-ac42-7d62-8bb2-5e68454e4bcc",
}
# The agents whose rewind keeps the old file as a backup session.
BACKED_UP = ["claude", "codex"]


def _source(agent: str) -> Session:
    return Session.objects.get(session_id=SOURCES[agent])


def _prompt(session: Session, turn: int = 1) -> str:
    texts = session.records.turn_starts().order_by("line").values_list("text", flat=True)
    text = texts[turn - 1]
    assert text
    return text


@pytest.mark.parametrize("agent", SOURCES)
def test_a_fork_compares_with_its_source_from_the_split(imported: Path, client, agent) -> None:
    source = _source(agent)
    fork = session_fork(session=source, turn=2)

    cmp = compare(source, fork)

    assert cmp.split == 2 and len(cmp.shared) == 2
    assert (cmp.a.total_turns, cmp.b.total_turns) == (1, 0)
    page = client.get(f"/sessions/{source.session_id}/compare/{fork.session_id}/")
    assert page.status_code == 200
    assert "without a shared history" not in page.content.decode()


@pytest.mark.parametrize("agent", SOURCES)
def test_search_folds_a_source_its_branches_and_its_backup_into_one_hit(
    imported: Path, client, agent
) -> None:
    source = _source(agent)
    prompt = _prompt(source, 2)  # not in the copies' titles, which name turn 1
    made = [session_fork(session=source, turn=2), session_fork(session=source)]
    if agent in BACKED_UP:
        session_rewind(session=source, turn=3)
        made.append(Session.objects.get(parent=source, kind=Session.Kind.REWIND_BACKUP))
    search_refresh()

    page = client.get("/search/", {"q": f'"{prompt}"'}).content.decode()

    # One hit, the source's, "also in" the copies; none of them listed on its own.
    assert f"/sessions/{source.session_id}/" in page
    assert f"also in {len(made)} branches" in page
    for copy in made:
        assert f"/sessions/{copy.session_id}/" not in page


@pytest.mark.parametrize("agent", BACKED_UP)
def test_an_undone_rewinds_backup_is_hidden_and_named_for_the_rewind(imported: Path, agent) -> None:
    source = _source(agent)
    name = source.custom_title or source.title
    rewound = session_rewind(session=source, turn=2)
    backup = Session.objects.get(parent=source, kind=Session.Kind.REWIND_BACKUP)

    assert backup.title == f"{name} (before rewind to turn 2)"
    assert not rewind_undone(backup)

    session_rewind_undo(session=rewound)

    assert rewind_undone(backup)
    assert undone_backups(source.project) == 1


def _cost(session: Session) -> tuple[int, int]:
    """The input and output tokens a session is charged (its messages no other holds first)."""
    own = Usage.objects.filter(session=session, copy=False)
    total = own.aggregate(i=Sum("input_tokens"), o=Sum("output_tokens"))
    return total["i"] or 0, total["o"] or 0


@pytest.mark.parametrize("agent", SOURCES)
def test_a_fork_from_the_page_is_searchable_and_priced_when_it_returns(
    imported: Path, client, agent
) -> None:
    source = _source(agent)
    usage_refresh()
    search_refresh()
    before = _cost(source)
    assert before[1] > 0
    prompt = _prompt(source)

    response = client.post(f"/sessions/{source.session_id}/fork/", {"turn": "2"})

    assert response.status_code in (200, 302)
    fork = Session.objects.get(parent=source, kind=Session.Kind.FORK)
    # No search or usage pass ran: the action's own work made the fork searchable and priced.
    assert fork.search_lines == fork.line_count and fork.usage_lines == fork.line_count
    found = client.get("/search/", {"q": f'"{prompt}"', "session": str(fork.session_id)})
    assert f"/sessions/{fork.session_id}/" in found.content.decode()
    copied = Usage.objects.filter(session=fork)
    assert copied.exists() and not copied.filter(copy=False).exists()  # 0 new tokens
    assert _cost(source) == before


@pytest.mark.parametrize("agent", BACKED_UP)
def test_a_rewind_and_its_undo_leave_the_source_its_cost(imported: Path, agent) -> None:
    source = _source(agent)
    usage_refresh()
    before = _cost(source)
    assert before[1] > 0

    rewound = session_rewind(session=source, turn=2)
    backup = Session.objects.get(parent=source, kind=Session.Kind.REWIND_BACKUP)
    # The source is charged for the turn it kept, the backup for the turns only it holds
    # now: each message once, none lost.
    kept, backed_up = _cost(rewound), _cost(backup)
    assert kept[1] > 0 and backed_up[1] > 0
    assert (kept[0] + backed_up[0], kept[1] + backed_up[1]) == before

    session_rewind_undo(session=rewound)

    assert _cost(source) == before and _cost(backup) == (0, 0)


def test_an_index_of_codex_from_before_is_read_again_with_the_new_uuids(imported: Path) -> None:
    """The upgrade's migration makes the next import read every Codex file again: the old
    `<session>:<line>` uuids go, a fork shares its source's, and a fork keeps its name."""
    from django.apps import apps

    from sessions_app.models import Record
    from sessions_app.services.importing import sessions_import

    rehash = importlib.import_module("sessions_app.migrations.0039_codex_records_rehashed")
    source = _source("codex")
    fork = session_fork(session=source, turn=2)
    for pk, line in Record.objects.filter(session__agent="codex").values_list("pk", "line"):
        Record.objects.filter(pk=pk).update(uuid=f"old:{line}")  # as an index from before

    rehash.codex_read_again(apps, None)
    report = sessions_import(roots=[imported / root for root in ALL_ROOTS])

    assert not report.errors
    assert not Record.objects.filter(uuid__startswith="old:").exists()
    shared = set(fork.records.values_list("uuid", flat=True)) & set(
        source.records.values_list("uuid", flat=True)
    )
    # Every line, its restamped session_meta too (hashed without what the fork changed).
    assert len(shared) == fork.records.count()
    fork.refresh_from_db()
    assert fork.title == "hello before an interrupt (Branch)"
