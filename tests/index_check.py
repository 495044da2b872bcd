"""Test helper: the index as facts, and the same facts from a fresh import of the files."""

from __future__ import annotations

from pathlib import Path

import orjson
from django.db import transaction

from sessions_app.models import Project, Session
from sessions_app.services.importing import sessions_import


def index_facts() -> dict[str, tuple]:
    """Per session file: records, turns, active leaf, each turn's prompt, every row."""
    facts = {}
    for s in Session.objects.order_by("path"):
        rows = s.records.order_by("line")
        facts[s.path] = (
            s.record_count,
            s.turn_count,
            s.leaf_uuid,
            _first_per_turn(s),
            list(rows.values_list("line", "offset", "length", "uuid", "kind", "turn", "active")),
        )
    return facts


def _first_per_turn(s: Session) -> list[str]:
    seen, out = set(), []
    rows = (
        s.records.filter(active=True, kind__in=["prompt", "command"])
        .exclude(turn=None)
        .order_by("line")
        .values_list("turn", "text")
    )
    for turn, text in rows:
        if turn not in seen:
            seen.add(turn)
            out.append(text)
    return out


class _Rollback(Exception):
    pass


def fresh_import_facts(roots: list[Path]) -> dict[str, tuple]:
    """The facts a fresh import of the same files into an empty index gives (then undone)."""
    facts: dict[str, tuple] = {}
    try:
        with transaction.atomic():
            Session.objects.all().delete()
            Project.objects.all().delete()
            sessions_import(roots=roots)
            facts = index_facts()
            raise _Rollback
    except _Rollback:
        pass
    return facts


def unparseable_lines(path: Path) -> int:
    """Lines of a file that are not a JSON object."""
    bad = 0
    with path.open("rb") as f:
        for raw in f:
            try:
                ok = isinstance(orjson.loads(raw), dict)
            except orjson.JSONDecodeError:
                ok = False
            bad += not ok
    return bad
