"""The importer's progress, as the pages show it while it works."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.utils import timezone

from ..models.import_status import ImportStatus
from ..services.searching.words import words_waiting

# A pass whose progress was not written for this long is no longer running (its
# process stopped); a big file is read in far less.
STALE = timedelta(minutes=5)


@dataclass(frozen=True)
class ImportProgress:
    """Where the importer is: reading files, catching up search or usage, or done."""

    phase: str
    running: bool
    finished_at: datetime | None
    files_done: int
    files_total: int
    bytes_done: int
    bytes_total: int
    catch_up_done: int
    catch_up_total: int
    # SQLite: texts stored whose words are not in the search index yet (filled behind).
    words_waiting: int = 0

    @property
    def whole(self) -> bool:
        """Every file read, and search and usage caught up with them."""
        return not self.running and self.finished_at is not None

    @property
    def percent(self) -> int:
        """How far the current phase is, 0-100."""
        if self.phase == ImportStatus.RECORDS:
            done, total = self.bytes_done, self.bytes_total
        else:
            done, total = self.catch_up_done, self.catch_up_total
        return 100 if total <= 0 else min(100, done * 100 // total)

    def as_json(self) -> dict[str, object]:
        return {
            "whole": self.whole,
            "running": self.running,
            "phase": self.phase,
            "files": {"done": self.files_done, "total": self.files_total},
            "bytes": {"done": self.bytes_done, "total": self.bytes_total},
            "sessions_caught_up": {"done": self.catch_up_done, "total": self.catch_up_total},
            "words_waiting": self.words_waiting,
            "finished_at": self.finished_at.isoformat() if self.finished_at else None,
        }


def import_progress(name: str = "importer") -> ImportProgress | None:
    """The importer's progress; None when no importer has run against this database."""
    row = ImportStatus.objects.filter(name=name).first()
    if row is None:
        return None
    running = row.phase != ImportStatus.IDLE and timezone.now() - row.updated_at < STALE
    return ImportProgress(
        phase=row.phase,
        running=running,
        finished_at=row.finished_at,
        files_done=row.files_done,
        files_total=row.files_total,
        bytes_done=row.bytes_done,
        bytes_total=row.bytes_total,
        catch_up_done=row.catch_up_done,
        catch_up_total=row.catch_up_total,
        # Counted only while search catches up: a count of the texts past the watermark.
        words_waiting=words_waiting() if running and row.phase == ImportStatus.SEARCH else 0,
    )
