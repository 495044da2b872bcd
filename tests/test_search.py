"""Search across sessions: what is found where, filters, escaping, and an index that keeps up.

The corpus is imported once per module and indexed for search; each test's own
writes (appends, forks) are rolled back after it. Each term is found as a
case-insensitive substring on both databases (SQLite FTS5 trigram, PostgreSQL
trigram), so the same assertions hold on both.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest
from django.db import connection
from django.db.models import Q
from django.test import Client

from sessions_app.formats.search_text import matches, query_terms, snippet
from sessions_app.models import Record, SearchText, Session
from sessions_app.selectors.search import SearchQuery, search
from sessions_app.services.branching import session_fork
from sessions_app.services.hub.indexing import hub_import
from sessions_app.services.importing import sessions_import
from sessions_app.services.searching import search_refresh

from .factories import EVIL, assistant_record, jsonl, make_session, tool_result, user_record
from .facts import FORKS_TREE

WEBAPP = "d62afd75-12b1-4077-921c-1fa1eda79364"
AGENTS = "04fa9149-8141-4f34-8bc2-f6d11b8fa354"
QWEN = "6fbeb39a-1e79-43ef-995c-46eedd93e6fe"


@pytest.fixture
def indexed(imported: Path) -> Path:
    report = search_refresh()
    assert not report.errors, report.errors
    return imported


def found(text: str, **filters) -> dict[str, list]:
    """session id -> its hits, for a search."""
    results = search(SearchQuery(text, **filters))
    return {str(g.session.session_id): g.hits for g in results.groups}


def found_pks(text: str, **filters) -> set[int]:
    return {g.session.pk for g in search(SearchQuery(text, **filters)).groups}


def test_the_pass_indexes_every_searchable_record_once(indexed: Path) -> None:
    searchable = Record.objects.filter(search_text__isnull=False)
    assert searchable.count() > 500
    assert not Session.objects.filter(search_lines__lt=models_line_count()).exists()
    # Nothing left to do: a second pass reads nothing.
    again = search_refresh()
    assert (again.sessions, again.lines, again.stored) == (0, 0, 0)
    # A title the CLI wrote three times is one text.
    webapp = Session.objects.get(session_id=WEBAPP)
    titles = webapp.records.filter(kind="title").values_list("search_text", flat=True)
    assert len(titles) == 3 and len(set(titles)) == 1


def models_line_count():
    from django.db.models import F

    return F("line_count")


@pytest.mark.parametrize(
    ("query", "part", "line"),
    [
        ("subtract function", "prompt", 4),  # a prompt
        ("no tests** yet", "reply", 49),  # an assistant's reply, Markdown and all
        ('"pytest -q"', "tool", 46),  # only in a tool call's input (a phrase)
        ("Exit code 4", "output", 47),  # only in a tool's output
        ("sub(a, b)", "reply", 34),  # a code fragment with brackets
        ("SUBTRACT FEATURE", "title", 0),  # a title, case ignored
    ],
)
def test_words_are_found_where_they_are(indexed: Path, query: str, part: str, line: int) -> None:
    hits = found(query)[WEBAPP]
    assert (hits[0].part, hits[0].line) == (part, line)
    assert hits[0].marks, "the match is marked in the snippet"
    start, end = hits[0].marks[0]
    assert hits[0].snippet[start:end].casefold() == query_terms(query)[0].casefold()


def test_an_identifier_in_a_tool_output_is_found_in_qwen_sessions_too(indexed: Path) -> None:
    hits = found("hello.txt", agent="qwen")
    assert QWEN in hits
    assert set(found("hello.txt", agent="claude")) & {QWEN} == set()


def test_a_snippet_holds_no_cli_markup_tags(indexed: Path) -> None:
    results = search(SearchQuery('"create TODO app by Next.js"'))
    hits = [h for g in results.groups for h in g.hits if h.part == "prompt"]
    assert hits, "the slash command's prompt is found"
    for hit in hits:
        assert "<command-" not in hit.snippet and "</" not in hit.snippet, hit.snippet
        assert "/orchestrator" in hit.snippet  # the command's name stays, without its tags
        start, end = hit.marks[0]
        assert hit.snippet[start:end] == "create TODO app by Next.js"


def test_thinking_is_searched(indexed: Path) -> None:
    thinking = SearchText.objects.filter(part="thinking").first()
    assert thinking is not None, "the corpus has thinking blocks"
    word = max(re.findall(r"[A-Za-z_]{8,}", thinking.text), key=len)
    results = search(SearchQuery(word, everything=True))
    assert any(h.part == "thinking" for g in results.groups for h in g.hits)


def test_a_word_nowhere_finds_nothing_and_short_words_are_named(indexed: Path) -> None:
    assert found("xyzzy_not_in_any_session") == {}
    results = search(SearchQuery("a subtract"))
    assert results.short == ["a"] and WEBAPP in {str(g.session.session_id) for g in results.groups}
    assert search(SearchQuery("ab")).groups == []


def test_every_term_must_occur(indexed: Path) -> None:
    assert WEBAPP in found("subtract app.py")
    assert WEBAPP not in found("subtract xyzzy_nowhere")


def test_abandoned_branches_only_when_asked_subagents_always(indexed: Path) -> None:
    forks_tree = Session.objects.get(path__endswith=FORKS_TREE.split("/")[-1])
    sid = str(forks_tree.session_id)
    assert sid not in found("one more prompt in the branch")
    hits = found("one more prompt in the branch", everything=True)[sid]
    assert hits[0].active is False
    # A subagent's records carry its owner's session id: told apart by their rows.
    subagent = Session.objects.get(path__contains="agent-a0751b2961eeab05e")
    assert subagent.pk in found_pks("List files and report")
    assert subagent.pk in found_pks("List files and report", everything=True)


def test_a_hit_in_a_subagent_opens_the_subagents_own_page(indexed: Path, client: Client) -> None:
    page = client.get("/search/", {"q": "List files and report", "all": "1"}).content.decode()
    owner = "04fa9149-8141-4f34-8bc2-f6d11b8fa354"
    link = re.search(rf'href="(/sessions/{owner}/subagents/a0751b2961eeab05e/\?hl=[^"]+)"', page)
    assert link, "the hit links the subagent's page"
    shown = client.get(html.unescape(link.group(1)))
    assert shown.status_code == 200 and "List files and report" in shown.content.decode()


def test_filters_by_project_date_and_session(indexed: Path) -> None:
    webapp = Session.objects.get(session_id=WEBAPP)
    assert set(found("the", project=webapp.project_id)) == {WEBAPP}
    day = webapp.started_at.date()
    assert WEBAPP in found("subtract function", since=day, until=day)
    from datetime import timedelta

    assert WEBAPP not in found("subtract function", since=day + timedelta(days=1))
    assert WEBAPP not in found("subtract function", until=day - timedelta(days=1))
    only = found("the", session=webapp.pk)
    assert set(only) == {WEBAPP}


def test_an_appended_line_is_searchable_after_the_next_pass(indexed: Path) -> None:
    webapp = Session.objects.get(session_id=WEBAPP)
    path = Path(webapp.path)
    last = webapp.records.exclude(uuid="").order_by("-line").first()
    assert last is not None
    prompt = user_record("please refactor quux_frobnicator", sid=WEBAPP, parent=last.uuid)
    with path.open("ab") as f:
        f.write(jsonl([prompt]))
    sessions_import(roots=[path.parent.parent])
    # The import stored its text from its own read of the line. SQLite: its words go into
    # the index by the pass; PostgreSQL indexes the text as it is stored.
    sqlite = connection.vendor == "sqlite"
    if sqlite:
        assert found("quux_frobnicator") == {}, "not before the search pass"
    report = search_refresh()
    assert (report.sessions, report.stored, report.words) == (0, 0, 1 if sqlite else 0)
    hits = found("quux_frobnicator")[WEBAPP]
    assert hits[0].turn == 4


def test_a_file_read_again_loses_its_old_words(indexed: Path) -> None:
    webapp = Session.objects.get(session_id=WEBAPP)
    path = Path(webapp.path)
    old_texts = set(webapp.records.exclude(search_text=None).values_list("search_text", flat=True))
    records = [user_record("a brand new zorblax session", sid=WEBAPP)]
    path.write_bytes(jsonl(records))
    sessions_import(roots=[path.parent.parent])
    assert found("subtract function") == {}, "the old texts went with the old rows"
    assert not SearchText.objects.filter(pk__in=old_texts).exists()
    search_refresh()
    assert WEBAPP in found("zorblax")


def test_a_fork_adds_no_second_hit_but_says_it_holds_the_text(indexed: Path) -> None:
    webapp = Session.objects.get(session_id=WEBAPP)
    fork = session_fork(session=webapp, turn=2)
    # The fork returned indexed (`caught_up`): its copied records linked to their texts.
    texts = Record.objects.exclude(search_text=None).exclude(uuid="")
    theirs = dict(texts.filter(session=webapp).values_list("uuid", "search_text"))
    mine = texts.filter(session=fork).values_list("uuid", "search_text")
    linked = [theirs[uuid] == text for uuid, text in mine if uuid in theirs]
    assert linked and all(linked), "the fork's copied records were linked, not read again"
    assert search_refresh().sessions == 0  # nothing left for the pass
    hits = found("subtract function")
    assert WEBAPP in hits and str(fork.session_id) not in hits
    assert hits[WEBAPP][0].also_in == 1
    # Its own title is its own.
    assert str(fork.session_id) in found(fork.title)


def test_a_stale_index_is_not_searched_until_the_import_catches_up(indexed: Path) -> None:
    """The search pass reads the lines an import did not store texts for (a hub's commit of
    a big file) and checks each against the index."""
    webapp = Session.objects.get(session_id=WEBAPP)
    path = Path(webapp.path)
    last = webapp.records.exclude(uuid="").order_by("-line").first()
    prompt = user_record("stale wombat words", sid=WEBAPP, parent=last.uuid)
    with path.open("ab") as f:
        f.write(jsonl([prompt]))
    hub_import(path.parent.parent, path, catch_up=False)
    # The file changes under the index before the search pass.
    data = path.read_bytes().replace(b"stale wombat words", b"other wombat words")
    path.write_bytes(data)
    report = search_refresh()
    assert any("changed since it was imported" in e for e in report.errors)
    assert found("wombat") == {}
    sessions_import(roots=[path.parent.parent])
    search_refresh()
    assert WEBAPP in found("other wombat")


def test_snippets_are_text_and_the_page_escapes_them(tmp_path: Path, db, client: Client) -> None:
    sid = "9b2f4c1e-0d5a-4e6b-8c7d-1a2b3c4d5e6f"
    user = user_record(f"look at {EVIL} now", sid=sid)
    call = {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "cat <b>x"}}
    answer = assistant_record([call], sid=sid, parent=user["uuid"])
    result = user_record(
        tool_result("t1", "<i>ENOENT</i>: no file"), sid=sid, parent=answer["uuid"]
    )
    folder = tmp_path / "root" / "-work-demo"
    folder.mkdir(parents=True)
    (folder / f"{sid}.jsonl").write_bytes(jsonl([user, answer, result]))
    sessions_import(roots=[tmp_path / "root"])
    search_refresh()
    page = client.get("/search/", {"q": "script"}).content.decode()
    assert "<script>alert" not in page and "<img src=x" not in page
    assert "&lt;<mark>script</mark>&gt;alert(1)&lt;/<mark>script</mark>&gt;" in page
    page = client.get("/search/", {"q": "ENOENT"}).content.decode()
    assert "&lt;i&gt;<mark>ENOENT</mark>&lt;/i&gt;" in page
    assert "tool output" in page


def test_the_page_links_each_hit_to_its_turn_with_the_words(indexed: Path, client: Client) -> None:
    page = client.get("/search/", {"q": "Exit code 4"}).content.decode()
    link = re.search(rf'href="(/sessions/{WEBAPP}/\?[^"]+)"', page)
    assert link, page
    url = html.unescape(link.group(1))
    assert "after=1" in url and "hl=Exit+code+4" in url and url.endswith("#turn-2")
    transcript = client.get(url.split("#")[0]).content.decode()
    assert 'id="turn-2"' in transcript and "no tests ran" in transcript


def test_the_page_refuses_a_bad_filter(indexed: Path, client: Client) -> None:
    response = client.get("/search/", {"q": "test", "since": "yesterday"})
    assert response.status_code == 400
    assert "since: &#x27;yesterday&#x27; is not a date" in response.content.decode()


def test_the_api_answers_json_behind_a_token(indexed: Path, client: Client, token: str) -> None:
    assert client.get("/api/search", {"q": "subtract"}).status_code == 401
    auth = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    data = client.get("/api/search", {"q": '"Exit code 4"'}, **auth).json()
    session = next(s for s in data["sessions"] if s["session_id"] == WEBAPP)
    hit = session["hits"][0]
    start, end = hit["marks"][0]
    assert hit["snippet"][start:end] == "Exit code 4" and hit["part"] == "output"
    assert hit["turn"] == 2 and hit["url"].endswith("#turn-2")
    bad = client.get("/api/search", {"q": "x", "agent": "gpt"}, **auth)
    assert bad.status_code == 400 and "agent" in bad.json()["error"]


def test_the_search_box_is_on_every_page(indexed: Path, client: Client) -> None:
    for url in ("/", f"/sessions/{WEBAPP}/"):
        page = client.get(url).content.decode()
        assert 'id="search-box"' in page and 'action="/search/"' in page


def test_snippet_and_terms_rules() -> None:
    assert query_terms('fix "the  migration" fix ab') == ["fix", "the migration"]
    assert matches("Parse_Line( and parse_line(", ["parse_line("]) == [(0, 11), (16, 27)]
    text = "x" * 500 + " the needle here " + "y" * 500
    piece, spans = snippet(text, ["needle"])
    assert piece.startswith("…") and piece.endswith("…") and len(piece) < 260
    assert [piece[s:e] for s, e in spans] == ["needle"]


def test_a_long_session_is_indexed_in_slices(tmp_path: Path, db, monkeypatch) -> None:
    from sessions_app.services.searching import indexing

    monkeypatch.setattr(indexing, "SLICE_LINES", 7)
    path, _ = make_session(tmp_path / "root", 20)
    hub_import(tmp_path / "root", path, catch_up=False)  # its texts left to the search pass
    session = Session.objects.get(path=str(path))
    report = search_refresh(session_ids=[session.pk])
    session.refresh_from_db()
    assert report.lines == 40 and session.search_lines == 40
    assert session.records.filter(search_text__isnull=False).count() == 40
    assert found_pks('"prompt 17"', session=session.pk) == {session.pk}


def test_the_watchers_pass_makes_an_append_searchable_and_counted(
    tmp_path: Path, transactional_db: None
) -> None:
    from sessions_app.management.commands import import_sessions as command
    from sessions_app.models import Usage

    path, records = make_session(tmp_path / "root", 1)
    assert command._import_pass([tmp_path / "root"]) is True
    session = Session.objects.get(path=str(path))
    sid = str(session.session_id)
    user = user_record("watch the glorptastic change", sid=sid, parent=records[-1]["uuid"])
    answer = assistant_record("done", sid=sid, parent=user["uuid"])
    with path.open("ab") as f:
        f.write(jsonl([user, answer]))
    assert command._import_pass([tmp_path / "root"]) is True
    assert found_pks("glorptastic") == {session.pk}
    assert Usage.objects.filter(session=session).count() == 2


def test_a_full_list_and_any_substring(indexed: Path, monkeypatch) -> None:
    """A common word fills the list; a part of a word, or code cut short, is still found."""
    from sessions_app.selectors import search as search_module

    monkeypatch.setattr(search_module, "ROW_LIMIT", 3)
    results = search(SearchQuery("the", everything=True))
    assert results.truncated and 1 <= results.texts <= 3
    assert WEBAPP in found("ubtrac")  # inside "subtract", never a whole word
    assert WEBAPP in found("nonexistent_di")  # code, cut short


def test_a_very_common_term_is_ranked_among_its_newest_matches(indexed: Path, monkeypatch) -> None:
    """On both databases: the same window, so the same rows to rank."""
    from sessions_app.selectors import search as search_module

    monkeypatch.setattr(search_module, "ROW_LIMIT", 3)
    monkeypatch.setattr(search_module, "RANK_WINDOW", 5)
    results = search(SearchQuery("the"))
    assert results.windowed
    assert results.truncated and results.texts >= 1
    if results.windowed:
        # Every hit is among the five newest matching record rows in scope.
        in_scope = Record.objects.filter(
            search_text__text__icontains="the", sidechain=False, session__is_subagent=False
        ).filter(Q(active=True) | Q(kind="title"))
        newest = sorted(in_scope.values_list("search_text", flat=True), reverse=True)[:5]
        shown = [
            Record.objects.get(session=g.session, line=h.line).search_text_id
            for g in results.groups
            for h in g.hits
        ]
        assert shown and all(t >= newest[-1] for t in shown)
    assert search(SearchQuery('"Exit code 4"')).windowed is False  # one match: all ranked


def test_a_database_error_on_one_session_is_reported_and_the_pass_goes_on(
    tmp_path: Path, db, monkeypatch
) -> None:
    from django.db import OperationalError

    from sessions_app.services.searching import texts

    first, _ = make_session(tmp_path / "root", 1)
    second, _ = make_session(tmp_path / "root", 1)
    for path in (first, second):  # their texts left to the search pass
        hub_import(tmp_path / "root", path, catch_up=False)
    ids = list(
        Session.objects.filter(path__in=[str(first), str(second)]).values_list("pk", flat=True)
    )
    real = texts._new_ids
    calls = []

    def locked_once(n: int) -> list[int]:
        calls.append(n)
        if len(calls) == 1:
            raise OperationalError("database is locked")
        return real(n)

    monkeypatch.setattr(texts, "_new_ids", locked_once)
    report = search_refresh(session_ids=ids)
    assert len(report.errors) == 1 and "database is locked" in report.errors[0]
    assert report.sessions == 1  # the other session was indexed
    again = search_refresh(session_ids=ids)  # the next pass catches up
    assert not again.errors and again.sessions == 1
    assert not Session.objects.filter(pk__in=ids, search_lines=0).exists()


def test_on_a_team_server_the_search_api_wants_a_token_not_a_login(
    indexed: Path, client: Client, team
) -> None:
    response = client.get("/api/search", {"q": "subtract"}, HTTP_HOST="team.example")
    assert response.status_code == 401 and response.json()["error"]
    page = client.get("/search/", {"q": "subtract"}, HTTP_HOST="team.example")
    assert page.status_code == 302 and "/login" in page["Location"]
