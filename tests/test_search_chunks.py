"""A page opened from a search hit keeps the searched words (`hl`) in the links to the rest
of a long turn, so the words in the chunks loaded on scroll are marked too."""

from __future__ import annotations

import html
import re
from pathlib import Path

from sessions_app.services.importing import sessions_import
from sessions_app.services.searching import search_refresh

from .factories import assistant_record, jsonl, user_record

LONG_SID = "5e6f7a8b-9c0d-4e1f-8a2b-3c4d5e6f7a8b"
WORD = "zanzibarquux"


def long_turn_file(root: Path, hits: tuple[int, ...]) -> Path:
    """A session of one turn of 400 long replies; the replies numbered in `hits` hold WORD."""
    records = [user_record("write a long story", sid=LONG_SID)]
    for n in range(400):
        text = f"part {n} " + "lorem ipsum dolor sit amet " * 60
        if n in hits:
            text += f" the word {WORD} is here"
        records.append(assistant_record(text, sid=LONG_SID, parent=records[-1]["uuid"]))
    folder = root / "-work-long"
    folder.mkdir(parents=True)
    path = folder / f"{LONG_SID}.jsonl"
    path.write_bytes(jsonl(records))
    return path


def _more_links(page: str) -> list[str]:
    """The URLs of a page's "more" element: what htmx loads and the plain link."""
    more = re.search(r'<div class="more" hx-get="([^"]+)"[^>]*>\s*<a href="([^"]+)"', page)
    assert more, "the page goes on in a chunk"
    return [html.unescape(u) for u in more.groups()]


def test_the_chunks_of_a_long_turn_opened_from_a_hit_carry_the_searched_words(
    tmp_path: Path, db, client
) -> None:
    long_turn_file(tmp_path / "root", hits=(150, 390))
    sessions_import(roots=[tmp_path / "root"])
    assert not search_refresh().errors
    found = client.get("/search/", {"q": WORD}).content.decode()
    link = re.search(rf'href="(/sessions/{LONG_SID}/\?[^"]+)"', found)
    assert link, found
    opened = client.get(html.unescape(link.group(1)).split("#")[0]).content.decode()
    fetched, plain = _more_links(opened)
    assert f"hl={WORD}" in fetched and f"hl={WORD}" in plain
    # The chunk loaded on scroll passes the words on to the chunk after it.
    chunk = client.get(fetched, headers={"HX-Request": "true"}).content.decode()
    assert "<html" not in chunk
    assert all(f"hl={WORD}" in url for url in _more_links(chunk))


def test_searched_words_in_a_chunk_url_are_passed_on_encoded_and_bounded(
    tmp_path: Path, db, client
) -> None:
    long_turn_file(tmp_path / "root", hits=())
    sessions_import(roots=[tmp_path / "root"])
    words = '"a&b" <script>x</script>\x00 ' + "y" * 900
    page = client.get(f"/sessions/{LONG_SID}/", {"hl": words}).content.decode()
    fetched, plain = _more_links(page)
    assert "<script>x" not in page
    for url in (fetched, plain):
        hl = re.search(r"[?&]hl=([^&]*)", url)
        assert hl and "%26b%22" in hl.group(1) and "%00" not in hl.group(1)
        assert len(hl.group(1)) < 700, "cut to the length of a search"


def test_a_page_opened_without_searched_words_has_no_hl_in_its_chunk_urls(
    tmp_path: Path, db, client
) -> None:
    long_turn_file(tmp_path / "root", hits=())
    sessions_import(roots=[tmp_path / "root"])
    page = client.get(f"/sessions/{LONG_SID}/").content.decode()
    assert all("hl=" not in url for url in _more_links(page))
