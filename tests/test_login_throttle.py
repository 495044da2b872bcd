"""Sign-ins are throttled (django-axes): after BRANCHBOARD_LOGIN_FAILURES wrong passwords for
one account from one address, that account is refused from that address (429, the site's
page) for a while, even with the right password; on the team's login page and /admin/login/
alike. The address is the one the audit log takes (the trusted proxy's X-Forwarded-For,
else the peer's), and every failure is listed in the admin.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from axes.models import AccessAttempt, AccessFailureLog
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

pytestmark = pytest.mark.django_db

PROXY = {"REMOTE_ADDR": "127.0.0.1"}  # the shipped nginx site connects from loopback


@pytest.fixture
def alice(team, settings) -> User:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # fast
    settings.TRUSTED_PROXY = True
    assert settings.AXES_FAILURE_LIMIT == 5  # the default
    return User.objects.create_user("alice", password="right horse battery", is_staff=True)


def _sign_in(client: Client, url: str, password: str, address: str, **meta: str):
    return client.post(
        url,
        {"username": "alice", "password": password},
        HTTP_X_FORWARDED_FOR=address,
        **{**PROXY, **meta},
    )


def _signed_in(client: Client) -> bool:
    return "_auth_user_id" in client.session


@pytest.mark.parametrize("url", ["/accounts/login/", "/admin/login/"])
def test_wrong_passwords_lock_the_account_from_that_address(alice: User, url: str) -> None:
    client = Client()
    for attempt in range(1, 5):
        response = _sign_in(client, url, f"guess {attempt}", "203.0.113.9")
        assert response.status_code == 200, attempt  # the form again, with its error
    locked = _sign_in(client, url, "guess 5", "203.0.113.9")
    assert locked.status_code == 429
    assert "Too many failed sign-ins" in locked.content.decode()
    assert "<html" in locked.content.decode()  # the site's page, not a bare line
    assert int(locked["Retry-After"]) == 15 * 60
    # The right password now is refused too, and signs no one in.
    right = _sign_in(client, url, "right horse battery", "203.0.113.9")
    assert right.status_code == 429 and not _signed_in(client)
    # Refused while locked out, it wrote nothing more (no row grows with an attacker's tries).
    attempt = AccessAttempt.objects.get(username="alice")
    assert attempt.failures_since_start == 5 and attempt.ip_address == "203.0.113.9"
    assert AccessFailureLog.objects.filter(username="alice").count() == 5
    # Someone elsewhere is not locked out of their own account.
    elsewhere = Client()
    assert _sign_in(elsewhere, url, "right horse battery", "198.51.100.4").status_code == 302
    assert _signed_in(elsewhere)


def test_a_lockout_ends_after_its_time(alice: User) -> None:
    client = Client()
    for attempt in range(5):
        _sign_in(client, "/accounts/login/", f"guess {attempt}", "203.0.113.9")
    assert (
        _sign_in(client, "/accounts/login/", "right horse battery", "203.0.113.9").status_code
        == 429
    )
    # 16 minutes on: the attempts are older than the lockout (15 minutes by default).
    AccessAttempt.objects.update(attempt_time=timezone.now() - timedelta(minutes=16))
    response = _sign_in(client, "/accounts/login/", "right horse battery", "203.0.113.9")
    assert response.status_code == 302 and _signed_in(client)


def test_a_client_past_the_proxy_cannot_choose_its_address(alice: User) -> None:
    """A forwarded header from a peer that is not the proxy is dropped: changing it at each
    try does not escape the lockout, which falls on the peer's own address."""
    client = Client()
    statuses = [
        _sign_in(
            client, "/accounts/login/", f"guess {n}", f"192.0.2.{n}", REMOTE_ADDR="198.51.100.7"
        ).status_code
        for n in range(6)
    ]
    assert statuses == [200, 200, 200, 200, 429, 429]
    assert set(AccessAttempt.objects.values_list("ip_address", flat=True)) == {"198.51.100.7"}


def test_failed_sign_ins_are_listed_for_admins(alice: User, client: Client) -> None:
    for attempt in range(3):
        _sign_in(Client(), "/admin/login/", f"guess {attempt}", "203.0.113.9")
    admin = User.objects.create_superuser("root", password="x")
    client.force_login(admin)
    for page in ("/admin/axes/accessfailurelog/", "/admin/axes/accessattempt/"):
        response = client.get(page)
        assert response.status_code == 200, page
        html = response.content.decode()
        assert "alice" in html and "203.0.113.9" in html, page
