"""The archive's copy of the folder a session owns beside its file (`formats.session_folders`).

Every regular file its CLI keeps there (Claude Code's `custom-title.json`, `subagents/
agent-<id>.meta.json`, `tool-results/...`), except the subagent transcripts, which are
sessions of their own and archived as such, is kept whole: an `ArchivedFile` of kind
`sidecar`, named by its path in the folder, zstd-compressed with the SHA-256 of its bytes.
Unlike a backup such a file can change (a renamed session, a subagent that finished), so
one whose size or mtime changed is read and stored again. A file that cannot be kept (over
`SIDECAR_LIMIT`, unreadable when first seen) gets a row that says why: a restore names it
instead of leaving it out unsaid. Kept when the session, or one of its subagents, is
imported; restore to disk (`archive.restoring`) writes back each file missing from the folder
(and names each one it cannot).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

from ...formats import agent_for
from ...formats.session_folders import is_session_in_folder, session_folder
from ...models import Session
from ...models.archive import ArchivedFile
from . import LEVEL, archive_enabled, digest, zstd
from .files import FilesKept

SIDECAR = ArchivedFile.Kind.SIDECAR
# A file larger than this is not kept (and said so, at import and at restore): it is held
# whole while compressed. The CLIs' own files there are small; a tool's saved output can be
# a few megabytes.
SIDECAR_LIMIT = 64 << 20
# How deep and how many: the CLI's layout is one level deep (`subagents/`, `tool-results/`);
# anything past these bounds is reported, not read.
FOLDER_DEPTH = 4
FOLDER_FILES = 10_000
NAME_LIMIT = 255  # the `name` column
DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def sidecar_folder(session: Session) -> Path | None:
    """The folder the session owns beside its file; None when its CLI keeps none."""
    return session_folder(agent_for(session.agent), Path(session.path), str(session.session_id))


def _owner(session: Session) -> Session | None:
    """The session whose folder holds `session`'s files: itself, or a subagent's parent."""
    if not session.is_subagent:
        return session
    if session.owner_session_id is None:
        return None
    return Session.objects.filter(
        project=session.project_id, session_id=session.owner_session_id, is_subagent=False
    ).first()


def sidecars_keep(*, session: Session) -> FilesKept:
    """Archive the files of the folder of `session` (of its parent, for a subagent) that the
    archive does not hold as they are now. Never through a link; the caller holds the
    transaction."""
    kept = FilesKept()
    owner = _owner(session) if archive_enabled() else None
    folder = sidecar_folder(owner) if owner is not None else None
    if owner is None or folder is None:
        return kept
    try:
        top = os.open(folder, DIR_FLAGS)
    except FileNotFoundError:
        return kept  # the CLI keeps nothing for it (most sessions)
    except OSError as exc:
        kept.problems.append(f"{folder}: the session's folder not archived ({exc.strerror})")
        return kept
    agent = agent_for(owner.agent)
    held = {
        name: (length, mtime)
        for name, length, mtime in ArchivedFile.objects.filter(
            session=owner, kind=SIDECAR
        ).values_list("name", "length", "mtime_ns")
    }
    seen = 0
    try:
        for relative, dir_fd, st in _files(top, folder, kept.problems):
            name = relative.as_posix()
            if is_session_in_folder(agent, relative):
                continue
            if len(name) > NAME_LIMIT:
                kept.problems.append(f"{folder / name}: not archived (a name this long)")
                continue
            seen += 1
            if seen > FOLDER_FILES:
                kept.problems.append(f"{folder}: only its first {FOLDER_FILES} files archived")
                break
            if held.get(name) == (st.st_size, st.st_mtime_ns):
                continue  # as it was when last read
            row = _sidecar_row(owner, folder, name, dir_fd, kept.problems, known=name in held)
            if row is None:
                continue
            ArchivedFile.objects.bulk_create(
                [row],
                update_conflicts=True,
                unique_fields=["session", "kind", "name"],
                update_fields=["length", "mode", "data", "digest", "mtime_ns", "not_kept"],
            )
            if row.not_kept is None:
                kept.files += 1
                kept.raw += row.length
    finally:
        os.close(top)
    return kept


def _files(
    top: int, folder: Path, problems: list[str]
) -> Iterator[tuple[PurePosixPath, int, os.stat_result]]:
    """Each regular file under the folder `top`: its path in it, its folder's descriptor and
    its lstat. Subfolders are opened as themselves; links and special files are reported."""
    stack: list[tuple[PurePosixPath, int]] = [(PurePosixPath(), top)]
    try:
        while stack:
            relative, fd = stack.pop()
            try:
                with os.scandir(fd) as entries:
                    listed = sorted(entries, key=lambda e: e.name)
                for entry in listed:
                    inner = relative / entry.name
                    try:
                        st = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue  # gone since the listing
                    if stat.S_ISREG(st.st_mode):
                        yield inner, fd, st
                    elif stat.S_ISDIR(st.st_mode) and len(inner.parts) < FOLDER_DEPTH:
                        try:
                            stack.append((inner, os.open(entry.name, DIR_FLAGS, dir_fd=fd)))
                        except OSError as exc:
                            problems.append(f"{folder / inner}: not archived ({exc.strerror})")
                    elif stat.S_ISDIR(st.st_mode):
                        problems.append(
                            f"{folder / inner}: not archived (deeper than {FOLDER_DEPTH} levels)"
                        )
                    else:
                        what = "a link" if stat.S_ISLNK(st.st_mode) else "not a regular file"
                        problems.append(f"{folder / inner}: not archived ({what})")
            finally:
                if fd != top:
                    os.close(fd)
    finally:
        for _, fd in stack:
            if fd != top:
                os.close(fd)


def _sidecar_row(
    owner: Session, folder: Path, name: str, dir_fd: int, problems: list[str], *, known: bool
) -> ArchivedFile | None:
    """The file read whole into a row, or a row saying why its bytes are not kept; None when
    it is gone, or unreadable now while the archive holds an earlier read of it."""
    path = folder / name
    row = ArchivedFile(session=owner, kind=SIDECAR, name=name, length=0, data=b"", digest="")
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(PurePosixPath(name).name, flags, dir_fd=dir_fd)
    except FileNotFoundError:
        return None
    except OSError as exc:
        problems.append(f"{path}: not archived ({exc.strerror})")
        row.not_kept = f"unreadable when archived: {exc.strerror}"
        return None if known else row
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None
        row.length, row.mode, row.mtime_ns = st.st_size, stat.S_IMODE(st.st_mode), st.st_mtime_ns
        if st.st_size > SIDECAR_LIMIT:
            raw = b""
        else:
            os.set_blocking(fd, True)
            raw = f.read(SIDECAR_LIMIT + 1)
    if st.st_size > SIDECAR_LIMIT or len(raw) > SIDECAR_LIMIT:
        row.not_kept = f"{max(st.st_size, len(raw))} bytes, over the limit of {SIDECAR_LIMIT}"
        problems.append(f"{path}: not archived ({row.not_kept})")
        return row
    row.length, row.data, row.digest = len(raw), zstd.compress(raw, level=LEVEL), digest(raw)
    return row
