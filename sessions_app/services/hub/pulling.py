"""The forks made on the hub for this machine, written where its CLIs look for them.

A pull first makes its plan (`pull_plan`), shown before anything is written: the files
the hub offers (those the machine's owner made there, or accepted: `consent` on the
hub), at most BRANCHBOARD_PULL_MAX_FILES files and BRANCHBOARD_PULL_MAX_BYTES bytes,
the rest left for the next pull; and those a teammate made, which stay on the hub
until the owner accepts them. Then `pull` takes the plan's files one by one.

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
from .client import PULLS_ANSWER, Hub, HubError
from .namespaces import BadHubPath, hub_path_check

if sys.version_info >= (3, 14):
    from compression import zstd
else:
    from backports import zstd


BLOCK = 4 << 20  # bytes decompressed at a time: a pull's memory whatever the file's size


class PullRefused(HubError):
    """A file the hub offered that is not written here; the message says why."""


@dataclass(frozen=True)
class Planned:
    """A file the hub offers, and where it would be written here."""

    path: str  # the hub's path, under the machine's home
    size: int
    sha256: str
    made_by: str  # the hub user who made it ("": not said)
    target: Path | None = None  # None: it is not written (see PullPlan.problems)


@dataclass
class PullPlan:
    """What one pull will write, what it holds back and why, before it writes anything."""

    take: list[Planned] = field(default_factory=list)
    # (path or session, why): a teammate's fork the owner has not accepted, or over a bound.
    held: list[tuple[str, str]] = field(default_factory=list)
    later: list[tuple[str, str]] = field(default_factory=list)  # over this pull's bounds
    problems: list[str] = field(default_factory=list)  # refused outright
    accepted: list[str] = field(default_factory=list)

    @property
    def bytes(self) -> int:
        return sum(p.size for p in self.take)


@dataclass
class PullReport:
    plan: PullPlan = field(default_factory=PullPlan)
    written: list[Path] = field(default_factory=list)
    present: int = 0  # already here, byte for byte
    problems: list[str] = field(default_factory=list)


def max_pull() -> int:
    """The largest file a pull takes (BRANCHBOARD_HUB_MAX_PULL, bytes)."""
    return int(getattr(settings, "HUB_MAX_PULL", getattr(settings, "HUB_MAX_FILE", 8 << 30)))


def max_files() -> int:
    """The most files one pull writes (BRANCHBOARD_PULL_MAX_FILES)."""
    return int(getattr(settings, "PULL_MAX_FILES", 50))


def max_bytes() -> int:
    """The most bytes one pull writes (BRANCHBOARD_PULL_MAX_BYTES)."""
    return int(getattr(settings, "PULL_MAX_BYTES", 1 << 30))


def _entries(answer: Any, key: str) -> list[dict[str, Any]]:
    items = answer[key] if key == "files" else answer.get(key, [])
    if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
        raise TypeError
    return items


def _text(item: dict[str, Any], key: str) -> str:
    value = item.get(key, "")
    if not isinstance(value, str):
        raise TypeError
    return value[:200]


def _size(item: dict[str, Any]) -> int:
    size = item["size"]
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        raise TypeError
    return size


def _offered(answer: Any) -> tuple[list[Planned], list[tuple[str, str]], int]:
    """The files of a `pulls` answer (path, size, sha256, maker), those it says are held
    for the owner's consent, and how many more it left out; HubError if malformed."""
    try:
        offered = []
        for item in _entries(answer, "files"):
            path, sha256 = item["path"], item["sha256"]
            if not isinstance(path, str) or not isinstance(sha256, str):
                raise TypeError
            offered.append(Planned(path, _size(item), sha256, _text(item, "made_by")))
        held = []
        for item in _entries(answer, "held"):
            who = _text(item, "made_by") or "someone"
            ref = _text(item, "session_id") or _text(item, "path")
            held.append(
                (
                    _text(item, "path"),
                    f"made by {who} on the hub, not by you; "
                    f"to take it: pull_sessions --accept {ref}",
                )
            )
        more = answer.get("more", {})
        left = sum(v for v in more.values() if isinstance(v, int)) if isinstance(more, dict) else 0
    except (TypeError, KeyError, IndexError, AttributeError):
        raise HubError("the hub's list of files to pull is malformed; nothing pulled") from None
    return offered, held, left


