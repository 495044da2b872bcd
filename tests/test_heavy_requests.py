"""Heavy requests (exports, usage per turn, search) never take every thread: past the limit, 503."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from django.test import Client

from sessions_app.models import Session
from sessions_app.pages import heavy

from .test_pages import WEBAPP

pytestmark = pytest.mark.django_db


def test_a_heavy_request_past_the_limit_is_503_while_a_light_page_answers(
    client: Client, imported: Path, settings, token: str
) -> None:
    settings.HEAVY_REQUESTS = 1
    sid = Session.objects.get(path=str(imported / WEBAPP)).session_id
    first = client.get(f"/sessions/{sid}/export.html")  # streaming, unread: its place held
    assert first.status_code == 200 and first.streaming
    try:
        heavy_urls = [
            f"/sessions/{sid}/export.md",
            f"/sessions/{sid}/export.jsonl",
            f"/sessions/{sid}/usage-turns/",
            f"/sessions/{sid}/usage.csv",
            "/search/?q=subtract",
        ]
        for url in heavy_urls:
            refused = client.get(url)
            assert refused.status_code == 503, url
            assert refused["Retry-After"] == str(heavy.RETRY_AFTER)
            assert "busy with other large requests" in refused.content.decode()
        api = client.get("/api/search?q=subtract", headers={"Authorization": f"Bearer {token}"})
        assert api.status_code == 503 and "busy" in api.json()["error"]
        # The transcript's panel asks with htmx, whose page shows a 4xx answer in place.
        panel = client.get(f"/sessions/{sid}/usage-turns/", headers={"HX-Request": "true"})
        assert panel.status_code == 409 and "busy with other large requests" in panel.text
        for light in ("/recent/", "/", f"/sessions/{sid}/"):
            assert client.get(light).status_code == 200, light
        assert heavy.running() == 1
    finally:
        exported = b"".join(first.streaming_content)  # read to its end, then closed
    assert b"</html>" in exported and heavy.running() == 0
    again = client.get(f"/sessions/{sid}/export.md")
    assert again.status_code == 200 and b"## Turn 1" in b"".join(again.streaming_content)
    assert client.get(f"/sessions/{sid}/usage-turns/").status_code == 200
    assert heavy.running() == 0


def test_a_heavy_request_that_fails_gives_its_place_back(client: Client, settings, db) -> None:
    settings.HEAVY_REQUESTS = 1
    for _ in range(3):
        assert client.get(f"/sessions/{uuid.uuid4()}/export.html").status_code == 404
    assert heavy.running() == 0
