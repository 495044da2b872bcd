"""The index never drifts from the files: rewind, undo and fork in any order write whole lines."""

from __future__ import annotations

import io
from pathlib import Path

import orjson
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from sessions_app.models import Session

from .corpus import ALL_ROOTS, CLAUDE_ROOTS, FIXTURES
from .facts import TURNS
from .index_check import (
    fresh_import_facts,
    fresh_import_facts_together,
    index_facts,
    unparseable_lines,
)

pytestmark = pytest.mark.django_db

WEBAPP_ID = "d62afd75-12b1-4077-921c-1fa1eda79364"
CLAUDE_SESSIONS = sorted(
    path for path, turns in TURNS.items() if path.startswith(CLAUDE_ROOTS) and turns >= 3
)


def run(*args: str) -> dict:
    out = io.StringIO()
    call_command(*args, "--json", stdout=out)
    return orjson.loads(out.getvalue())


def turns_of(path: Path) -> int:
    from .reading import analyse_file

    return analyse_file(path)[1].turn_count


def test_fresh_import_facts_of_each_root_add_up_to_the_whole(imported: Path) -> None:
    """What the checks below rely on: no session's facts depend on another root's files."""
    roots = [imported / r for r in ALL_ROOTS]
    assert fresh_import_facts(roots) == fresh_import_facts_together(roots) == index_facts()


def test_fork_after_rewind_and_undo_holds_whole_lines(imported: Path) -> None:
    """The issue's repro: rewind 2, undo, fork 1 gave a fork of 4 lines that are not JSON."""
    source = Session.objects.get(session_id=WEBAPP_ID)
    original = Path(source.path).read_bytes()
    run("rewind_session", WEBAPP_ID, "--turn", "2")
    run("rewind_session", WEBAPP_ID, "--undo")
    assert Path(source.path).read_bytes() == original
    fork = run("fork_session", WEBAPP_ID, "--turn", "1")
    assert unparseable_lines(Path(fork["path"])) == 0
    assert fork["turns"] == turns_of(Path(fork["path"])) == 1
    # The restored session has all its turns again, in the index too.
    fork2 = run("fork_session", WEBAPP_ID, "--turn", "2")
    assert turns_of(Path(fork2["path"])) == 2
    assert Session.objects.get(session_id=WEBAPP_ID).turn_count == 3


@pytest.mark.parametrize("relpath", CLAUDE_SESSIONS)
def test_sequence_of_actions_keeps_every_file_whole(imported: Path, relpath: str) -> None:
    """Rewind 2, undo, fork 1, branch, rewind T, fork T-1, undo, rewind 2 twice, undo, fork 1."""
    path = imported / relpath
    sid = path.stem
    turns = TURNS[relpath]
    bad_before = unparseable_lines(path)
    steps = [
        ("rewind_session", sid, "--turn", "2"),
        ("rewind_session", sid, "--undo"),
        ("fork_session", sid, "--turn", "1"),
        ("fork_session", sid),
        ("rewind_session", sid, "--turn", str(turns)),
        ("fork_session", sid, "--turn", str(turns - 1)),
        ("rewind_session", sid, "--undo"),
        ("rewind_session", sid, "--turn", "2"),
        ("rewind_session", sid, "--turn", "2"),  # now out of range: refused, not "busy"
        ("rewind_session", sid, "--undo"),
        ("fork_session", sid, "--turn", "1"),
    ]
    roots = [imported / r for r in ALL_ROOTS]
    for n, step in enumerate(steps):
        if n == 8:
            with pytest.raises(CommandError, match="has 1 turn"):
                run(*step)
        else:
            info = run(*step)
            if step[0] == "fork_session":
                new = Path(info["path"])
                assert unparseable_lines(new) == 0, step
                assert info["turns"] == turns_of(new), step
        assert unparseable_lines(path) == bad_before, step
        assert index_facts() == fresh_import_facts(roots), step
    assert Session.objects.get(session_id=sid).turn_count == turns


def test_rewinding_twice_in_a_row_is_not_refused_as_busy(imported: Path) -> None:
    """Our own rewind made the file "recently modified"; the busy guard is about a running CLI."""
    sid = "ad8024e4-83f0-4ff3-82f8-4e19f6c9127b"
    run("rewind_session", sid, "--turn", "20")
    again = run("rewind_session", sid, "--turn", "5")
    assert again["turns"] == 4
    undone = run("rewind_session", sid, "--undo")
    assert undone["turns"] == 19


def test_a_file_written_by_someone_else_just_now_is_still_busy(imported: Path) -> None:
    sid = "ad8024e4-83f0-4ff3-82f8-4e19f6c9127b"
    run("rewind_session", sid, "--turn", "20")
    path = Path(Session.objects.get(session_id=sid).path)
    with path.open("ab") as f:  # a CLI appends a line
        f.write(path.read_bytes().splitlines(keepends=True)[-1])
    from django.core.management import call_command as cc

    cc("import_sessions", "--root", str(path.parent.parent), stdout=io.StringIO())
    with pytest.raises(CommandError, match=r"written .* ago"):
        run("rewind_session", sid, "--turn", "5")


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}


