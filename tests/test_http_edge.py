"""Bad input at the HTTP edge: the right 4xx, and nothing written."""

from __future__ import annotations

from pathlib import Path

import pytest

from sessions_app.models import ApiToken, AuditEntry

pytestmark = pytest.mark.django_db

WEBAPP_ID = "d62afd75-12b1-4077-921c-1fa1eda79364"


def files(root: Path) -> list[str]:
    return sorted(str(p) for p in root.rglob("*") if p.is_file())


@pytest.mark.parametrize(
    "url",
    [
        "/sessions/../../etc/passwd/",
        "/sessions/d62afd75-12b1-4077-921c-1fa1eda7936/",
        "/sessions/D62AFD75-12B1-4077-921C-1FA1EDA79364x/",
        "/projects/999999999/",
        "/projects/-1/",
        f"/sessions/{WEBAPP_ID}/records/999999/output/",
        f"/sessions/{WEBAPP_ID}/subagents/..%2F..%2F..%2Fetc%2Fpasswd/",
        f"/sessions/{WEBAPP_ID}/subagents/{'a' * 300}/",
        f"/sessions/{WEBAPP_ID}/export.jsonl%00.html",
        f"/sessions/{WEBAPP_ID}/export.../../settings.py",
    ],
)
def test_malformed_or_unknown_urls_are_404(client, imported: Path, url: str) -> None:
    assert client.get(url).status_code == 404


@pytest.mark.parametrize(
    ("query", "status"),
    [
        ("?after=-5", 200),
        ("?after=99999999999999999999", 200),
        ("?after=abc", 200),
        # Not a record id: a page that says so.
        ("?leaf=../../etc/passwd", 400),
        ("?leaf=" + "x" * 5000, 400),
        ("?leaf=<script>", 400),
        ("?all=<script>", 200),
    ],
)
def test_odd_transcript_parameters_still_render(
    client, imported: Path, query: str, status: int
) -> None:
    response = client.get(f"/sessions/{WEBAPP_ID}/{query}")
    assert response.status_code == status
    assert b"<script>" not in response.content.split(b"</head>")[1].replace(
        b'<script src="/static', b""
    )


@pytest.mark.parametrize(
    "query", ["?page=-1", "?page=abc", "?page=99999999999", "?sort=title;drop", "?q=%00"]
)
def test_odd_sessions_page_parameters_still_render(client, imported: Path, query: str) -> None:
    from sessions_app.models import Session

    project = Session.objects.get(session_id=WEBAPP_ID).project_id
    assert client.get(f"/projects/{project}/{query}").status_code == 200


@pytest.mark.parametrize(
    "turn", ["99999999999999999999999", "-3", "0", "1e3", "", "2; rm -rf /", "../../1"]
)
def test_bad_turns_from_forms_write_nothing(client, imported: Path, turn: str) -> None:
    before = files(imported)
    for url in (f"/sessions/{WEBAPP_ID}/fork/", f"/sessions/{WEBAPP_ID}/rewind/"):
        response = client.post(url, {"turn": turn, "mode": "before"}, HTTP_HX_REQUEST="true")
        assert response.status_code == 400, (url, turn, response.status_code)
    assert files(imported) == before
    assert AuditEntry.objects.count() == 0


def test_bad_turns_through_the_api_are_400(client, imported: Path) -> None:
    _, key = ApiToken.issue(name="edge")
    before = files(imported)
    for body in (
        b'{"turn": 99999999999999999999999999}',
        b'{"turn": -1}',
        b'{"turn": 1.5}',
        b'{"turn": "abc"}',
        b'{"turn": null, "include_turn": false}',
        b'{"include_turn": false}',
    ):
        response = client.post(
            f"/api/sessions/{WEBAPP_ID}/fork",
            body,
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {key}",
        )
        assert response.status_code == 400, body
        assert response.json()["error"], body
    assert files(imported) == before


def test_wrong_methods_are_405(client, imported: Path) -> None:
    assert client.get(f"/sessions/{WEBAPP_ID}/fork/").status_code == 405
    assert client.get(f"/sessions/{WEBAPP_ID}/rewind/undo/").status_code == 405
    assert client.post(f"/sessions/{WEBAPP_ID}/").status_code == 405
    assert client.put(f"/sessions/{WEBAPP_ID}/rewind/").status_code == 405
    assert client.delete("/").status_code == 405


def test_oversized_form_body_is_refused(client, imported: Path, settings) -> None:
    before = files(imported)
    too_big = {"title": "x" * (settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 1)}
    response = client.post(f"/sessions/{WEBAPP_ID}/fork/", too_big)
    assert response.status_code == 413 and "larger than" in response.content.decode()
    assert files(imported) == before


@pytest.mark.parametrize("url", ["/?q=%00", "/?q=a%00b"])
def test_nul_in_a_search_is_harmless(client, imported: Path, url: str) -> None:
    assert client.get(url).status_code == 200


def test_control_characters_in_a_title_are_dropped(client, imported: Path) -> None:
    _, key = ApiToken.issue(name="edge")
    response = client.post(
        f"/api/sessions/{WEBAPP_ID}/fork",
        b'{"title": "my\\u0000 try\\u0007"}',
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {key}",
    )
    assert response.status_code == 201 and response.json()["title"] == "my try"
