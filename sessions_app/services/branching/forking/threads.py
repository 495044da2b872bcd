"""The fork's work that goes on in threads beside the copy: the new file written block
by block (`Behind`), and its read-back while its rows are inserted (`ReadingBack`).

zstd, SHA-256 and the kernel's copy of the bytes let go of the GIL, so on a machine with a
free core the request's own thread does a third less of a big fork's work.
"""

from __future__ import annotations

from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import BinaryIO

from ....models import Session
from ...archive.making import PieceMaker
from ..kept import Unproven, Written
from ..readback import ReadBack, read_back
from ..readback.plain import recounting


class NotPlain(Exception):
    """The read-back did not vouch for the file on its bytes: the rows inserted go."""


class ReadingBack:
    """The new file read back against the rows it will get (`found`: None when unproven).

    A plain fork whose token counts are its source rows' is read back on its bytes in a
    thread (`early`: its rows may be inserted meanwhile, and wait for its verdict before
    anything is committed); any other is read back here and now.
    """

    def __init__(
        self,
        session: Session,
        temp: Path,
        written: Written,
        *,
        new_id: str,
        title_line: bytes,
        turns: int,
        prompts: list[str],
        skip: bool,
    ) -> None:
        self.read = partial(
            read_back, session, temp, written, new_id=new_id, title_line=title_line, turns=turns,
            prompts=prompts,
        )  # fmt: skip
        self.found: ReadBack | None = None
        self.pool: ThreadPoolExecutor | None = None
        self.future: Future | None = None
        if skip:
            return
        counted = recounting(session, written) if written.plain else None
        if counted is not None and counted != (True, False):
            self.pool = ThreadPoolExecutor(1)
            self.future = self.pool.submit(self.read, counted=counted)
            return
        try:
            self.found = self.read()
        except Unproven:
            self.found = None

    @property
    def early(self) -> bool:
        return self.future is not None

    def result(self) -> ReadBack | None:
        """What the read-back found (waits for it); a failed check raises."""
        if self.future is not None:
            future, self.future = self.future, None
            try:
                self.found = future.result()
            except Unproven:
                try:
                    # On its graph (the bytes could not vouch for it), here: it reads rows.
                    self.found = self.read(plain=False)
                except Unproven:
                    self.found = None
        return self.found

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)


class Behind:
    """The temporary file, written block by block, in order, from a thread while the copy
    goes on (the kernel's copy of the bytes lets go of the GIL); each block also goes to
    the archive's piece maker. `drain` waits for every block and raises a failed write."""

    AHEAD = 2  # blocks handed over and not yet written, at most

    def __init__(self, out: BinaryIO, maker: PieceMaker | None) -> None:
        self.out, self.maker = out, maker
        self.pool = ThreadPoolExecutor(1)
        self.queued: deque[Future] = deque()
        self.failed = False

    def __enter__(self) -> Behind:
        return self

    def __exit__(self, *exc: object) -> None:
        self.failed = True  # what is still queued is not written
        self.pool.shutdown(wait=True, cancel_futures=True)

    def write(self, data: bytes | bytearray) -> int:
        block = bytes(data)  # the copy reuses its buffer
        while len(self.queued) >= self.AHEAD:
            self.queued.popleft().result()
        self.queued.append(self.pool.submit(self._write, block))
        return len(block)

    def _write(self, block: bytes) -> None:
        if self.failed:
            return  # never a later block after a failed one
        try:
            self.out.write(block)
        except BaseException:
            self.failed = True
            raise
        if self.maker is not None:
            self.maker.add(block)

    def drain(self) -> None:
        while self.queued:
            self.queued.popleft().result()
