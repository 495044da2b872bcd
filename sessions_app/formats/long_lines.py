"""A line longer than the record limit, read without holding it whole, pure.

The file keeps such a line whole (forks and restores copy it byte for byte); what the
index, search, usage and pages read of it is its *stand-in*: the same JSON with its
strings cut so that the whole fits in about `limit` bytes. Keys, ids, types and times
(short strings) survive, so the record keeps its place in the conversation; only the
long texts are cut. The line is read in blocks: memory stays at the limit, however
long the line.

The cut is said, not hidden: a stand-in is known by its record's length being over the
limit, and pages say "cut at N of M bytes" (`cut_note`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import BinaryIO

from zlib_ng.zlib_ng import crc32

BLOCK = 1 << 20
# Every string keeps this much even once the budget is spent: an id, a time, a type name.
SHORT = 128
_BACKSLASH = 0x5C


def cut_note(limit: int, length: int) -> str:
    """What a page says of a record read cut."""
    return (
        f"This record is cut at {limit:,} of {length:,} bytes (BRANCHBOARD_MAX_RECORD_BYTES): "
        "its long texts are shown, searched and counted cut; the session file keeps it whole."
    )


class StandIn:
    """Fed a line's bytes block by block, keeps its JSON with long strings cut."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.out = bytearray()
        self.in_string = False
        self.slashes = 0  # backslashes ending the last block inside a string
        self.start = 0  # where the string being read begins in `out`
        self.cut = False  # the string being read was cut
        self.overflow = False  # past twice the limit (and 64 KiB): no stand-in

    def feed(self, block: bytes) -> None:
        """Read the next bytes of the line."""
        at, end = 0, len(block)
        while at < end and not self.overflow:
            if not self.in_string:
                quote = block.find(b'"', at)
                stop = end if quote < 0 else quote + 1
                self.out += block[at:stop]
                if len(self.out) > 2 * self.limit + (1 << 16):
                    self.overflow = True
                if quote >= 0:
                    self.in_string, self.start, self.cut = True, len(self.out), False
                at = stop
                continue
            stop = self._string_end(block, at)
            if stop < 0:  # the string goes on in the next block
                self._keep(block[at:])
                self.slashes = _slashes_before(block, end, at, self.slashes)
                at = end
            else:
                self._keep(block[at:stop])
                self._close()
                self.slashes, at = 0, stop + 1

    def _string_end(self, block: bytes, at: int) -> int:
        """The closing quote of the string being read, from `at` on; -1: not in `block`."""
        quote = block.find(b'"', at)
        if quote < 0 or not _slashes_before(block, quote, at, self.slashes) % 2:
            return quote
        # An escaped quote: the rest is read with its escapes paired off (`\\\\`, `\\"`),
        # first in a window (a short string costs little), then to the end of the block.
        start = quote + 1
        window = 1 << 16
        while True:
            plain = block[start : start + window].replace(b"\\\\", b"xx").replace(b'\\"', b"xx")
            found = plain.find(b'"')
            if found >= 0:
                return start + found
            if start + window >= len(block):
                return -1
            window = len(block)

    def _keep(self, part: bytes) -> None:
        if self.cut or not part:
            return
        room = max(self.limit - len(self.out), SHORT - (len(self.out) - self.start))
        if len(part) <= room:
            self.out += part
            return
        self.out += part[: max(room, 0)]
        self.cut = True

    def _close(self) -> None:
        if self.cut:
            del self.out[self.start + _whole_end(bytes(self.out[self.start :])) :]
        self.out += b'"'
        self.in_string = False

    def text(self) -> bytes | None:
        """The stand-in (None: the line had more structure than twice the limit)."""
        if self.overflow:
            return None
        if self.in_string:  # a line cut off inside a string: closed, as far as it goes
            self.cut = True
            self._close()
        return bytes(self.out)


