"""The archive's whole files: a session's file-history backups, kept beside its pieces.

Claude Code backs a file up before it edits it (`~/.claude/file-history/<session id>/
<backup name>`, see `formats.claude.file_history`) and never changes a backup afterwards, so
each is stored once, whole, zstd-compressed with the SHA-256 of its bytes
(`ArchivedFile`), when the session is imported and its folder holds names the archive
does not. Restore to disk (`archive.restoring`) writes back those that are missing.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from ...formats import agent_for
from ...formats.claude.file_history import backup_name_valid
from ...models import Session
from ...models.archive import ArchivedFile
from . import LEVEL, ArchiveCorrupt, archive_enabled, digest, zstd

# A backup larger than this is not archived (and said so): a backup is held whole while
# it is compressed, and one this size is a build artefact, not a source file.
BACKUP_LIMIT = 64 << 20


def file_history_folder(session: Session) -> Path | None:
    """Where the session's CLI keeps its file backups for it, or None when it keeps none."""
    return history_folder(session.agent, session.project.root, str(session.session_id))


def history_folder(agent: str, root: str, session_id: str) -> Path | None:
    """The file-history folder of session `session_id` of `agent` under session root `root`."""
    folder = agent_for(agent).file_history_folder
    return Path(root).parent / folder / session_id if folder else None


@dataclass
class FilesKept:
    """What one look at a session's file-history folder added to the archive."""

    files: int = 0
    raw: int = 0  # raw bytes added
    problems: list[str] = field(default_factory=list)  # backups not archived, and why


def archive_file_history(*, session: Session) -> FilesKept:
    """Archive the session's file-history backups the archive does not hold yet.

    Only for a session whose file has checkpoint records (`file_backups`); one query for
    the names held. Only regular files with a backup's name are read, never through a
    link (a link is passed over); one over `BACKUP_LIMIT` is reported. The caller holds
    the transaction.
    """
    kept = FilesKept()
    folder = file_history_folder(session) if session.file_backups else None
    if folder is None or not archive_enabled():
        return kept
    try:
        dir_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return kept  # the CLI kept none, or its cleanup took them
    except OSError as exc:
        # A link (ELOOP), a file where the folder should be (ENOTDIR), no permission.
        kept.problems.append(f"{folder}: file backups not archived ({exc.strerror})")
        return kept
    try:
        held = set(
            ArchivedFile.objects.filter(
                session=session, kind=ArchivedFile.Kind.FILE_HISTORY
            ).values_list("name", flat=True)
        )
        for name in sorted(os.listdir(dir_fd)):
            if name in held or not backup_name_valid(name):
                continue
            row = _backup_row(session, folder, dir_fd, name, kept.problems)
            if row is not None:
                # Stored as read; two imports at once store a name once.
                ArchivedFile.objects.bulk_create([row], ignore_conflicts=True)
                kept.files += 1
                kept.raw += row.length
    finally:
        os.close(dir_fd)
    return kept


def _backup_row(
    session: Session, folder: Path, dir_fd: int, name: str, problems: list[str]
) -> ArchivedFile | None:
    """One backup read whole (a regular file, no link followed), or None with the reason."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        if not stat.S_ISREG(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode):
            return None  # a link or a folder is no backup the CLI wrote: passed over
        fd = os.open(name, flags, dir_fd=dir_fd)
    except FileNotFoundError:
        return None
    except OSError as exc:
        problems.append(f"{folder / name}: backup not archived ({exc.strerror})")
        return None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            problems.append(f"{folder / name}: backup not archived (not a regular file)")
            return None
        if st.st_size > BACKUP_LIMIT:
            problems.append(
                f"{folder / name}: backup not archived ({st.st_size} bytes, over the "
                f"limit of {BACKUP_LIMIT})"
            )
            return None
        os.set_blocking(fd, True)
        raw = f.read(BACKUP_LIMIT + 1)
    if len(raw) > BACKUP_LIMIT:
        problems.append(f"{folder / name}: backup not archived (over {BACKUP_LIMIT} bytes)")
        return None
    return ArchivedFile(
        session=session,
        kind=ArchivedFile.Kind.FILE_HISTORY,
        name=name,
        length=len(raw),
        mode=stat.S_IMODE(st.st_mode),
        data=zstd.compress(raw, level=LEVEL),
        digest=digest(raw),
    )


def archived_file_bytes(row: ArchivedFile) -> bytes:
    """An archived file's raw bytes, checked against its digest; `ArchiveCorrupt` if they differ."""
    try:
        raw = zstd.decompress(bytes(row.data))
    except zstd.ZstdError:
        raw = b""
    if len(raw) != row.length or digest(raw) != row.digest:
        raise ArchiveCorrupt(
            f"session {row.session_id}: archived {row.kind} file {row.name} is corrupted "
            "(its digest does not match); not served"
        )
    return raw
