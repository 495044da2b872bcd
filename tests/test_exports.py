"""Exports: the HTML page carries the pages' styles, and every export streams in bounded memory."""

from __future__ import annotations

import tracemalloc
import uuid
from pathlib import Path

import orjson
import pytest
from django.conf import settings as django_settings
from django.test import Client

from sessions_app.models import Session
from sessions_app.pages import exports
from sessions_app.services.importing import sessions_import

from .test_pages import WEBAPP

pytestmark = pytest.mark.django_db

STATIC = Path(django_settings.BASE_DIR) / "static" / "sessions_app"


def test_an_html_export_holds_the_pages_stylesheets(client: Client, imported: Path) -> None:
    session = Session.objects.get(path=str(imported / WEBAPP))
    response = client.get(f"/sessions/{session.session_id}/export.html")
    page = b"".join(response.streaming_content).decode()
    style = page.split("<style>", 1)[1].split("</style>", 1)[0]
    for name in ("app.css", "highlight.css"):
        css = (STATIC / name).read_text()
        assert len(css) > 500 and css in style, f"{name} is not inlined in the export"


def test_an_html_export_without_its_stylesheet_is_an_error(
    client: Client, imported: Path, settings, tmp_path: Path
) -> None:
    """A stylesheet that cannot be found fails the export before a byte is sent."""
    (tmp_path / "static" / "sessions_app").mkdir(parents=True)
    settings.STATICFILES_DIRS = [tmp_path / "static"]
    session = Session.objects.get(path=str(imported / WEBAPP))
    with pytest.raises(exports.ExportAssetMissing, match=r"app\.css"):
        response = client.get(f"/sessions/{session.session_id}/export.html")
        b"".join(response.streaming_content)


def _one_long_turn(root: Path, calls: int) -> Session:
    """A session of one prompt whose answer makes `calls` tool calls, imported."""
    sid = str(uuid.uuid4())
    records: list[dict] = []

    def add(kind: str, content: object, n: int = 0) -> None:
        message: dict = {"role": kind, "content": content}
        if kind == "assistant":
            message.update(id=f"m{n}", model="claude-test", usage={"input_tokens": 1})
        records.append(
            {
                "type": kind,
                "uuid": str(uuid.uuid4()),
                "parentUuid": records[-1]["uuid"] if records else None,
                "sessionId": sid,
                "timestamp": "2026-01-01T00:00:00.000Z",
                "cwd": "/work/test",
                "isSidechain": False,
                "message": message,
            }
        )

    add("user", "List every file, one call each.")
    for n in range(calls):
        add("assistant", [{"type": "tool_use", "id": f"t{n}", "name": "Bash",
                           "input": {"command": f"ls dir-{n}"}}], n)  # fmt: skip
        add("user", [{"type": "tool_result", "tool_use_id": f"t{n}",
                      "content": f"file-{n}.txt\n" * 20}])  # fmt: skip
    add("assistant", [{"type": "text", "text": "Done."}], calls)
    folder = root / "-work-test"
    folder.mkdir(parents=True)
    path = folder / f"{sid}.jsonl"
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    sessions_import(roots=[root])
    return Session.objects.get(session_id=sid)


def _peak_while_streaming(client: Client, url: str) -> tuple[int, bytes]:
    """The most memory Python held at once while the export streamed, and the export."""
    response = client.get(url)
    assert response.status_code == 200 and response.streaming
    tracemalloc.start()
    try:
        chunks = [len(chunk) for chunk in response.streaming_content]
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak, b"x" * sum(chunks)


@pytest.mark.parametrize("fmt", ["html", "md"])
def test_an_export_streams_in_memory_that_does_not_grow_with_the_session(
    client: Client, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fmt: str
) -> None:
    """One turn of 150 calls and one of 1,500: ten times the records, the same memory.

    The window is made small so that both sessions span several of them."""
    monkeypatch.setattr(exports, "CHUNK_RECORDS", 100, raising=False)
    short = _one_long_turn(tmp_path / "short", 150)
    long = _one_long_turn(tmp_path / "long", 1500)
    peaks, sizes = {}, {}
    for session in (short, long):
        url = f"/sessions/{session.session_id}/export.{fmt}"
        peak, body = _peak_while_streaming(client, url)
        peaks[session.record_count], sizes[session.record_count] = peak, len(body)
    assert sizes[long.record_count] > 5 * sizes[short.record_count], sizes
    assert peaks[long.record_count] < 2 * peaks[short.record_count], peaks


def test_a_turn_longer_than_a_window_is_exported_whole(
    client: Client, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Split across windows, the long turn keeps every call and its result, in order."""
    monkeypatch.setattr(exports, "CHUNK_RECORDS", 100, raising=False)
    session = _one_long_turn(tmp_path, 260)
    md = b"".join(client.get(f"/sessions/{session.session_id}/export.md").streaming_content)
    text = md.decode()
    assert text.count("## Turn 1\n") == 1 and "**User:**\n\nList every file" in text
    assert text.count("## Turn 1 (continued)") == 5
    positions = [text.index(f"`ls dir-{n}`") for n in range(260)]
    assert positions == sorted(positions)
    assert all(text.count(f"file-{n}.txt\n") == 20 for n in range(260))
    assert text.rstrip().endswith("Done.")
    html = b"".join(client.get(f"/sessions/{session.session_id}/export.html").streaming_content)
    page = html.decode()
    assert page.count("Turn 1, continued") == 5
    assert all(f"ls dir-{n}<" in page and f"file-{n}.txt" in page for n in range(260))
