"""The Markdown export loads nothing from elsewhere: a remote image becomes a link.

A Markdown viewer fetches `![x](https://host/…)` from that host as soon as the file is
opened (the host learns who read the session, and when), while the pages refuse remote
images. So the export writes each remote image as the link `[x](https://host/…)`; an
image held in a `data:` URL loads nothing and may stay; code is left as it was.
"""

from __future__ import annotations

import uuid
from html.parser import HTMLParser
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from sessions_app.services.importing import sessions_import

from .factories import one_turn, write_session

pytestmark = pytest.mark.django_db

PIXEL = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYAAAAAMAASsJTYQAAAAASUVORK5CYII="


class _Elements(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.images: list[str] = []
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "img":
            self.images.append(found.get("src") or "")
        elif tag == "a":
            self.links.append(found.get("href") or "")


def _export(client, root: Path, prompt: str, reply: str) -> str:
    sid = str(uuid.uuid4())
    write_session(root / "-code", one_turn(sid, prompt, reply, cwd="/code"))
    sessions_import(roots=[root])
    response = client.get(f"/sessions/{sid}/export.md")
    assert response.status_code == 200
    return b"".join(response.streaming_content).decode()


def _viewed(markdown: str) -> _Elements:
    """What a Markdown viewer (CommonMark, raw HTML on) makes of the export."""
    found = _Elements()
    found.feed(MarkdownIt("commonmark", {"html": True}).render(markdown))
    return found


def test_remote_images_become_links_in_the_markdown_export(client, tmp_path: Path) -> None:
    reply = "\n\n".join(
        [
            "Here: ![chart](https://evil.example/inline.png) and ![ref][r].",
            "[![badge](https://evil.example/badge.svg)](https://example.org/ci)",
            '![titled](<https://evil.example/angle.png> "a title")',
            "Inline data stays: ![dot](" + PIXEL + ")",
            "`![code](https://evil.example/code.png)` is code, as is",
            "```\n![fenced](https://evil.example/fenced.png)\n```",
            "[r]: https://evil.example/reference.png",
        ]
    )
    markdown = _export(client, tmp_path, "look ![t](https://evil.example/prompt.png)", reply)
    seen = _viewed(markdown)
    assert all(src.startswith("data:") for src in seen.images), seen.images
    assert PIXEL in seen.images  # a data: image loads nothing: kept
    for where in ("inline", "reference", "badge", "angle", "prompt"):
        assert f"https://evil.example/{where}" in " ".join(seen.links), (where, markdown)
    assert "[chart](https://evil.example/inline.png)" in markdown
    # Code is shown as it was written.
    assert "`![code](https://evil.example/code.png)`" in markdown
    assert "```\n![fenced](https://evil.example/fenced.png)\n```" in markdown


def test_a_title_holding_a_remote_image_is_a_link_in_the_export(client, tmp_path: Path) -> None:
    markdown = _export(client, tmp_path, "![logo](https://evil.example/title.png) hi", "ok")
    heading = markdown.splitlines()[0]
    assert heading.startswith("# ") and "https://evil.example/title.png" in heading
    seen = _viewed(markdown)
    assert seen.images == [] and "https://evil.example/title.png" in seen.links
