"""A hub's pages: each session shows the machine and owner it was pushed from, and the
lists and search narrow to one owner, one machine, or both; a session of the hub's own
disk shows nothing new.

Two namespaces hold the same session id (alice's laptop and bob's desktop): two
sessions, each its own page.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from django.test import Client

from sessions_app.models import Project, Session
from sessions_app.services.hub.namespaces import hub_roots
from sessions_app.services.importing import sessions_import
from sessions_app.services.searching import search_refresh

from .corpus import FIXTURES, make_idle

CLAUDE = FIXTURES / "cli" / "claude"
SHARED_ID = "d62afd75-12b1-4077-921c-1fa1eda79364"  # -home-dev-code-webapp, on both machines
BOB_ONLY = "1d4a52d5-4001-489b-b03d-81bd7cf462c5"  # -home-dev-code-forks, bob's desktop only
LOCAL = "ad8024e4-83f0-4ff3-82f8-4e19f6c9127b"  # -home-dev-code-bigrepo, the hub's own disk
MACHINES = {
    "alice@laptop": ["-home-dev-code-webapp"],
    "bob@desktop": ["-home-dev-code-webapp", "-home-dev-code-forks"],
}
BADGE = re.compile(
    r'class="badge machine"[^>]*><span class="owner">([^<]+)</span> · '
    r'<span class="machine-name">([^<]+)</span>'
)


def hub_with_two_machines(data_dir: Path, local: Path) -> None:
    """Alice's laptop and Bob's desktop as a hub keeps their pushes, and one local project."""
    for namespace, projects in MACHINES.items():
        for project in projects:
            shutil.copytree(
                CLAUDE / project, data_dir / "hub" / namespace / ".claude" / "projects" / project
            )
    shutil.copytree(CLAUDE / "-home-dev-code-bigrepo", local / "-home-dev-code-bigrepo")
    make_idle(data_dir / "hub")
    make_idle(local)
    for roots in (hub_roots(), [local]):
        report = sessions_import(roots=roots)
        assert not report.errors, report.errors
    assert not search_refresh().errors


@pytest.fixture
def hub(tmp_path: Path, settings, db) -> Path:
    settings.DATA_DIR = tmp_path / "data"
    settings.DATA_DIR.mkdir(mode=0o700)
    local = tmp_path / "local"
    settings.SESSION_ROOTS = [local]
    hub_with_two_machines(settings.DATA_DIR, local)
    return settings.DATA_DIR


def badges(html: str) -> list[tuple[str, str]]:
    return BADGE.findall(html)


def row_ids(html: str) -> list[str]:
    return re.findall(r'<li class="recent-row" id="recent-([^"]+)"', html)


def test_the_same_id_from_two_machines_is_two_sessions_each_with_its_page(
    hub: Path, client: Client
) -> None:
    both = Session.objects.filter(session_id=SHARED_ID)
    assert sorted(both.values_list("namespace", flat=True)) == ["alice@laptop", "bob@desktop"]
    for namespace, owner, machine in (
        ("alice@laptop", "alice", "laptop"),
        ("bob@desktop", "bob", "desktop"),
    ):
        page = client.get(f"/sessions/{namespace}/{SHARED_ID}/")
        assert page.status_code == 200
        html = page.content.decode()
        head = html[html.index('id="session-head"') : html.index('class="facts"')]
        assert badges(head) == [(owner, machine)]
        assert f'href="/recent/?owner={owner}&amp;machine={machine}"' in head
        # The page's own search box searches this session, not its namesake on the other machine.
        assert f'name="session" value="{namespace}/{SHARED_ID}"' in html
    local = client.get(f"/sessions/{LOCAL}/").content.decode()
    assert "badge machine" not in local, "a session of the hub's own disk shows no machine"


def test_the_lists_show_each_sessions_machine_and_owner(hub: Path, client: Client) -> None:
    home = client.get("/").content.decode()
    cards = re.findall(r'<a class="card project-row.*?</a>', home, re.S)
    assert len(cards) == 4  # webapp twice, forks, bigrepo
    machines = sorted(badges(card)[0] if badges(card) else ("", "") for card in cards)
    assert machines == [("", ""), ("alice", "laptop"), ("bob", "desktop"), ("bob", "desktop")]
    recent = client.get("/recent/").content.decode()
    ids = row_ids(recent)
    assert f"alice@laptop-{SHARED_ID}" in ids and f"bob@desktop-{SHARED_ID}" in ids
    assert LOCAL in ids, "a local session's row keeps its id alone"
    assert len(ids) == len(set(ids)), "one id per row, though the session id is shared"
    for row in re.findall(r'<li class="recent-row" id="recent-.*?</li>', recent, re.S):
        namespace = re.match(r'<li class="recent-row" id="recent-([^"]*?)-?[0-9a-f-]{36}"', row)
        assert namespace
        expected = [tuple(namespace.group(1).split("@"))] if namespace.group(1) else []
        assert badges(row) == expected, row

    bob = Project.objects.get(namespace="bob@desktop", folder__endswith="-home-dev-code-forks")
    detail = client.get(f"/projects/{bob.pk}/").content.decode()
    assert badges(detail) == [("bob", "desktop")]
    local = Project.objects.get(namespace="")
    assert "badge machine" not in client.get(f"/projects/{local.pk}/").content.decode()


def test_a_list_of_a_local_dashboard_offers_no_machine_filter(
    tmp_path: Path, settings, db, client: Client
) -> None:
    local = tmp_path / "local"
    shutil.copytree(CLAUDE / "-home-dev-code-webapp", local / "-home-dev-code-webapp")
    sessions_import(roots=[local])
    for url in ("/", "/recent/", "/search/?q=subtract"):
        html = client.get(url).content.decode()
        assert 'name="owner"' not in html and "badge machine" not in html, url
    assert 'name="owner"' in client.get("/recent/?owner=alice").content.decode(), "kept when asked"


@pytest.mark.parametrize(
    ("params", "namespaces"),
    [
        ({"owner": "alice"}, {"alice@laptop"}),
        ({"owner": "bob"}, {"bob@desktop"}),
        ({"machine": "desktop"}, {"bob@desktop"}),
        ({"owner": "alice", "machine": "laptop"}, {"alice@laptop"}),
        ({"owner": "", "machine": ""}, {"alice@laptop", "bob@desktop", ""}),
    ],
)
def test_the_lists_narrow_to_an_owner_and_a_machine(
    hub: Path, client: Client, params: dict[str, str], namespaces: set[str]
) -> None:
    home = client.get("/", params).content.decode()
    shown = {
        int(pk) for pk in re.findall(r'href="/projects/(\d+)/"', home.split('id="project-list"')[1])
    }
    expected = set(Project.objects.filter(namespace__in=namespaces).values_list("pk", flat=True))
    assert shown == expected
    recent = client.get("/recent/", params).content.decode()
    rows = {re.sub(r"-?[0-9a-f-]{36}$", "", row) for row in row_ids(recent)}
    assert rows == namespaces
    assert ('id="hub-filter"' in recent) == any(params.values()), "says what it narrowed to"


def test_a_filter_that_narrows_to_nothing_shows_an_empty_list_and_the_way_back(
    hub: Path, client: Client
) -> None:
    home = client.get("/", {"owner": "alice", "machine": "desktop"})
    assert home.status_code == 200
    html = home.content.decode()
    assert "No project of alice on desktop here." in html
    assert 'class="card project-row' not in html
    back = re.search(r'<a href="([^"]+)" id="every-machine">', html)
    assert back, "a way back to every machine's projects"
    everything = client.get(back.group(1).replace("&amp;", "&"))
    assert everything.status_code == 200
    assert len(re.findall(r'<a class="card project-row', everything.content.decode())) == 4
    # The way back replaced the kept filter: a bare visit is not sent to the empty list again.
    assert client.get("/").status_code == 200
    recent = client.get("/recent/", {"owner": "carol"}).content.decode()
    assert "No sessions match this filter." in recent and 'id="every-machine"' in recent


def test_the_kept_filter_brings_a_bare_visit_back_to_it(hub: Path, client: Client) -> None:
    client.get("/recent/", {"owner": "bob"})
    again = client.get("/recent/")
    assert again.status_code == 302 and again["Location"] == "/recent/?owner=bob"


def test_a_filtered_list_fragment_for_htmx(hub: Path, client: Client) -> None:
    html = client.get("/", {"machine": "laptop"}, HTTP_HX_REQUEST="true").content.decode()
    assert "<html" not in html and 'id="project-list"' in html
    assert badges(html) == [("alice", "laptop")] * 2  # its project, and its recent session


def test_search_narrows_to_an_owner_and_a_machine(hub: Path, client: Client, token: str) -> None:
    every = client.get("/search/", {"q": "subtract"}).content.decode()
    assert {"alice", "bob"} <= {owner for owner, _ in badges(every)}
    for params, namespace in (
        ({"owner": "alice"}, "alice@laptop"),
        ({"machine": "desktop"}, "bob@desktop"),
    ):
        page = client.get("/search/", {"q": "subtract", **params}).content.decode()
        results = page[page.index('id="search-results"') :]
        assert set(badges(results)) == {tuple(namespace.split("@"))}
        assert f'<option value="{next(iter(params.values()))}" selected>' in page, (
            "the filter shown as chosen"
        )
        api = client.get(
            "/api/search", {"q": "subtract", **params}, HTTP_AUTHORIZATION=f"Bearer {token}"
        )
        assert api.status_code == 200
        urls = [hit["url"] for s in api.json()["sessions"] for hit in s["hits"]]
        assert urls and all(u.startswith(f"/sessions/{namespace}/") for u in urls)
    nobody = client.get("/search/", {"q": "subtract", "owner": "alice", "machine": "desktop"})
    assert nobody.status_code == 200
    assert (
        'id="search-none"' in nobody.content.decode()
        and 'id="every-machine"' in nobody.content.decode()
    )


def test_a_search_in_one_session_of_a_hub_finds_that_session_only(
    hub: Path, client: Client
) -> None:
    page = client.get("/search/", {"q": "subtract", "session": f"bob@desktop/{SHARED_ID}"})
    assert page.status_code == 200
    results = page.content.decode()
    assert set(badges(results[results.index('id="search-results"') :])) == {("bob", "desktop")}


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("owner", "alice@laptop"),
        ("owner", "a b"),
        ("owner", "-alice"),
        ("owner", "al..ice"),
        ("owner", "x" * 65),
        ("machine", "lap/top"),
        ("machine", "laptop\n"),
        ("machine", "\x00"),
        ("machine", "\u00e9t\u00e9"),
    ],
)
def test_a_bad_owner_or_machine_is_a_400_that_names_it(
    hub: Path, client: Client, token: str, name: str, value: str
) -> None:
    for url in ("/", "/recent/", "/search/"):
        page = client.get(url, {"q": "subtract", name: value})
        assert page.status_code == 400, url
        html = page.content.decode()
        assert f"{name}: " in html, url
        assert "every-machine" in html or 'id="search-error"' in html, url
    api = client.get(
        "/api/search", {"q": "subtract", name: value}, HTTP_AUTHORIZATION=f"Bearer {token}"
    )
    assert api.status_code == 400 and api.json()["error"].startswith(f"{name}:")
    # A bad value is not kept: the next bare visit shows the list.
    assert client.get("/recent/").status_code == 200


def test_the_api_names_a_pushed_session_and_its_forks_by_their_refs(
    hub: Path, client: Client, token: str
) -> None:
    """A script on a hub follows a session's children and parent by the refs the API gives:
    a bare id names the hub's own disk, so a child named by its id alone would not be found."""
    from sessions_app.services.branching import session_fork

    auth = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    source = Session.objects.get(namespace="alice@laptop", session_id=SHARED_ID)
    fork = session_fork(session=source, turn=1)
    got = client.get(f"/api/sessions/alice@laptop/{SHARED_ID}", **auth).json()
    assert (got["ref"], got["namespace"]) == (f"alice@laptop/{SHARED_ID}", "alice@laptop")
    (child,) = [c for c in got["children"] if c["session_id"] == str(fork.session_id)]
    assert child["ref"] == f"alice@laptop/{fork.session_id}"
    followed = client.get(f"/api/sessions/{child['ref']}", **auth)
    assert followed.status_code == 200
    assert followed.json()["parent_ref"] == got["ref"]
    assert client.get(f"/api/sessions/{fork.session_id}", **auth).status_code == 404
    local = client.get(f"/api/sessions/{LOCAL}", **auth).json()
    assert (local["ref"], local["namespace"], local["parent_ref"]) == (LOCAL, "", None)