def _slashes_before(block: bytes, at: int, start: int, carried: int) -> int:
    """The backslashes just before `at` (back to `start`, then those carried from before)."""
    run = at
    while run > start and block[run - 1] == _BACKSLASH:
        run -= 1
    return at - run + (carried if run == start else 0)


def _whole_end(part: bytes) -> int:
    """Where a cut string's kept bytes end whole: no escape or UTF-8 character in halves."""
    end = len(part)
    while (shorter := _escape_end(part, end)) < end:
        end = shorter
    for back in range(1, min(4, end) + 1):
        byte = part[end - back]
        if byte & 0xC0 == 0x80:
            continue
        if byte >= 0xC0 and back < (2 if byte < 0xE0 else 3 if byte < 0xF0 else 4):
            end -= back
        break
    return end


def _escape_end(part: bytes, end: int) -> int:
    """`end`, or where the escape left unfinished at it (or a lone high surrogate) begins."""
    slash = part.rfind(b"\\", max(0, end - 6), end)
    if slash < 0:
        return end
    run = slash
    while run > 0 and part[run - 1] == _BACKSLASH:
        run -= 1
    if (slash - run) % 2 == 1:  # an escaped backslash: complete
        return end
    unicode = slash + 1 < end and part[slash + 1] == ord("u")
    if end - slash < (6 if unicode else 2):
        return slash  # an escape begun, not finished
    if unicode and part[slash + 2 : slash + 4].lower() in (b"d8", b"d9", b"da", b"db"):
        return slash  # a surrogate pair's first half alone (its second would follow it)
    return end


@dataclass(frozen=True, slots=True)
class LongLine:
    """A line read in blocks: its stand-in, and what the index keeps of the whole."""

    text: bytes | None  # the stand-in; None when none could be made
    length: int  # bytes of the whole line
    crc: int  # zlib CRC-32 of the whole line
    ended: bool  # the line ends with a line break
    digest: str  # the importer's digest of the whole line (BLAKE2b-128, hex)


def long_line(first: bytes, rest: Iterable[bytes], limit: int, *, digest: bool = True) -> LongLine:
    """The line that starts with `first` and goes on with the blocks of `rest` (`digest`:
    with the importer's digest of the whole, else "")."""
    stand_in = StandIn(limit)
    whole = hashlib.blake2b(digest_size=16) if digest else None
    crc, length, last = 0, 0, b""
    for block in _chain(first, rest):
        stand_in.feed(block)
        if whole is not None:
            whole.update(block)
        crc = crc32(block, crc)
        length += len(block)
        last = block or last
    kept = whole.hexdigest() if whole is not None else ""
    return LongLine(stand_in.text(), length, crc, last.endswith(b"\n"), kept)


def _chain(first: bytes, rest: Iterable[bytes]) -> Iterator[bytes]:
    yield first
    yield from rest


def rest_of_line(f: BinaryIO) -> Iterator[bytes]:
    """The blocks of `f` up to and with the next line break (or the end of the file)."""
    while block := f.readline(BLOCK):
        yield block
        if block.endswith(b"\n"):
            return


def line_read(f: BinaryIO, offset: int, length: int, crc: int | None, limit: int) -> bytes | None:
    """The line of `length` bytes at `offset` as the index reads it: whole up to `limit`,
    else its stand-in; None when the bytes there are not that line (length, CRC)."""
    f.seek(offset)
    if length <= limit:
        raw = f.read(length)
        if len(raw) != length or (crc is not None and crc32(raw) != crc):
            return None
        return raw
    blocks = _blocks(f, length)
    found = long_line(next(blocks, b""), blocks, limit, digest=False)
    if found.length != length or (crc is not None and found.crc != crc):
        return None
    return found.text or b""  # b"": no stand-in could be made, read as an unreadable line


def _blocks(f: BinaryIO, length: int) -> Iterator[bytes]:
    left = length
    while left > 0 and (block := f.read(min(BLOCK, left))):
        left -= len(block)
        yield block