def test_a_copy_never_writes_bytes_the_index_does_not_name(imported: Path) -> None:
    """Same size, mtime and inode, different bytes in the middle: refused, re-imported, retried."""
    import os

    from sessions_app.services.branching import SourceChanged, session_fork

    session = Session.objects.select_related("project").get(session_id=WEBAPP_ID)
    path = Path(session.path)
    st = path.stat()
    data = bytearray(path.read_bytes())
    at = data.index(b"Add a subtract", data.index(b'"type":"user"')) + 6  # the first prompt
    data[at : at + 8] = b"SUBTRACT"
    path.write_bytes(bytes(data))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    before = _files(path.parent)
    with pytest.raises(SourceChanged, match="re-imported, try again"):
        session_fork(session=session, turn=1)
    assert _files(path.parent) == before  # nothing written
    # The re-import read the file again, so the retry copies what is there now.
    again = session_fork(session=Session.objects.get(session_id=WEBAPP_ID), turn=3)
    assert b"SUBTRACT" in Path(again.path).read_bytes()
    assert unparseable_lines(Path(again.path)) == 0


def test_a_written_file_that_does_not_read_back_replaces_nothing(
    imported: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fault in the copy (a line cut short) is caught before the file is linked or renamed."""
    from sessions_app.services.branching import (
        WriteCheckFailed,
        copying,
        rewinding,
        session_fork,
        session_rewind,
    )

    real = copying.restamp_into

    def cut_short(write, raw, **kwargs):
        if b'"type":"user"' in raw:
            raw = raw[: len(raw) // 2] + b"\n"
        return real(write, raw, **kwargs)

    monkeypatch.setattr(copying, "restamp_into", cut_short)
    session = Session.objects.select_related("project").get(session_id=WEBAPP_ID)
    folder = Path(session.path).parent
    before = _files(folder)
    with pytest.raises(WriteCheckFailed, match="did not read back"):
        session_fork(session=session, turn=2)
    assert _files(folder) == before
    assert not Session.objects.filter(kind="fork").exists()
    # A rewind writes unchanged lines; cut one of them short on the way out.
    monkeypatch.setattr(copying, "restamp_into", real)
    monkeypatch.setattr(rewinding, "write_kept", _cutting(rewinding.write_kept))
    with pytest.raises(WriteCheckFailed):
        session_rewind(session=session, turn=2)
    assert _files(folder) == before  # neither the backup nor the rewritten file is there
    assert Session.objects.get(session_id=WEBAPP_ID).turn_count == 3


def _cutting(write_kept):
    def wrapped(session, out, **kwargs):
        class Half:
            def write(self, data: bytes) -> None:
                out.write(bytes(data)[: len(data) - 40])

        return write_kept(session, Half(), **kwargs)

    return wrapped


def test_long_titles_keep_their_branch_suffix(imported: Path) -> None:
    from sessions_app.services.branching import session_fork

    session = Session.objects.select_related("project").get(session_id=WEBAPP_ID)
    long = "x" * 300
    first = session_fork(session=session, title=None)
    Session.objects.filter(pk=session.pk).update(custom_title=long, title=long)
    session.refresh_from_db()
    a = session_fork(session=session)
    b = session_fork(session=session)
    assert a.title != b.title
    assert a.title.endswith(" (Branch)") and b.title.endswith(" (Branch 2)")
    assert len(a.title) <= 300 and len(b.title) <= 300
    assert first.title.endswith("(Branch)")


def test_forking_an_unreadable_file_says_what_is_wrong(tmp_path: Path) -> None:
    """Mode 000: a clear message and exit code, no traceback (run without root's override)."""
    import os
    import shutil
    import subprocess
    import sys

    root = tmp_path / "root"
    src = FIXTURES / "cli/claude/-home-dev-code-webapp"
    shutil.copytree(src, root / src.name)
    path = root / src.name / f"{WEBAPP_ID}.jsonl"
    env = {
        **os.environ,
        "BRANCHBOARD_DATA_DIR": str(tmp_path / "data"),
        "BRANCHBOARD_ROOTS": str(root),
    }
    env.pop("DATABASE_URL", None)  # a database of its own; the point is the file
    manage = [sys.executable, str(Path(__file__).resolve().parent.parent / "manage.py")]
    # The import sets up the fresh database first.
    subprocess.run([*manage, "import_sessions", "--no-progress"], env=env, check=True)
    path.chmod(0)
    drop = []
    if os.geteuid() == 0 and shutil.which("setpriv"):
        # Root reads any file; without these capabilities it is refused like anyone else.
        caps = "-dac_override,-dac_read_search"
        drop = ["setpriv", f"--inh-caps={caps}", f"--bounding-set={caps}"]
    result = subprocess.run(
        [*drop, *manage, "fork_session", WEBAPP_ID, "--turn", "1"],
        env=env,
        capture_output=True,
        text=True,
    )
    path.chmod(0o600)
    assert result.returncode not in (0, 1), result.stderr
    assert "Traceback" not in result.stderr
    assert "Permission denied" in result.stderr
    assert len(list((root / src.name).glob("*.jsonl"))) == 1
