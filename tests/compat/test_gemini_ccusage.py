"""Gemini CLI usage per session against `ccusage gemini session` (20.0.24 reads
`~/.gemini/tmp/*/chats`), on the Gemini fixtures and the public 0.4x JSONL chats
(/work/shared/corpus/public/gemini): the same uncached input, cached input and cost per
session. ccusage's `outputTokens` leave the thoughts out, though its cost bills them as output
(and its `totalTokens` counts them): ours hold them (as reasoning, of the output), so our
output is theirs plus the thoughts, counted straight from the files."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from decimal import Decimal
from pathlib import Path

import orjson
import pytest

from sessions_app.models import Session
from sessions_app.selectors.usage.sessions import session_usage
from sessions_app.services.importing import sessions_import
from sessions_app.services.usage import usage_refresh
from tests.compat.clis import CompatError, ensure_ccusage

pytestmark = [pytest.mark.compat, pytest.mark.django_db]

FIXTURE = Path(__file__).parent.parent / "fixtures" / "gemini"
PUBLIC = Path("/work/shared/corpus/public/gemini")


@pytest.fixture(scope="module")
def ccusage() -> Path:
    if shutil.which("npm") is None:
        pytest.skip("compat: npm is not on PATH, so ccusage cannot be installed")
    try:
        return ensure_ccusage()
    except CompatError as exc:
        pytest.fail(str(exc))


def _home(tmp_path: Path) -> Path:
    """A `.gemini` with the fixtures and, when present, the public JSONL chats."""
    gemini = tmp_path / ".gemini"
    shutil.copytree(FIXTURE, gemini)
    for path in sorted(PUBLIC.glob("tmp/*/chats/*.jsonl")) if PUBLIC.is_dir() else []:
        target = gemini / path.relative_to(PUBLIC)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
    return gemini


def _thoughts(gemini: Path) -> dict[str, int]:
    """Per session id, the thoughts of each reply id once (its largest count), from the files."""
    out: dict[str, dict[str, int]] = {}
    for path in gemini.glob("tmp/*/chats/*.jsonl"):
        lines = path.read_bytes().splitlines()
        session_id = orjson.loads(lines[0]).get("sessionId")
        replies = out.setdefault(session_id, {})
        for line in lines[1:]:
            data = orjson.loads(line)
            if data.get("type") == "gemini" and isinstance(data.get("tokens"), dict):
                count = int(data["tokens"].get("thoughts") or 0)
                replies[data["id"]] = max(count, replies.get(data["id"], 0))
    return {sid: sum(r.values()) for sid, r in out.items()}


def _theirs(ccusage: Path, home: Path) -> dict[str, dict]:
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(home), "TZ": "UTC"}
    proc = subprocess.run(
        [str(ccusage), "gemini", "session", "--offline", "--json", "--timezone", "UTC"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=True,
    )
    return {s["sessionId"]: s for s in json.loads(proc.stdout)["sessions"]}


def test_gemini_usage_per_session_equals_ccusage_but_for_the_thoughts_it_leaves_out(
    ccusage: Path, tmp_path: Path, settings
) -> None:
    gemini = _home(tmp_path)
    settings.SESSION_ROOTS = [gemini / "tmp"]
    sessions_import(roots=[gemini / "tmp"])
    usage_refresh()
    theirs, thoughts = _theirs(ccusage, tmp_path), _thoughts(gemini)

    ours = {}
    for session in Session.objects.filter(agent="gemini"):
        total, _ = session_usage(session)
        if total.messages:
            ours[str(session.session_id)] = total
    assert set(ours) == set(theirs) and len(ours) >= 2
    for session_id, t in ours.items():
        them = theirs[session_id]
        assert (t.input, t.cache_read) == (them["inputTokens"], them["cacheReadTokens"])
        assert t.output == them["outputTokens"] + thoughts[session_id] and t.priced
        assert t.reasoning == thoughts[session_id]
        assert t.tokens == them["totalTokens"], session_id
        # Both price at Google's rates (theirs from LiteLLM's table, ours from genai-prices).
        assert abs(t.cost - Decimal(str(them["totalCost"]))) < Decimal("0.000001"), session_id
