"""The importer's one decision: skip a file, read it from an offset, or read it again.

Pure: the caller passes the file's state, what the index stored about it, and a
way to read bytes of the file; nothing here touches the database. A file counts
as grown only when it is provably the same file with bytes added at the end: the
same inode, no shorter than what was imported, the same head, and the exact bytes
of the last imported line still at the same offset. Anything else is read again
from the start, because offsets into a file that changed elsewhere point into the
middle of other lines.
"""

from __future__ import annotations

import enum
import hashlib
from collections.abc import Callable
from dataclasses import dataclass

HEAD_BYTES = 4096


class Plan(enum.Enum):
    SKIP = "skip"  # unchanged: same size, mtime and inode
    APPEND = "append"  # grown: read from the last imported byte
    FULL = "full"  # anything else: forget the file's records and read it all


@dataclass(frozen=True, slots=True)
class FileState:
    """What `stat` says of the file now."""

    size: int
    mtime_ns: int
    inode: int


@dataclass(frozen=True, slots=True)
class StoredState:
    """What the index remembers of the file from its last import."""

    size: int
    mtime_ns: int
    inode: int
    bytes_imported: int
    head_digest: str
    tail_offset: int
    tail_digest: str


def digest(data: bytes) -> str:
    """The digest kept of a file's head and of its last imported line."""
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def import_plan(
    file: FileState, stored: StoredState | None, read: Callable[[int, int], bytes]
) -> Plan:
    """How to bring the index up to date with the file; `read(offset, n)` reads its bytes."""
    if stored is None:
        return Plan.FULL
    if (file.size, file.mtime_ns, file.inode) == (stored.size, stored.mtime_ns, stored.inode):
        return Plan.SKIP
    if stored.inode and file.inode != stored.inode:
        return Plan.FULL  # replaced by another file (a rename over it)
    done = stored.bytes_imported
    if done <= 0 or file.size < done or not stored.tail_digest:
        return Plan.FULL
    if digest(read(0, min(HEAD_BYTES, done))) != stored.head_digest:
        return Plan.FULL
    tail_length = done - stored.tail_offset
    if tail_length <= 0 or _digest_of(read, stored.tail_offset, tail_length) != stored.tail_digest:
        return Plan.FULL
    return Plan.APPEND


def _digest_of(read: Callable[[int, int], bytes], offset: int, length: int) -> str:
    """`digest` of `length` bytes at `offset`, read in blocks (a last line may be 1 GB)."""
    whole = hashlib.blake2b(digest_size=16)
    while length > 0 and (block := read(offset, min(length, 1 << 20))):
        whole.update(block)
        offset, length = offset + len(block), length - len(block)
    return whole.hexdigest()
