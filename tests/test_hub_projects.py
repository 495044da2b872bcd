"""What a push lets go is decided by each session's project as its pages show it (security
issue, items 2 and 14): Gemini CLI chats (whose project is their folder's `.project_root`,
never a `cwd`), Codex rollouts of August 2025 (the cwd only in `<environment_context>`)
and Gemini CLI's older one-document `.json` sessions, on `tests/fixtures/hub_projects/`
(a home laid out as the CLIs keep it; its README says what each file is).

The hub is this test's live server; the machine is a home folder of its own.
"""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import pytest
from django.contrib.auth.models import Permission, User
from django.core.management import call_command
from django.test import Client

from sessions_app.models import ApiToken, Session
from sessions_app.services.branching import session_fork
from sessions_app.services.discovery import discover
from sessions_app.services.hub import choosing
from sessions_app.services.hub.client import Hub, Login, login_save
from sessions_app.services.hub.namespaces import BadHubPath, hub_folder, hub_path_check
from sessions_app.services.hub.pulling import pull
from sessions_app.services.hub.pushing import push
from sessions_app.services.importing import sessions_import

from .corpus import FIXTURES, make_idle
from .test_hub import _owners_fork

pytestmark = pytest.mark.django_db(transaction=True)

ROOTS = (".claude/projects", ".gemini/tmp", ".codex/sessions")
CLIENT = "/home/me/code/client"
# Every file of the excluded client project, one per agent and shape.
CLIENT_FILES = {
    ".claude/projects/-home-me-code-client/1c000001-0000-4000-8000-000000000001.jsonl",
    ".gemini/tmp/client/chats/session-2026-03-04T10-00-2a000001.jsonl",
    ".gemini/tmp/client/chats/session-2025-10-30T09-00-2a000002.json",
    ".codex/sessions/2025/08/28/rollout-2025-08-28T12-05-24-3c000001-0000-4000-8000-000000000001.jsonl",
}
APP_FILES = {
    ".claude/projects/-home-me-code-app/1c000002-0000-4000-8000-000000000002.jsonl",
    ".gemini/tmp/app/chats/session-2026-03-05T10-00-2a000003.jsonl",
    ".gemini/tmp/app/chats/session-2025-10-31T09-00-2a000004.json",
    ".codex/sessions/2025/08/29/rollout-2025-08-29T12-05-24-3c000002-0000-4000-8000-000000000002.jsonl",
}
# No record names a cwd, and nothing names its folder's project.
UNKNOWN_FILES = {
    ".claude/projects/-home-me-code-app/1c000003-0000-4000-8000-000000000003.jsonl",
    ".gemini/tmp/146c2583191320faa43f690a332179849cea2a08f94918b5c2d81c3c685c74ca/chats/"
    "session-2025-10-29T09-00-2a000005.json",
}
DOCUMENT = ".gemini/tmp/app/chats/session-2025-10-31T09-00-2a000004.json"
DOCUMENT_ID = "2a000004-0000-4000-8000-000000000004"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, settings) -> Path:
    """A machine's home with Claude Code, Gemini CLI and Codex sessions of two projects."""
    home = tmp_path / "me"
    shutil.copytree(FIXTURES / "hub_projects", home)
    make_idle(home)
    monkeypatch.setenv("HOME", str(home))
    for variable in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "GEMINI_CLI_HOME"):
        monkeypatch.delenv(variable, raising=False)
    settings.SESSION_ROOTS = [home / root for root in ROOTS]
    settings.DATA_DIR = tmp_path / "data"
    settings.DATA_DIR.mkdir(mode=0o700)
    settings.HUB_PROJECTS = ["*"]
    settings.HUB_EXCLUDE = [CLIENT]
    return home


@pytest.fixture
def alice(live_server) -> Hub:
    user = User.objects.create_user("alice", password="x")
    for codename in ("push_sessions", "write_sessions"):
        user.user_permissions.add(Permission.objects.get(codename=codename))
    _, key = ApiToken.issue(name="laptop", user=user)
    return Hub(Login(live_server.url, "alice@laptop", key))


def _on_hub(inside: str) -> Path:
    return hub_folder() / "alice@laptop" / inside


