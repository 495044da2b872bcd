"""A failed run takes back what it wrote: the session file as it was before the run.

A CLI that fails (not logged in, quota, an API error) still appends the prompt
and its error to the session. The run noted the file's state when it started
(the importer's own proof of identity: inode, head and last line); if the file
is provably that file with bytes added at the end, the added bytes are kept in
`<data dir>/failed-runs/` and the file is replaced, atomically, by its first
bytes as they were. A file that changed in any other way is left alone and the
run says so.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import BinaryIO

from django.conf import settings

from ...models import Run, Session
from ..files import create_exclusive, replace_atomically
from ..importing.plan import FileState, Plan, StoredState, digest, import_plan
from ..roots import open_regular

COPY_BLOCK = 1 << 20


def state_before(session: Session) -> dict:
    """What a run notes of its session file before it starts (the index just brought up to date)."""
    return {
        "size": session.file_size,
        "mtime_ns": session.file_mtime_ns,
        "inode": session.file_inode,
        "bytes_imported": session.bytes_imported,
        "head_digest": session.head_digest,
        "tail_offset": session.tail_offset,
        "tail_digest": session.tail_digest,
    }


def take_back(run: Run) -> str:
    """Cut the session file back to what it was before the failed `run`; what was done."""
    before = run.file_before
    if not before or before.get("bytes_imported") != before.get("size"):
        return ""
    session = run.session
    path, root = Path(session.path), session.project.root
    stored = StoredState(**before)
    with open_regular(path, root=root) as f:
        st = os.fstat(f.fileno())

        def read(offset: int, length: int) -> bytes:
            f.seek(offset)
            return f.read(length)

        plan = import_plan(FileState(st.st_size, st.st_mtime_ns, st.st_ino), stored, read)
        if plan is Plan.SKIP or st.st_size == stored.size:
            return ""
        if plan is not Plan.APPEND:
            return "The session file changed in other ways during the run, so it was left as it is."
        added = read(stored.size, st.st_size - stored.size)
        kept = _keep(run, added)
        head = read(0, min(4096, stored.size))

        def verify(temp: Path) -> None:
            with temp.open("rb") as check:
                if os.fstat(check.fileno()).st_size != stored.size or check.read(4096) != head:
                    raise OSError(f"{temp}: not the file as it was before the run")

        if os.stat(path).st_mtime_ns != st.st_mtime_ns:
            return f"The session file changed again while this was checked; left as it is ({kept})."
        f.seek(0)
        with replace_atomically(path, verify=verify) as out:
            _copy(f, out, stored.size)
    return (
        f"The session file is as it was before the run: the {len(added):,} bytes the failed "
        f"run added were taken out and kept in {kept}."
    )


def _keep(run: Run, added: bytes) -> Path:
    folder = Path(settings.DATA_DIR) / "failed-runs"
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)  # private, like the data folder
    target = folder / f"run-{run.pk}-{run.session.session_id}-{digest(added)[:8]}.jsonl"
    with create_exclusive(target) as out:
        out.write(added)
    return target


def _copy(source: BinaryIO, out: BinaryIO, size: int) -> None:
    left = size
    while left:
        block = source.read(min(COPY_BLOCK, left))
        if not block:
            raise OSError("the session file ended early while it was copied")
        out.write(block)
        left -= len(block)
