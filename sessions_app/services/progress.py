"""The importer's progress as the pages show it: the only writer of `ImportStatus`.

A pass over the roots reports each file as it goes, then search and usage report the
sessions they catch up with. Writes are at most one every `INTERVAL` seconds (and at
each phase's start and end), outside the import's own transactions, and a write that
fails (a lock held by a page, say) is skipped: progress is shown, never waited for.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Sequence

from django.db import DatabaseError
from django.utils import timezone

from ..models.import_status import ImportStatus
from .discovery import SessionFile

IMPORTER = "importer"
INTERVAL = 0.5  # seconds between two writes of progress
# Told (sessions done, sessions to do) as search or usage catches up.
CatchUp = Callable[[int, int], None]


class ImportTracker:
    """The progress of one importer's passes, written to its `ImportStatus` row."""

    def __init__(self, name: str = IMPORTER) -> None:
        self.name = name
        self._fields: dict[str, object] = {}
        self._written_at = 0.0

    def starting(self) -> None:
        """A pass over every file starts: running while its files are looked for (a first
        import's second or more, when the pages had nothing to say but "no sessions")."""
        self._write(
            force=True,
            phase=ImportStatus.RECORDS,
            started_at=timezone.now(),
            files_total=0,
            files_done=0,
            bytes_total=0,
            bytes_done=0,
            catch_up_total=0,
            catch_up_done=0,
        )

    def begin(self, files: Sequence[SessionFile]) -> None:
        """A pass starts over these files (sizes as they are now)."""
        total = 0
        for source in files:
            with contextlib.suppress(OSError):  # gone already: the import reports it
                total += os.lstat(source.path).st_size
        self._write(
            force=True,
            phase=ImportStatus.RECORDS,
            started_at=timezone.now(),
            files_total=len(files),
            files_done=0,
            bytes_total=total,
            bytes_done=0,
            catch_up_total=0,
            catch_up_done=0,
        )

    def advance(self, size: int) -> None:
        """One more file of the pass is done (imported or found unchanged)."""
        done = int(self._fields.get("files_done", 0)) + 1  # type: ignore[call-overload]
        read = int(self._fields.get("bytes_done", 0)) + size  # type: ignore[call-overload]
        self._write(files_done=done, bytes_done=read)

    def catch_up(self, phase: str, done: int, total: int) -> None:
        """Search or usage has caught up with `done` of the `total` sessions behind."""
        self._write(force=done in (0, total), phase=phase, catch_up_done=done, catch_up_total=total)

    def end(self) -> None:
        """The pass and its catching up are whole."""
        self._write(force=True, phase=ImportStatus.IDLE, finished_at=timezone.now())

    def _write(self, *, force: bool = False, **fields: object) -> None:
        self._fields.update(fields)
        now = time.monotonic()
        if not force and now - self._written_at < INTERVAL:
            return
        try:
            ImportStatus.objects.update_or_create(name=self.name, defaults=dict(self._fields))
        except DatabaseError:
            return  # shown at the next write
        self._written_at = now
