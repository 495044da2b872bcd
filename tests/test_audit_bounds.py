"""The audit log holds what known users did, bounded: an unauthenticated request writes no
row (it is logged, in a bounded line), and no row holds more than a bounded amount of the
request's text, however long the namespace or path sent.
"""

from __future__ import annotations

import logging
import urllib.parse

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client

from sessions_app.models import ApiToken, AuditEntry
from sessions_app.services.audit import DETAIL_LIMIT, actor_of_command, audit_record

pytestmark = pytest.mark.django_db

LONG = "x" * 3000


def _whoami(client: Client, namespace: str, **headers: str):
    query = urllib.parse.urlencode({"namespace": namespace})
    return client.get(f"/api/hub/whoami?{query}", **headers)


@pytest.fixture
def alice_token(settings, tmp_path) -> str:
    settings.DATA_DIR = tmp_path / "data"
    settings.DATA_DIR.mkdir(mode=0o700)
    user = User.objects.create_user("alice")
    user.user_permissions.add(Permission.objects.get(codename="push_sessions"))
    return ApiToken.issue(name="laptop", user=user)[1]


def test_unauthenticated_requests_write_no_audit_rows_and_are_logged_bounded(
    client: Client, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    for n in range(100):
        headers = {} if n % 2 else {"HTTP_AUTHORIZATION": f"Bearer {LONG}"}
        response = _whoami(client, LONG + str(n), **headers)
        assert response.status_code == 401
    assert AuditEntry.objects.count() == 0
    refused = [r for r in caplog.records if "bearer token" in r.getMessage()]
    assert len(refused) == 100
    assert all(len(r.getMessage()) < 600 for r in refused), max(
        len(r.getMessage()) for r in refused
    )
    assert all("127.0.0.1" in r.getMessage() for r in refused)


def test_a_known_users_refused_request_is_audited_with_its_text_bounded(
    client: Client, alice_token: str
) -> None:
    bearer = {"HTTP_AUTHORIZATION": f"Bearer {alice_token}"}
    assert _whoami(client, LONG, **bearer).status_code == 400
    query = urllib.parse.urlencode({"namespace": "alice@laptop", "path": "y" * 5000})
    assert (
        client.post(f"/api/hub/chunk?{query}", b"", "application/zstd", **bearer).status_code == 400
    )
    rows = list(AuditEntry.objects.filter(action="push-refused"))
    assert len(rows) == 2 and all(row.actor == "token:laptop" for row in rows)
    for row in rows:
        assert len(row.detail) <= DETAIL_LIMIT, len(row.detail)
    long_namespace = next(row for row in rows if "xxx" in row.detail)
    assert "(cut: 3000 characters)" in long_namespace.detail  # says it was cut
    chunk = next(row for row in rows if "alice@laptop" in row.detail)
    assert "yyy" in chunk.detail  # the path is named, cut, after the namespace


def test_every_audit_entry_is_bounded_and_escaped() -> None:
    entry = audit_record(
        actor=actor_of_command(),
        action="run",
        session=None,
        result=None,
        turn=None,
        detail="claude -p " + "\x00\x1b[2J" + "z" * 10_000,
    )
    entry.refresh_from_db()
    assert len(entry.detail) <= DETAIL_LIMIT
    assert "\x00" not in entry.detail and "\x1b" not in entry.detail
    assert entry.detail.startswith("claude -p \\x00\\x1b[2Jzzz")
