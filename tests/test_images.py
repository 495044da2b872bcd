"""Images in transcripts: shown as images, loaded by URL from the session file, checked."""

from __future__ import annotations

import base64
import re
from pathlib import Path

import orjson
import pytest

from sessions_app.models import Session
from sessions_app.services.importing import sessions_import

from .facts import MADE_ROOT, SCREENSHOTS

SHOTS_ID = "2c1d3e4f-5061-4b72-8c83-a4b5c6d7e8f9"
DAIN = "public/claude/-Users-dain-workspace-claude-code-log-sample"
DAIN_ID = "0d3a8e6f-290f-4105-a327-a2496e5e2a83"
IMG_RE = re.compile(r'<img class="inline-image"[^>]*src="([^"]+)"[^>]*alt="([^"]*)"')


def image_blocks(path: Path, line: int) -> list[dict]:
    """The image blocks of line `line` (0-based), nested ones included, in file order."""
    found: list[dict] = []

    def walk(value: object) -> None:
        if isinstance(value, dict):
            if value.get("type") == "image":
                found.append(value["source"])
                return
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    walk(orjson.loads(path.read_bytes().splitlines()[line])["message"]["content"])
    return found


@pytest.fixture
def shots(corpus: Path) -> Path:
    assert not sessions_import(roots=[corpus / MADE_ROOT]).errors
    return corpus / SCREENSHOTS


@pytest.mark.django_db
def test_a_pasted_screenshot_is_an_img_by_url_and_the_page_stays_small(shots: Path, client) -> None:
    response = client.get(f"/sessions/{SHOTS_ID}/")
    html = response.content.decode()
    [shot] = image_blocks(shots, 0)
    assert shot["data"][:200] not in html and "base64," not in html
    assert "Cut here" not in html
    images = IMG_RE.findall(html)
    assert images[0] == (
        f"/sessions/{SHOTS_ID}/records/0/images/0",
        "image in prompt (PNG, 296 KB)",
    )
    # The Read of an image: its result's image, inside the tool_result block.
    assert (f"/sessions/{SHOTS_ID}/records/2/images/0", "image from Read (PNG, 1 KB)") in images
    assert len(images) == 2  # the SVG is never drawn
    assert len(response.content) < 100_000  # the 405 KB of base64 stayed in the file


@pytest.mark.django_db
def test_the_image_url_answers_its_exact_bytes_privately_cached(shots: Path, client) -> None:
    [shot] = image_blocks(shots, 0)
    url = f"/sessions/{SHOTS_ID}/records/0/images/0"
    response = client.get(url)
    assert response.status_code == 200
    assert response.content == base64.b64decode(shot["data"])
    assert response["Content-Type"] == "image/png"
    assert response["Cache-Control"] == "private, no-cache"
    assert response["X-Content-Type-Options"] == "nosniff"
    csp = response["Content-Security-Policy"]
    assert "default-src 'none'" in csp and "img-src 'self'" in csp and "script-src" not in csp
    again = client.get(url, HTTP_IF_NONE_MATCH=response["ETag"])
    assert again.status_code == 304 and again.content == b""
    [icon] = image_blocks(shots, 2)
    assert client.get(f"/sessions/{SHOTS_ID}/records/2/images/0").content == base64.b64decode(
        icon["data"]
    )


@pytest.mark.django_db
def test_an_image_whose_file_changed_is_not_served(shots: Path, client) -> None:
    url = f"/sessions/{SHOTS_ID}/records/0/images/0"
    raw = shots.read_bytes()
    at = raw.index(b'"data":"') + 8 + 1000
    # Same length, other bytes: only the digest can tell.
    shots.write_bytes(raw[:at] + (b"A" if raw[at : at + 1] != b"A" else b"B") + raw[at + 1 :])
    response = client.get(url)
    assert response.status_code == 409 and b"changed since it was imported" in response.content
    assert response["Content-Type"].startswith("text/plain")
    shots.write_bytes(raw[:100])  # cut short: the record is not there any more
    assert client.get(url).status_code == 409


