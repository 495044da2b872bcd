"""The pages: what they show, their htmx fragments, exports, and escaping."""

from __future__ import annotations

import re
import uuid
from html import unescape
from pathlib import Path

import pytest

from sessions_app.models import Project, Session
from sessions_app.services.branching import InvalidTurn, session_fork, session_rewind
from sessions_app.services.importing import sessions_import

from .factories import write_evil_session
from .facts import FORKS_TREE

pytestmark = pytest.mark.django_db

WEBAPP = "cli/claude/-home-dev-code-webapp/d62afd75-12b1-4077-921c-1fa1eda79364.jsonl"
BIGREPO_ID = "ad8024e4-83f0-4ff3-82f8-4e19f6c9127b"
AGENTS_ID = "04fa9149-8141-4f34-8bc2-f6d11b8fa354"
HX = {"HTTP_HX_REQUEST": "true"}


def body(response) -> str:
    assert response.status_code == 200, response.status_code
    return (
        b"".join(response.streaming_content).decode()
        if response.streaming
        else response.content.decode()
    )


def test_project_list_shows_projects_with_agent_and_counts(client, imported: Path) -> None:
    html = body(client.get("/"))
    assert "/home/dev/code/webapp" in html and "Qwen Code" in html and "Claude Code" in html
    assert "agent-a0751b2961eeab05e" not in html


def test_project_filter_is_an_htmx_fragment(client, imported: Path) -> None:
    html = body(client.get("/?q=qwenproj", **HX))
    assert "<html" not in html and 'id="project-list"' in html
    assert "/home/dev/code/qwenproj" in html and "/home/dev/code/webapp" not in html


def test_sessions_page_lists_badges_and_lineage(client, imported: Path) -> None:
    source = Session.objects.get(path=str(imported / WEBAPP))
    fork = session_fork(session=source, turn=2)
    html = body(client.get(f"/projects/{source.project_id}/"))
    # "Branch from here" made it: its title and its badge both say branch.
    assert (
        "subtract feature (Branch)" in html
        and '<span class="badge kind-fork">branch</span>' in html
    )
    assert "Branched from" in html and ", split after turn 2" in html
    assert "1 branch" in html  # the parent's children count
    assert str(fork.session_id) in html


def test_sessions_page_fragment_filters_and_sorts(client, imported: Path) -> None:
    project = Project.objects.get(folder__endswith="-home-dev-code-forks")
    html = body(client.get(f"/projects/{project.pk}/?q=experiment&sort=turns", **HX))
    assert "<html" not in html and 'id="session-list"' in html
    assert "my-experiment" in html and html.count('<tr id="session-') == 1


def test_transcript_numbers_turns_and_renders_tools(client, imported: Path) -> None:
    session = Session.objects.get(path=str(imported / WEBAPP))
    html = body(client.get(f"/sessions/{session.session_id}/"))
    assert [int(n) for n in re.findall(r'class="turn-no"[^>]*>(\d+)<', html)] == [1, 2, 3]
    assert 'class="tool' in html and "Bash" in html and "Edit" in html
    assert '<tr class="add">' in html and 'class="diff"' in html  # the Edit is a real diff
    assert "<table" in html  # Markdown table in a reply
    # the failing Bash run, with the exit status its output ends with
    assert 'class="tool error"' in html and '<span class="badge exit error"' in html
    assert ">exit 4</span>" in html
    assert f"claude --resume {session.session_id}" in html


def test_long_session_loads_turns_in_pages(client, imported: Path) -> None:
    html = body(client.get(f"/sessions/{BIGREPO_ID}/"))
    numbers = [int(n) for n in re.findall(r'class="turn-no"[^>]*>(\d+)<', html)]
    assert numbers == list(range(1, 21))
    assert 'hx-trigger="revealed"' in html and "after=20" in html
    more = body(client.get(f"/sessions/{BIGREPO_ID}/?after=20", **HX))
    assert "<html" not in more
    assert [int(n) for n in re.findall(r'class="turn-no"[^>]*>(\d+)<', more)] == list(range(21, 31))
    assert 'hx-trigger="revealed"' not in more


def test_abandoned_branch_is_marked_and_opens(client, imported: Path) -> None:
    session = Session.objects.get(path=str(imported / FORKS_TREE))
    html = body(client.get(f"/sessions/{session.session_id}/"))
    assert "1 turn abandoned at turn 3" in html
    leaf = session.abandoned[0]["leaf_uuid"]
    branch = body(client.get(f"/sessions/{session.session_id}/?leaf={leaf}"))
    assert "one more prompt in the branch" in branch and "abandoned branch" in branch
    assert "a different prompt after rewind" not in branch


def test_show_all_records_reveals_bookkeeping(client, imported: Path) -> None:
    session = Session.objects.get(path=str(imported / FORKS_TREE))
    assert "api-request-blob" not in body(client.get(f"/sessions/{session.session_id}/"))
    assert "api-request-blob" in body(client.get(f"/sessions/{session.session_id}/?all=1"))


def test_subagent_transcript_loads_under_its_call(client, imported: Path) -> None:
    html = body(client.get(f"/sessions/{AGENTS_ID}/"))
    match = re.search(rf'hx-get="(/sessions/{AGENTS_ID}/subagents/([^/"]+)/)"', html)
    assert match, "the Agent call links its subagent transcript"
    fragment = body(client.get(match.group(1), **HX))
    assert "<html" not in fragment and 'class="tool' in fragment


def test_lineage_svg_links_every_session(client, imported: Path) -> None:
    source = Session.objects.get(path=str(imported / WEBAPP))
    fork = session_fork(session=source, turn=1)
    html = body(client.get(f"/sessions/{fork.session_id}/lineage/"))
    assert "<svg" in html and f'href="/sessions/{source.session_id}/"' in html
    assert f'href="/sessions/{fork.session_id}/"' in html and "branch, split after turn 1" in html


