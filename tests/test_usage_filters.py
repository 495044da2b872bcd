"""Usage filters (`/usage/`, `/usage.csv`): a value that cannot be read is a 400 naming it.

Never a 500 (a date past the calendar's end, a number no database id holds, a
digit `isdigit()` takes but `int()` refuses), never Django's bare page with no
way back: the site's own page says which filter and why.
"""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest
from django.http.response import HttpResponseBase
from django.test import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessions_app.models import Project
from sessions_app.selectors.usage import usage_by_day

from .test_usage import imported, session_with

pytestmark = pytest.mark.django_db
FILTERS = ("by", "project", "agent", "since", "until")


def _body(response: HttpResponseBase) -> str:
    if response.streaming:
        return b"".join(response.streaming_content).decode()
    return response.content.decode()


@pytest.mark.parametrize(
    ("query", "names"),
    [
        ("project=99999999999999999999999", "project"),
        ("project=%C2%B2", "project"),
        ("project=-1", "project"),
        ("by=x", "by"),
        ("agent=nobody", "agent"),
        ("since=2026-02-30", "since"),
        ("until=tomorrow", "until"),
    ],
)
@pytest.mark.parametrize("url", ["/usage.csv", "/usage/"])
def test_a_filter_that_cannot_be_read_is_a_400_on_the_site_page_naming_it(
    client: Client, url: str, query: str, names: str
) -> None:
    if url == "/usage/" and names == "by":
        query = "by=day&" + query.replace("by=x", "project=x")  # the page has no `by`
        names = "project"
    response = client.get(f"{url}?{query}")
    assert response.status_code == 400
    body = _body(response)
    assert f"{names}:" in body
    # The site's own page, with its way back, not Django's bare "Bad Request".
    assert 'class="brand"' in body and 'href="/usage/"' in body


def test_an_unknown_project_is_a_404_on_the_site_page(client: Client) -> None:
    response = client.get("/usage.csv?project=123456")
    assert response.status_code == 404
    assert 'class="brand"' in _body(response)


@pytest.mark.parametrize("url", ["/usage.csv", "/usage/"])
def test_the_last_day_of_the_calendar_is_a_date_like_any_other(
    client: Client, tmp_path: Path, url: str
) -> None:
    imported(tmp_path, session_with(tmp_path, [("one", [5])]))
    response = client.get(f"{url}?until=9999-12-31&since=0001-01-01")
    assert response.status_code == 200
    assert "2026-03-01" in _body(response)


def test_since_and_until_bound_the_days(tmp_path: Path, client: Client) -> None:
    imported(tmp_path, session_with(tmp_path, [("one", [5])]))
    assert [d.day for d in usage_by_day(until=date(2026, 3, 1))] == [date(2026, 3, 1)]
    assert usage_by_day(until=date(2026, 2, 28)) == []
    assert usage_by_day(since=date(2026, 3, 2)) == []
    csv = _body(client.get("/usage.csv?by=day&since=2026-03-02"))
    assert csv.splitlines()[1:] == []
    project = Project.objects.get()
    csv = _body(client.get(f"/usage.csv?by=model&project={project.pk}&agent=claude"))
    assert len(csv.splitlines()) == 2


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(st.dictionaries(st.sampled_from(FILTERS), st.text(max_size=30), min_size=1))
def test_no_filter_value_gives_a_500(client: Client, params: dict[str, str]) -> None:
    for url in ("/usage.csv", "/usage/"):
        response = client.get(url, params)
        assert response.status_code in (200, 400, 404), (url, params)
        _body(response)  # a CSV streams: every row of it is made without an error
