"""The forks made on the hub for this machine, written where its CLIs look for them.

A file is only ever written new (`O_EXCL` through a checked temporary file): a file
already at that path stays as it is and is reported if its bytes differ, and no file is
written where the index knows a session, even one whose file was removed (its archive
holds the only copy). The folder it goes in must be inside the configured roots once
every link on the way is resolved. The file streams to the temporary file, at most
BRANCHBOARD_HUB_MAX_PULL bytes, every line checked to be JSON as it passes; before it
appears under its name it must be the size and SHA-256 the hub announced. Then it is
imported here, and the hub told it arrived.
"""

from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import orjson
from django.conf import settings

from ...models import Session
from ..files import create_exclusive
from ..importing import sessions_import
from .choosing import local_root
from .client import Hub, HubError
from .namespaces import BadHubPath, hub_path_check

if sys.version_info >= (3, 14):
    from compression import zstd
else:
    from backports import zstd


BLOCK = 4 << 20  # bytes decompressed at a time: a pull's memory whatever the file's size


class PullRefused(HubError):
    """A file the hub offered that is not written here; the message says why."""


@dataclass
class PullReport:
    written: list[Path] = field(default_factory=list)
    present: int = 0  # already here, byte for byte
    problems: list[str] = field(default_factory=list)


def max_pull() -> int:
    """The largest file a pull takes (BRANCHBOARD_HUB_MAX_PULL, bytes)."""
    return int(getattr(settings, "HUB_MAX_PULL", getattr(settings, "HUB_MAX_FILE", 8 << 30)))


def _offered(answer: Any) -> list[tuple[str, int, str]]:
    """The (path, size, sha256) of each file in a `pulls` answer; HubError if malformed."""
    try:
        files = answer["files"]
        if not isinstance(files, list):
            raise TypeError
        offered = []
        for item in files:
            path, size, sha256 = item["path"], item["size"], item["sha256"]
            if not isinstance(path, str) or not isinstance(sha256, str):
                raise TypeError
            if not isinstance(size, int) or isinstance(size, bool) or size < 0:
                raise TypeError
            offered.append((path, size, sha256))
    except (TypeError, KeyError, IndexError):
        raise HubError("the hub's list of files to pull is malformed; nothing pulled") from None
    return offered


def pull(hub: Hub) -> PullReport:
    """Take every fork the hub made for this machine that is not here yet."""
    report = PullReport()
    for path, size, sha256 in _offered(hub.json("GET", "pulls")):
        try:
            written = _pull_one(hub, path, size, sha256)
        except (PullRefused, BadHubPath, OSError, ValueError) as exc:
            report.problems.append(f"{path}: {exc}")
            continue
        except HubError as exc:
            if not exc.status:
                raise  # the hub is away: the rest would fail too
            report.problems.append(f"{path}: {exc}")
            continue
        if written is None:
            report.present += 1
        else:
            report.written.append(written)
        hub.json("POST", "pulled", {"path": path, "size": size}, body=b"")
    return report


def _inside_roots(folder: Path) -> bool:
    """Whether `folder`, every link on its way resolved, is inside a configured root."""
    real = folder.resolve()
    return any(real.is_relative_to(Path(r).resolve()) for r in settings.SESSION_ROOTS)


def _pull_one(hub: Hub, path: str, size: int, sha256: str) -> Path | None:
    key, rest = hub_path_check(path)
    root = local_root(key)
    if root is None:
        raise PullRefused("no CLI keeps sessions there")
    if not _inside_roots(root):
        raise PullRefused(f"{root} is not one of this machine's configured session roots")
    target = root.joinpath(*PurePosixPath(rest).parts)
    if not _inside_roots(target.parent):
        raise PullRefused(f"{target.parent} leads outside the session roots (a link); not written")
    if os.path.lexists(target):
        if _same(target, size, sha256):
            _index(root, target)
            return None
        raise PullRefused(f"{target} exists with other bytes; it is never overwritten")
    if Session.objects.filter(path=str(target)).exists():
        # A session whose file was removed: its archive holds its only copy.
        raise PullRefused(
            f"{target} is a session this machine indexed (its file removed); nothing written there"
        )
    if size > max_pull():
        raise PullRefused(
            f"{size} bytes; a pull takes at most {max_pull()} (BRANCHBOARD_HUB_MAX_PULL)"
        )
    target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    if not _inside_roots(target.parent):  # a link made meanwhile
        raise PullRefused(f"{target.parent} leads outside the session roots (a link); not written")
    with create_exclusive(target) as f:
        _receive(hub.stream("file", {"path": path}), f, size, sha256)
    _index(root, target)
    return target


def _receive(blocks: Iterable[bytes], out: Any, size: int, sha256: str) -> None:
    """Decompress `blocks` into `out`, at most `size` bytes, each line checked as it passes."""
    unpack = zstd.ZstdDecompressor()
    digest = hashlib.sha256()
    written = 0
    line = bytearray()  # the line not yet ended
    number = 0

    def lines(data: bytes) -> None:
        nonlocal number
        start = 0
        while (end := data.find(b"\n", start)) >= 0:
            line.extend(data[start:end])
            number += 1
            _check(bytes(line), number)
            line.clear()
            start = end + 1
        line.extend(data[start:])

    try:
        for packed in blocks:
            data = unpack.decompress(packed, max_length=min(BLOCK, size + 1 - written))
            while True:
                written += len(data)
                if written > size:
                    raise PullRefused(f"more bytes came than the {size} announced; nothing written")
                digest.update(data)
                lines(data)
                out.write(data)
                if unpack.eof or unpack.needs_input:
                    break
                data = unpack.decompress(b"", max_length=min(BLOCK, size + 1 - written))
    except (zstd.ZstdError, EOFError) as exc:
        raise PullRefused(
            f"the hub sent bytes that are not one zstd frame ({exc}); nothing written"
        ) from None
    if line:
        number += 1
        _check(bytes(line), number)
    if written != size or digest.hexdigest() != sha256:
        raise PullRefused("the bytes that came are not the ones the hub announced")


def _check(line: bytes, number: int) -> None:
    # Only "\n" ends a line here, as for the CLIs: a "\r" inside one is no line break.
    if b"\r" in line.rstrip(b"\r"):
        raise PullRefused(f"line {number} holds a carriage return; nothing written")
    try:
        orjson.loads(line)
    except orjson.JSONDecodeError:
        raise PullRefused(f"line {number} is not JSON; nothing written") from None


def _index(root: Path, target: Path) -> None:
    """Import the file here (an unchanged one costs a look), so its page is there."""
    report = sessions_import(roots=[root], paths=[target])
    if report.errors:
        raise PullRefused(f"written, but not imported here: {'; '.join(report.errors[:3])}")


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
