"""Usage of the fixture corpus: each session's CSV is the whole session, as its page counts it."""

from __future__ import annotations

import csv
import io
from decimal import Decimal
from pathlib import Path

import pytest
from django.test import Client

from sessions_app.models import Session
from sessions_app.selectors.usage.sessions import session_usage
from sessions_app.services.usage import usage_refresh

pytestmark = pytest.mark.django_db
DEMO = "fe5e1c67-53e7-4862-81ae-d0e013e3270b"  # 1.0.98: inline sidechains in the main file
FORKS = "ff61fa45-6bd0-4f30-be46-c8dcac5a359b"  # 2.1.328: an in-CLI rewind left a branch


def _rows(client: Client, sid: str) -> list[dict[str, str]]:
    response = client.get(f"/sessions/{sid}/usage.csv")
    assert response.status_code == 200
    return list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))


@pytest.mark.parametrize("sid", [DEMO, FORKS])
def test_the_session_csv_adds_up_to_the_session_usage(
    imported: Path, client: Client, sid: str
) -> None:
    assert not usage_refresh().errors
    session = Session.objects.get(session_id__startswith=sid[:8], is_subagent=False)
    rows = _rows(client, str(session.session_id))
    total, _ = session_usage(session)
    assert sum(int(r["messages"]) for r in rows) == total.messages
    assert sum(int(r["output_tokens"]) for r in rows) == total.output
    assert sum(Decimal(r["cost_usd"]) for r in rows) == pytest.approx(
        total.cost, abs=Decimal("1e-5")
    )
    parts = {r["part"] for r in rows}
    assert "active branch" in parts
    if sid == DEMO:
        # The old layout's subagents write inline: their messages are the sidechain's.
        assert "sidechain" in parts
        side = sum(int(r["messages"]) for r in rows if r["part"] == "sidechain")
        assert side > 0
    else:
        assert "abandoned branch" in parts


def test_a_subagent_file_is_part_of_its_session(imported: Path, client: Client) -> None:
    assert not usage_refresh().errors
    session = Session.objects.get(session_id__startswith="4d5611e5", is_subagent=False)
    rows = _rows(client, str(session.session_id))
    parts: dict[str, int] = {}
    for row in rows:
        parts[row["part"]] = parts.get(row["part"], 0) + int(row["messages"])
    # Its two subagents' files; the progress copies of a2898e3's messages count there, once.
    assert parts.get("subagent a2898e3") and parts.get("subagent acompact-e1f845")
    total, _ = session_usage(session)
    assert sum(parts.values()) == total.messages