def test_exports(client, imported: Path) -> None:
    session = Session.objects.get(path=str(imported / WEBAPP))
    response = client.get(f"/sessions/{session.session_id}/export.jsonl")
    assert b"".join(response.streaming_content) == Path(session.path).read_bytes()
    md = body(client.get(f"/sessions/{session.session_id}/export.md"))
    assert md.startswith("# subtract feature") and "## Turn 3" in md
    html = body(client.get(f"/sessions/{session.session_id}/export.html"))
    assert "<style>" in html and "<script" not in html and 'class="turn-no"' in html


def test_unknown_and_malformed_ids_are_404(client, imported: Path) -> None:
    assert client.get(f"/sessions/{uuid.uuid4()}/").status_code == 404
    assert client.get("/sessions/not-a-uuid/").status_code == 404
    assert client.get(f"/sessions/{BIGREPO_ID}/export.exe").status_code == 404
    assert client.get(f"/sessions/{AGENTS_ID}/subagents/..%2F..%2Fetc/").status_code == 404


def test_script_in_a_transcript_is_inert(client, tmp_path: Path) -> None:
    sid = write_evil_session(tmp_path)
    sessions_import(roots=[tmp_path])
    response = client.get(f"/sessions/{sid}/")
    html = body(response)
    assert "<script>alert" not in html and "<img src=x" not in html
    assert 'href="javascript:' not in html
    assert "script-src 'self'" in response["Content-Security-Policy"]
    assert response["X-Frame-Options"] == "DENY"


def test_pages_load_nothing_from_elsewhere(client, imported: Path) -> None:
    html = body(client.get(f"/sessions/{BIGREPO_ID}/"))
    assert not re.search(r'(src|href)="(https?:)?//', html)


def test_actions_work_without_javascript(client, imported: Path) -> None:
    session = Session.objects.get(path=str(imported / WEBAPP))
    confirm = body(client.get(f"/sessions/{session.session_id}/rewind/?turn=2"))
    assert "2 turns (2–3) will leave this session" in confirm and "backup session" in confirm
    response = client.post(f"/sessions/{session.session_id}/fork/", {"turn": "2"}, follow=True)
    html = body(response)
    assert response.redirect_chain[0][1] == 302
    assert "subtract feature (Branch)" in html and "claude --resume" in html  # the message
    refused = client.post(f"/sessions/{session.session_id}/fork/", {"turn": "9"}, follow=True)
    assert "out of range" in body(refused)  # the engine's message, after a redirect back


def test_failed_htmx_action_answers_with_the_message_and_status(client, imported: Path) -> None:
    session = Session.objects.get(path=str(imported / WEBAPP))
    response = client.post(f"/sessions/{session.session_id}/rewind/", {"turn": "9"}, **HX)
    assert response.status_code == 400
    assert b"out of range" in response.content and b"<html" not in response.content


def test_the_favicon_exists(client, db: None) -> None:
    page = client.get("/").content.decode()
    assert 'rel="icon" href="/static/sessions_app/favicon.svg"' in page
    moved = client.get("/favicon.ico")
    assert moved.status_code == 301 and moved["Location"] == "/static/sessions_app/favicon.svg"
    icon = client.get(moved["Location"])
    assert icon.status_code == 200 and b"<svg" in b"".join(icon.streaming_content)


def test_sessions_without_a_prompt_are_listed_apart_and_offer_nothing_to_resume(
    client, imported: Path
) -> None:
    from sessions_app.models import Session

    empty = Session.objects.get(session_id="a95fea4a-b88a-4e49-ac07-4cc323d8700c")
    assert empty.turn_count == 0
    listed = body(client.get(f"/projects/{empty.project_id}/"))
    assert f'id="session-{empty.session_id}"' not in listed
    assert "1 session without a prompt" in listed
    apart = body(client.get(f"/projects/{empty.project_id}/", {"empty": "1"}))
    assert f'id="session-{empty.session_id}"' in apart
    page = body(client.get(f"/sessions/{empty.session_id}/"))
    assert 'id="empty-session"' in page
    assert 'id="resume-command"' not in page and 'id="branch-session"' not in page
    webapp = "d62afd75-12b1-4077-921c-1fa1eda79364"
    full = body(client.get(f"/sessions/{webapp}/"))
    assert f'data-copy="{webapp}"' in full  # a copy button for the id


@pytest.mark.parametrize("turn", ["99", "4", "0", "1", "-3"])
def test_the_rewind_confirmation_refuses_the_turns_the_rewind_refuses(
    client, imported: Path, turn: str
) -> None:
    session = Session.objects.get(path=str(imported / WEBAPP))
    with pytest.raises(InvalidTurn) as refused:
        session_rewind(session=session, turn=int(turn))
    words = str(refused.value)
    url = f"/sessions/{session.session_id}/rewind/"
    confirm = client.get(url, {"turn": turn})
    posted = client.post(url, {"turn": turn}, **HX)
    assert confirm.status_code == posted.status_code == 400
    page = unescape(confirm.content.decode())
    assert "<html" in page and words in page and "will leave this session" not in page
    assert words in unescape(posted.content.decode())


def test_counts_of_one_turn_read_as_one_turn(client, imported: Path) -> None:
    session = Session.objects.get(path=str(imported / WEBAPP))
    url = f"/sessions/{session.session_id}/rewind/"
    done = body(client.post(url, {"turn": "2"}, follow=True))
    assert "1 turn now" in done and "turn(s)" not in done
    refused = body(client.post(url, {"turn": "3"}, follow=True))
    assert "turn(s)" not in refused and "1 turn;" in refused
