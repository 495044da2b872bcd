"""The lists every user opens read a bounded number of rows, from indexes, whatever the table's size.

A team server holds tens of thousands of sessions; the home page and its poll must
not sort or scan all of them on every request. The planner is told not to scan
nor to sort (`enable_seqscan`, `enable_sort` ...), which it obeys only when an index
can give the rows in order: the test then shows which index that is, so it fails
when a query and its index drift apart.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.db import connection, transaction

from sessions_app import selectors
from sessions_app.models import Session

pytestmark = pytest.mark.django_db


def plan(sql: str, params) -> str:
    with transaction.atomic(), connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            for what in ("seqscan", "bitmapscan", "sort"):
                cursor.execute(f"SET LOCAL enable_{what} = off")
            cursor.execute(f"EXPLAIN {sql}", params)
        else:
            cursor.execute(f"EXPLAIN QUERY PLAN {sql}", params)
        return "\n".join(" ".join(map(str, row)) for row in cursor.fetchall())


def test_the_newest_import_is_read_from_an_index(imported: Path) -> None:
    table = Session._meta.db_table
    assert "session_imported" in plan(f'SELECT MAX("imported_at") FROM {table}', [])
    assert selectors.newest_import() == max(Session.objects.values_list("imported_at", flat=True))


def test_the_newest_sessions_of_every_project_are_read_from_an_index(imported: Path) -> None:
    if connection.vendor != "postgresql":
        pytest.skip("SQLite cannot index NULLS LAST: the home page sorts its sessions there")
    query = selectors.recent_sessions()[:10]
    sql, params = query.query.sql_with_params()
    found = plan(sql, params)
    assert "session_recent" in found, found
    assert "Sort" not in found.split("session_recent")[0], found
    assert len(list(query)) == min(10, selectors.recent_sessions().count())


@pytest.mark.parametrize("sort", ["turns", "tokens", "title", "started"])
def test_a_later_page_of_a_projects_sessions_is_read_from_its_index_at_the_cursor(
    imported: Path, sort: str
) -> None:
    if connection.vendor != "postgresql":
        pytest.skip("the plan the planner is held to is PostgreSQL's")
    from django.test.utils import CaptureQueriesContext

    from sessions_app.selectors.lists.paging import Cursor, list_sort, seek_page

    session = Session.objects.listed().exclude(turn_count=0).exclude(started_at=None).first()
    assert session is not None
    key = Session.objects.filter(pk=session.pk).values_list(list_sort(sort).key, flat=True)[0]
    sessions = selectors.sessions_of_project(project=session.project, sort=sort)
    with CaptureQueriesContext(connection) as queries:
        page = seek_page(sessions, sort=sort, after=Cursor(key, session.pk))
    assert session not in page.object_list
    index = {"turns": "session_by_turns", "tokens": "session_by_tokens"}.get(
        sort, f"session_by_{'title' if sort == 'title' else 'start'}"
    )
    field = {"turns": "turn_count", "tokens": "output_tokens", "title": "title"}.get(
        sort, "started_at"
    )
    found = plan(queries.captured_queries[0]["sql"], [])
    assert index in found, found
    # The walk starts at the cursor (the key's bound is in the index condition), not at the top.
    assert re.search(rf"Index Cond: .*{field}", found), found


def test_the_search_pass_finds_a_copied_records_text_through_the_uuid_index() -> None:
    """Every slice of the search pass looks its uuids up; a scan of all texts per slice
    made a big first import quadratic. The lookup's condition must be the partial unique
    index's own (`NOT (uuid = '')`): SQLite does not see that `uuid <> ''` is the same."""
    from django.test.utils import CaptureQueriesContext

    from sessions_app.models import SearchText
    from sessions_app.services.searching.texts import _texts_by_uuid

    held = SearchText.objects.create(uuid="u-1", part="prompt", text="hello")
    SearchText.objects.create(uuid="", part="title", text="a title")
    # Another machine's record with the same uuid on a hub: a text of its own namespace.
    theirs = SearchText.objects.create(namespace="bob@desktop", uuid="u-1", part="prompt", text="x")
    assert _texts_by_uuid("bob@desktop", ["u-1"]) == {"u-1": theirs.pk}
    with CaptureQueriesContext(connection) as queries:
        assert _texts_by_uuid("", ["u-1", "u-2", "u-1"]) == {"u-1": held.pk}
    (query,) = queries.captured_queries
    sql = query["sql"]
    params = re.findall(r"'([^']*)'", sql.split(" IN ")[1].split(")")[0])
    found = plan(re.sub(r"IN \([^)]*\)", "IN (%s, %s)", sql, count=1), params)
    assert "unique_search_text_namespace_uuid" in found, found
