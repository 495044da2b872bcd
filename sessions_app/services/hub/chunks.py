"""A pushed chunk's bytes: decompressed within the length it announced, checked, and
written under the file's lock at its offset, after the proof of the bytes before it."""

from __future__ import annotations

import hashlib
import os
import stat
import sys
from pathlib import Path

from django.conf import settings

from ...models import HubNamespace
from .locking import ProofFailed, PushRefused, _folders_make, _still_at, file_lock
from .proofs import Held, proofs

if sys.version_info >= (3, 14):
    from compression import zstd
else:
    from backports import zstd


class ChunkMismatch(PushRefused):
    """A chunk whose bytes are not the length or digest it announced."""

    status = 400


class TooLarge(PushRefused):
    status = 413


def max_file() -> int:
    """The largest session file a hub takes (BRANCHBOARD_HUB_MAX_FILE, bytes)."""
    return int(getattr(settings, "HUB_MAX_FILE", 8 << 30))


def max_chunk() -> int:
    """The largest raw chunk of one request (BRANCHBOARD_HUB_MAX_CHUNK, bytes)."""
    return int(getattr(settings, "HUB_MAX_CHUNK", 32 << 20))


# Below this many raw bytes a body may inflate as far as it likes: a ratio means nothing there.
RATIO_FLOOR = 1 << 20


def ratio_check(raw_length: int, body_length: int) -> None:
    """Refuse a body announced to inflate past BRANCHBOARD_HUB_MAX_RATIO times its size.

    A zstd bomb (11.8 KB on the wire for a 134 MB file) costs the hub disk, rows and
    minutes for a few bytes; real sessions compress about 10-17x (the shared corpus).
    Checked on the announced length, before a byte is decompressed."""
    ratio = int(getattr(settings, "HUB_MAX_RATIO", 1000))
    if ratio and raw_length > RATIO_FLOOR and raw_length > ratio * max(body_length, 1):
        raise TooLarge(
            f"{raw_length} bytes announced from a body of {body_length}: past "
            f"BRANCHBOARD_HUB_MAX_RATIO ({ratio} times); send it less compressed"
        )


def staging_of(target: Path) -> Path:
    # A dot name not ending in .jsonl: the importer and the CLIs pass it by.
    return target.with_name(f".{target.name}.push")


def chunk_decode(data: bytes, *, length: int, sha256: str) -> bytes:
    """The raw bytes of a zstd chunk, checked against what was announced."""
    if length < 0 or length > max_chunk():
        raise TooLarge(f"a chunk holds at most {max_chunk()} bytes, not {length}")
    ratio_check(length, len(data))
    try:
        raw = zstd.ZstdDecompressor().decompress(data, max_length=length + 1)
    except zstd.ZstdError as exc:
        raise ChunkMismatch(f"the chunk is not zstd data ({exc})") from None
    if len(raw) != length:
        raise ChunkMismatch(f"the chunk holds {len(raw)} bytes, not the {length} announced")
    if hashlib.sha256(raw).hexdigest() != sha256:
        raise ChunkMismatch("the chunk's bytes are not the ones announced (SHA-256 differs)")
    return raw


def chunk_write(
    namespace: HubNamespace,
    path: str,
    target: Path,
    raw: bytes,
    offset: int,
    proof: Held,
    staged: bool,
) -> int:
    """Write `raw` at `offset` of the file (or its staging file) under its lock; the new size."""
    into = staging_of(target) if staged else target
    starts = staged and offset == 0
    if starts:
        _folders_make(namespace, target.parent)
    flags = os.O_RDWR | os.O_NOFOLLOW | os.O_APPEND | os.O_CLOEXEC | (os.O_CREAT if starts else 0)
    with file_lock(path, target):
        try:
            fd = os.open(into, flags, 0o600)
        except FileNotFoundError:
            raise ProofFailed(f"{path}: the hub holds no such file; push it whole") from None
        except OSError as exc:
            raise PushRefused(f"{path}: cannot be written on the hub ({exc.strerror})") from None
        with os.fdopen(fd, "r+b", buffering=0) as f:
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode):
                raise PushRefused(f"{path}: not a regular file on the hub")
            if not _still_at(into, st):
                # Under the lock no commit moves it; should anything else have, the
                # handle is not the file this chunk is for.
                raise ProofFailed(f"{path}: the file changed on the hub while pushed; push again")
            if starts:
                f.truncate(0)
            elif st.st_size != offset:
                raise ProofFailed(f"{path}: the hub holds {st.st_size} bytes, not {offset}")
            elif proofs(f, offset) != proof:
                raise ProofFailed(f"{path}: the bytes the hub holds are not the start of this file")
            f.seek(0, os.SEEK_END)
            view = memoryview(raw)
            while view:
                view = view[os.write(f.fileno(), view) :]
            os.fsync(f.fileno())
            return offset + len(raw)