def _dry_run(hub: Hub) -> str:
    login_save(hub.login)
    out = io.StringIO()
    call_command("push_sessions", "--dry-run", stdout=out, stderr=out)
    return out.getvalue()


def _said_of(output: str, inside: str) -> list[str]:
    return [line for line in output.splitlines() if inside in line]


def test_an_excluded_projects_gemini_chats_and_old_codex_rollouts_never_leave(
    home: Path, alice: Hub
) -> None:
    report = push(alice)
    assert set(report.sent_files) == APP_FILES
    for inside in CLIENT_FILES:
        assert not _on_hub(inside).exists(), f"{inside}: an excluded project's file on the hub"
    on_hub = Session.objects.filter(namespace="alice@laptop")
    assert not on_hub.filter(cwd=CLIENT).exists()
    assert not on_hub.filter(session_id="2a000001-0000-4000-8000-000000000001").exists()
    assert report.problems == []


def test_a_dry_run_says_each_excluded_file_is_excluded_and_would_push_none(
    home: Path, alice: Hub
) -> None:
    output = _dry_run(alice)
    for inside in CLIENT_FILES:
        said = _said_of(output, inside)
        assert len(said) == 1 and said[0].startswith("left out: "), (inside, output)
        assert CLIENT in said[0] and "BRANCHBOARD_HUB_EXCLUDE" in said[0], said
    for inside in APP_FILES:
        assert _said_of(output, inside) == [f"would push: {inside} (new)"], output
    assert not (hub_folder() / "alice@laptop").exists()


def test_with_a_project_list_the_gemini_chats_of_a_matching_project_go(
    home: Path, alice: Hub, settings
) -> None:
    settings.HUB_PROJECTS = ["/home/me/code/*"]
    settings.HUB_EXCLUDE = []
    report = push(alice)
    assert set(report.sent_files) == APP_FILES | CLIENT_FILES
    for inside in (*APP_FILES, *CLIENT_FILES):
        assert _on_hub(inside).read_bytes() == (home / inside).read_bytes()
    settings.HUB_PROJECTS = ["/home/me/code/app"]
    output = _dry_run(alice)
    for inside in CLIENT_FILES:
        (said,) = _said_of(output, inside)
        assert said.startswith("left out: ") and "not in BRANCHBOARD_HUB_PROJECTS" in said


@pytest.mark.parametrize(
    ("projects", "exclude"), [(["*"], [CLIENT]), (["/home/me/code/*"], []), (["/"], [])]
)
def test_a_file_of_no_known_project_stays_while_a_rule_is_set_and_the_dry_run_says_why(
    home: Path, alice: Hub, settings, projects: list[str], exclude: list[str]
) -> None:
    settings.HUB_PROJECTS, settings.HUB_EXCLUDE = projects, exclude
    output = _dry_run(alice)
    for inside in UNKNOWN_FILES:
        (said,) = _said_of(output, inside)
        assert said.startswith("left out: ") and "project cannot be known" in said, said
    report = push(alice)
    for inside in UNKNOWN_FILES:
        assert inside not in report.sent_files and not _on_hub(inside).exists()


def test_with_every_project_let_go_a_file_of_no_known_project_goes_too(
    home: Path, alice: Hub, settings
) -> None:
    settings.HUB_EXCLUDE = []
    report = push(alice)
    assert set(report.sent_files) == APP_FILES | CLIENT_FILES | UNKNOWN_FILES
    assert report.left_out == [] and report.problems == []


def test_the_push_decides_each_files_project_as_its_page_shows_it(home: Path, settings) -> None:
    """One rule: the project the push matches is the cwd the imported session shows, for
    these files and for every session file of the fixture corpus."""
    roots = [*settings.SESSION_ROOTS]
    roots += [FIXTURES / r for r in ("cli/claude", "public/claude", "cli/qwen", "synthetic/qwen")]
    roots += [FIXTURES / r for r in ("cli/codex/sessions", "codex_items/sessions")]
    roots += [FIXTURES / "gemini/tmp", FIXTURES / "gemini_documents/tmp"]
    report = sessions_import(roots=roots)
    assert not report.errors, report.errors
    compared = 0
    for root in roots:
        for source in discover(root)[0]:
            session = Session.objects.filter(path=str(source.path)).first()
            if session is None:
                continue  # left out by the importer (a stub, a superseded document)
            assert choosing.project_of(source) == session.cwd, source.path
            compared += 1
    assert compared > 40
    pages = {Session.objects.get(path=str(home / p)).cwd for p in CLIENT_FILES}
    assert pages == {CLIENT}


