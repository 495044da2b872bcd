"""A record's line as the index reads it: whole up to BRANCHBOARD_MAX_RECORD_BYTES, else its
stand-in (its strings cut to fit, `formats.long_lines`), read in blocks and checked whole."""

from __future__ import annotations

from typing import BinaryIO

from django.conf import settings

from ...formats.long_lines import line_read


def max_record() -> int:
    """The longest line read whole (BRANCHBOARD_MAX_RECORD_BYTES, bytes)."""
    return int(getattr(settings, "MAX_RECORD_BYTES", 16 << 20))


def record_line(f: BinaryIO, offset: int, length: int, crc: int | None = None) -> bytes | None:
    """The record's line at `offset`, cut past the limit; None when the bytes there are not
    the line the index names (its length, and its CRC-32 when given)."""
    return line_read(f, offset, length, crc, max_record())
