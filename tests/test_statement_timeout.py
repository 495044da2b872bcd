"""PostgreSQL: a page's read is cancelled past BRANCHBOARD_PG_STATEMENT_TIMEOUT; nothing else is."""

from __future__ import annotations

import time

import pytest
from django.db import connection
from django.test import Client

pytestmark = [
    pytest.mark.django_db(transaction=True),  # a cancelled statement must not abort the test's
    pytest.mark.urls("tests.slow_urls"),
    pytest.mark.skipif(
        "connection.vendor != 'postgresql'", reason="statement_timeout is PostgreSQL's"
    ),
]


def _show() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SHOW statement_timeout")
        return cursor.fetchone()[0]


def _sleeping() -> int:
    """Backends other than this one running a pg_sleep now."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' "
            "AND query LIKE 'SELECT pg_sleep%%' AND pid <> pg_backend_pid()"
        )
        return cursor.fetchone()[0]


def test_a_read_past_the_statement_timeout_is_cancelled_and_answered_503(
    client: Client, settings
) -> None:
    settings.PG_STATEMENT_TIMEOUT = 1
    started = time.monotonic()
    response = client.get("/sleep/30/")
    seconds = time.monotonic() - started
    assert response.status_code == 503 and seconds < 10, (response.status_code, seconds)
    assert "more work than a page may take" in response.content.decode()
    assert response["Retry-After"]
    # The statement is gone from the server, not left running for no one.
    assert _sleeping() == 0
    api = client.get("/sleep/30/", headers={"HX-Request": "true"})
    assert api.status_code == 409 and "more work than a page may take" in api.content.decode()


def test_the_timeout_lasts_the_request_and_binds_reads_only(client: Client, settings) -> None:
    settings.PG_STATEMENT_TIMEOUT = 7
    default = _show()
    assert default == "0"  # outside a request (the importer, the commands): no limit
    assert client.get("/statement-timeout/").content.decode() == "7s"
    assert _show() == default  # put back once the request is over
    # A write, and the hub's endpoints (a push's import, a pull), are never bounded.
    assert client.post("/statement-timeout/").content.decode() == default
    assert client.post("/sleep/2/").status_code == 200
    settings.PG_STATEMENT_TIMEOUT = 1
    assert client.get("/api/hub/sleep/2/").status_code == 200
    settings.PG_STATEMENT_TIMEOUT = 0  # off
    assert client.get("/statement-timeout/").content.decode() == default
    assert client.get("/sleep/2/").status_code == 200


def test_a_streamed_answer_runs_under_the_timeout_to_its_last_byte(
    client: Client, settings
) -> None:
    """Its queries run after the view returned: the timeout holds until the answer is closed."""
    settings.PG_STATEMENT_TIMEOUT = 5
    response = client.get("/statement-timeout/streamed/")
    assert b"".join(response.streaming_content) == b"5s 5s"
    assert _show() == "0"
