"""What the archive holds: where each session's pieces end, and the archive's size beside its
files'.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import F, Max, Sum

from ...models import ArchivePiece
from ...models.archive import ArchivedFile


def archive_ends(session_ids: list[int] | None = None) -> dict[int, int]:
    """Each archived session's archived end, by session row (one query): every session's,
    or only those of `session_ids` (a watcher's tick names a few files, not the corpus)."""
    pieces = ArchivePiece.objects.all()
    if session_ids is not None:
        pieces = pieces.filter(session_id__in=session_ids)
    rows = pieces.values("session_id").order_by().annotate(end=Max(F("start") + F("length")))
    return {row["session_id"]: int(row["end"]) for row in rows}


@dataclass
class ArchiveSize:
    """What the archive holds: raw bytes of the files, bytes stored, sessions, whole files."""

    raw: int
    stored: int
    sessions: int
    files: int = 0  # whole files kept besides the session files (backups, folders' files)


def archive_size() -> ArchiveSize:
    """The archive's size, for the usage page: session files and the whole files kept."""
    from django.db.models import Count
    from django.db.models.functions import Length

    totals = ArchivePiece.objects.aggregate(
        raw=Sum("length"), stored=Sum(Length("data")), sessions=Count("session", distinct=True)
    )
    # A file the archive names but could not keep (`not_kept`) holds no bytes here.
    files = ArchivedFile.objects.filter(not_kept=None).aggregate(
        raw=Sum("length"), stored=Sum(Length("data")), files=Count("pk")
    )
    return ArchiveSize(
        int(totals["raw"] or 0) + int(files["raw"] or 0),
        int(totals["stored"] or 0) + int(files["stored"] or 0),
        totals["sessions"],
        files["files"],
    )
