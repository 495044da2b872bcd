"""Whether a removed session's archived copy is whole: the verdict its pages show.

Once a session's file is gone, `session_open` serves the archive, and a piece that is
missing or fails its digest is never served: the pages then show only what the index
holds. `archive_damage` says so, with the first byte the archive cannot give.

Checking means decompressing and hashing every piece (one streamed query), so the verdict
is cached per session, keyed by the pieces as the index lists them (ids, offsets,
lengths, digests, stored sizes): a piece stored again, or data of another size, is
checked again; a read that finds a piece corrupted (`piece_bytes`) sets the verdict at
once (`archive.corrupt_key`).
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass

from django.core.cache import cache
from django.db.models.functions import Length

from ...models import Session
from . import VERDICT_SECONDS, corrupt_key, digest, zstd

_SOUND = -1  # the verdict cached for a session whose every piece is whole


@dataclass(frozen=True)
class ArchiveDamage:
    """The first byte the archive cannot give, and whether its piece is missing or corrupted."""

    start: int
    missing: bool

    @property
    def message(self) -> str:
        """The notice the transcript page, the exports and the API show."""
        how = "misses its bytes" if self.missing else "is corrupted (its digest does not match)"
        return (
            f"The archive's copy of this session is damaged from byte {self.start} "
            f"(the piece there {how}): what is shown comes from the index and may be "
            "incomplete; it cannot be restored."
        )


def archive_damage(session: Session) -> ArchiveDamage | None:
    """The damage in the archive a removed session is served from; None when its file is
    there, when nothing is archived, or when every piece is there and whole."""
    if session.bytes_imported <= 0 or os.path.lexists(session.path):
        return None
    pieces = list(
        session.archive_pieces.order_by("start").values_list(
            "pk", "start", "length", "digest", Length("data")
        )
    )
    if not pieces:
        return None  # never archived (the archive was off): no copy to call damaged
    expected = 0
    for _, start, length, _, _ in pieces:
        if start != expected:
            return ArchiveDamage(expected, missing=True)
        expected += length
    if expected < session.bytes_imported:
        return ArchiveDamage(expected, missing=True)
    seen = cache.get(corrupt_key(session.pk))
    if seen is not None and (seen[0], seen[1]) in {(p[0], p[1]) for p in pieces}:
        return ArchiveDamage(int(seen[1]), missing=False)
    listed = hashlib.sha256(repr((str(session.session_id), pieces)).encode()).hexdigest()
    key = f"archive-verdict:{session.pk}:{listed}"
    verdict = cache.get(key)
    if verdict is None:
        verdict = _first_corrupt(session)
        cache.set(key, verdict, VERDICT_SECONDS)
    return None if verdict == _SOUND else ArchiveDamage(int(verdict), missing=False)


def _first_corrupt(session: Session) -> int:
    """The start of the first piece whose bytes fail their digest, or `_SOUND`: one pass,
    a few pieces in memory at a time."""
    rows = session.archive_pieces.order_by("start").values_list("start", "length", "digest", "data")
    for start, length, sha, data in rows.iterator(chunk_size=4):
        try:
            raw = zstd.decompress(bytes(data))
        except zstd.ZstdError:
            return int(start)
        if len(raw) != length or digest(raw) != sha:
            return int(start)
    return _SOUND
