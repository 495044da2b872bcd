"""Search filters: any value of any filter is a result or a 400 naming the filter, never a 500;
the project filter tells projects of the same path apart and lists no empty ones."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.test import Client
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from sessions_app.models import Project
from sessions_app.services.importing import sessions_import

from .factories import make_session

FILTERS = ("q", "project", "agent", "since", "until", "all", "session", "page")


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("until", "9999-12-31"),
        ("since", "9999-12-31"),
        ("since", "0001-01-01"),
        ("until", "0001-01-01"),
        ("project", "99999999999999999999999"),
        ("project", "9223372036854775808"),
        ("project", "\u00b2"),
        ("project", "\u0663"),  # an Arabic-Indic digit: isdigit(), int() reads it
    ],
)
def test_an_out_of_range_filter_is_a_400_that_names_it(
    db, client: Client, token: str, name: str, value: str
) -> None:
    page = client.get("/search/", {"q": "subtract", name: value})
    if page.status_code == 200:  # a date at the end of time is a search with no bound
        assert name in ("since", "until")
    else:
        assert page.status_code == 400
        assert f"{name}:" in page.content.decode()
        assert 'id="search-error"' in page.content.decode(), "the site's own page"
    api = client.get(
        "/api/search", {"q": "subtract", name: value}, HTTP_AUTHORIZATION=f"Bearer {token}"
    )
    assert api.status_code == page.status_code
    if api.status_code == 400:
        assert api.json()["error"].startswith(f"{name}:")


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(name=st.sampled_from(FILTERS), value=st.text(max_size=40))
@example(name="until", value="9999-12-31")
@example(name="project", value="99999999999999999999999")
@example(name="project", value="\u00b2")
@example(name="session", value="{d62afd75-12b1-4077-921c-1fa1eda79364}")
@example(name="since", value="2024-W01-1")
def test_any_value_of_any_filter_is_never_a_500(
    db, client: Client, token: str, name: str, value: str
) -> None:
    params = {"q": "subtract", name: value}
    page = client.get("/search/", params)
    assert page.status_code in (200, 400), (name, value, page.status_code)
    if page.status_code == 400:
        assert f"{name}:" in page.content.decode()
    api = client.get("/api/search", params, HTTP_AUTHORIZATION=f"Bearer {token}")
    assert api.status_code in (200, 400), (name, value, api.status_code)
    assert api["Content-Type"].startswith("application/json")
    if api.status_code == 400:
        assert api.json()["error"].startswith(f"{name}:")


def test_projects_of_one_path_are_told_apart_and_empty_ones_are_not_offered(
    tmp_path: Path, db, client: Client
) -> None:
    root = tmp_path / "root"
    make_session(root, 1, project="-work-demo")
    make_session(root, 1, project="-work-demo-copy")  # the same cwd, another folder
    sessions_import(roots=[root])
    same = Project.objects.filter(folder__startswith=str(root))
    assert same.count() == 2 and len(set(same.values_list("path", flat=True))) == 1
    pks = set(same.values_list("pk", flat=True))
    Project.objects.create(agent="claude", folder=str(root / "-gone"), root=str(root), path="/gone")
    page = client.get("/search/").content.decode()
    select = re.search(r'<select name="project".*?</select>', page, re.S)
    assert select
    options = re.findall(r'<option value="(\d+)"[^>]*>([^<]*)</option>', select.group(0))
    labels = [label for _, label in options]
    assert len(labels) == 2 and len(set(labels)) == 2, labels
    assert all("-work-demo" in label for label in labels), "the folder tells them apart"
    assert {int(pk) for pk, _ in options} == pks
    assert "/gone" not in select.group(0), "a project without sessions is not offered"
