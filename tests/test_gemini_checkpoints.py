"""Gemini CLI's checkpoints shown as what they are (issue 45): `/chat save` conversations and
`/restore` points are listed on their project's page with the command that takes each up,
never imported as sessions."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from sessions_app.formats.gemini.checkpoints import READ_LIMIT, saved_checkpoints
from sessions_app.models import Project, Session
from sessions_app.services.importing import sessions_import

pytestmark = pytest.mark.django_db(transaction=True)

HOME = Path(__file__).parent / "fixtures" / "gemini_read"
FOLDER = "tmp/resumed"
RESTORE = "2026-12-01T10-01-00_000Z-setup.py-replace"


def _home(tmp_path: Path) -> Path:
    home = tmp_path / ".gemini"
    shutil.copytree(HOME, home)
    folder = home / FOLDER
    # Saved one after another, a minute apart: the list is newest first.
    order = ["checkpoint-release.json", "checkpoint-'q'.json", f"checkpoints/{RESTORE}.json"]
    order.append("checkpoint-before%20%3Cscript%3E.json")
    for minute, name in enumerate(order):
        os.utime(folder / name, (1_800_000_000 + 60 * minute,) * 2)
    return home


def test_the_checkpoints_of_a_project_folder_are_read_as_the_cli_wrote_them(
    tmp_path: Path,
) -> None:
    folder = _home(tmp_path) / FOLDER

    found = saved_checkpoints(folder)

    assert [(c.kind, c.name, c.command) for c in found] == [
        ("saved", "before <script>", "/chat resume before <script>"),  # its tag, decoded
        ("restore", RESTORE, f"/restore {RESTORE}"),
        ("saved", "'q'", "/chat resume 'q'"),
        ("saved", "release", "/chat resume release"),  # the older shape: a bare list
    ]
    saved = found[0]
    # The user's prompts: not the CLI's context, not a function's response.
    assert saved.prompts == ("rename <b>foo</b> to bar", "now run the tests")
    assert found[1].about == "before replace of /home/dev/resumed/setup.py"
    assert found[1].prompts == ("rename foo to bar",)
    assert found[3].prompts == ("hello from a checkpoint",)
    # `logs.json` and the chats are no checkpoints.
    assert not {Path(c.path).name for c in found} & {"logs.json", "chats"}


def test_a_checkpoint_too_big_or_broken_is_listed_unread_and_a_link_is_not_followed(
    tmp_path: Path,
) -> None:
    folder = _home(tmp_path) / FOLDER
    (folder / "checkpoint-broken.json").write_bytes(b'{"history": [')
    with open(folder / "checkpoint-huge.json", "wb") as f:
        f.truncate(READ_LIMIT + 1)
    secret = tmp_path / "secret.json"
    secret.write_text('[{"role": "user", "parts": [{"text": "not yours"}]}]')
    (folder / "checkpoint-link.json").symlink_to(secret)

    found = {c.name: c for c in saved_checkpoints(folder)}

    assert found["broken"].prompts is None and found["huge"].prompts is None
    assert found["huge"].size == READ_LIMIT + 1
    assert "link" not in found


def test_the_project_page_lists_them_and_the_import_leaves_them_alone(
    tmp_path: Path, client
) -> None:
    home = _home(tmp_path)
    report = sessions_import(roots=[home / "tmp"])
    assert not report.errors
    # One session and its sub-agent: no checkpoint became a session.
    assert Session.objects.filter(agent="gemini").count() == 2
    project = Project.objects.get(agent="gemini")

    html = client.get(f"/projects/{project.pk}/").content.decode()

    assert "Checkpoints: not sessions" in html
    assert "/chat resume release" in html and f"/restore {RESTORE}" in html
    assert "before replace of /home/dev/resumed/setup.py" in html
    # A tag and a prompt with markup are shown as text.
    assert (
        "/chat resume before &lt;script&gt;" in html
        and "<script>" not in html.split("Checkpoints: not sessions")[1].split("</section>")[0]
    )
    assert "rename &lt;b&gt;foo&lt;/b&gt; to bar" in html
    # The newest first.
    assert html.index("before &lt;script&gt;") < html.index("/chat resume release")


def test_a_project_of_another_agent_has_no_checkpoints_section(tmp_path: Path, client) -> None:
    source = Path(__file__).parent / "fixtures" / "cli" / "claude" / "-home-dev-code-forks"
    claude = tmp_path / ".claude" / "projects" / source.name
    shutil.copytree(source, claude)
    (claude / "checkpoint-x.json").write_text("[]")
    sessions_import(roots=[tmp_path / ".claude" / "projects"])
    project = Project.objects.get()

    html = client.get(f"/projects/{project.pk}/").content.decode()

    assert "Checkpoints: not sessions" not in html
