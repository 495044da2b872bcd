"""Local mode refuses foreign hosts; team mode needs a login and a permission to write."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client

from sessions_app.models import ApiToken, AuditEntry

pytestmark = pytest.mark.django_db

WEBAPP_ID = "d62afd75-12b1-4077-921c-1fa1eda79364"
ROOT = Path(__file__).resolve().parent.parent


def page_urls() -> list[str]:
    s = f"/sessions/{WEBAPP_ID}"
    return [
        "/",
        "/projects/1/",
        f"{s}/",
        f"{s}/lineage/",
        f"{s}/export.jsonl",
        f"{s}/export.md",
        f"{s}/records/1/output/",
        f"{s}/subagents/x/",
        f"{s}/rewind/?turn=2",
        "/admin/",
    ]


WRITES = [
    f"/sessions/{WEBAPP_ID}/fork/",
    f"/sessions/{WEBAPP_ID}/rewind/",
    f"/sessions/{WEBAPP_ID}/rewind/undo/",
]


def test_local_mode_refuses_a_foreign_host(client, imported: Path) -> None:
    assert client.get("/", HTTP_HOST="evil.example").status_code == 400
    assert client.get("/", HTTP_HOST="localhost:8000").status_code == 200
    assert client.get("/", HTTP_HOST="[::1]:8000").status_code == 200


def test_local_mode_writes_without_login(client, imported: Path) -> None:
    response = client.post(WRITES[0])
    assert response.status_code == 302
    assert AuditEntry.objects.get().actor == "local"


def test_team_mode_redirects_anonymous_users_everywhere(team, imported: Path) -> None:
    client = Client()
    for url in page_urls():
        response = client.get(url)
        assert response.status_code == 302, url
        assert "/accounts/login/" in response["Location"] or "/admin/login/" in response["Location"]
    for url in WRITES:
        response = client.post(url, {"turn": 2})
        assert response.status_code == 302 and "/accounts/login/" in response["Location"], url
    assert client.get("/accounts/login/").status_code == 200


def test_team_mode_needs_the_permission_to_write(team, imported: Path) -> None:
    reader = User.objects.create_user("reader")
    client = Client()
    client.force_login(reader)
    assert client.get(f"/sessions/{WEBAPP_ID}/").status_code == 200
    assert "Branch from here" not in client.get(f"/sessions/{WEBAPP_ID}/").content.decode()
    before = sorted(p.name for p in imported.rglob("*.jsonl"))
    for url in WRITES:
        assert client.post(url, {"turn": 2}).status_code == 403, url
    assert sorted(p.name for p in imported.rglob("*.jsonl")) == before

    writer = User.objects.create_user("writer")
    writer.user_permissions.add(Permission.objects.get(codename="write_sessions"))
    client.force_login(writer)
    response = client.post(WRITES[0], {"turn": 1})
    assert response.status_code == 302
    entry = AuditEntry.objects.get()
    assert (entry.actor, entry.action, entry.turn, entry.via) == ("writer", "fork", 1, "web")


def test_team_mode_api_needs_a_token_of_a_permitted_user(team, imported: Path) -> None:
    client = Client()
    reader = User.objects.create_user("reader2")
    client.force_login(reader)  # a session cookie alone never drives the API
    assert (
        client.post(
            f"/api/sessions/{WEBAPP_ID}/fork", b"{}", content_type="application/json"
        ).status_code
        == 401
    )
    _, key = ApiToken.issue(name="r", user=reader)
    headers = {"HTTP_AUTHORIZATION": f"Bearer {key}"}
    assert Client().get(f"/api/sessions/{WEBAPP_ID}", **headers).status_code == 200
    denied = Client().post(
        f"/api/sessions/{WEBAPP_ID}/fork", b"{}", content_type="application/json", **headers
    )
    assert denied.status_code == 403
    _, orphan = ApiToken.issue(name="nobody")
    assert (
        Client()
        .get(f"/api/sessions/{WEBAPP_ID}", HTTP_AUTHORIZATION=f"Bearer {orphan}")
        .status_code
        == 401
    )


def test_admins_see_the_audit_log(team, imported: Path) -> None:
    admin = User.objects.create_superuser("admin")
    client = Client()
    client.force_login(admin)
    client.post(WRITES[0])
    page = client.get("/admin/sessions_app/auditentry/")
    assert page.status_code == 200 and "admin" in page.content.decode()
    assert client.post("/admin/sessions_app/auditentry/add/").status_code == 403


def test_missing_csrf_token_is_refused(imported: Path) -> None:
    client = Client(enforce_csrf_checks=True)
    before = sorted(p.name for p in imported.rglob("*.jsonl"))
    assert client.post(WRITES[0]).status_code == 403
    assert sorted(p.name for p in imported.rglob("*.jsonl")) == before


def test_security_headers(client, imported: Path) -> None:
    response = client.get("/")
    csp = response["Content-Security-Policy"]
    assert (
        "script-src 'self'" in csp
        and "unsafe-inline" not in csp
        and "frame-ancestors 'none'" in csp
    )
    assert response["X-Frame-Options"] == "DENY"
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["Referrer-Policy"] == "same-origin"


def test_oversized_body_is_refused(client, imported: Path, settings) -> None:
    _, key = ApiToken.issue(name="big")
    body = b'{"title": "' + b"x" * settings.DATA_UPLOAD_MAX_MEMORY_SIZE + b'"}'
    response = client.post(
        f"/api/sessions/{WEBAPP_ID}/fork",
        body,
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {key}",
    )
    assert response.status_code in (400, 413)


def test_check_deploy_passes_with_team_settings(tmp_path: Path) -> None:
    env = {
        **{k: v for k, v in os.environ.items() if k != "DJANGO_ALLOW_ASYNC_UNSAFE"},
        "BRANCHBOARD_DATA_DIR": str(tmp_path),
        "BRANCHBOARD_ALLOWED_HOSTS": "branchboard.example.com",
        "BRANCHBOARD_CSRF_TRUSTED_ORIGINS": "https://branchboard.example.com",
        "BRANCHBOARD_TLS": "1",
        "BRANCHBOARD_SECRET_KEY": "k" * 20 + "-Zq8#v2!mW9@xL4$pT7^rB1&nC5*hJ3%" + "s" * 20,
    }
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
