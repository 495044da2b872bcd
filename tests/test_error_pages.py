"""Errors use the site's own page (a message and the way back), a fragment under htmx, JSON under /api/."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from django.test import Client, RequestFactory

from sessions_app.models import ApiToken

WEBAPP_ID = "d62afd75-12b1-4077-921c-1fa1eda79364"


def site_page(response, status: int, *words: str) -> str:
    """The body of `response`, checked to be the site's own error page saying `words`."""
    body = response.content.decode()
    assert response.status_code == status, (response.status_code, body[:300])
    assert response["Content-Type"].startswith("text/html"), response["Content-Type"]
    assert '<header class="top">' in body and 'class="brand"' in body, body[:300]
    assert 'id="error-way-back"' in body, body  # the way back
    for word in words:
        assert word in body, (word, body)
    return body


@pytest.mark.django_db
def test_an_unknown_session_is_the_sites_404_page(client, imported: Path) -> None:
    body = site_page(client.get(f"/sessions/{uuid.uuid4()}/"), 404, "Not found", "no such session")
    assert 'href="/"' in body


@pytest.mark.django_db
def test_an_address_that_is_no_page_is_the_sites_404_page(client) -> None:
    body = site_page(client.get("/no/such/page/"), 404, "Not found")
    assert "Resolver404" not in body and "tried" not in body


@pytest.mark.django_db
def test_the_same_session_picked_twice_to_compare_says_so(client, imported: Path) -> None:
    picked = client.get(f"/sessions/{WEBAPP_ID}/compare/?a={WEBAPP_ID}&b={WEBAPP_ID}", follow=True)
    site_page(picked, 404, "pick two different branches")


@pytest.mark.django_db
def test_a_404_under_htmx_is_a_message_not_a_page(client, imported: Path) -> None:
    response = client.get(f"/sessions/{uuid.uuid4()}/", HTTP_HX_REQUEST="true")
    body = response.content.decode()
    assert response.status_code == 404
    assert "<html" not in body and 'class="action-error"' in body and "no such session" in body


@pytest.mark.django_db
def test_a_foreign_host_is_the_sites_400_page(client) -> None:
    site_page(client.get("/", HTTP_HOST="evil.example"), 400, "Bad request")


@pytest.mark.django_db
def test_a_missing_csrf_token_is_the_sites_403_page(imported: Path) -> None:
    response = Client(enforce_csrf_checks=True).post(f"/sessions/{WEBAPP_ID}/fork/")
    site_page(response, 403, "reload the page")


@pytest.mark.django_db
def test_a_refused_permission_is_the_sites_403_page(client, imported: Path, settings) -> None:
    settings.ALLOW_RUNS = False
    response = client.post(f"/sessions/{WEBAPP_ID}/runs/", {"prompt": "hi", "mode": "plan"})
    site_page(response, 403, "not allowed here")


@pytest.mark.django_db
def test_a_form_too_large_is_the_sites_413_page(client, imported: Path, settings) -> None:
    body = {"title": "x" * (settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 1)}
    site_page(client.post(f"/sessions/{WEBAPP_ID}/fork/", body), 413, "larger than")


@pytest.mark.django_db
@pytest.mark.urls("tests.error_urls")
def test_a_bug_in_a_page_is_the_sites_500_page() -> None:
    response = Client(raise_request_exception=False).get("/boom/")
    body = site_page(response, 500, "went wrong")
    assert "ZeroDivisionError" not in body and "a bug in a view" not in body


def test_the_500_page_needs_no_database() -> None:
    # No django_db mark: any query here fails the test.
    from django.urls import get_callable

    from branchboard.urls import handler500

    response = get_callable(handler500)(RequestFactory().get("/somewhere/"))
    site_page(response, 500, "went wrong")


# -- the API answers JSON, whatever went wrong --------------------------------------------


def api_error(response, status: int) -> str:
    assert response.status_code == status, (response.status_code, response.content[:300])
    assert response["Content-Type"] == "application/json", response["Content-Type"]
    message = response.json()["error"]
    assert isinstance(message, str) and message
    return message


@pytest.mark.django_db
@pytest.mark.urls("tests.error_urls")
def test_a_bug_under_the_api_is_a_json_500() -> None:
    message = api_error(Client(raise_request_exception=False).get("/api/boom"), 500)
    assert "ZeroDivisionError" not in message and "a bug in a view" not in message


@pytest.mark.django_db
def test_a_foreign_host_under_the_api_is_a_json_400(client) -> None:
    api_error(client.get("/api/openapi.json", HTTP_HOST="evil.example"), 400)


@pytest.mark.django_db
def test_a_body_too_large_for_the_api_is_a_json_413(client, imported: Path, settings) -> None:
    _, key = ApiToken.issue(name="big")
    body = b'{"title": "' + b"x" * (settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 1) + b'"}'
    response = client.post(
        f"/api/sessions/{WEBAPP_ID}/fork",
        body,
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {key}",
    )
    assert "larger than" in api_error(response, 413)


@pytest.mark.django_db
def test_unknown_api_addresses_and_methods_are_json(client) -> None:
    api_error(client.get("/api/nothing/here"), 404)
    api_error(client.post("/api/openapi.json"), 405)
