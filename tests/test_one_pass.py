"""The import's one read of each line gives what the search and usage passes give from a
second read: the same search texts on the same records, the same usage rows."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

from sessions_app.models import Record, Session, Usage
from sessions_app.services import importing
from sessions_app.services.importing import ImportReport, sessions_import
from sessions_app.services.searching import search_refresh
from sessions_app.services.usage import usage_refresh

pytestmark = pytest.mark.django_db


def _facts() -> tuple[list, list, list]:
    records = Record.objects.exclude(search_text=None).order_by("session__path", "line")
    texts = list(
        records.values_list("session__path", "line", "search_text__part", "search_text__text")
    )
    usage = list(
        Usage.objects.order_by("session__path", "key").values_list(
            "session__path",
            "line",
            "key",
            "model",
            "at",
            "input_tokens",
            "output_tokens",
            "cache_write_tokens",
            "cache_read_tokens",
            "cache_write_1h_tokens",
            "copy",
        )
    )
    lines = list(
        Session.objects.order_by("path").values_list(
            "path", "line_count", "search_lines", "usage_lines"
        )
    )
    return texts, usage, lines


def test_one_read_gives_what_the_passes_give_from_a_second(
    corpus_roots: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    sessions_import(roots=corpus_roots)
    assert Usage.objects.exists() and Record.objects.exclude(search_text=None).exists()
    search_refresh()
    usage_refresh()
    one_read = _facts()
    Session.objects.all().delete()
    assert not Usage.objects.exists()

    # The import without its texts and usage (a hub's commit of a big file), then the passes.
    monkeypatch.setattr(importing, "ImportReport", functools.partial(ImportReport, texts=False))
    sessions_import(roots=corpus_roots)
    assert not Usage.objects.exists() and not Record.objects.exclude(search_text=None).exists()
    search_refresh()
    usage_refresh()

    assert _facts() == one_read
