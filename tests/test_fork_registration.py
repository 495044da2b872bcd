"""A fork's index is derived from its source's rows, and is exactly what a fresh import gives."""

from __future__ import annotations

from pathlib import Path

import pytest

from sessions_app.models import Record, SearchText, Session
from sessions_app.services.branching import WriteCheckFailed, forking, readback, session_fork
from sessions_app.services.branching.forking import threads as forking_threads
from sessions_app.services.branching.registering import reindex
from sessions_app.services.searching import search_refresh

from .facts import TURNS

pytestmark = pytest.mark.django_db

# Every column of a record row but its own id and its session's.
ROW_FIELDS = tuple(
    f.attname for f in Record._meta.concrete_fields if f.name not in ("id", "session")
)
SESSION_FIELDS = (
    "session_id",
    "path",
    "agent",
    "title",
    "custom_title",
    "first_prompt",
    "cwd",
    "git_branch",
    "models_used",
    "input_tokens",
    "output_tokens",
    "turn_count",
    "record_count",
    "invalid_count",
    "started_at",
    "updated_at",
    "leaf_uuid",
    "abandoned",
    "is_subagent",
    "file_size",
    "file_mtime_ns",
    "bytes_imported",
    "head_digest",
    "tail_offset",
    "tail_digest",
    "file_inode",
    "line_count",
    "last_message_id",
    "parent_id",
    "kind",
    "fork_turn",
)


def facts(session: Session, *, searched: bool = False) -> tuple[dict, list[tuple]]:
    """The session's row and its records, each record's search text by what it says (its
    row's id is not the point: a fresh import stores the texts it drops again).

    `searched`: a fork's rows get their search texts by the search pass, run first."""
    if searched:
        search_refresh()
    session.refresh_from_db()
    row = {name: getattr(session, name) for name in SESSION_FIELDS}
    texts = dict(SearchText.objects.values_list("pk", "text"))
    at = ROW_FIELDS.index("search_text_id")
    rows = [
        (*r[:at], texts.get(r[at]), *r[at + 1 :])
        for r in session.records.order_by("line").values_list(*ROW_FIELDS)
    ]
    return row, rows


