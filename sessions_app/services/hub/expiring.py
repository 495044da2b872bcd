"""Pushes never committed: a staging file no chunk touched for BRANCHBOARD_HUB_STAGED_SECONDS
is removed by a pass over the hub's folder, and its bytes leave the namespace's quota.

A machine that went away mid-push would otherwise leave its staging file on the hub for
good, counted against its quota and on the hub's disk. A chunk that comes after the
removal is told to push the file whole again (its proof finds nothing staged). Left-over
temporary files of a batch (a hub killed while writing one) go the same way.
"""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

from django.conf import settings

from ...models import HubFile
from ...session_refs import is_namespace
from .locking import PushRefused, file_lock
from .namespaces import hub_folder

# The dot names a push writes beside its file (`chunks.staging_of`, batch_receiving's).
STAGING, BATCH = ".push", ".bat"


def staged_age() -> int:
    """Seconds a staging file is kept after its last chunk (BRANCHBOARD_HUB_STAGED_SECONDS)."""
    return int(getattr(settings, "HUB_STAGED_SECONDS", 86400))


def staged_expire(*, now: float | None = None) -> list[Path]:
    """Remove every staging file untouched for `staged_age()` seconds; the ones removed."""
    base = hub_folder()
    if not base.is_dir():
        return []
    oldest = (time.time() if now is None else now) - staged_age()
    removed = []
    # os.walk follows no links: a link in a namespace's folder is never entered.
    for folder, _, names in os.walk(base):
        for name in names:
            suffix = STAGING if name.endswith(STAGING) else BATCH if name.endswith(BATCH) else ""
            if not (suffix and name.startswith(".") and name[1 : -len(suffix)].endswith(".jsonl")):
                continue
            path = Path(folder) / name
            relative = path.relative_to(base).parts
            if len(relative) < 2 or not is_namespace(relative[0]):
                continue
            target = path.with_name(name[1 : -len(suffix)])
            hub_path = "/".join((*relative[1:-1], target.name))
            if not _expired(path, oldest, hub_path, target):
                continue
            removed.append(path)
            if suffix == STAGING:
                files = HubFile.objects.filter(namespace__name=relative[0], path=hub_path)
                files.update(staged=0)
                files.filter(stored=0, size=0).delete()  # a push that never held a file
    return removed


def _expired(path: Path, oldest: float, hub_path: str, target: Path) -> bool:
    """Remove `path` if no chunk touched it since `oldest`, under its file's push lock."""
    if not _older(path, oldest):
        return False
    try:
        with file_lock(hub_path, target):
            # Looked at again under the lock: a chunk may have come in the meantime.
            if not _older(path, oldest):
                return False
            os.unlink(path)
    except (PushRefused, FileNotFoundError):
        return False
    return True


def _older(path: Path, oldest: float) -> bool:
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return False
    return stat.S_ISREG(st.st_mode) and st.st_mtime < oldest
