"""What a machine sends its hub: the session files under its roots, new bytes only.

Each file is named on the hub by its path under the machine's home (`.claude/projects/
<project>/<id>.jsonl`). For each, the hub says what it holds; then:
- the same bytes: nothing goes;
- a start of this file (same size and proof of its first bytes): the rest is appended;
- anything else (new, or rewritten here): the file goes whole, staged, then committed.
Chunks are cut at line ends, compressed, and each names its length and SHA-256, so a
push cut off midway is continued by the next, and a repeated push sends nothing.

Only the projects the user lets go leave (`BRANCHBOARD_HUB_PROJECTS`, minus
`BRANCHBOARD_HUB_EXCLUDE`), and only session files: never a link, never a file
outside the roots, never the CLIs' own settings or credentials.
"""

from __future__ import annotations

import hashlib
import os
import stat
import sys
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from ..roots import open_regular
from .batching import push_batched
from .choosing import Local, PushReport, let_go, session_files, twins
from .client import LONG_TIMEOUT, Hub, HubError
from .proofs import Held, proofs

if sys.version_info >= (3, 14):
    from compression import zstd
else:
    from backports import zstd

CHUNK = 8 << 20  # raw bytes per request at most (BRANCHBOARD_HUB_PUSH_CHUNK changes it)
STATE_BATCH = 500


def chunk_size() -> int:
    """Raw bytes per request at most: BRANCHBOARD_HUB_PUSH_CHUNK, else CHUNK (8 MB)."""
    said = os.environ.get("BRANCHBOARD_HUB_PUSH_CHUNK", "")
    try:
        size = int(said) if said else CHUNK
    except ValueError:
        raise ValueError(f"BRANCHBOARD_HUB_PUSH_CHUNK={said!r}: a number of bytes") from None
    return max(1, size)


def _held(entry: object) -> Held | None:
    if not isinstance(entry, dict) or "size" not in entry:
        return None
    return Held(int(entry["size"]), str(entry.get("head", "")), str(entry.get("tail", "")))


def push(
    hub: Hub,
    *,
    dry_run: bool = False,
    only: Iterable[Path] | None = None,
    said: Callable[[str], None] = lambda _: None,
) -> PushReport:
    """Bring the hub up to date with this machine's session files (or those in `only`)."""
    report = PushReport()
    found = session_files(report)
    twinned = twins(found, report)
    if only is not None:
        wanted = {Path(p) for p in only}
        found = [f for f in found if f.path in wanted]
    files = let_go(found, report)  # only the files of this push are read for their project
    for start in range(0, len(files), STATE_BATCH):
        batch = files[start : start + STATE_BATCH]
        state = hub.json(
            "POST", "state", body=orjson.dumps({"paths": [f.hub_path for f in batch]})
        )["files"]
        # Small new files first, many to a request (batching); the rest one by one.
        done = (
            set()
            if dry_run
            else push_batched(hub, batch, state, report, said, chunk_size(), twins=twinned)
        )
        for local in batch:
            if local.hub_path in done:
                continue
            try:
                _push_file(hub, local, state.get(local.hub_path) or {}, report, dry_run, said)
            except (OSError, ValueError) as exc:
                report.problems.append(f"{local.path}: {exc}")
            except HubError as exc:
                if not exc.status:
                    raise  # the hub is away: the rest would fail too
                if exc.status == 422 and local.path in twinned:
                    continue  # stored, not shown: the note from twins says why
                report.problems.append(f"{local.path}: {exc}")  # this file only
    return report


def _chunks(
    f: BinaryIO, at: int, size: int, whole: hashlib._Hash
) -> Iterator[tuple[dict[str, Any], bytes]]:
    """The chunks of bytes `at`..`size`, cut at line ends: their request's parameters
    (offset, length, digest, the proof of the bytes before) and their zstd frame."""
    most = chunk_size()
    while at < size:
        proof = proofs(f, at)
        f.seek(at)
        block = f.read(min(most, size - at))
        if not block:
            raise ValueError("the file shrank while it was read")
        cut = block.rfind(b"\n") + 1 if at + len(block) < size else len(block)
        block = block[: cut or len(block)]
        whole.update(block)
        params: dict[str, Any] = {
            "offset": at,
            "length": len(block),
            "sha256": hashlib.sha256(block).hexdigest(),
            "head": proof.head,
            "tail": proof.tail,
        }
        yield params, zstd.compress(block, level=3)
        at += len(block)


def _push_file(
    hub: Hub,
    local: Local,
    entry: dict,
    report: PushReport,
    dry_run: bool,
    said: Callable[[str], None],
) -> None:
    with open_regular(local.path, root=local.root) as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            return
        size = st.st_size  # what this pass sends; what is written after goes next time
        held, staged = _held(entry), _held(entry.get("staging"))
        if held is not None and held.size <= size and proofs(f, held.size) == held:
            if held.size == size:
                report.up_to_date += 1
                return
            what, offset, is_staged = f"append {size - held.size} bytes", held.size, False
        elif staged is not None and staged.size <= size and proofs(f, staged.size) == staged:
            what, offset, is_staged = "continue the whole file", staged.size, True
        else:
            what = "new" if held is None else "whole again (rewritten here)"
            offset, is_staged = 0, True
        if dry_run:
            report.planned.append((what, local.hub_path))
            return
        said(f"{local.hub_path}: {what}")
        whole = hashlib.sha256()
        if is_staged and offset:
            f.seek(0)
            left = offset
            while left:
                block = f.read(min(left, 1 << 20))
                if not block:
                    raise ValueError("the file shrank while it was read")
                whole.update(block)
                left -= len(block)
        chunks = _chunks(f, offset, size, whole)
        # The next chunk is read, hashed and compressed while the hub takes this one.
        with ThreadPoolExecutor(max_workers=1) as ahead:
            coming = ahead.submit(next, chunks, None)
            while (chunk := coming.result()) is not None:
                coming = ahead.submit(next, chunks, None)
                params, packed = chunk
                params.update(path=local.hub_path, staged="1" if is_staged else "0")
                hub.json("POST", "chunk", params, body=packed, content_type="application/zstd")
                report.bytes_sent += params["length"]
                report.wire_bytes += len(packed)
        if is_staged:
            params = {"path": local.hub_path, "size": size, "sha256": whole.hexdigest()}
            done = hub.json("POST", "commit", params, body=b"", timeout=LONG_TIMEOUT)
            if not done.get("caught_up", True):
                # A big file: its search words and usage in a request of their own.
                params = {"path": local.hub_path}
                hub.json("POST", "catch-up", params, body=b"", timeout=LONG_TIMEOUT)
        report.sent_files.append(local.hub_path)