def test_a_gemini_document_is_pushed_shown_on_the_hub_and_its_fork_pulled_back(
    home: Path, alice: Hub, settings
) -> None:
    settings.HUB_EXCLUDE = []
    local = home / DOCUMENT
    report = push(alice)
    assert DOCUMENT in report.sent_files and report.problems == []
    assert _on_hub(DOCUMENT).read_bytes() == local.read_bytes()
    on_hub = Session.objects.get(namespace="alice@laptop", session_id=DOCUMENT_ID)
    assert on_hub.agent == "gemini" and on_hub.turn_count == 1 and not on_hub.file_removed_at

    client = Client()
    client.force_login(User.objects.create_superuser("bob", password="x"))
    page = client.get(f"/sessions/alice@laptop/{DOCUMENT_ID}/")
    assert page.status_code == 200 and "modules" in page.content.decode()

    fork = _owners_fork(on_hub, turn=1)  # by alice: it goes to her machine
    pulled = pull(alice)
    back = local.parent / Path(fork.path).name
    assert pulled.problems == [] and pulled.written == [back]
    assert back.read_bytes() == Path(fork.path).read_bytes()
    mine = Session.objects.get(namespace="", session_id=fork.session_id)
    assert mine.agent == "gemini" and mine.turn_count == 1
    assert push(alice).sent_files == []


def test_a_hub_takes_a_gemini_document_only_where_the_cli_keeps_one() -> None:
    assert hub_path_check(".gemini/tmp/app/chats/session-2025-10-31T09-00-2a000004.json")
    for path in (
        ".gemini/tmp/app/checkpoint-mytag.json",  # a /chat save checkpoint: no session
        ".gemini/tmp/app/logs.json",
        ".gemini/tmp/app/chats/notes.json",
        ".claude/projects/-home-me/1c000002-0000-4000-8000-000000000002.json",
        ".codex/sessions/2025/08/29/rollout-2025-08-29T12-05-24-3c000002.json",
    ):
        with pytest.raises(BadHubPath):
            hub_path_check(path)


def test_listing_what_may_go_reads_no_file_it_does_not_push(home: Path, settings) -> None:
    """Only the files of a push decide their project: `--watch` names one file."""
    report = choosing.PushReport()
    wanted = home / next(iter(APP_FILES))
    found = choosing.local_files(report, only=[wanted])
    assert [f.path for f in found] == [wanted] and found[0].project == "/home/me/code/app"


def test_a_fork_shows_the_project_a_fresh_import_of_its_file_gives(home: Path) -> None:
    """The row a fork gets at once names the project its file's import would (Gemini CLI's
    from `.project_root`), and the push decides by the same."""
    sessions_import(roots=[home / root for root in ROOTS])
    for inside in (".gemini/tmp/app/chats/session-2026-03-05T10-00-2a000003.jsonl", DOCUMENT):
        source = Session.objects.get(path=str(home / inside))
        fork = session_fork(session=source, turn=1)
        assert fork.cwd == "/home/me/code/app", inside
        found = next(s for s in discover(home / ".gemini/tmp")[0] if str(s.path) == fork.path)
        assert choosing.project_of(found) == fork.cwd


def test_a_cwd_spelled_with_an_escape_is_read_as_the_importer_reads_it(
    home: Path, alice: Hub
) -> None:
    folder = home / ".claude/projects/-home-me-code-client"
    source = next(folder.glob("*.jsonl"))
    escaped = folder / "1c000009-0000-4000-8000-000000000009.jsonl"
    escaped.write_bytes(
        source.read_bytes()
        .replace(b'"cwd"', b'"\\u0063wd"')
        .replace(b"1c000001-0000-4000-8000-000000000001", escaped.stem.encode())
    )
    sessions_import(roots=[home / ".claude/projects"])
    assert Session.objects.get(path=str(escaped)).cwd == CLIENT
    report = push(alice)
    assert not _on_hub(f".claude/projects/{folder.name}/{escaped.name}").exists()
    assert any(str(escaped) in said and CLIENT in said for said in report.left_out)
