"""The search index: one row per distinct searchable text (services.searching).

A record a fork copied keeps its uuid, so its text is stored once and every
record holding it points at the same row (`Record.search_text`): a search finds
it once, and says how many other sessions hold it. The words are indexed by the
database itself: SQLite's FTS5 with its trigram tokenizer (table `search_fts`,
kept in step with this one by triggers), PostgreSQL's trigram index on `folded`, a
generated lower-cased copy of `text` that only the database knows (migration 0022;
`words`, the generated tsvector of migration 0007, is no longer searched).
"""

from __future__ import annotations

from django.db import models
from django.db.models import Q


class SearchText(models.Model):
    """One record's searchable text; `uuid` is the record's, "" for records without one."""

    uuid = models.CharField(max_length=64, blank=True)
    part = models.CharField(max_length=16)  # formats.search_text: prompt, reply, output ...
    text = models.TextField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["uuid"], condition=~Q(uuid=""), name="unique_search_text_uuid"
            )
        ]

    def __str__(self) -> str:
        return f"{self.part}: {self.text[:60]}"
