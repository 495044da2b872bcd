"""Reasoning tokens shown where usage is (issue 42, item 1): Codex counts them inside the
output tokens, so they are shown beside the output and priced once, as output."""

from __future__ import annotations

import csv
import io
import shutil
from pathlib import Path

import pytest
from django.test import Client

from sessions_app.models import Session, Usage
from sessions_app.pricing import rates
from sessions_app.selectors.usage import usage_by_day, usage_by_model
from sessions_app.selectors.usage.sessions import family_usage, session_usage, turn_usage
from sessions_app.services.importing import sessions_import
from sessions_app.services.usage import usage_refresh

pytestmark = pytest.mark.django_db(transaction=True)

WILD = Path(__file__).parent / "fixtures/codex_wild/sessions"
PARENT = "019a0000-aaaa-7aaa-8aaa-00000000000a"
REASONING = 320 + 330 + 340  # of the parent's three responses (test_codex_wild_usage)
OUTPUT = 383 + 393 + 403


def _imported(tmp_path: Path, settings) -> Session:
    root = tmp_path / "sessions"
    for path in sorted(WILD.rglob("*.jsonl")):
        if PARENT in path.name:
            copy = root / path.relative_to(WILD)
            copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, copy)
    settings.SESSION_ROOTS = [root]
    sessions_import(roots=[root])
    usage_refresh()
    return Session.objects.get(session_id=PARENT)


def _csv(client: Client, url: str, **params: str) -> list[dict[str, str]]:
    response = client.get(url, params)
    assert response.status_code == 200
    text = b"".join(response.streaming_content).decode()
    return list(csv.DictReader(io.StringIO(text)))


def test_reasoning_tokens_are_summed_and_priced_once_as_output(tmp_path: Path, settings) -> None:
    session = _imported(tmp_path, settings)
    model = usage_by_model()["gpt-5"]
    assert (model.reasoning, model.output) == (REASONING, OUTPUT)
    # The price counts the output tokens alone: the reasoning is inside them.
    rows = Usage.objects.filter(session=session)
    want = sum(
        rates(r.model, r.at.date(), long_context=False).cost(
            r.input_tokens, r.output_tokens, r.cache_write_tokens, r.cache_read_tokens, 0
        )
        for r in rows
    )
    assert model.cost == want > 0
    total, per_model = session_usage(session)
    assert total.reasoning == per_model["gpt-5"].reasoning == REASONING
    assert sum(t.reasoning for _, t in turn_usage(session)) == REASONING
    assert sum(d.total.reasoning for d in usage_by_day()) == REASONING
    assert family_usage({session.pk: session}).total.reasoning == REASONING


def test_the_usage_page_and_csv_show_reasoning_tokens(
    tmp_path: Path, settings, client: Client
) -> None:
    session = _imported(tmp_path, settings)
    page = client.get("/usage/").content.decode()
    assert ">reasoning</th>" in page
    assert f'<td class="reasoning">{REASONING}</td>' in page  # the per-model row
    (row,) = _csv(client, "/usage.csv", by="model")
    assert (row["reasoning_tokens"], row["output_tokens"]) == (str(REASONING), str(OUTPUT))
    days = _csv(client, "/usage.csv", by="day")
    assert sum(int(r["reasoning_tokens"]) for r in days) == REASONING
    parts = _csv(client, f"/sessions/{session.session_id}/usage.csv")
    assert sum(int(r["reasoning_tokens"]) for r in parts) == REASONING
    panel = client.get(f"/sessions/{session.session_id}/usage-turns/").content.decode()
    assert ">reasoning</th>" in panel and "billed as output" in panel
    assert f"{REASONING} reasoning" in panel  # the per-model line
