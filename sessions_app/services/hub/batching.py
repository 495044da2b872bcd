"""A machine's small new files go to its hub in batches: one request for many files.

A first push is mostly small files; each sent as a chunk and a commit costs two round
trips and one import on the hub. Files the hub holds nothing of (no file, no staging
file) and of at most BATCH_FILE bytes go together, up to `chunk_size()` bytes a batch
(`/api/hub/batch`, receiving's `batch_receiving`); the rest go one by one as before.
The next batch is read and compressed while the hub stores and indexes this one.
"""

from __future__ import annotations

import hashlib
import os
import stat
import sys
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

import orjson

from ..roots import open_regular
from .client import LONG_TIMEOUT, Hub, HubError

if TYPE_CHECKING:
    from .choosing import Local, PushReport

if sys.version_info >= (3, 14):
    from compression import zstd
else:
    from backports import zstd

BATCH_FILE = 4 << 20  # bytes: a larger file goes on its own, in chunks
BATCH_FILES = 500  # files in one batch at most (the hub takes 1000)


def push_batched(
    hub: Hub,
    files: list[Local],
    state: dict[str, dict],
    report: PushReport,
    said: Callable[[str], None],
    most: int,
    twins: frozenset[Path] | set[Path] = frozenset(),
) -> set[str]:
    """Send the new small files of `files` in batches of at most `most` bytes; the hub
    paths it answered for (stored or refused), which the one-by-one push then passes by."""
    new = [f for f in files if not state.get(f.hub_path) and _size(f) <= min(BATCH_FILE, most)]
    done: set[str] = set()
    local_of = {f.hub_path: f.path for f in new}
    if len(new) < 2:
        return done  # one file: the chunk and commit of old are as quick
    batches = _batches(new, report, max(most, 1))
    with ThreadPoolExecutor(max_workers=1) as ahead:
        coming = ahead.submit(next, batches, None)
        while (batch := coming.result()) is not None:
            coming = ahead.submit(next, batches, None)
            sent, packed, raw = batch
            for path in sent:
                said(f"{path}: new (in a batch of {len(sent)})")
            try:
                answer = hub.json(
                    "POST",
                    "batch",
                    body=packed,
                    content_type="application/zstd",
                    timeout=LONG_TIMEOUT,
                )["files"]
            except HubError as exc:
                if exc.status == 404:
                    return done  # a hub from before batches: one by one
                if not exc.status:
                    raise  # the hub is away: the rest would fail too
                report.problems.extend(f"{local_of[p]}: {exc}" for p in sent)
                done.update(sent)
                continue
            report.wire_bytes += len(packed)
            for path, size in sent.items():
                got = answer.get(path)
                if not isinstance(got, dict):
                    continue  # not answered: goes one by one
                done.add(path)
                if "error" in got:
                    if got.get("status") == 422 and local_of[path] in twins:
                        continue  # stored, not shown: the note from choosing.twins says why
                    report.problems.append(f"{local_of[path]}: {got['error']}")
                else:
                    report.sent_files.append(path)
                    report.bytes_sent += size
            del raw
    return done


def _size(local: Local) -> int:
    try:
        return os.lstat(local.path).st_size
    except OSError:
        return BATCH_FILE + 1  # said by the one-by-one push


def _batches(
    files: list[Local], report: PushReport, most: int
) -> Iterator[tuple[dict[str, int], bytes, int]]:
    """Each batch: the hub paths and sizes it holds, its zstd body, its raw size."""
    listed: list[dict[str, object]] = []
    blocks: list[bytes] = []
    total = 0

    def packed() -> tuple[dict[str, int], bytes, int]:
        manifest = orjson.dumps({"files": listed}) + b"\n"
        body = zstd.compress(manifest + b"".join(blocks), level=3)
        sent = {str(e["path"]): int(str(e["size"])) for e in listed}
        return sent, body, total

    for local in files:
        try:
            data = _read(local)
        except (OSError, ValueError) as exc:
            report.problems.append(f"{local.path}: {exc}")
            continue
        if data is None:
            continue
        if listed and (total + len(data) > most or len(listed) >= BATCH_FILES):
            yield packed()
            listed, blocks, total = [], [], 0
        listed.append(
            {"path": local.hub_path, "size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
        )
        blocks.append(data)
        total += len(data)
    if listed:
        yield packed()


def _read(local: Local) -> bytes | None:
    """The file's bytes as they are now (what is written after goes next time)."""
    with open_regular(local.path, root=local.root) as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            return None
        data = f.read(st.st_size)
    if len(data) < st.st_size:
        raise ValueError("the file shrank while it was read")
    return data
