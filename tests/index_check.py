"""Test helper: the index as facts, and the same facts from a fresh import of the files."""

from __future__ import annotations

import functools
import hashlib
import os
import stat
from pathlib import Path

import orjson
from django.db import transaction

from sessions_app.models import Project, Session
from sessions_app.services.importing import sessions_import
from sessions_app.services.importing.storing import stored_dangling


def index_facts() -> dict[str, tuple]:
    """Per session file: records, turns, active leaf, each turn's prompt, dangling parents
    (as kept, or found in the rows where not kept), every row."""
    facts = {}
    for s in Session.objects.order_by("path"):
        rows = s.records.order_by("line")
        facts[s.path] = (
            s.record_count,
            s.turn_count,
            s.leaf_uuid,
            _first_per_turn(s),
            sorted(stored_dangling(s) or ()),
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
    """The facts a fresh import of the same files into an empty index gives (then undone).

    Each root is imported on its own, since no session's facts depend on another root
    (test_fresh_import_facts_of_each_root_add_up_to_the_whole); a root whose files are
    byte for byte those of an earlier fresh import gives that import's facts again.
    """
    facts: dict[str, tuple] = {}
    for root in roots:
        facts |= _fresh_root_facts(root, _content(root))
    return facts


@functools.lru_cache(maxsize=8)
def _fresh_root_facts(root: Path, content: str) -> dict[str, tuple]:
    return fresh_import_facts_together([root])


def fresh_import_facts_together(roots: list[Path]) -> dict[str, tuple]:
    """`fresh_import_facts` by one import of all `roots`, nothing remembered."""
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


def _content(root: Path) -> str:
    """A digest of everything under `root`: names, kinds of file, bytes, link targets."""
    digest = hashlib.blake2b(digest_size=20)
    for path in sorted(root.rglob("*")):
        mode = os.lstat(path).st_mode
        digest.update(f"{path.relative_to(root)}\0{stat.S_IFMT(mode)}\0".encode())
        if stat.S_ISREG(mode):
            digest.update(path.read_bytes())
        elif stat.S_ISLNK(mode):
            digest.update(os.readlink(path).encode())
        digest.update(b"\0")
    return digest.hexdigest()


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
