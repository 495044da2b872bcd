"""The search index: one row per distinct searchable text (services.searching).

A record a fork copied keeps its uuid, so its text is stored once and every
record holding it points at the same row (`Record.search_text`): a search finds
it once, and says how many other sessions hold it. The words are indexed by the
database itself: SQLite's FTS5 with its trigram tokenizer (table `search_fts` in a file of
its own, filled behind the import: services.searching.words, migration 0030),
PostgreSQL's trigram index on `folded`, a generated lower-cased copy of `text` that only
the database knows (migration 0022;
`words`, the generated tsvector of migration 0007, went in 0029: nothing read it), and on
`SearchChunk`, the same folded copy cut into short overlapping pieces (migration 0028).
"""

from __future__ import annotations

from django.db import models
from django.db.models import Q


class SearchText(models.Model):
    """One record's searchable text; `uuid` is the record's, "" for records without one.

    A text is shared by uuid within its namespace only (the sessions' `namespace`): on a
    hub, another machine's record with the same uuid is another record, with its own text.
    """

    # Its records' namespace ("" on this machine's own disk; `user@machine` on a hub).
    namespace = models.CharField(max_length=130, blank=True, default="")
    uuid = models.CharField(max_length=64, blank=True)
    part = models.CharField(max_length=16)  # formats.search_text: prompt, reply, output ...
    text = models.TextField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["namespace", "uuid"],
                condition=~Q(uuid=""),
                name="unique_search_text_namespace_uuid",
            )
        ]

    def __str__(self) -> str:
        return f"{self.part}: {self.text[:60]}"


# PostgreSQL: a text's folded copy is cut into pieces of CHUNK_STEP characters, each
# running CHUNK_OVERLAP characters into the next. A term of at most CHUNK_OVERLAP
# characters starting anywhere in piece n's first CHUNK_STEP characters ends within it,
# so it lies wholly in some piece whenever it is in the text.
CHUNK_STEP = 2000
CHUNK_OVERLAP = 256
# The pieces' trigram index also holds `text_id / CHUNK_BAND`: the newest texts' pieces
# are found without checking older ones.
CHUNK_BAND = 1024


class SearchChunk(models.Model):
    """PostgreSQL: piece `n` of a text's folded copy (`substr(folded, n * CHUNK_STEP + 1,
    CHUNK_STEP + CHUNK_OVERLAP)`), trigram-indexed so a short term is checked against a
    piece instead of the whole text; the table exists on PostgreSQL only (migration 0028)."""

    pk = models.CompositePrimaryKey("text_id", "n")
    text = models.ForeignKey(
        SearchText, on_delete=models.DB_CASCADE, related_name="+", db_index=False
    )
    n = models.IntegerField()
    folded = models.TextField()

    def __str__(self) -> str:
        return f"{self.text_id}/{self.n}: {self.folded[:60]}"


class SearchChunkWaiting(models.Model):
    """PostgreSQL, pieces filled behind the import: a text whose pieces (`SearchChunk`) are
    not made yet. The import queues it with the text, in the same transaction; a thread of
    its own cuts the pieces and takes it off (services.searching.pieces_filling). The table
    exists on PostgreSQL only (migration 0031)."""

    text = models.OneToOneField(
        SearchText, on_delete=models.DB_CASCADE, related_name="+", primary_key=True
    )

    def __str__(self) -> str:
        return f"{self.text_id}: pieces waiting"
