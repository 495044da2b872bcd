"""The importer's progress, which the pages show while it works (services.progress)."""

from __future__ import annotations

from django.db import models


class ImportStatus(models.Model):
    """One importer's progress: its pass over the roots, then search and usage catching up.

    Written only by `services.progress`; one row per importer (`name`), so a page
    reads it with one indexed query.
    """

    RECORDS, SEARCH, USAGE, IDLE = "records", "search", "usage", "idle"
    PHASES = [(p, p) for p in (RECORDS, SEARCH, USAGE, IDLE)]

    name = models.CharField(max_length=32, primary_key=True)
    phase = models.CharField(max_length=16, choices=PHASES, default=IDLE)
    started_at = models.DateTimeField(null=True, blank=True)  # of the pass under way
    finished_at = models.DateTimeField(null=True, blank=True)  # of the last whole pass
    files_total = models.PositiveIntegerField(default=0)
    files_done = models.PositiveIntegerField(default=0)
    bytes_total = models.BigIntegerField(default=0)
    bytes_done = models.BigIntegerField(default=0)
    # Sessions whose lines search (or usage) has caught up with, of those to do.
    catch_up_total = models.PositiveIntegerField(default=0)
    catch_up_done = models.PositiveIntegerField(default=0)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"{self.name}: {self.phase}"
