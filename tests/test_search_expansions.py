"""A slash command's expansion (Claude Code 1.0.x wrote it into the prompt as JSON) is
searched and shown in snippets as the page shows it: words, not JSON escapes."""

from __future__ import annotations

import importlib
import shutil
from pathlib import Path

from django.apps import apps as django_apps

from sessions_app.formats import COMMAND, PROMPT
from sessions_app.models import Record, SearchText, Session
from sessions_app.selectors.search import SearchQuery, search
from sessions_app.services.importing import sessions_import
from sessions_app.services.searching import search_refresh

from .corpus import FIXTURES
from .facts import INIT_1_0, MADE_ROOT

INIT_SID = Path(INIT_1_0).stem


def _import_init(tmp_path: Path) -> Path:
    """The 1.0.x `/init` session alone, imported into a temporary root."""
    root = tmp_path / "claude"
    source = FIXTURES / INIT_1_0
    folder = root / source.parent.name
    folder.mkdir(parents=True)
    shutil.copy2(source, folder / source.name)
    assert MADE_ROOT in INIT_1_0
    assert not sessions_import(roots=[root]).errors
    return root


def _snippets(query: str) -> list[str]:
    found = search(SearchQuery(query))
    return [hit.snippet for group in found.groups for hit in group.hits]


def test_a_1_0_slash_command_expansion_is_found_and_shown_in_words(tmp_path: Path, db) -> None:
    _import_init(tmp_path)
    assert not search_refresh().errors
    snippets = _snippets('"big picture" architecture')
    assert snippets, "the expansion's words are found"
    for text in snippets:
        assert "\\" not in text and "{" not in text and '"type"' not in text, text
        assert '"big picture"' in text, "the quotes the expansion holds, decoded"
    # The escaped form is what the page does not show: it is not found.
    assert not _snippets('"\\"big picture\\""')


def test_texts_of_prompts_indexed_raw_are_indexed_again_in_words(tmp_path: Path, db) -> None:
    _import_init(tmp_path)
    assert not search_refresh().errors
    session = Session.objects.get(session_id=INIT_SID)
    held = Record.objects.filter(session=session, kind__in=(PROMPT, COMMAND))
    prompt = held.filter(search_text__text__contains="big picture").first()
    assert prompt is not None and prompt.search_text is not None
    # What an earlier release stored: the record's raw text, JSON escapes and all.
    SearchText.objects.filter(pk=prompt.search_text.pk).update(
        text='<command-contents>{\n "text": "the \\"big picture\\""}</command-contents>'
    )
    migration = importlib.import_module("sessions_app.migrations.0021_search_shown_prompts")
    migration.index_again(django_apps, None)
    assert not search_refresh().errors
    prompt.refresh_from_db()
    assert prompt.search_text is not None
    assert (
        "\\" not in prompt.search_text.text and "<command-contents>" not in prompt.search_text.text
    )
    assert '"big picture"' in prompt.search_text.text