def pull_plan(hub: Hub, *, accept: Iterable[str] = ()) -> PullPlan:
    """What a pull would write here, within its bounds, and what stays on the hub and why.

    `accept`: session ids of teammates' forks this machine's owner lets come (first told
    to the hub, so this plan takes them)."""
    plan = PullPlan()
    for session_id in accept:
        hub.json("POST", "accept", {"session": session_id}, body=b"")
        plan.accepted.append(session_id)
    offered, held, left = _offered(hub.json("GET", "pulls", limit=PULLS_ANSWER))
    plan.held.extend(held)
    if left:
        plan.later.append(("", f"{left} more the hub did not list in one answer"))
    files, most = 0, max_bytes()
    for item in offered:
        try:
            target = _target(item.path)
        except (PullRefused, BadHubPath) as exc:
            plan.problems.append(f"{item.path}: {exc}")
            continue
        if item.size > max_pull():
            plan.problems.append(
                f"{item.path}: {item.size} bytes; a pull takes at most {max_pull()} "
                "(BRANCHBOARD_HUB_MAX_PULL)"
            )
            continue
        if files >= max_files():
            plan.later.append(
                (item.path, f"over {max_files()} files a pull (BRANCHBOARD_PULL_MAX_FILES)")
            )
            continue
        if plan.bytes + item.size > most:
            plan.later.append(
                (
                    item.path,
                    f"{item.size} bytes would pass {most} bytes a pull "
                    "(BRANCHBOARD_PULL_MAX_BYTES)",
                )
            )
            continue
        plan.take.append(Planned(item.path, item.size, item.sha256, item.made_by, target))
        files += 1
    return plan


def pull(hub: Hub, plan: PullPlan | None = None) -> PullReport:
    """Take the files `plan` (by default a new one) says, each checked as it comes."""
    report = PullReport(plan if plan is not None else pull_plan(hub))
    report.problems.extend(report.plan.problems)
    for item in report.plan.take:
        path = item.path
        try:
            written = _pull_one(hub, item)
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
        hub.json("POST", "pulled", {"path": path, "size": item.size}, body=b"")
    return report


def _inside_roots(folder: Path) -> bool:
    """Whether `folder`, every link on its way resolved, is inside a configured root."""
    real = folder.resolve()
    return any(real.is_relative_to(Path(r).resolve()) for r in settings.SESSION_ROOTS)


def _target(path: str) -> Path:
    """Where the hub's `path` goes here; PullRefused when not inside the roots."""
    key, rest = hub_path_check(path)
    root = local_root(key)
    if root is None:
        raise PullRefused("no CLI keeps sessions there")
    if not _inside_roots(root):
        raise PullRefused(f"{root} is not one of this machine's configured session roots")
    target = root.joinpath(*PurePosixPath(rest).parts)
    if not _inside_roots(target.parent):
        raise PullRefused(f"{target.parent} leads outside the session roots (a link); not written")
    return target


def _pull_one(hub: Hub, item: Planned) -> Path | None:
    path, size, sha256 = item.path, item.size, item.sha256
    target = _target(path)  # again: a link made since the plan
    root = local_root(hub_path_check(path)[0])
    assert root is not None
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
    target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    if not _inside_roots(target.parent):  # a link made meanwhile
        raise PullRefused(f"{target.parent} leads outside the session roots (a link); not written")
    with create_exclusive(target) as f:
        _receive(hub.stream("file", {"path": path}, limit=wire_most(size)), f, size, sha256)
    _index(root, target)
    return target


def wire_most(size: int) -> int:
    """The most compressed bytes a file of `size` bytes comes in: zstd's own worst case
    (stored blocks, a header each) and room to spare; a hub sending more is cut off."""
    return size + (size >> 7) + (1 << 17)


def _receive(blocks: Iterable[bytes], out: Any, size: int, sha256: str) -> None:
    """Decompress `blocks` into `out`, at most `size` bytes, each line checked as it passes.

    The memory is a block, and the one line not yet ended when a line spans blocks: a
    line held in one block is checked where it lies, without a copy."""
    unpack = zstd.ZstdDecompressor()
    digest = hashlib.sha256()
    written = 0
    line = bytearray()  # the start of the line not yet ended, when it spans blocks
    number = 0

    def lines(data: bytes) -> None:
        nonlocal number
        view = memoryview(data)
        start = 0
        while (end := data.find(b"\n", start)) >= 0:
            number += 1
            if line:
                line.extend(view[start:end])
                _check(line, 0, len(line), number)
                line.clear()
            else:
                _check(data, start, end, number)
            start = end + 1
        if start < len(data):
            line.extend(view[start:])

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
        _check(line, 0, len(line), number)
    if written != size or digest.hexdigest() != sha256:
        raise PullRefused("the bytes that came are not the ones the hub announced")


def _check(buffer: bytes | bytearray, start: int, end: int, number: int) -> None:
    """Refuse line `number`, `buffer[start:end]`, unless it is one JSON value (read in place)."""
    # Only "\n" ends a line here, as for the CLIs: a "\r" inside one is no line break
    # (those ending it, a CRLF, are no harm).
    kept = end
    while kept > start and buffer[kept - 1] == 13:
        kept -= 1
    if buffer.find(b"\r", start, kept) >= 0:
        raise PullRefused(f"line {number} holds a carriage return; nothing written")
    try:
        orjson.loads(memoryview(buffer)[start:end])
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
