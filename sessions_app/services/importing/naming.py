"""The files a watcher's events name: found as a full scan would find them, and those gone from
disk marked removed at once.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from django.db.models import Q
from django.utils import timezone

from ...models import Session
from ..discovery import SessionFile
from ..discovery.at_path import discover_path
from ..roots import resolve_root
from .report import ImportReport


def _discover_named(
    root: Path, named: list[Path]
) -> tuple[list[SessionFile], list[str], list[Path]]:
    """What `discover` finds at the `named` paths under `root`, each file once."""
    files: dict[Path, SessionFile] = {}
    problems: list[str] = []
    misnamed: set[Path] = set()
    for path in named:
        found, said, left = discover_path(root, path)
        files.update((f.path, f) for f in found)
        problems.extend(p for p in said if p not in problems)
        misnamed.update(left)
    return list(files.values()), problems, sorted(misnamed)


def _named_gone_mark(named: list[Path], roots: Iterable[Path], report: ImportReport) -> None:
    """Mark the sessions whose file (or folder) an event named and that is gone, as a pass
    over every file would: a deletion is seen when it happens, not at the next rescan."""
    prefixes = tuple(
        str(root).rstrip(os.sep) + os.sep
        for r in roots
        for root in {Path(r), resolve_root(Path(r))}
    )
    gone = [p for p in named if str(p).startswith(prefixes) and not os.path.lexists(p)]
    if not gone:
        return
    under = Q(path__in=[str(p) for p in gone])
    for folder in gone:
        under |= Q(path__startswith=str(folder).rstrip(os.sep) + os.sep)
    rows = Session.objects.filter(under, file_removed_at=None)
    # A row whose file is back (moved in again meanwhile) is not marked.
    pks = [pk for pk, path in rows.values_list("pk", "path") if not os.path.lexists(path)]
    if pks:
        Session.objects.filter(pk__in=pks).update(file_removed_at=timezone.now())
        report.removed += len(pks)