def cuts(turns: int) -> list[tuple[int | None, bool]]:
    picks = {(None, True), (1, True), (turns, True), (max(1, turns // 2), True)}
    if turns >= 2:
        picks |= {(2, False), (turns, False)}
    return sorted(picks, key=lambda p: (p[0] or 0, p[1]))


@pytest.mark.parametrize("relpath", sorted(r for r, n in TURNS.items() if n))
def test_a_fork_is_registered_exactly_as_a_fresh_import_of_its_file(
    imported: Path, relpath: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    full_imports: list[Path] = []
    real = forking.index_written

    def counted(**kwargs):
        full_imports.append(kwargs["temp"])
        return real(**kwargs)

    monkeypatch.setattr(forking, "index_written", counted)
    source = Session.objects.select_related("project").get(path=str(imported / relpath))
    for turn, include in cuts(source.turn_count):
        new = session_fork(session=source, turn=turn, include_turn=include)
        derived = facts(new, searched=True)
        reindex(new, full=True)
        assert facts(new) == derived, (turn, include)
    # Every corpus session forks without a second read of its file.
    assert full_imports == []


def test_a_fork_that_the_read_back_cannot_vouch_for_is_imported_in_full(
    imported: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    relpath = next(r for r, n in sorted(TURNS.items()) if n >= 2)
    source = Session.objects.select_related("project").get(path=str(imported / relpath))

    def unproven(*args, **kwargs):
        raise readback.Unproven("for the test")

    monkeypatch.setattr(forking_threads, "read_back", unproven)
    new = session_fork(session=source, turn=2)
    derived = facts(new, searched=True)
    reindex(new, full=True)
    assert facts(new) == derived
    assert new.turn_count == 2


def test_a_title_taken_while_the_file_was_written_is_written_again(
    imported: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    relpath = next(r for r, n in sorted(TURNS.items()) if n >= 2 and "/qwen/" in r)
    source = Session.objects.select_related("project").get(path=str(imported / relpath))
    made: list[Session] = []
    started: list[bool] = []

    class Meanwhile(forking._ReadingBack):
        def __init__(self, *args, **kwargs) -> None:
            # Another fork of the same session registers first, with the same title.
            if not started:
                started.append(True)
                made.append(session_fork(session=source))
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(forking, "_ReadingBack", Meanwhile)
    new = session_fork(session=source)
    assert made[0].title.endswith("(Branch)")
    assert new.title.endswith("(Branch 2)")
    assert Path(new.path).read_bytes().splitlines()[-1].count(b"(Branch 2)") == 1
    derived = facts(new, searched=True)
    reindex(new, full=True)
    assert facts(new) == derived


@pytest.mark.parametrize("relpath", sorted(r for r, n in TURNS.items() if n))
def test_a_plain_fork_read_back_on_its_bytes_is_a_fresh_import_of_its_file(
    imported: Path, relpath: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    on_bytes: list[bool] = []
    real = readback.read_back_plain

    def counted(*args, **kwargs):
        found = real(*args, **kwargs)
        on_bytes.append(found.plain)
        return found

    monkeypatch.setattr(readback, "read_back_plain", counted)
    source = Session.objects.select_related("project").get(path=str(imported / relpath))
    for turn, include in cuts(source.turn_count):
        new = session_fork(session=source, turn=turn, include_turn=include)
        derived = facts(new, searched=True)
        reindex(new, full=True)
        assert facts(new) == derived, (turn, include, len(on_bytes))


def test_the_corpus_forks_are_read_back_on_their_bytes(
    imported: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    graph: list[Path] = []
    real = readback.analyse

    def counted(nodes, agent, **kwargs):
        graph.append(agent)
        return real(nodes, agent, **kwargs)

    monkeypatch.setattr(readback, "analyse", counted)
    forks = 0
    for relpath in sorted(r for r, n in TURNS.items() if n):
        source = Session.objects.select_related("project").get(path=str(imported / relpath))
        session_fork(session=source)
        forks += 1
    # Sessions that are one chain get no graph built again (6 of the 13 today; the
    # others have parallel tool results or side branches, spaced JSON, or a fork's
    # `forkedFrom` already).
    assert forks == 13 and forks - len(graph) >= 6, (len(graph), forks)


def test_a_fork_its_bytes_cannot_vouch_for_is_checked_on_its_graph(
    imported: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    relpath = next(r for r, n in sorted(TURNS.items()) if n >= 2)
    source = Session.objects.select_related("project").get(path=str(imported / relpath))

    def unproven(*args, **kwargs):
        raise readback.Unproven("for the test")

    monkeypatch.setattr(readback, "read_back_plain", unproven)
    monkeypatch.setattr(forking, "index_written", None)  # no full import may be needed
    new = session_fork(session=source, turn=2)
    derived = facts(new, searched=True)
    reindex(new, full=True)
    assert facts(new) == derived
    assert new.turn_count == 2


def test_a_plain_fork_is_read_back_while_its_rows_are_inserted_and_a_failed_check_leaves_nothing(
    imported: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = readback.read_back_plain
    early: list[bool] = []

    def failing(*args, **kwargs):
        found = real(*args, **kwargs)
        if kwargs.get("counted") is not None:  # in its thread, the rows being inserted
            early.append(True)
            raise WriteCheckFailed("for the test")
        return found

    monkeypatch.setattr(readback, "read_back_plain", failing)
    for relpath in sorted(r for r, n in TURNS.items() if n):
        source = Session.objects.select_related("project").get(path=str(imported / relpath))
        files = sorted(Path(source.path).parent.iterdir())
        sessions, records = Session.objects.count(), Record.objects.count()
        try:
            session_fork(session=source)
        except WriteCheckFailed:
            assert Session.objects.count() == sessions and Record.objects.count() == records
            assert sorted(Path(source.path).parent.iterdir()) == files
    assert len(early) >= 5  # branches of one-chain sessions (5 of the corpus's 13 today)
