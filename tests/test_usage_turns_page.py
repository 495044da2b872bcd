"""The transcript's "Usage per turn" panel: its rows come when it is opened, so a page of a
long session is no heavier than a page of a short one (bench_pages: a 5,000-turn
session's first paint was 993 KB and 366 ms, 94% of it this table, on every page)."""

from __future__ import annotations

import re
from pathlib import Path

import orjson
import pytest
from django.test import Client

from sessions_app.models import Usage
from sessions_app.pages.usage.charts import TURNS_PAGE
from sessions_app.pricing import LONG_CONTEXT
from sessions_app.selectors.usage import Totals
from sessions_app.selectors.usage.sessions import session_usage

from .test_usage import imported, session_with

pytestmark = pytest.mark.django_db


def _rows(html: str) -> int:
    return len(re.findall(r'<tr><td><a href="\?after=\d+#turn-\d+">', html))


def test_a_long_sessions_page_is_no_heavier_than_a_short_ones(
    tmp_path: Path, client: Client
) -> None:
    short = imported(tmp_path, session_with(tmp_path, [(f"short {n}", [10]) for n in range(20)]))
    long = imported(tmp_path, session_with(tmp_path, [(f"long {n}", [10]) for n in range(600)]))
    pages = {}
    for session in (short, long):
        page = client.get(f"/sessions/{session.session_id}/").content.decode()
        assert 'id="usage-turns"' in page and "Usage per turn" in page
        assert _rows(page) == 0  # the rows come when the panel is opened
        url = f"/sessions/{session.session_id}/usage-turns/"
        assert f'hx-get="{url}"' in page
        pages[session.turn_count] = len(page)
    # The same page size within a few bytes per prompt: nothing per turn of the session.
    assert pages[600] < pages[20] * 1.2, pages

    panel = client.get(f"/sessions/{long.session_id}/usage-turns/", headers={"HX-Request": "true"})
    assert panel.status_code == 200
    body = panel.content.decode()
    assert _rows(body) == TURNS_PAGE and "<svg" in body and "<html" not in body
    assert 'href="?after=0#turn-1"' in body


def test_the_usage_per_turn_panel_is_paged(tmp_path: Path, client: Client) -> None:
    """A page of the panel holds TURNS_PAGE turns, bounded in size, and links the next: a
    25,000-turn session's whole table was 6.9 MB and 13 s in one answer."""
    long = imported(tmp_path, session_with(tmp_path, [(f"long {n}", [10]) for n in range(450)]))
    url = f"/sessions/{long.session_id}/usage-turns/"
    seen: list[int] = []
    pages = 0
    next_url: str | None = url
    while next_url:
        pages += 1
        assert pages <= 3, "more pages than 450 turns make"
        body = client.get(next_url, headers={"HX-Request": "true"}).content.decode()
        assert "<html" not in body and len(body) < 150_000, len(body)
        turns = [int(n) for n in re.findall(r'<tr><td><a href="\?after=\d+#turn-(\d+)">', body)]
        assert len(turns) == min(TURNS_PAGE, 450 - len(seen)) and "<svg" in body
        seen += turns
        found = re.search(r'href="([^"]+)" hx-get="\1" hx-target="closest .usage-turns-body" '
                          r'id="usage-turns-next"', body)  # fmt: skip
        next_url = found.group(1).replace("&amp;", "&") if found else None
        if pages > 1:
            assert 'id="usage-turns-previous"' in body
    assert seen == list(range(1, 451)) and pages == 3
    # A turn past the end, or garbage, is the nearest page there is.
    assert _rows(client.get(url + "?from=999999").content.decode()) == 1
    assert _rows(client.get(url + "?from=abc").content.decode()) == TURNS_PAGE


def test_the_panel_of_an_unknown_session_is_404_and_it_only_answers_reads(
    tmp_path: Path, client: Client
) -> None:
    session = imported(tmp_path, session_with(tmp_path, [("hello", [10])]))
    missing = client.get("/sessions/00000000-0000-4000-8000-000000000000/usage-turns/")
    assert missing.status_code == 404
    assert client.post(f"/sessions/{session.session_id}/usage-turns/").status_code == 405
    assert _rows(client.get(f"/sessions/{session.session_id}/usage-turns/").content.decode()) == 1


def test_session_totals_summed_per_model_and_day_equal_one_price_per_message(
    tmp_path: Path,
) -> None:
    """The header's totals price messages summed per model, day and tier: the same cost,
    to the last digit, as pricing each message, odd messages included."""
    path = session_with(tmp_path, [(f"turn {n}", [10 + n]) for n in range(6)])
    lines = [orjson.loads(line) for line in path.read_bytes().splitlines()]
    replies = [r for r in lines if r["type"] == "assistant"]
    replies[1]["timestamp"] = "2026-03-02T10:00:00.000Z"  # another day
    replies[2]["message"]["model"] = "claude-opus-4-1-20250805"  # another model
    replies[3]["message"]["usage"]["cache_creation"] = {"ephemeral_1h_input_tokens": 5000}
    replies[4]["message"]["usage"]["cache_read_input_tokens"] = LONG_CONTEXT + 1  # long tier
    replies[5]["message"]["model"] = "no-such-model-9"  # no price
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in lines))
    session = imported(tmp_path, path)

    total, per_model = session_usage(session)
    want, want_models = Totals(), dict[str, Totals]()
    for row in Usage.objects.filter(session=session):
        counts = (
            row.input_tokens, row.output_tokens, row.cache_write_tokens,
            row.cache_read_tokens, row.cache_write_1h_tokens, 1,
        )  # fmt: skip
        long = row.input_tokens + row.cache_write_tokens + row.cache_read_tokens > LONG_CONTEXT
        for into in (want, want_models.setdefault(row.model, Totals())):
            into.add(row.model, row.at.date(), long, counts)
    assert want.messages == 6 and want.unpriced and len(want_models) == 3
    assert total == want and per_model == want_models
