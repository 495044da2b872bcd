"""The local dashboard answers its owner only: another account on the machine gets 403.

Every test client here is the owner's unless made by `stranger()` (tests/conftest.py);
tests/test_local_owner_served.py asks a real gunicorn from another account.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from django.core.management import call_command
from django.test import Client

from sessions_app.data_folder import data_folder_private
from sessions_app.middleware import OWNER_COOKIE_AGE, owner_cookie_name
from sessions_app.models import ApiToken, AuditEntry, Run, Session
from sessions_app.services.importing import sessions_import
from sessions_app.services.owner_token import OwnerTokenError, owner_token

from .factories import make_session
from .owner import owner_cookie, stranger

pytestmark = pytest.mark.django_db

WEBAPP_ID = "d62afd75-12b1-4077-921c-1fa1eda79364"
# A CSRF cookie and the same value as the form's token: any client can make the pair up
# itself, so CSRF protection stops other sites, never another account on the machine.
FORGED_CSRF = "a" * 32


def reads(session_id: str) -> list[str]:
    """What a stranger would read: pages, a transcript, search, exports, the JSON API."""
    return [
        "/",
        "/recent/",
        f"/sessions/{session_id}/",
        f"/sessions/{session_id}/export.md",
        "/search/?q=the",
        "/usage.csv",
        "/usage/activity/",
        "/usage/tools.csv?project=1",
        "/import-status.json",
        "/api/search?q=the",
        "/api/usage/activity",
        "/api/usage/tools?project=1",
        f"/api/sessions/{session_id}",
        "/api/openapi.json",
    ]


@pytest.fixture
def runnable(tmp_path: Path, settings) -> Session:
    """A session whose folder is here, and a CLI that ends at once: a run would start."""
    root = tmp_path / "root"
    _, records = make_session(root, 2)
    settings.SESSION_ROOTS = [root]
    settings.BRANCHBOARD_BUSY_SECONDS = 0
    settings.RUN_COMMANDS = {"claude": "true"}
    sessions_import(roots=[root])
    session = Session.objects.get(session_id=records[0]["sessionId"])
    session.cwd = str(tmp_path)
    session.save(update_fields=["cwd"])
    return session


def test_a_stranger_reads_nothing(imported: Path) -> None:
    client = stranger()
    for url in reads(WEBAPP_ID):
        response = client.get(url)
        assert response.status_code == 403, url
        assert b"nonexistent_dir" not in response.content, url  # a word of the session
    # The owner's client, the same requests: everything is there.
    assert Client().get("/search/?q=nonexistent_dir").status_code == 200
    assert b"nonexistent_dir" in Client().get(f"/sessions/{WEBAPP_ID}/").content


def test_a_stranger_starts_no_run(runnable: Session) -> None:
    url = f"/sessions/{runnable.session_id}/runs/"
    form = {"prompt": "rm -rf ~", "mode": "full"}
    forged = {"HTTP_X_CSRFTOKEN": FORGED_CSRF, "HTTP_HX_REQUEST": "true"}
    client = stranger(enforce_csrf_checks=True)
    client.cookies["csrftoken"] = FORGED_CSRF
    assert client.post(url, form, **forged).status_code == 403
    assert not Run.objects.exists()
    # The same request from the owner starts the run: only the cookie differed.
    owner = Client(enforce_csrf_checks=True)
    owner.cookies["csrftoken"] = FORGED_CSRF
    assert owner.post(url, form, **forged).status_code == 200
    assert Run.objects.get().prompt == "rm -rf ~"


def test_the_link_logs_the_browser_in_and_leaves_the_address(imported: Path) -> None:
    client = stranger()
    token = owner_cookie()[1]
    response = client.get(f"/sessions/{WEBAPP_ID}/?after=1&token={token}")
    assert response.status_code == 302
    assert response["Location"] == f"/sessions/{WEBAPP_ID}/?after=1"
    assert response["Cache-Control"] == "no-store"
    cookie = response.cookies[owner_cookie_name("80")]
    assert cookie.value == token and cookie["httponly"] and cookie["samesite"] == "Strict"
    assert cookie["max-age"] == OWNER_COOKIE_AGE and cookie["path"] == "/"
    # The browser keeps the cookie: every page after it is the owner's.
    assert client.get(response["Location"]).status_code == 200
    assert client.get("/search/?q=the").status_code == 200


def test_a_wrong_token_buys_nothing(imported: Path) -> None:
    client = stranger()
    token = owner_cookie()[1]
    wrong = token[:-1] + ("A" if token[-1] != "A" else "B")
    for value in (wrong, "", token[:8]):
        response = client.get(f"/?token={value}")
        assert response.status_code == 403 and not response.cookies, value
        assert client.get("/", HTTP_AUTHORIZATION=f"Bearer {value}").status_code == 403
    client.cookies[owner_cookie_name("80")] = wrong
    assert client.get("/").status_code == 403
    # The link works for a page's GET only: a form's post never takes a token from its URL.
    assert client.post(f"/sessions/{WEBAPP_ID}/fork/?token={token}").status_code == 403


def test_a_script_gets_in_with_the_bearer_token(imported: Path) -> None:
    headers = {"Authorization": f"Bearer {owner_cookie()[1]}"}
    client = stranger()
    assert client.get("/search/?q=nonexistent_dir", headers=headers).status_code == 200
    assert client.get("/usage.csv", headers=headers).status_code == 200


def test_the_apis_tokens_are_the_owners_too(imported: Path) -> None:
    """Only the owner can make them (manage.py create_api_token writes the database)."""
    _, key = ApiToken.issue(name="script")
    client = stranger()
    answer = client.get(f"/api/sessions/{WEBAPP_ID}", HTTP_AUTHORIZATION=f"Bearer {key}")
    assert answer.status_code == 200 and answer.json()["session_id"] == WEBAPP_ID
    assert client.get("/search/?q=the", HTTP_AUTHORIZATION=f"Bearer {key}").status_code == 200
    refused = client.get("/api/search?q=the", HTTP_AUTHORIZATION="Bearer bb_made_up")
    assert refused.status_code == 403 and "owner only" in refused.json()["error"]


def test_the_owner_token_drives_the_api_and_the_audit_log_says_so(imported: Path) -> None:
    owner = {"HTTP_AUTHORIZATION": f"Bearer {owner_cookie()[1]}"}
    client = stranger()
    assert client.get(f"/api/sessions/{WEBAPP_ID}", **owner).status_code == 200
    forked = client.post(
        f"/api/sessions/{WEBAPP_ID}/fork", b"{}", content_type="application/json", **owner
    )
    assert forked.status_code == 201, forked.content
    assert AuditEntry.objects.get().actor == "token:owner"
    assert not ApiToken.objects.exists()  # the owner token is no row


@pytest.mark.parametrize("peer", ["10.0.0.5", "192.168.1.20", "2001:db8::1", "", "unix"])
def test_a_peer_that_is_not_loopback_is_refused_whatever_it_carries(
    imported: Path, peer: str
) -> None:
    token = owner_cookie()[1]
    client = Client()  # the owner's cookie, from elsewhere
    assert client.get("/", REMOTE_ADDR=peer).status_code == 403
    assert client.get(f"/?token={token}", REMOTE_ADDR=peer).status_code == 403
    bearer = f"Bearer {token}"
    assert client.get("/", REMOTE_ADDR=peer, HTTP_AUTHORIZATION=bearer).status_code == 403
    assert client.get("/static/sessions_app/app.css", REMOTE_ADDR=peer).status_code == 403


@pytest.mark.parametrize("peer", ["127.0.0.1", "127.0.0.2", "::1", "::ffff:127.0.0.1"])
def test_every_loopback_peer_is_this_machine(imported: Path, peer: str) -> None:
    assert Client().get("/", REMOTE_ADDR=peer).status_code == 200


def test_static_files_stay_public_on_loopback() -> None:
    assert stranger().get("/static/sessions_app/app.css").status_code == 200


def test_team_mode_is_left_to_its_logins(team, imported: Path) -> None:
    response = stranger().get("/")
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_the_token_file_is_made_once_0600_whatever_the_umask(tmp_path: Path) -> None:
    folder = tmp_path / "data"
    old = os.umask(0o022)
    try:
        token = owner_token(folder=folder)
    finally:
        os.umask(old)
    path = folder / "owner_token"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.read_text() == token and len(token) >= 43  # 256 bits
    assert owner_token(folder=folder) == token
    assert [p.name for p in folder.iterdir()] == ["owner_token"]  # no temporary left
    path.unlink()
    assert owner_token(folder=folder) != token  # deleting it revokes the token


def test_a_token_file_others_could_read_lets_nobody_in(
    settings, tmp_path: Path, imported: Path
) -> None:
    settings.DATA_DIR = tmp_path / "data"
    token = owner_token(folder=settings.DATA_DIR)
    (settings.DATA_DIR / "owner_token").chmod(0o644)
    with pytest.raises(OwnerTokenError, match="readable by others"):
        owner_token(folder=settings.DATA_DIR)
    response = stranger().get("/", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert response.status_code == 403 and b"readable by others" in response.content


def test_a_link_in_place_of_the_token_file_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "data"
    folder.mkdir()
    (tmp_path / "elsewhere").write_text("x" * 64)
    (folder / "owner_token").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(OSError):
        owner_token(folder=folder)


def test_dashboard_url_prints_the_one_click_link(settings, capsys) -> None:
    call_command("dashboard_url", port=8123)
    token = owner_token(folder=settings.DATA_DIR)
    assert capsys.readouterr().out.strip() == f"http://127.0.0.1:8123/?token={token}"
    call_command("dashboard_url", token=True)
    assert capsys.readouterr().out.strip() == token


def test_a_token_file_others_could_read_is_replaced_at_start(tmp_path: Path) -> None:
    folder = tmp_path / "data"
    token = owner_token(folder=folder)
    (folder / "owner_token").chmod(0o644)
    said = data_folder_private(folder)
    assert said == ["owner_token: removed, a new one is made (open the new link)"]
    assert owner_token(folder=folder) != token
