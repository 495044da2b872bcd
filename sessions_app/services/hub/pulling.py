"""The forks made on the hub for this machine, written where its CLIs look for them.

A file is only ever written new (`O_EXCL` through a checked temporary file): a file
already at that path stays as it is and is reported if its bytes differ. Before it
appears under its name, the file must be the size and SHA-256 the hub announced and
every line of it JSON; then it is imported here, and the hub told it arrived.
"""

from __future__ import annotations

import hashlib
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import orjson

from ..files import create_exclusive
from ..importing import sessions_import
from .client import Hub, HubError
from .namespaces import BadHubPath, hub_path_check
from .pushing import local_root

if sys.version_info >= (3, 14):
    from compression import zstd
else:
    from backports import zstd


class PullRefused(HubError):
    """A file the hub offered that is not written here; the message says why."""


@dataclass
class PullReport:
    written: list[Path] = field(default_factory=list)
    present: int = 0  # already here, byte for byte
    problems: list[str] = field(default_factory=list)


def pull(hub: Hub) -> PullReport:
    """Take every fork the hub made for this machine that is not here yet."""
    report = PullReport()
    offered = hub.json("GET", "pulls")["files"]
    for item in offered:
        path = str(item.get("path", ""))
        try:
            written = _pull_one(hub, path, int(item["size"]), str(item["sha256"]))
        except (PullRefused, BadHubPath, OSError, KeyError, ValueError) as exc:
            report.problems.append(f"{path}: {exc}")
            continue
        if written is None:
            report.present += 1
        else:
            report.written.append(written)
        hub.json("POST", "pulled", {"path": path, "size": item["size"]}, body=b"")
    return report


def _pull_one(hub: Hub, path: str, size: int, sha256: str) -> Path | None:
    key, rest = hub_path_check(path)
    root = local_root(key)
    if root is None:
        raise PullRefused("no CLI keeps sessions there")
    target = root.joinpath(*PurePosixPath(rest).parts)
    if os.path.lexists(target):
        if _same(target, size, sha256):
            return None
        raise PullRefused(f"{target} exists with other bytes; it is never overwritten")
    packed = hub.call("GET", "file", {"path": path})
    raw = zstd.ZstdDecompressor().decompress(packed, max_length=size + 1)
    if len(raw) != size or hashlib.sha256(raw).hexdigest() != sha256:
        raise PullRefused("the bytes that came are not the ones the hub announced")
    for number, line in enumerate(raw.splitlines(), 1):
        try:
            orjson.loads(line)
        except orjson.JSONDecodeError:
            raise PullRefused(f"line {number} is not JSON; nothing written") from None
    target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    with create_exclusive(target) as f:
        f.write(raw)
    sessions_import(roots=[root], paths=[target])
    return target


def _same(path: Path, size: int, sha256: str) -> bool:
    try:
        if os.lstat(path).st_size != size:
            return False
        digest = hashlib.sha256()
        with open(path, "rb") as f:
            while block := f.read(1 << 20):
                digest.update(block)
        return digest.hexdigest() == sha256
    except OSError:
        return False
