"""Earlier versions of a session file its CLI rewrote in place, kept whole by the archive.

Gemini CLI's older one-document `session-*.json` files are rewritten whole, not appended to
(an older release after every message; 0.61 when it writes a summary into one, with a plain
`writeFile`, so a reader can even meet it half-written). The import reads such a file again
from the start and the archive's pieces then follow the new bytes (`archive_extend`), so
before they go, the bytes they held are kept as an `ArchivedFile` of kind
`EARLIER_VERSION`, named by their SHA-256 (a version kept twice is stored once): every
byte version the index ever read stays in the archive. Nothing is kept when the new file
starts with the old bytes (nothing of them is lost), or when the agent's files are only
ever appended to. A version over `BACKUP_LIMIT` is not kept, and said so.
"""

from __future__ import annotations

from typing import BinaryIO

from ...formats import agent_for
from ...models import Session
from ...models.archive import ArchivedFile
from . import LEVEL, ArchiveError, archive_open, archived_end, digest, zstd
from .files import BACKUP_LIMIT, archived_file_bytes

EARLIER = ArchivedFile.Kind.EARLIER_VERSION


def rewritten_in_place(agent: str) -> bool:
    """Whether the agent's CLI rewrites session files whole (one-document files)."""
    return agent_for(agent).documents is not None


def keep_earlier_version(session: Session, f: BinaryIO) -> str:
    """Keep the bytes the session's pieces hold before the file `f` (read again from its
    start) replaces them; "" when kept or nothing needs keeping, else why not. The caller
    holds the transaction."""
    if not rewritten_in_place(session.agent):
        return ""
    size = archived_end(session)
    if not size:
        return ""
    if size > BACKUP_LIMIT:
        return (
            f"{session.path}: its earlier version ({size} bytes) is over the limit of "
            f"{BACKUP_LIMIT} bytes; not kept"
        )
    try:
        with archive_open(session) as held:
            old = held.read()  # each piece checked against its digest
    except ArchiveError as exc:
        return f"{session.path}: its earlier version was not kept ({exc})"
    f.seek(0)
    starts_with_old = f.read(len(old)) == old
    f.seek(0)
    if starts_with_old:
        return ""
    row = ArchivedFile(
        session=session,
        kind=EARLIER,
        name=digest(old),
        length=len(old),
        data=zstd.compress(old, level=LEVEL),
        digest=digest(old),
    )
    ArchivedFile.objects.bulk_create([row], ignore_conflicts=True)
    return ""


def earlier_versions(session: Session) -> list[ArchivedFile]:
    """The session file's earlier versions the archive keeps (no data), oldest first."""
    if not rewritten_in_place(session.agent):
        return []  # no query for a CLI that only appends
    return list(
        ArchivedFile.objects.filter(session=session, kind=EARLIER).defer("data").order_by("pk")
    )


def earlier_version_bytes(session: Session, name: str) -> bytes | None:
    """One earlier version's bytes, checked (`ArchiveCorrupt` if they differ); None: none."""
    row = ArchivedFile.objects.filter(session=session, kind=EARLIER, name=name).first()
    return None if row is None else archived_file_bytes(row)
