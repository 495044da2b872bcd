"""What a search shows of the hits on its page: each one's snippet, and its copies in forks."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.db import connection

from ...formats.markup import tags_removed
from ...formats.search_text import snippet
from ...models import Record, SearchText
from ...rendering import strip_ansi

if TYPE_CHECKING:
    from . import Hit


def fill_snippets(seen: dict[int, Hit], ids: list[int], terms: list[str], window: int) -> None:
    """Each shown hit's part and snippet, from a window of its text around the first match."""
    if not ids:
        return
    table = SearchText._meta.db_table
    if connection.vendor == "postgresql":
        position = "strpos(folded, lower(%s))"  # lower-cased once, when it was stored
    else:
        position = "instr(lower(text), lower(%s))"
    marks = ", ".join(["%s"] * len(ids))
    sql = (
        f"SELECT id, part, substr(text, max_start, {window}), max_start > 1, "  # noqa: S608
        f"length(text) > max_start + {window} - 1 FROM (SELECT id, part, text, "
        f"CASE WHEN {position} > 100 THEN {position} - 100 ELSE 1 END AS max_start "
        f"FROM {table} WHERE id IN ({marks})) AS found"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [terms[0], terms[0], *ids])
        for text_id, part, around, cut_before, cut_after in cursor.fetchall():
            hit = seen[text_id]
            hit.part = part
            # The CLI's markup tags are no words of anyone's, nor a terminal's escapes (the
            # transcript strips them too): not in the snippet.
            piece, spans = snippet(tags_removed(strip_ansi(around)), terms)
            if cut_before and not piece.startswith("…"):
                piece, spans = "…" + piece, [(s + 1, e + 1) for s, e in spans]
            if cut_after and not piece.endswith("…"):
                piece += "…"
            hit.snippet, hit.marks = piece, spans


def count_copies(seen: dict[int, Hit], ids: list[int]) -> None:
    """How many other sessions hold each shown text (the forks that copied it)."""
    if not ids:
        return
    record = Record._meta.db_table
    marks = ", ".join(["%s"] * len(ids))
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT search_text_id, COUNT(DISTINCT session_id) FROM {record} "  # noqa: S608
            f"WHERE search_text_id IN ({marks}) GROUP BY search_text_id",
            ids,
        )
        for text_id, sessions in cursor.fetchall():
            seen[text_id].also_in = max(0, sessions - 1)
