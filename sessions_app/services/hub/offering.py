"""The hub's side of a pull: the files made on the hub for a machine, offered until taken.

A file in a namespace's folder that its machine never pushed was made here (a branch
or fork of one of its sessions); `pulls` lists it with its size and SHA-256 until the
machine says it holds it (`pulled`), which counts it as pushed from then on. Only one
the namespace's owner made or accepted is offered (`consent`); the others are listed
as held, and neither given nor acknowledged.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path, PurePosixPath

from ...models import HubNamespace, Session
from . import consent
from .namespaces import namespace_folder
from .receiving import ProofFailed, PushRefused, held, pushed_record, target_of

# Entries of one `pulls` answer, each list: a machine takes a few at a time anyway
# (BRANCHBOARD_PULL_MAX_FILES), and the answer stays small whatever a namespace holds.
MAX_LISTED = 500


def pulls(namespace: HubNamespace) -> dict[str, object]:
    """The namespace's files made on the hub: `files`, those its machine takes back (made
    or accepted by its owner); `held`, those a teammate made, which stay here until the
    owner accepts them; `more`, how many of each were left out of the answer."""
    base = namespace_folder(namespace.name)
    pushed = set(namespace.files.values_list("path", flat=True))
    made = consent.forks_of(namespace)
    offered: list[dict[str, object]] = []
    held: list[dict[str, object]] = []
    more = {"files": 0, "held": 0}
    sessions = Session.objects.filter(namespace=namespace.name, is_subagent=False)
    for pk, session_id, file in sessions.values_list("pk", "session_id", "path").order_by(
        "made_at", "pk"
    ):
        try:
            relative = PurePosixPath(Path(file).relative_to(base).as_posix())
        except ValueError:
            continue
        if str(relative) in pushed:
            continue
        fork = made.get(pk)
        reason = consent.why_held(namespace, fork)
        entry: dict[str, object] = {
            "path": str(relative),
            "session_id": str(session_id),
            "made_by": consent.maker_name(fork),
        }
        if reason is not None:
            if len(held) >= MAX_LISTED:
                more["held"] += 1
                continue
            try:
                entry["size"] = os.lstat(file).st_size
            except OSError:
                continue
            held.append({**entry, "reason": reason})
            continue
        if len(offered) >= MAX_LISTED:
            more["files"] += 1
            continue
        whole = _sha256(Path(file))
        if whole is None:
            continue
        entry["size"], entry["sha256"] = whole
        offered.append(entry)
    return {"files": offered, "held": held, "more": more}


def pulled(namespace: HubNamespace, path: str, size: int) -> None:
    """The machine holds the hub's file now: it is no longer offered."""
    consent.may_be_pulled(namespace, path)
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
    consent.may_be_pulled(namespace, path)
    if held(target) is None:
        raise PushRefused(f"{path}: the hub holds no such file")
    return target
