"""The proof that one side holds the start of a file: its size, and the SHA-256 of its
first HEAD_PROOF and of its last TAIL_PROOF bytes (the importer's "grown" proof).

The machine proves with it what it believes the hub holds before it sends more; the hub
takes bytes at an offset only when its own bytes give the same proof.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import BinaryIO

# The proof of held bytes: SHA-256 of the first HEAD_PROOF and of the last TAIL_PROOF bytes.
HEAD_PROOF = 4096
TAIL_PROOF = 1 << 16


@dataclass(frozen=True)
class Held:
    """What the hub holds of a file: its size and the proof of its bytes."""

    size: int
    head: str
    tail: str

    def as_json(self) -> dict[str, object]:
        return {"size": self.size, "head": self.head, "tail": self.tail}


def proofs(f: BinaryIO, size: int) -> Held:
    """The proof of a file's first `size` bytes (read from the open file `f`)."""
    f.seek(0)
    head = hashlib.sha256(f.read(min(size, HEAD_PROOF))).hexdigest()
    start = max(0, size - TAIL_PROOF)
    f.seek(start)
    tail = hashlib.sha256(f.read(size - start)).hexdigest()
    return Held(size, head, tail)
