"""The hub's side of a pull: the files made on the hub for a machine, offered until taken.

A file in a namespace's folder that its machine never pushed was made here (a branch
or fork of one of its sessions); `pulls` lists it with its size and SHA-256 until the
machine says it holds it (`pulled`), which counts it as pushed from then on.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path, PurePosixPath

from ...models import HubNamespace, Session
from .namespaces import namespace_folder
from .receiving import ProofFailed, PushRefused, held, pushed_record, target_of


def pulls(namespace: HubNamespace) -> list[dict[str, object]]:
    """The namespace's files made on the hub (forks), which its machine takes back."""
    base = namespace_folder(namespace.name)
    pushed = set(namespace.files.values_list("path", flat=True))
    found = []
    sessions = Session.objects.filter(namespace=namespace.name, is_subagent=False)
    for session_id, file in sessions.values_list("session_id", "path").order_by("made_at"):
        try:
            relative = PurePosixPath(Path(file).relative_to(base).as_posix())
        except ValueError:
            continue
        if str(relative) in pushed:
            continue
        whole = _sha256(Path(file))
        if whole is None:
            continue
        size, sha256 = whole
        found.append(
            {"path": str(relative), "session_id": str(session_id), "size": size, "sha256": sha256}
        )
    return found


def pulled(namespace: HubNamespace, path: str, size: int) -> None:
    """The machine holds the hub's file now: it is no longer offered."""
    _, target = target_of(namespace, path)
    kept = held(target)
    if kept is None or kept.size != size:
        raise ProofFailed(f"{path}: the hub holds no such file of {size} bytes")
    pushed_record(namespace, path, size)


def _sha256(path: Path) -> tuple[int, str] | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    digest, size = hashlib.sha256(), 0
    with os.fdopen(fd, "rb") as f:
        while block := f.read(1 << 20):
            digest.update(block)
            size += len(block)
    return size, digest.hexdigest()


def file_for_pull(namespace: HubNamespace, path: str) -> Path:
    """The hub's file at `path` in the namespace, for its machine to take back."""
    _, target = target_of(namespace, path)
    if held(target) is None:
        raise PushRefused(f"{path}: the hub holds no such file")
    return target