@pytest.mark.django_db
def test_only_png_jpeg_gif_and_webp_are_served(shots: Path, client) -> None:
    [svg] = image_blocks(shots, 4)
    assert svg["media_type"] == "image/svg+xml"
    response = client.get(f"/sessions/{SHOTS_ID}/records/4/images/0")
    assert response.status_code == 415 and b"<svg" not in response.content
    assert response["Content-Type"].startswith("text/plain")
    for url in (
        f"/sessions/{SHOTS_ID}/records/4/images/1",  # no second image
        f"/sessions/{SHOTS_ID}/records/99/images/0",  # no such record
        f"/sessions/{SHOTS_ID}/records/1/images/0",  # a record without images
        "/sessions/00000000-0000-4000-8000-000000000000/records/0/images/0",
    ):
        assert client.get(url).status_code == 404, url


@pytest.mark.django_db
def test_the_size_cap_is_configurable(shots: Path, client, settings) -> None:
    settings.BRANCHBOARD_MAX_IMAGE_BYTES = 100_000
    response = client.get(f"/sessions/{SHOTS_ID}/records/0/images/0")
    assert response.status_code == 413
    assert client.get(f"/sessions/{SHOTS_ID}/records/2/images/0").status_code == 200


@pytest.mark.django_db
def test_the_real_screenshot_of_the_corpus_is_shown(corpus: Path, client) -> None:
    # A 1 MB pasted image of Claude Code 1.0.43: shown as "[image]" and a cut before.
    sessions_import(roots=[corpus / "public" / "claude"])
    session = Session.objects.get(session_id=DAIN_ID)
    line = next(
        n
        for n, raw in enumerate((corpus / DAIN / f"{DAIN_ID}.jsonl").read_bytes().splitlines())
        if b'"type":"image"' in raw
    )
    turn = session.records.get(line=line).turn
    html = client.get(f"/sessions/{DAIN_ID}/?after={turn - 1}").content.decode()
    assert f'id="prompt-{turn}"' in html
    url = f"/sessions/{DAIN_ID}/records/{line}/images/0"
    assert f'src="{url}"' in html and "and 1 image" not in html
    [block] = image_blocks(corpus / DAIN / f"{DAIN_ID}.jsonl", line)
    assert client.get(url).content == base64.b64decode(block["data"])


@pytest.mark.django_db
def test_a_self_contained_export_keeps_its_images_inline(shots: Path, client) -> None:
    page = b"".join(client.get(f"/sessions/{SHOTS_ID}/export.html").streaming_content).decode()
    assert 'src="data:image/png;base64,iVBOR' in page and "/images/" not in page
    md = b"".join(client.get(f"/sessions/{SHOTS_ID}/export.md").streaming_content).decode()
    assert "[image: image/png, 296 KB]" in md


@pytest.mark.django_db
def test_qwen_inline_data_images_are_served_too(tmp_path: Path, client) -> None:
    sid = "3d2e4f50-6172-4c83-9d94-b5c6d7e8f90a"
    png = base64.b64decode(
        "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
    )
    record = {
        "uuid": "q1",
        "parentUuid": None,
        "sessionId": sid,
        "timestamp": "2026-01-01T00:00:00.000Z",
        "type": "user",
        "cwd": "/work/q",
        "version": "0.24.4",
        "message": {
            "role": "user",
            "parts": [
                {"text": "what is this?"},
                {"inlineData": {"mimeType": "image/png", "data": base64.b64encode(png).decode()}},
            ],
        },
    }
    reply = {**record, "uuid": "q2", "parentUuid": "q1", "type": "assistant"}
    reply["message"] = {"role": "model", "parts": [{"text": "A dot."}]}
    folder = tmp_path / "qwen" / "-work-q" / "chats"
    folder.mkdir(parents=True)
    (folder / f"{sid}.jsonl").write_bytes(
        orjson.dumps(record) + b"\n" + orjson.dumps(reply) + b"\n"
    )
    assert not sessions_import(roots=[tmp_path / "qwen"]).errors
    html = client.get(f"/sessions/{sid}/").content.decode()
    assert f'src="/sessions/{sid}/records/0/images/0"' in html
    assert client.get(f"/sessions/{sid}/records/0/images/0").content == png
