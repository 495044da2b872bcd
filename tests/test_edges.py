"""The edges agree: edit & fork on turn 1, JSON errors, whole-number turns, inert exports."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import uuid
from html import unescape
from html.parser import HTMLParser
from pathlib import Path

import orjson
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from markdown_it import MarkdownIt

from sessions_app.models import AuditEntry, Session
from sessions_app.services.importing import sessions_import

from .factories import EVIL, one_turn, write_evil_session, write_session

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parent.parent
WEBAPP = "cli/claude/-home-dev-code-webapp/d62afd75-12b1-4077-921c-1fa1eda79364.jsonl"
WEBAPP_ID = "d62afd75-12b1-4077-921c-1fa1eda79364"
WEBAPP_PROMPT = "Add a subtract function to app.py"
WEBAPP_START = "cd /home/dev/code/webapp && claude"
QWEN_ID = "6fbeb39a-1e79-43ef-995c-46eedd93e6fe"
HX = {"HTTP_HX_REQUEST": "true"}


def files(root: Path) -> list[str]:
    return sorted(str(p) for p in root.rglob("*") if p.is_file())


def post_api(client, url: str, token: str, body: bytes, **extra):
    return client.post(
        url, body, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}", **extra
    )


# -- 1. edit & fork on turn 1: nothing before it, so the prompt and a fresh start -----


def test_edit_and_fork_turn_1_on_the_page_hands_back_prompt_and_fresh_start(
    client, imported: Path
) -> None:
    before, sessions = files(imported), Session.objects.count()
    page = client.post(f"/sessions/{WEBAPP_ID}/fork/", {"turn": "1", "mode": "before"})
    assert page.status_code == 200, page.status_code
    html = unescape(page.content.decode())
    assert WEBAPP_PROMPT in html and WEBAPP_START in html and "<html" in html
    fragment = client.post(f"/sessions/{WEBAPP_ID}/fork/", {"turn": "1", "mode": "before"}, **HX)
    assert fragment.status_code == 200
    html = unescape(fragment.content.decode())
    assert 'id="fresh-start"' in html and WEBAPP_PROMPT in html and WEBAPP_START in html
    assert "<html" not in html and "out of range" not in html
    assert files(imported) == before and Session.objects.count() == sessions
    assert AuditEntry.objects.count() == 0


def test_edit_and_fork_turn_1_through_the_api_is_200_without_a_session(
    client, imported: Path, token: str
) -> None:
    before = files(imported)
    url = f"/api/sessions/{WEBAPP_ID}/fork"
    response = post_api(client, url, token, b'{"turn": 1, "include_turn": false}')
    assert response.status_code == 200, response.content
    assert response.json() == {
        "session_id": None,
        "turn": 1,
        "prompt": WEBAPP_PROMPT,
        "command": WEBAPP_START,
    }
    qwen = post_api(
        client, f"/api/sessions/{QWEN_ID}/fork", token, b'{"turn": 1, "include_turn": false}'
    )
    assert qwen.json()["command"] == "cd /home/dev/code/qwenproj && qwen"
    assert qwen.json()["prompt"] == "list files"
    assert files(imported) == before and AuditEntry.objects.count() == 0


def test_fork_session_turn_1_before_prints_prompt_and_fresh_start(imported: Path) -> None:
    before = files(imported)
    out = io.StringIO()
    call_command("fork_session", WEBAPP_ID, "--turn", "1", "--before", stdout=out)
    assert WEBAPP_PROMPT in out.getvalue() and WEBAPP_START in out.getvalue()
    out = io.StringIO()
    call_command("fork_session", WEBAPP_ID, "--turn", "1", "--before", "--json", stdout=out)
    assert orjson.loads(out.getvalue()) == {
        "session_id": None,
        "turn": 1,
        "prompt": WEBAPP_PROMPT,
        "command": WEBAPP_START,
    }
    assert files(imported) == before


def test_fresh_start_command_is_shell_quoted() -> None:
    from sessions_app.resume import fresh_command

    session = Session(agent="claude", cwd="/tmp/it's here", session_id=uuid.uuid4())
    assert fresh_command(session) == "cd '/tmp/it'\"'\"'s here' && claude"
    assert fresh_command(Session(agent="qwen", cwd="", session_id=uuid.uuid4())) == "qwen"


def test_a_folder_starting_with_a_dash_is_not_an_option_to_cd(tmp_path: Path) -> None:
    import subprocess

    from sessions_app.resume import resume_command

    sid = uuid.uuid4()
    command = resume_command(Session(agent="claude", cwd="-rf here", session_id=sid))
    assert command == f"cd -- '-rf here' && claude --resume {sid}"
    # A real shell goes into that folder (the CLI's part replaced by pwd).
    (tmp_path / "-rf here").mkdir()
    shell = command.replace(f"claude --resume {sid}", "pwd")
    done = subprocess.run(["sh", "-c", shell], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip() == str(tmp_path / "-rf here")


# -- 2. every API error is JSON --------------------------------------------------------


def test_every_api_error_is_json(client, imported: Path, token: str, settings) -> None:
    url = f"/api/sessions/{WEBAPP_ID}/fork"
    before = files(imported)
    big = b"x" * settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    answers = {
        "too big": post_api(client, url, token, b'{"title": "' + big + b'"}'),
        "not JSON": post_api(client, url, token, b"{nope"),
        "not UTF-8": post_api(client, url, token, b'{"title": "\xff"}'),
        "GET fork": client.get(url, HTTP_AUTHORIZATION=f"Bearer {token}"),
        "PUT rewind": client.put(f"/api/sessions/{WEBAPP_ID}/rewind"),
        "POST session": post_api(client, f"/api/sessions/{WEBAPP_ID}", token, b"{}"),
        "POST openapi": client.post("/api/openapi.json"),
        "chunked": post_api(
            client, url, token, b"{}", CONTENT_LENGTH="", HTTP_TRANSFER_ENCODING="chunked"
        ),
    }
    expected = {"too big": 413, "not JSON": 400, "not UTF-8": 400, "chunked": 411}
    for name, response in answers.items():
        assert response.status_code == expected.get(name, 405), (name, response.status_code)
        assert response["Content-Type"] == "application/json", name
        assert response.json()["error"], name
    assert answers["GET fork"]["Allow"] == "POST"
    assert files(imported) == before


# -- 3. commands: JSON errors, the turn a rewind went to; whole-number turns everywhere ---


def test_fork_session_json_errors_are_one_json_object(imported: Path) -> None:
    out = io.StringIO()
    with pytest.raises(CommandError) as refused:
        call_command("fork_session", str(uuid.uuid4()), "--json", stdout=out)
    assert refused.value.returncode == 3
    error = orjson.loads(out.getvalue())
    assert error["status"] == 404 and "no session" in error["error"]


@pytest.mark.parametrize(
    ("args", "status"), [(["not-a-uuid"], 400), ([str(uuid.uuid4()), "--before"], 400)]
)
def test_fork_session_json_errors_from_the_command_line(
    tmp_path: Path, args: list[str], status: int
) -> None:
    env = {**os.environ, "BRANCHBOARD_DATA_DIR": str(tmp_path)}
    result = subprocess.run(
        [sys.executable, "manage.py", "fork_session", *args, "--json"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 2, result.stderr
    assert result.stderr == ""
    error = orjson.loads(result.stdout)
    assert set(error) == {"error", "status"} and error["status"] == status


def test_rewind_session_json_reports_the_turn(imported: Path) -> None:
    out = io.StringIO()
    call_command("rewind_session", WEBAPP_ID, "--turn", "2", "--json", stdout=out)
    rewound = orjson.loads(out.getvalue())
    assert (rewound["turn"], rewound["turns"]) == (2, 1)
    out = io.StringIO()
    call_command("rewind_session", WEBAPP_ID, "--undo", "--json", stdout=out)
    restored = orjson.loads(out.getvalue())
    assert (restored["turn"], restored["turns"]) == (3, 3)


def test_a_turn_that_is_not_a_number_is_refused_in_the_same_words(
    client, imported: Path, token: str
) -> None:
    words = "turn must be a whole number, not 'abc'"
    before = files(imported)
    confirm = client.get(f"/sessions/{WEBAPP_ID}/rewind/?turn=abc")
    assert confirm.status_code == 400
    html = unescape(confirm.content.decode())
    assert words in html and "turn -1" not in html
    for url in (f"/sessions/{WEBAPP_ID}/fork/", f"/sessions/{WEBAPP_ID}/rewind/"):
        response = client.post(url, {"turn": "abc", "mode": "before"}, **HX)
        assert response.status_code == 400
        assert words in unescape(response.content.decode()), url
    api = post_api(client, f"/api/sessions/{WEBAPP_ID}/fork", token, b'{"turn": "abc"}')
    assert api.status_code == 400 and api.json()["error"] == words
    for command in ("fork_session", "rewind_session"):
        with pytest.raises(CommandError, match=words):
            call_command(command, WEBAPP_ID, "--turn", "abc")
    assert files(imported) == before


# -- 4. the Markdown export renders nothing live ---------------------------------------


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, list[tuple[str, str | None]]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, attrs))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def test_markdown_export_of_a_hostile_session_renders_nothing_live(client, tmp_path: Path) -> None:
    sid = write_evil_session(tmp_path)
    sessions_import(roots=[tmp_path])
    response = client.get(f"/sessions/{sid}/export.md")
    assert response.status_code == 200
    markdown = b"".join(response.streaming_content).decode()
    html = MarkdownIt("commonmark", {"html": True}).render(markdown)
    parsed = _Tags()
    parsed.feed(html)
    inert = {"h1", "h2", "p", "strong", "em", "code", "pre", "ul", "li", "blockquote", "br"}
    assert {tag for tag, _ in parsed.tags} <= inert, html
    assert all(not attrs or tag == "code" for tag, attrs in parsed.tags), html
    # Shown, as text: the prompt, the reply, the command and the tool's output.
    assert "".join(parsed.text).count("<script>alert(1)</script>") >= 4, html
    assert EVIL.split(" [")[0] in "".join(parsed.text)


def markdown_export(client, root: Path, prompt: str, reply: str) -> str:
    """The Markdown export of a one-turn session with this prompt and reply."""
    sid = str(uuid.uuid4())
    write_session(root / "-code", one_turn(sid, prompt, reply, cwd="/code"))
    sessions_import(roots=[root])
    response = client.get(f"/sessions/{sid}/export.md")
    assert response.status_code == 200
    return b"".join(response.streaming_content).decode()


def test_markdown_export_escapes_html_but_keeps_code_as_it_was(client, tmp_path: Path) -> None:
    reply = "Use `<div>` here:\n\n```html\n<div>x</div>\n```\n\nand <b>bold</b> or a < b."
    markdown = markdown_export(client, tmp_path, "hi", reply)
    assert "Use `<div>` here:\n\n```html\n<div>x</div>\n```" in markdown
    assert "and &lt;b>bold&lt;/b> or a &lt; b." in markdown


def test_markdown_export_closes_a_fence_a_prompt_leaves_open(client, tmp_path: Path) -> None:
    # Left open, the prompt's fence would end at the reply's first fence line and
    # the reply's code, script included, would be read as HTML.
    reply = "```\n<script>alert(1)</script>\n```"
    markdown = markdown_export(client, tmp_path, "look:\n```", reply)
    html = MarkdownIt("commonmark", {"html": True}).render(markdown)
    assert "<script>" not in html and "&lt;script&gt;alert(1)" in html


# -- 5. include_turn: false needs a turn -----------------------------------------------


def test_api_include_turn_false_without_a_turn_is_400(client, imported: Path, token: str) -> None:
    before = files(imported)
    for body in (b'{"include_turn": false}', b'{"turn": null, "include_turn": false}'):
        response = post_api(client, f"/api/sessions/{WEBAPP_ID}/fork", token, body)
        assert response.status_code == 400, body
        assert "edit & fork needs a turn" in response.json()["error"]
    assert files(imported) == before
