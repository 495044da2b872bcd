"""Codex usage per day against `ccusage codex daily` on rollouts shaped like the public ones
(issue 42): equal, but for a 0.5x rollout resumed from another (its second `session_meta`,
then the older thread's history replayed, `token_count` events and all, as the public
019a58d2 does). ccusage counts that file's running total on its own, so the replayed
responses count twice there (on the public corpus: 132 responses on 2025-11-06, all written
within 65 ms, which no model answers that fast); here once, as they were billed. The test
shows the difference is exactly the replayed responses. (A `thread_spawn` sub-agent of the
same shape ccusage counts once, like us.)"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from sessions_app.selectors.usage import usage_by_day
from sessions_app.services.importing import sessions_import
from sessions_app.services.usage import usage_refresh
from tests.compat.clis import CompatError, ensure_ccusage

pytestmark = [pytest.mark.compat, pytest.mark.django_db]

WILD = Path(__file__).parent.parent / "fixtures" / "codex_wild" / "sessions"
PARENT = "019a0000-aaaa-7aaa-8aaa-00000000000a"
RESUMED = "019a0000-eeee-7eee-8eee-00000000000e"
# The parent's first two responses, which the sub-agent replays (make_fixtures.py):
# input not cached, cached, output.
REPLAYED = (1112 + 1600, 5888 + 6400, 383 + 393)


@pytest.fixture(scope="module")
def ccusage() -> Path:
    if shutil.which("npm") is None:
        pytest.skip("compat: npm is not on PATH, so ccusage cannot be installed")
    try:
        return ensure_ccusage()
    except CompatError as exc:
        pytest.fail(str(exc))


def _theirs(ccusage: Path, tmp_path: Path, home: Path) -> dict[str, tuple[int, ...]]:
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path), "TZ": "UTC"}
    proc = subprocess.run(
        [str(ccusage), "codex", "daily", "--offline", "--json", "--timezone", "UTC"],
        capture_output=True,
        text=True,
        env={**env, "CODEX_HOME": str(home)},
        timeout=300,
        check=True,
    )
    keys = ("inputTokens", "cacheReadTokens", "outputTokens", "reasoningOutputTokens")
    return {d["date"]: tuple(d[k] for k in keys) for d in json.loads(proc.stdout)["daily"]}


def _ours() -> dict[str, tuple[int, ...]]:
    out = {}
    for day in usage_by_day(agent="codex"):
        t = day.total
        out[str(day.day)] = (t.input, t.cache_read, t.output)
    return out


def test_codex_daily_usage_equals_ccusage_but_for_replayed_responses(
    ccusage: Path, tmp_path: Path, settings
) -> None:
    home = tmp_path / "codex-home"
    shutil.copytree(WILD, home / "sessions")
    settings.SESSION_ROOTS = [home / "sessions"]
    sessions_import(roots=[home / "sessions"])
    usage_refresh()
    theirs, ours = _theirs(ccusage, tmp_path, home), _ours()

    assert set(theirs) == set(ours) == {"2025-11-06", "2025-11-07", "2026-05-12"}
    for day in ("2025-11-07", "2026-05-12"):
        assert theirs[day][:3] == ours[day], day
    # The day of the resumed rollout: ccusage counts the two replayed responses again.
    extra = tuple(a - b for a, b in zip(theirs["2025-11-06"][:3], ours["2025-11-06"], strict=True))
    assert extra == REPLAYED


def test_without_the_replaying_file_both_count_the_same(
    ccusage: Path, tmp_path: Path, settings
) -> None:
    home = tmp_path / "codex-home"
    shutil.copytree(WILD, home / "sessions")
    for path in (home / "sessions").rglob(f"*{RESUMED}.jsonl"):
        path.unlink()
    settings.SESSION_ROOTS = [home / "sessions"]
    sessions_import(roots=[home / "sessions"])
    usage_refresh()

    theirs, ours = _theirs(ccusage, tmp_path, home), _ours()

    assert {day: counts[:3] for day, counts in theirs.items()} == ours
