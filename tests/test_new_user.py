"""What a new user tripped on (issue 42, items 11-16): each as the user met it."""

from __future__ import annotations

import sqlite3
import uuid
from pathlib import Path

from .test_busy_and_limits import (
    _copy_session,
    _imported_ids,
    _start_watcher,
    _subprocess_env,
    _wait_for,
)


def _removed_ids(db: Path) -> set[str]:
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1) as c:
            rows = c.execute(
                "SELECT session_id FROM sessions_app_session WHERE file_removed_at IS NOT NULL"
            ).fetchall()
    except sqlite3.OperationalError:
        return set()
    return {str(uuid.UUID(r[0])) for r in rows}


def test_the_real_watcher_marks_a_deleted_file_removed_at_once(tmp_path: Path) -> None:
    """Item 11: the deletion's own event marks the session, long before the rescan
    (set to an hour here, so only the event can do it)."""
    root, data = tmp_path / "root", tmp_path / "data"
    kept, deleted = str(uuid.uuid4()), str(uuid.uuid4())
    _copy_session(root / "-tmp-proj", kept)
    gone = _copy_session(root / "-tmp-proj", deleted)
    env = _subprocess_env(data, BRANCHBOARD_ROOTS=str(root), BRANCHBOARD_RESCAN_SECONDS="3600")
    db = data / "branchboard.sqlite3"
    out = (tmp_path / "stdout").open("wb")
    watcher = _start_watcher(env, out)
    try:
        _wait_for("the first import", lambda: {kept, deleted} <= _imported_ids(db), watcher)
        assert _removed_ids(db) == set()
        gone.unlink()
        _wait_for("the deletion noticed", lambda: deleted in _removed_ids(db), watcher, 30)
        assert kept not in _removed_ids(db)
        assert {kept, deleted} <= _imported_ids(db)  # the row stays: the archive has its bytes
    finally:
        watcher.terminate()
        watcher.wait(timeout=30)
        out.close()


def test_usage_without_a_model_says_why_it_has_no_price() -> None:
    """Item 16: tokens of a message whose file names no model are listed as such."""
    from datetime import date

    from sessions_app.selectors.usage import Totals

    totals = Totals()
    totals.add("", date(2026, 1, 1), False, (10, 5, 0, 0, 0, 1))
    assert totals.unpriced == {"(no model: the file names none)": 15}
    assert not totals.priced


def test_a_summary_title_is_the_heading_and_is_found(
    tmp_path: Path, client, transactional_db: None
) -> None:
    """Item 15: the words of Claude's `summary` record (a title the page may show) are found."""
    from sessions_app.models import Session
    from sessions_app.selectors.search import SearchQuery, search
    from sessions_app.services.importing import sessions_import
    from sessions_app.services.searching import search_refresh

    from .factories import jsonl, one_turn

    sid = str(uuid.uuid4())
    records = one_turn(sid, "make the list say so when empty", "done")
    summary = {"type": "summary", "summary": "Zorbl State Fix", "leafUuid": records[-1]["uuid"]}
    folder = tmp_path / "root" / "-work-demo"
    folder.mkdir(parents=True)
    (folder / f"{sid}.jsonl").write_bytes(jsonl([summary, *records]))
    assert not sessions_import(roots=[tmp_path / "root"]).errors
    assert not search_refresh().errors
    assert Session.objects.filter(session_id=sid).exists()
    groups = search(SearchQuery("zorbl state")).groups
    assert [str(g.session.session_id) for g in groups] == [sid]
