"""The CLIs' markup in user text read as a person saw it: chips in pages, titles and exports."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sessions_app.formats.markup import (
    Chip,
    plain,
    read_markup,
    shown_text,
    tags_removed,
    title_text,
)
from sessions_app.models import Session
from sessions_app.services.branching import session_fork
from sessions_app.services.importing import sessions_import

from .factories import assistant_record, user_record, write_session
from .facts import COMPACTED, INIT_1_0, MADE_ROOT, MADE_TURNS, SIDECHAIN_INLINE, TURNS

RAW_TAGS = (
    "command-contents",
    "command-name",
    "command-message",
    "command-args",
    "local-command-stdout",
    "task-notification",
    "system-reminder",
    "ide_opened_file",
    "ide_selection",
)
TAGS = "|".join(RAW_TAGS)
RAW_RE = re.compile(rf"<(?:{TAGS})>|&lt;(?:{TAGS})&gt;")
AGENTS = "cli/claude/-home-dev-code-agents/04fa9149-8141-4f34-8bc2-f6d11b8fa354.jsonl"
MANIFEST = "public/claude/-src-deep-manifest/a7da6a22-facc-4fcd-8bab-f83c87862004.jsonl"
OPENED = (
    "<ide_opened_file>The user opened the file /src/app/main.py in the IDE. This may or may"
    " not be related to the current task.</ide_opened_file>"
)
SELECTED = (
    "<ide_selection>The user selected the lines 3 to 7 from /src/app/util.py:\n"
    "def add(a, b):\n    return a + b\n\nThis may or may not be related to the current task."
    "</ide_selection>"
)


# The reading, pure.


def test_a_slash_command_reads_as_its_name_and_arguments_in_both_orders() -> None:
    new = (
        "<command-message>review is running…</command-message>\n"
        "<command-name>/review</command-name>\n<command-args>src/app.py</command-args>"
    )
    old = (
        "<command-name>/exit</command-name>\n            <command-message>exit</command-message>"
        "\n            <command-args></command-args>"
    )
    assert read_markup(new).pieces == (
        Chip("command", "/review src/app.py", title="review is running…"),
    )
    assert plain(new) == "/review src/app.py" and plain(old) == "/exit"


def test_each_block_becomes_a_labelled_chip() -> None:
    task = (
        "<task-notification>\n<task-id>b76</task-id>\n<status>completed</status>\n"
        '<summary>Background command "Run tests" completed (exit code 0)</summary>\n'
        "</task-notification>\nRead the output file to retrieve the result: /tmp/b76.output"
    )
    chip, rest = read_markup(task).pieces
    assert isinstance(chip, Chip) and chip.kind == "task"
    assert chip.label == 'Background command "Run tests" completed (exit code 0)'
    assert "status: completed" in chip.detail and rest.startswith("Read the output file")
    opened = read_markup(f"{OPENED}\nwhy does this crash?")
    assert opened.chips == [Chip("opened", "opened file: main.py", title="/src/app/main.py")]
    assert opened.text == "why does this crash?"
    [selection] = read_markup(SELECTED).chips
    assert selection.label == "selected lines 3\u20137 of util.py"
    assert selection.detail == "def add(a, b):\n    return a + b"
    reminder = read_markup("<system-reminder>\nbe brief\n</system-reminder>\nthe real question")
    assert reminder.chips[0].kind == "reminder" and reminder.text == "the real question"
    out = read_markup("<local-command-stdout>Set model to opus</local-command-stdout>")
    assert out.chips == [Chip("output", "command output", "Set model to opus")]
    assert plain("<bash-input>ls -la</bash-input>") == "$ ls -la"
    assert (
        plain(f"{OPENED}\n{SELECTED}") == "opened file: main.py selected lines 3\u20137 of util.py"
    )


def test_the_same_words_in_prose_or_code_stay_the_users_text() -> None:
    for text in (
        "why does `<command-name>/x</command-name>` show up?",
        "see <system-reminder>inline</system-reminder> here",
        "<command-name>never closed",
        "a\n```\n  <task-notification>x</task-notification> trailing\n```",
    ):
        assert read_markup(text).pieces == (text,) or not read_markup(text).chips, text
        assert plain(text) == text
    assert title_text(None) == "" and title_text("  two   words ") == "two words"


# Real sessions: titles, lists, pages and exports.


@pytest.fixture
def root(corpus: Path) -> Path:
    sessions_import(roots=[corpus / "cli" / "claude", corpus / "public" / "claude"])
    sessions_import(roots=[corpus / "cli" / "qwen", corpus / "synthetic" / "qwen"])
    return corpus


@pytest.mark.django_db
def test_no_title_list_or_abandoned_prompt_shows_raw_markup(root: Path, client) -> None:
    demo = Session.objects.get(path=str(root / SIDECHAIN_INLINE))
    assert demo.title == "/orchestrator create TODO app by Next.js"
    for session in Session.objects.all():
        assert not RAW_RE.search(session.title), session.title
        for branch in session.abandoned:
            assert not RAW_RE.search(branch["prompt"]), branch
    pages = ["/", "/recent/", *(f"/projects/{p}/" for p in Session.objects.values_list(
        "project_id", flat=True).distinct())]  # fmt: skip
    for url in pages:
        html = client.get(url).content.decode()
        assert not RAW_RE.search(html), url
    # A branch is named after the command, not its tags.
    assert session_fork(session=demo).title == "/orchestrator create TODO app by Next.js (Branch)"


@pytest.mark.django_db
def test_a_slash_command_shows_its_name_and_keeps_its_expansion_closed(root: Path, client) -> None:
    demo = Session.objects.get(path=str(root / SIDECHAIN_INLINE))
    html = client.get(f"/sessions/{demo.session_id}/").content.decode()
    assert not RAW_RE.search(html)
    first = html[html.index('id="prompt-1"') :]
    assert first.index('<span class="chip chip-command" title="orchestrator is running…">'
                       "/orchestrator create TODO app by Next.js</span>") < 600  # fmt: skip
    expansion = re.search(r'<details class="expansion"[^>]*>(.*?)</details>', html, re.S)
    assert expansion and "Split complex tasks into independent subtasks" in expansion.group(1)
    assert '<details class="expansion" open' not in html
    assert TURNS[SIDECHAIN_INLINE] == demo.turn_count  # the display changed, never the turns


@pytest.mark.django_db
def test_task_notifications_and_local_command_output_are_chips(root: Path, client) -> None:
    agents = Session.objects.get(path=str(root / AGENTS))
    html = client.get(f"/sessions/{agents.session_id}/").content.decode()
    assert not RAW_RE.search(html)
    assert re.search(
        r'<span class="chip chip-task"[^>]*>Agent &quot;Explore repo&quot; finished<', html
    )
    manifest = Session.objects.get(path=str(root / MANIFEST))
    html = client.get(f"/sessions/{manifest.session_id}/?all=1").content.decode()
    assert not RAW_RE.search(html)
    assert '<span class="chip chip-command" title="context">/context</span>' in html
    assert re.search(r'<details class="chip-detail"><summary><span class="chip chip-output">'
                     r"command output</span></summary><pre class=\"output\">[^<]*Context Usage", html)  # fmt: skip
    assert "\x1b[" not in html  # terminal escapes stripped from the output
    compacted = Session.objects.get(path=str(root / COMPACTED))
    # Line 1502 of this file: a background command's notification, deep in a long turn.
    html = client.get(f"/sessions/{compacted.session_id}/records/1501/output/").content.decode()
    assert re.search(r'class="chip chip-task" title="/tmp/[^"]+b7636e2.output">Background '
                     r"command &quot;Run SessionLive tests&quot; completed \(exit code 0\)<", html)  # fmt: skip
    assert not RAW_RE.search(html)


@pytest.mark.django_db
def test_ide_blocks_and_reminders_in_a_prompt_are_chips_and_stay_out_of_the_title(
    tmp_path: Path, client
) -> None:
    sid = "00000000-0000-4000-8000-0000000000aa"
    blocks = [
        {"type": "text", "text": OPENED},
        {"type": "text", "text": SELECTED},
        {"type": "text", "text": "<system-reminder>\nThe date is today.\n</system-reminder>"},
        {"type": "text", "text": "why is <b>add</b> wrong?"},
    ]
    prompt = user_record(blocks, sid=sid)
    answer = assistant_record("It is not.", sid=sid, parent=prompt["uuid"])
    write_session(tmp_path / "-src-app", [prompt, answer])
    assert not sessions_import(roots=[tmp_path]).errors
    session = Session.objects.get(session_id=sid)
    assert session.turn_count == 1
    assert session.title == "why is <b>add</b> wrong?"  # what was typed; the IDE's context aside
    html = client.get(f"/sessions/{sid}/").content.decode()
    assert not RAW_RE.search(html) and "why is &lt;b&gt;add&lt;/b&gt; wrong?" in html
    assert (
        '<span class="chip chip-opened" title="/src/app/main.py">opened file: main.py</span>'
        in html
    )
    assert "return a + b" in html and 'class="chip chip-reminder">system reminder<' in html
    md = b"".join(client.get(f"/sessions/{sid}/export.md").streaming_content).decode()
    assert "[opened file: main.py]" in md and "[selected lines 3\u20137 of util.py]" in md
    assert not RAW_RE.search(md) and "<b>" not in md
    page = b"".join(client.get(f"/sessions/{sid}/export.html").streaming_content).decode()
    assert 'class="chip chip-opened"' in page and not RAW_RE.search(page)


@pytest.mark.django_db
def test_exports_of_a_corpus_session_carry_the_same_cleaning(root: Path, client) -> None:
    demo = Session.objects.get(path=str(root / SIDECHAIN_INLINE))
    md = b"".join(client.get(f"/sessions/{demo.session_id}/export.md").streaming_content).decode()
    assert "[/orchestrator create TODO app by Next.js]" in md and not RAW_RE.search(md)
    html = b"".join(client.get(f"/sessions/{demo.session_id}/export.html").streaming_content)
    assert b'class="chip chip-command"' in html and not RAW_RE.search(html.decode())


@pytest.mark.django_db
def test_qwen_sessions_hold_no_such_markup_and_read_unchanged(root: Path) -> None:
    qwen = Session.objects.filter(agent="qwen")
    assert qwen.count() == 2
    for session in qwen:
        assert "</" not in session.first_prompt and session.title == title_text(
            session.first_prompt
        )


@pytest.mark.django_db
def test_the_migration_cleans_titles_imported_before(root: Path) -> None:
    from importlib import import_module

    from django.apps import apps

    retitle = import_module("sessions_app.migrations.0013_titles_without_cli_markup").retitle
    demo = Session.objects.get(path=str(root / SIDECHAIN_INLINE))
    raw = " ".join(demo.first_prompt.split())[:100]
    Session.objects.filter(pk=demo.pk).update(title=raw)
    retitle(apps, None)
    demo.refresh_from_db()
    assert demo.title == "/orchestrator create TODO app by Next.js"


# Claude Code 1.0.x's slash commands: the expansion in the command's own record.

INIT_ID = "1b0c2d3e-4f50-4a61-8b72-93a4b5c6d7e8"
INIT_WORDS = "Please analyze this codebase and create a CLAUDE.md file"
JSON_RE = re.compile(r'"type":\s*"text"|&quot;type&quot;:\s*&quot;text')


def test_a_1_0_command_reads_as_its_name_with_its_expansion_decoded() -> None:
    contents = (
        '{\n  "type": "text",\n  "text": "Please analyze\\n\\nWhat to add:\\n1. \\"Commands\\""\n}'
    )
    text = (
        "<command-message>init is analyzing your codebase…</command-message>\n"
        "<command-name>init</command-name>\n<command-args></command-args>\n"
        f"<command-contents>{contents}</command-contents>"
    )
    [chip] = read_markup(text).pieces
    assert isinstance(chip, Chip) and chip.label == "/init"
    assert chip.expansion == 'Please analyze\n\nWhat to add:\n1. "Commands"'
    assert plain(text) == "/init" and title_text(text) == "/init"
    # A page cuts a long prompt: the expansion cut short still reads as text, never JSON.
    cut = read_markup(text[: text.index("What to add") + 4])
    assert cut.command is not None and cut.command.expansion == "Please analyze\n\nWhat"
    assert plain(text[:-40]) == "/init"
    # A search snippet's window, and what search indexes: words, no tags, no JSON.
    assert not JSON_RE.search(tags_removed(text)) and "<command" not in tags_removed(text)
    assert tags_removed("command-name> Please analyze, see </comm").strip() == "Please analyze, see"
    assert tags_removed("a -> b </b>") == "a -> b </b>"  # others' tags and arrows stay
    assert shown_text(text) == '/init\nPlease analyze\n\nWhat to add:\n1. "Commands"'


@pytest.fixture
def made(corpus: Path) -> Path:
    assert not sessions_import(roots=[corpus / MADE_ROOT]).errors
    return corpus


@pytest.mark.django_db
def test_init_of_claude_code_1_0_is_a_slash_command_everywhere(made: Path, client) -> None:
    session = Session.objects.get(session_id=INIT_ID)
    assert session.turn_count == MADE_TURNS[INIT_1_0]
    assert session.title == "/init"
    pages = {
        "session": f"/sessions/{INIT_ID}/",
        "project": f"/projects/{session.project_id}/",
        "home": "/",
        "recent": "/recent/",
    }
    for name, url in pages.items():
        html = client.get(url).content.decode()
        assert not RAW_RE.search(html) and not JSON_RE.search(html), name
    html = client.get(pages["session"]).content.decode()
    assert re.search(r"<title>/init\b", html)  # the tab's title
    first = html[html.index('id="prompt-1"') :]
    assert (
        '<span class="chip chip-command" title="init is analyzing your codebase…">/init<'
        in (first[:800])
    )
    expansion = re.search(r'<details class="expansion"[^>]*>(.*?)</details>', first, re.S)
    assert expansion and INIT_WORDS in expansion.group(1)
    assert "<h1>CLAUDE.md</h1>" in expansion.group(1) or "# CLAUDE.md" in expansion.group(1)
    md = b"".join(client.get(f"/sessions/{INIT_ID}/export.md").streaming_content).decode()
    assert md.startswith("# /init\n") and "[/init]" in md and f"> {INIT_WORDS}" in md
    assert not RAW_RE.search(md) and not JSON_RE.search(md)
    page = b"".join(client.get(f"/sessions/{INIT_ID}/export.html").streaming_content).decode()
    assert 'class="chip chip-command"' in page and INIT_WORDS in page
    assert not RAW_RE.search(page) and not JSON_RE.search(page)


@pytest.mark.django_db
def test_the_migration_retitles_1_0_commands_imported_before(made: Path) -> None:
    from importlib import import_module

    from django.apps import apps

    migration = import_module("sessions_app.migrations.0017_titles_of_1_0_slash_commands")
    session = Session.objects.get(session_id=INIT_ID)
    raw = " ".join(session.first_prompt.split())
    # What imports before stored: the name without its slash, then the expansion's JSON.
    branch = {
        "leaf": "x",
        "turn": 1,
        "prompt": f"init {raw[raw.index('<command-contents>') :]}"[:200],
    }
    Session.objects.filter(pk=session.pk).update(title=raw[:100], abandoned=[branch])
    migration.retitle(apps, None)
    session.refresh_from_db()
    assert session.title == "/init" and session.abandoned[0]["prompt"] == "/init"
