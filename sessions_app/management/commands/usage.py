"""manage.py usage daily|monthly|session: tokens and cost from the terminal, like `ccusage`.

The numbers are `/usage/`'s (the same rows and prices, each message once), across the four
agents or the one `--agent` names; `--json` gives them to scripts.
"""

from __future__ import annotations

import json
from datetime import date
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from sessions_app.formats import REGISTRY
from sessions_app.models import Project
from sessions_app.selectors.usage import Totals
from sessions_app.selectors.usage.periods import PERIODS, PeriodUsage, usage_by_period
from sessions_app.templatetags.project_labels import project_label
from sessions_app.terminal import shown

HEADERS = {"daily": "Date", "monthly": "Month", "session": "Session"}
JSON_KEYS = {
    "daily": ("daily", "date"),
    "monthly": ("monthly", "month"),
    "session": ("sessions", "sessionId"),
}
NUMBERS = ("Input", "Output", "Cache Create", "Cache Read", "Total Tokens", "Cost (USD)")


def _day(value: str) -> date:
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise CommandError(f"{value!r} is not a date (YYYY-MM-DD)") from None


def _cost(t: Totals) -> str:
    # A star: some tokens have no price, so the cost leaves them out (never counts them free).
    return f"${t.cost:,.2f}" + ("" if t.priced else "*")


def _numbers(t: Totals) -> list[str]:
    counts = (t.input, t.output, t.cache_write, t.cache_read, t.tokens)
    return [f"{n:,}" for n in counts] + [_cost(t)]


def _json_totals(t: Totals) -> dict[str, Any]:
    return {
        "inputTokens": t.input,
        "outputTokens": t.output,
        "cacheCreationTokens": t.cache_write,
        "cacheReadTokens": t.cache_read,
        "totalTokens": t.tokens,
        "reasoningTokens": t.reasoning,
        "messages": t.messages,
        "totalCost": float(round(t.cost, 6)),
        "unpricedTokens": dict(sorted(t.unpriced.items())),
    }


def _json_row(period: str, row: PeriodUsage) -> dict[str, Any]:
    out: dict[str, Any] = {JSON_KEYS[period][1]: row.key}
    if row.session is not None:
        out["agent"] = row.session.agent
        out["project"] = project_label(row.session.project)
        out["lastActivity"] = str(row.last_day) if row.last_day else None
    out.update(_json_totals(row.total))
    out["modelsUsed"] = sorted(row.models)
    out["modelBreakdowns"] = [
        {"modelName": m, **_json_totals(t)} for m, t in sorted(row.models.items())
    ]
    return out


class Command(BaseCommand):
    help = (
        "Print tokens and cost per day, month or session (the numbers of /usage/), "
        "like ccusage: e.g. `usage daily --since 2026-11-01 --agent codex`, or --json."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("period", choices=PERIODS, help="a row per day, month or session")
        parser.add_argument("--since", type=_day, help="from this day on (YYYY-MM-DD, UTC)")
        parser.add_argument("--until", type=_day, help="up to this day (YYYY-MM-DD, UTC)")
        parser.add_argument("--agent", choices=sorted(REGISTRY), default="", help="one agent")
        parser.add_argument(
            "--project", default="", help="a project's number, working folder or folder name"
        )
        parser.add_argument("--json", action="store_true", help="the numbers as JSON")

    def handle(self, *args: Any, **options: Any) -> None:
        period: str = options["period"]
        project = self._project(options["project"], options["agent"])
        rows = usage_by_period(
            period,
            project=project,
            agent=options["agent"],
            since=options["since"],
            until=options["until"],
        )
        total = Totals()
        for row in rows:
            total.merge(row.total)
        if options["json"]:
            name = JSON_KEYS[period][0]
            document = {name: [_json_row(period, r) for r in rows], "totals": _json_totals(total)}
            # JSON escapes every control character: nothing in it drives a terminal.
            self.stdout.write(json.dumps(document, indent=2))
            return
        self.stdout.write(self._table(period, rows, total))

    def _project(self, value: str, agent: str) -> int | None:
        if not value:
            return None
        found = Project.objects.all()
        if agent:
            found = found.filter(agent=agent)
        if value.isascii() and value.isdigit():
            by_number = found.filter(pk=int(value)).first()
            if by_number is not None:
                return by_number.pk
        matches = list(found.filter(path=value)) or list(found.filter(folder=value))
        if not matches:
            raise CommandError(f"there is no project {shown(value)!r}")
        if len(matches) > 1:
            numbers = ", ".join(f"{p.pk} ({p.agent})" for p in matches)
            raise CommandError(
                f"{shown(value)!r} names {len(matches)} projects: give --agent or a number "
                f"({numbers})"
            )
        return matches[0].pk

    def _table(self, period: str, rows: list[PeriodUsage], total: Totals) -> str:
        header = [HEADERS[period], "Models", *NUMBERS]
        if period == "session":
            header += ["Agent", "Last Activity"]
        body = []
        for row in rows:
            cells = [row.key, ", ".join(sorted(m or "(no model)" for m in row.models))]
            cells += _numbers(row.total)
            if row.session is not None:
                cells += [row.session.agent, str(row.last_day or "")]
            body.append([shown(c) for c in cells])
        if not body:
            return "No usage in this window."
        foot = ["Total", "", *_numbers(total)] + ([""] * (len(header) - 8))
        widths = [max(len(r[i]) for r in (header, *body, foot)) for i in range(len(header))]

        def line(cells: list[str]) -> str:
            # Text to the left, numbers to the right, as ccusage aligns them.
            out = [
                c.rjust(w) if 2 <= i < 8 else c.ljust(w)
                for i, (c, w) in enumerate(zip(cells, widths, strict=True))
            ]
            return "  ".join(out).rstrip()

        rule = "  ".join("-" * w for w in widths)
        lines = [line(header), rule, *(line(r) for r in body), rule, line(foot)]
        if not total.priced:
            unpriced = ", ".join(f"{m} ({n:,} tokens)" for m, n in sorted(total.unpriced.items()))
            lines.append(f"* the cost leaves out models without a price: {shown(unpriced)}")
        return "\n".join(lines)
