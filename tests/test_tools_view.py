"""Tool calls as the CLI shows them: todo checklists, exit status, compaction, subagents
nested under their call in all three layouts, reports as Markdown; and in the exports."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from sessions_app.models import Record, Session
from sessions_app.services.importing import sessions_import

from .factories import assistant_record, tool_result, user_record, write_session
from .facts import COMPACTED, SIDECHAIN_INLINE

pytestmark = pytest.mark.django_db
MANIFEST = "public/claude/-src-deep-manifest/a7da6a22-facc-4fcd-8bab-f83c87862004.jsonl"
AGENTS = "cli/claude/-home-dev-code-agents/04fa9149-8141-4f34-8bc2-f6d11b8fa354.jsonl"
LOG_SAMPLE = (
    "public/claude/-Users-dain-workspace-claude-code-log-sample/"
    "0d3a8e6f-290f-4105-a327-a2496e5e2a83.jsonl"
)
QWEN = "cli/qwen/-home-dev-code-qwenproj/chats/6fbeb39a-1e79-43ef-995c-46eedd93e6fe.jsonl"
HX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def root(corpus: Path) -> Path:
    # The compacted session's subagent file goes, so its Task call's subagent is found
    # only in the `agent_progress` records of the session's own file.
    (corpus / COMPACTED.removesuffix(".jsonl") / "subagents" / "agent-a2898e3.jsonl").unlink()
    for part in ("cli/claude", "public/claude", "cli/qwen"):
        sessions_import(roots=[corpus / part])
    return corpus


def _session(root: Path, rel: str) -> Session:
    return Session.objects.get(path=str(root / rel))


def _page_of_line(client, session: Session, line: int) -> str:
    """The transcript page that starts at record `line` (inside its turn, if need be)."""
    turn = Record.objects.get(session=session, line=line).turn
    url = f"/sessions/{session.session_id}/?after={turn - 1}&from={line}&skip=0"
    return client.get(url).content.decode()


def _line_of(root: Path, rel: str, needle: str) -> int:
    for number, line in enumerate((root / rel).read_text().splitlines()):
        if needle in line:
            return number
    raise AssertionError(f"{needle!r} not in {rel}")


def test_a_todo_list_is_a_checklist_not_json(root: Path, client) -> None:
    session = _session(root, MANIFEST)
    line = _line_of(root, MANIFEST, '"name":"TodoWrite"')
    html = _page_of_line(client, session, line)
    todos = re.search(r'<ul class="todos">(.*?)</ul>', html, re.S)
    assert todos, "the TodoWrite call shows a checklist"
    assert re.search(r'<li class="todo todo-in_progress"><span class="todo-box" aria-label='
                     r'"in progress"[^>]*>◐</span> Add tarfile import', todos.group(1))  # fmt: skip
    assert 'class="todo todo-pending"' in todos.group(1)
    assert '"status"' not in html and "activeForm" not in html


def test_qwens_todo_write_is_a_checklist_too(corpus: Path, tmp_path: Path, client) -> None:
    # The corpus has no Qwen todo call: its shell call becomes one, in Qwen's own shape
    # (`todo_write`, `todos` of {id, content, status}).
    call = '"name":"run_shell_command","args":{"command":"ls","description":"list"}'
    todos = [
        {"id": "1", "content": "List the files", "status": "completed"},
        {"id": "2", "content": "Write hello.txt", "status": "in_progress"},
    ]
    todo = f'"name":"todo_write","args":{{"todos":{json.dumps(todos, separators=(",", ":"))}}}'
    text = (corpus / QWEN).read_text()
    assert call in text
    target = tmp_path / "qwen" / QWEN.split("/", 2)[2]
    target.parent.mkdir(parents=True)
    target.write_text(text.replace(call, todo))
    sessions_import(roots=[tmp_path / "qwen"])
    session = Session.objects.get(path=str(target))
    html = client.get(f"/sessions/{session.session_id}/").content.decode()
    assert "2 tasks, 1 done" in html
    checklist = re.search(r'<ul class="todos">(.*?)</ul>', html, re.S).group(1)
    assert 'class="todo todo-completed"' in checklist and "List the files" in checklist
    assert 'class="todo todo-in_progress"' in checklist and "Write hello.txt" in checklist


def test_shell_commands_show_how_they_ended(root: Path, client) -> None:
    session = _session(root, MANIFEST)
    failed = _line_of(root, MANIFEST, "Exit code 127")
    html = _page_of_line(client, session, failed)
    assert re.search(
        r'<span class="badge exit error" title="how the command ended">exit 127<', html
    )
    assert 'class="badge exit ok" title="how the command ended">exit 0<' in html
    qwen = client.get(f"/sessions/{_session(root, QWEN).session_id}/").content.decode()
    assert 'class="badge exit ok" title="how the command ended">exit 0<' in qwen


def test_an_interrupted_command_says_so(tmp_path: Path, client) -> None:
    sid = "00000000-0000-4000-8000-0000000000b1"
    prompt = user_record("run it", sid=sid)
    call = {"type": "tool_use", "id": "b1", "name": "Bash", "input": {"command": "sleep 99"}}
    answer = assistant_record([call], sid=sid, parent=prompt["uuid"])
    result = user_record(tool_result("b1", "[Request interrupted by user]"), sid=sid,
                         parent=answer["uuid"])  # fmt: skip
    result["toolUseResult"] = {"stdout": "", "stderr": "", "interrupted": True, "isImage": False}
    write_session(tmp_path / "-w", [prompt, answer, result])
    sessions_import(roots=[tmp_path])
    html = client.get(f"/sessions/{sid}/").content.decode()
    assert 'class="badge exit error" title="how the command ended">interrupted<' in html


def test_a_compaction_is_marked_with_what_was_summarised_closed(root: Path, client) -> None:
    session = _session(root, COMPACTED)
    line = _line_of(root, COMPACTED, '"subtype":"compact_boundary"')
    html = _page_of_line(client, session, line)
    assert re.search(r'<div class="boundary" id="boundary-[\d-]+"><strong>Conversation compacted'
                     r"</strong> \(automatically · 170,251 tokens before\)", html)  # fmt: skip
    summary = re.search(r'<details class="summary-item"[^>]*><summary>What was summarised', html)
    assert summary and " open" not in summary.group(0)


def _nested(client, html: str) -> str:
    url = re.search(r'<details class="subagent"[^>]* hx-get="([^"]+)"', html)
    assert url, "the call offers its subagent's transcript"
    nested = client.get(url.group(1), **HX)
    assert nested.status_code == 200
    return nested.content.decode()


def test_a_subagent_in_its_own_file_nests_under_its_call(root: Path, client) -> None:
    session = _session(root, AGENTS)
    nested = _nested(client, client.get(f"/sessions/{session.session_id}/").content.decode())
    assert "<html" not in nested and "List files and report" in nested
    assert 'class="tool' in nested  # its own tool calls, inside


def test_a_subagent_kept_only_in_progress_records_nests_under_its_call(root: Path, client) -> None:
    session = _session(root, COMPACTED)
    html = _page_of_line(client, session, _line_of(root, COMPACTED, '"name":"Task"'))
    nested = _nested(client, html)
    assert "Very thorough exploration. I need to understand:" in nested
    assert nested.count('<details class="tool') >= 5  # the subagent's Reads, Greps, ...
    assert len(nested) < 300_000  # one bounded page; the whole on its own page
    whole = client.get(re.search(r'hx-get="([^"]+/subagent/[^"]+)"', html).group(1))
    assert whole.status_code == 200 and "<html" in whole.content.decode()


def test_an_inline_sidechain_of_claude_code_1_0_nests_under_its_call(root: Path, client) -> None:
    session = _session(root, SIDECHAIN_INLINE)
    html = client.get(f"/sessions/{session.session_id}/").content.decode()
    urls = re.findall(r'<details class="subagent"[^>]* hx-get="([^"]+)"', html)
    assert len(urls) >= 3
    prompts = [
        re.search(r'class="prompt-text">([^<]{0,60})', client.get(u, **HX).content.decode())
        for u in urls[:3]
    ]
    assert [p.group(1)[:30] for p in prompts if p] == [
        "Create a new Next.js project s",
        "Create TypeScript types and in",
        "Create React components for th",
    ]


def test_a_subagents_task_reads_as_its_kind_title_and_prompt_not_json(root: Path, client) -> None:
    session = _session(root, SIDECHAIN_INLINE)
    html = client.get(f"/sessions/{session.session_id}/").content.decode()
    head = re.search(r'<p class="task-head">(.*?)</p>\s*<pre class="task-prompt">([^<]*)', html)
    assert head, "the Task call shows its task"
    assert '<span class="badge">general-purpose</span>' in head.group(1)
    assert "<strong>Setup Next.js project</strong>" in head.group(1)
    # The prompt's lines as lines, not JSON with its newlines escaped.
    assert head.group(2).startswith("Create a new Next.js project structure for a TODO app.")
    assert "\n1. Run `npx create-next-app@latest" in head.group(2)
    assert '"subagent_type"' not in html


def test_a_subagents_report_is_markdown_and_stays_inert(tmp_path: Path, client) -> None:
    sid = "00000000-0000-4000-8000-0000000000b2"
    prompt = user_record("explore", sid=sid)
    call = {"type": "tool_use", "id": "t1", "name": "Task",
            "input": {"description": "look", "prompt": "look around"}}  # fmt: skip
    answer = assistant_record([call], sid=sid, parent=prompt["uuid"])
    report = "# Found\n\n- one\n- two\n\n<script>alert(1)</script>"
    result = user_record(tool_result("t1", report), sid=sid, parent=answer["uuid"])
    write_session(tmp_path / "-w", [prompt, answer, result])
    sessions_import(roots=[tmp_path])
    html = client.get(f"/sessions/{sid}/").content.decode()
    body = re.search(r'<div class="report markdown">(.*?)</div>', html, re.S).group(1)
    assert "<h1>Found</h1>" in body and "<li>one</li>" in body
    assert "<script>" not in html.split("</head>")[1].replace('<script src="', "")
    # No file, progress or sidechain keeps it: the nested view says so.
    assert "No transcript of this subagent was kept" in _nested(client, html)
    # A record the session does not have is no page.
    assert client.get(f"/sessions/{sid}/records/999999/subagent/0/").status_code == 404


def _export(client, session: Session, fmt: str) -> str:
    response = client.get(f"/sessions/{session.session_id}/export.{fmt}")
    return b"".join(response.streaming_content).decode()


def test_exports_hold_subagents_diffs_todo_lists_and_images(root: Path, client) -> None:
    manifest = _session(root, MANIFEST)
    md = _export(client, manifest, "md")
    assert "- [~] Add tarfile import and helper functions for archive detection" in md
    assert "- [ ] Add get_tar_timestamp() method" in md
    diff = re.search(r"```diff\n--- a/(\S+)\n\+\+\+ b/\1\n@@ .*?```", md, re.S)
    assert diff and re.search(r"^[-+](?![-+])", diff.group(0), re.M)
    assert "(exit 127)" in md
    html = _export(client, manifest, "html")
    assert '<ul class="todos">' in html and '<table class="diff">' in html
    agents = _session(root, AGENTS)
    md = _export(client, agents, "md")
    assert "> **Subagent:**" in md and "> List files and report" in md
    html = _export(client, agents, "html")
    nested = re.search(r'<details class="subagent"[^>]*><summary>Subagent transcript</summary>'
                       r'<div class="subagent-body">(.*?)</details>', html, re.S)  # fmt: skip
    assert nested and "List files and report" in nested.group(1)
    sample = _session(root, LOG_SAMPLE)
    assert "[image: image/png" in _export(client, sample, "md")
    assert 'src="data:image/png;base64,' in _export(client, sample, "html")


def test_the_markdown_diff_header_names_the_file_as_git_does(root: Path, client) -> None:
    """`a/home/…`, as `git diff` writes an absolute path, never `a//home/…`."""
    md = _export(client, _session(root, MANIFEST), "md")
    headers = re.findall(r"```diff\n--- (\S+)\n\+\+\+ (\S+)\n", md)
    assert headers
    for old, new in headers:
        assert old.startswith("a/") and new.startswith("b/") and old[2:] == new[2:]
        assert not old.startswith("a//") and not new.startswith("b//"), (old, new)
