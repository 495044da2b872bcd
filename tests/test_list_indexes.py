"""The lists every user opens read a bounded number of rows, from indexes, whatever the table's size.

A team server holds tens of thousands of sessions; the home page and its poll must
not sort or scan all of them on every request. The planner is told not to scan
nor to sort (`enable_seqscan`, `enable_sort` ...), which it obeys only when an index
can give the rows in order: the test then shows which index that is, so it fails
when a query and its index drift apart.
"""

from __future__ import annotations

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
