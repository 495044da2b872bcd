"""Which address the audit log records: the peer's, or a trusted proxy's header."""

from __future__ import annotations

import pytest
from django.test import RequestFactory

from sessions_app.services.audit import client_address


@pytest.mark.parametrize(
    ("trusted", "forwarded", "expected"),
    [
        (False, "127.0.0.7", "10.0.0.1"),  # no proxy is trusted: the header is the client's say
        (True, "127.0.0.7", "127.0.0.7"),
        (True, "203.0.113.9, 127.0.0.7", "127.0.0.7"),  # a proxy that appends: the last entry
        (True, "2001:db8::7", "2001:db8::7"),
        (True, "", "10.0.0.1"),
        (True, "not-an-address", "10.0.0.1"),
        (True, "127.0.0.7, <script>", "10.0.0.1"),
    ],
)
def test_client_address(settings, trusted: bool, forwarded: str, expected: str) -> None:
    settings.TRUSTED_PROXY = trusted
    settings.PROXY_ADDRESSES = ["10.0.0.0/8"]  # the peer, 10.0.0.1, is the proxy
    request = RequestFactory().post("/", REMOTE_ADDR="10.0.0.1", HTTP_X_FORWARDED_FOR=forwarded)
    assert client_address(request) == expected
    # The same header from a peer that is not the proxy is that peer's own say.
    settings.PROXY_ADDRESSES = ["127.0.0.1", "::1"]
    assert client_address(request) == "10.0.0.1"


def test_a_peer_that_is_no_address_is_not_recorded(settings) -> None:
    settings.TRUSTED_PROXY = False
    assert client_address(RequestFactory().post("/", REMOTE_ADDR="unix-socket")) is None
