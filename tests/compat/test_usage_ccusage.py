"""Usage per day, checked against an independent tool: ccusage on the same Claude Code files.

ccusage (npm, pinned 20.0.24, run with --offline in UTC) reads the corpus's Claude
sessions, subagent files included. Where every assistant record carries the
`requestId` ccusage deduplicates by, its daily tokens and cost equal ours. Where
records lack one (files the real CLI wrote against the test's fake model), ccusage
counts some records of a streamed or copied message again; there the test checks
ours against each message counted once, straight from the files, and that
ccusage's figure lies between that and the sum of every record.

ccusage also counts a subagent's messages that older releases kept only in the
parent's `agent_progress` records (deduplicated by message id and request id,
like every other message): with the subagent's own file taken away, both tools
still agree on that day.

Codex (`ccusage codex daily`, reading CODEX_HOME): the same tokens and cost per day,
but for a compaction's request, which ccusage leaves out (see the test).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections import defaultdict
from decimal import Decimal
from pathlib import Path

import orjson
import pytest

from sessions_app.selectors.usage import usage_by_day
from sessions_app.services.importing import sessions_import
from sessions_app.services.usage import usage_refresh
from tests.compat.clis import CompatError, ensure_ccusage
from tests.corpus import CLAUDE_ROOTS, FIXTURES

pytestmark = [pytest.mark.compat, pytest.mark.django_db]
FIXTURE_SESSION = "4d5611e5-241a-462a-8d15-5122611a9569"
KINDS = ("inputTokens", "outputTokens", "cacheCreationTokens", "cacheReadTokens")


@pytest.fixture(scope="module")
def ccusage() -> Path:
    if shutil.which("npm") is None:
        pytest.skip("compat: npm is not on PATH, so ccusage cannot be installed")
    try:
        return ensure_ccusage()
    except CompatError as exc:
        pytest.fail(str(exc))


def _ccusage_daily(ccusage: Path, config: Path) -> dict[str, dict]:
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(config.parent),
        "CLAUDE_CONFIG_DIR": str(config),
        "TZ": "UTC",
    }
    proc = subprocess.run(
        [str(ccusage), "daily", "--offline", "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=True,
    )
    return {day["period"]: day for day in json.loads(proc.stdout)["daily"]}


def _every_record(config: Path) -> tuple[dict[str, list[int]], dict[str, list[int]], set[str]]:
    """Per day: each assistant record's usage summed with no deduplication; each message id
    once (its largest counts); and the days with a record that has no requestId."""
    sums: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    messages: dict[str, dict[str, list[int]]] = defaultdict(dict)
    undeduplicated: set[str] = set()
    for path in config.rglob("*.jsonl"):
        for line in path.read_bytes().splitlines():
            try:
                data = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            message = data.get("message") if isinstance(data, dict) else None
            if data.get("type") != "assistant" or not isinstance(message, dict):
                continue
            usage = message.get("usage") or {}
            day = str(data.get("timestamp", ""))[:10]
            if not data.get("requestId"):
                undeduplicated.add(day)
            counts = [
                int(usage.get(key) or 0)
                for key in (
                    "input_tokens",
                    "output_tokens",
                    "cache_creation_input_tokens",
                    "cache_read_input_tokens",
                )
            ]
            sums[day] = [a + b for a, b in zip(sums[day], counts, strict=True)]
            seen = messages[day].setdefault(message["id"], counts)
            messages[day][message["id"]] = [max(a, b) for a, b in zip(seen, counts, strict=True)]
    once = {
        day: [sum(c[i] for c in found.values()) for i in range(4)]
        for day, found in messages.items()
    }
    return sums, once, undeduplicated


def test_daily_usage_agrees_with_ccusage(ccusage: Path, tmp_path: Path) -> None:
    config = tmp_path / "claude-config"
    projects = config / "projects"
    for root in CLAUDE_ROOTS:
        shutil.copytree(FIXTURES / root, projects, dirs_exist_ok=True)
    theirs = _ccusage_daily(ccusage, config)
    sessions_import(roots=[projects])
    usage_refresh()
    ours = {str(day.day): day.total for day in usage_by_day(agent="claude")}
    assert set(ours) == set(theirs)
    every_record, once, undeduplicated = _every_record(config)
    agreed = 0
    for day, their in theirs.items():
        mine = ours[day]
        mine_counts = [mine.input, mine.output, mine.cache_write, mine.cache_read]
        their_counts = [their[k] for k in KINDS]
        if day in undeduplicated:
            # Without a requestId ccusage counts some records of a message again (its
            # figure lies between each message once and every record); ours is each
            # message once, as counted here independently from the files.
            assert mine_counts == once[day], day
            assert sum(mine_counts) < sum(their_counts) <= sum(every_record[day]), day
            continue
        assert mine_counts == their_counts, day
        assert mine.priced
        assert abs(mine.cost - Decimal(str(their["totalCost"]))) < Decimal("0.0001"), day
        agreed += 1
    assert agreed >= 6, "most days of the corpus are compared exactly"


SPOTTER = "public/claude/-home-USER-projects-spotter-worktrees-spotter-dov"


def test_a_subagent_only_in_progress_records_is_counted_as_ccusage_counts_it(
    ccusage: Path, tmp_path: Path
) -> None:
    config = tmp_path / "claude-config"
    folder = config / "projects" / Path(SPOTTER).name
    folder.mkdir(parents=True)
    # The session file alone: its subagent left no file of its own (older releases).
    for path in (FIXTURES / SPOTTER).glob("*.jsonl"):
        shutil.copy2(path, folder / path.name)
    theirs = _ccusage_daily(ccusage, config)
    sessions_import(roots=[config / "projects"])
    assert not usage_refresh().errors
    ours = {str(day.day): day.total for day in usage_by_day(agent="claude")}
    assert set(ours) == set(theirs) == {"2026-02-12"}
    mine, their = ours["2026-02-12"], theirs["2026-02-12"]
    assert [mine.input, mine.output, mine.cache_write, mine.cache_read] == [their[k] for k in KINDS]
    assert abs(mine.cost - Decimal(str(their["totalCost"]))) < Decimal("0.0001")
    # The subagent's 11 messages are among them, each once.
    progress_only = {
        orjson.loads(line)["data"]["message"]["message"]["id"]
        for line in (folder / f"{FIXTURE_SESSION}.jsonl").read_bytes().splitlines()
        if b'"agent_progress"' in line and b'"usage"' in line
    }
    assert len(progress_only) == 11


# -- Codex: `ccusage codex daily` on the rollouts codex 0.169 wrote ------------------------

CODEX_SESSIONS = FIXTURES / "cli" / "codex" / "sessions"
CODEX_KEYS = ("input_tokens", "cached_input_tokens", "output_tokens", "reasoning_output_tokens")
# gpt-5.5's price per token (input, cached input, output): $5, $0.50 and $30 a million.
GPT_55 = (Decimal(5) / 10**6, Decimal("0.5") / 10**6, Decimal(30) / 10**6)


def _codex_counts(usage: dict) -> list[int]:
    """[uncached input, cached input, output, reasoning] of one response (OpenAI's
    `input_tokens` include the cached ones)."""
    prompt, cached, output, reasoning = (int(usage.get(k) or 0) for k in CODEX_KEYS)
    return [prompt - cached, cached, output, reasoning]


def _codex_responses(sessions: Path) -> tuple[dict[str, list[int]], ...]:
    """Per day, straight from the files: each `token_count` whose running total changed
    (its `last_token_usage`), each `token_usage_record` (one per model response), and the
    `token_usage_record` just before a `compacted` line (the compaction's request)."""
    by_total: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    by_record: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    compactions: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    for path in sessions.rglob("*.jsonl"):
        total, previous = None, {}
        for line in path.read_bytes().splitlines():
            data = orjson.loads(line)
            payload, day = data.get("payload") or {}, str(data.get("timestamp"))[:10]
            if data.get("type") == "compacted" and previous.get("type") == "token_usage_record":
                counts = _codex_counts(previous["payload"]["usage"])
                compactions[day] = [a + b for a, b in zip(compactions[day], counts, strict=True)]
            previous = data
            if data.get("type") == "token_usage_record":
                counts = _codex_counts(payload["usage"])
                by_record[day] = [a + b for a, b in zip(by_record[day], counts, strict=True)]
            info = payload.get("info") if payload.get("type") == "token_count" else None
            if isinstance(info, dict) and info["total_token_usage"] != total:
                total = info["total_token_usage"]
                counts = _codex_counts(info["last_token_usage"])
                by_total[day] = [a + b for a, b in zip(by_total[day], counts, strict=True)]
    return by_total, by_record, compactions


def test_codex_daily_usage_agrees_with_ccusage_codex(ccusage: Path, tmp_path: Path) -> None:
    """ccusage counts a Codex response from its `token_count` event when the running total
    changed; ours from 0.169's `token_usage_record` (one per response, by response id).
    Both put the cached input apart from the input (`input_tokens` less
    `cached_input_tokens`) and count a repeated total once. They differ by the responses
    whose `token_count` repeats the total: a compaction's request (its
    `token_usage_record` precedes the `compacted` line, and the `token_count` after it
    carries the totals of before): ccusage leaves it out, we count it, as OpenAI bills it.
    Reasoning tokens are part of `output_tokens` in both (ccusage also shows them apart)."""
    home = tmp_path / "codex-home"
    shutil.copytree(CODEX_SESSIONS, home / "sessions")
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path), "TZ": "UTC"}
    proc = subprocess.run(
        [str(ccusage), "codex", "daily", "--offline", "--json", "--timezone", "UTC"],
        capture_output=True,
        text=True,
        env={**env, "CODEX_HOME": str(home)},
        timeout=300,
        check=True,
    )
    theirs = {day["date"]: day for day in json.loads(proc.stdout)["daily"]}
    sessions_import(roots=[home / "sessions"])
    usage_refresh()
    ours = {str(day.day): day.total for day in usage_by_day(agent="codex")}
    by_total, by_record, compactions = _codex_responses(home / "sessions")

    assert set(ours) == set(theirs) == set(by_record)
    compared = 0
    for day, their in theirs.items():
        their_counts = [their[k] for k in ("inputTokens", "cacheReadTokens", "outputTokens")]
        their_counts.append(their["reasoningOutputTokens"])
        assert their_counts == by_total[day], day  # ccusage: token_count totals that moved
        mine = ours[day]
        assert [mine.input, mine.cache_read, mine.output] == by_record[day][:3], day
        assert mine.cache_write == their["cacheCreationTokens"] == 0
        # The difference is the compaction's response, and nothing else.
        extra = [a - b for a, b in zip(by_record[day], by_total[day], strict=True)]
        assert extra == compactions[day] and sum(extra) > 0, day
        priced = sum((n * p for n, p in zip(their_counts, GPT_55, strict=False)), Decimal(0))
        assert abs(Decimal(str(their["costUSD"])) - priced) < Decimal("0.000001"), day
        assert mine.priced
        extra_cost = sum((n * p for n, p in zip(extra, GPT_55, strict=False)), Decimal(0))
        assert abs(mine.cost - priced - extra_cost) < Decimal("0.000001"), day
        compared += 1
    assert compared == 1  # the fixtures were recorded on one day
