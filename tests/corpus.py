"""The fixture corpus: where it is, and a working copy that is put back after each test."""

from __future__ import annotations

import os
import shutil
import stat
import time
from dataclasses import dataclass
from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures"
CLAUDE_ROOTS = ("cli/claude", "public/claude")
QWEN_ROOTS = ("cli/qwen", "synthetic/qwen")
# Codex keeps sessions in dated folders under `sessions/`: that folder is the root.
CODEX_ROOTS = ("cli/codex/sessions", "synthetic/codex/sessions")
ALL_ROOTS = CLAUDE_ROOTS + QWEN_ROOTS + CODEX_ROOTS


def make_idle(root: Path) -> None:
    """Make session files look finished (written a minute ago), as the rewind guard wants."""
    old = time.time() - 60
    for path in root.rglob("*.jsonl"):
        os.utime(path, (old, old))


@dataclass(slots=True)
class _Kept:
    """What the index knows of a file (its inode and mtime), and when it was last put back."""

    inode: int
    mtime_ns: int
    mode: int
    ctime_ns: int


class CorpusCopy:
    """An idle copy of the fixture corpus that `restore()` puts back exactly as it was copied.

    Exactly means what the index compares, not only the bytes: each file keeps its inode,
    mtime and mode, so an import made once still matches the files after any test. A
    second hard link to every file keeps its inode alive while a test replaces the file
    (a rewind does); a file's ctime, which no test can set, says whether it was touched.
    """

    def __init__(self, folder: Path) -> None:
        self.path = folder / "corpus"
        self._links = folder / "links"
        shutil.copytree(FIXTURES, self.path)
        make_idle(self.path)
        shutil.copytree(self.path, self._links, copy_function=os.link)
        self._folders = {
            p.relative_to(self.path): (stat.S_IMODE(p.stat().st_mode), p.stat().st_mtime_ns)
            for p in sorted([self.path, *(p for p in self.path.rglob("*") if p.is_dir())])
        }
        self._files = {}
        for path in sorted(p for p in self.path.rglob("*") if p.is_file()):
            st = os.lstat(path)
            kept = _Kept(st.st_ino, st.st_mtime_ns, stat.S_IMODE(st.st_mode), st.st_ctime_ns)
            self._files[path.relative_to(self.path)] = kept

    @property
    def roots(self) -> list[Path]:
        return [self.path / r for r in ALL_ROOTS]

    def restore(self) -> None:
        """Put back every folder and file as copied, and remove whatever a test added."""
        for relative, (mode, _) in self._folders.items():  # parents before children
            folder = self.path / relative
            st = _lstat(folder)
            if st is None or not stat.S_ISDIR(st.st_mode):
                _remove(folder)
                folder.mkdir()
                st = os.lstat(folder)
            if stat.S_IMODE(st.st_mode) != mode:
                folder.chmod(mode)
        for relative, kept in self._files.items():
            self._restore_file(relative, kept)
        self._remove_additions()
        for relative, (_, mtime_ns) in self._folders.items():
            if os.lstat(self.path / relative).st_mtime_ns != mtime_ns:
                os.utime(self.path / relative, ns=(mtime_ns, mtime_ns))

    def _restore_file(self, relative: Path, kept: _Kept) -> None:
        path = self.path / relative
        st = _lstat(path)
        if st is None or st.st_ino != kept.inode:
            _remove(path)
            os.link(self._links / relative, path)
            st = os.lstat(path)
        if st.st_ctime_ns == kept.ctime_ns:
            return  # untouched since it was last put back
        original = (FIXTURES / relative).read_bytes()
        if path.read_bytes() != original:  # appended to, or rewritten in place
            with path.open("r+b") as f:
                f.write(original)
                f.truncate()
        path.chmod(kept.mode)
        os.utime(path, ns=(kept.mtime_ns, kept.mtime_ns))
        kept.ctime_ns = os.lstat(path).st_ctime_ns

    def _remove_additions(self) -> None:
        for folder, folders, files in os.walk(self.path):
            here = Path(folder)
            for name in list(folders):  # links to folders are listed here, not followed
                if (here / name).relative_to(self.path) not in self._folders:
                    _remove(here / name)
                    folders.remove(name)
            for name in files:
                if (here / name).relative_to(self.path) not in self._files:
                    _remove(here / name)


def _lstat(path: Path) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None


def _remove(path: Path) -> None:
    st = _lstat(path)
    if st is None:
        return
    if stat.S_ISDIR(st.st_mode):
        shutil.rmtree(path)
    else:
        path.unlink()
