"""The rows of a piece of a file read: what each record row needs beyond its graph node."""

from __future__ import annotations

from array import array

from ...formats.usage import MessageUsage


class Rows:
    """What each record row needs beyond its node, one column per field.

    A 300 MB session has a hundred thousand lines or more: a tuple of Python ints
    per line would weigh more than the line's node, eight bytes in an array do not.
    """

    __slots__ = (
        "digests",
        "errors",
        "first_line",
        "lengths",
        "offsets",
        "subtypes",
        "texts",
        "tokens",
        "types",
        "usage",
    )

    def __init__(self, first_line: int) -> None:
        self.first_line = first_line
        self.offsets = array("q")
        self.lengths = array("q")
        self.digests = array("q")
        self.tokens = array("q")  # input, output: two per row
        self.types: list[str] = []  # the same few strings over and over, kept once
        self.subtypes: list[str] = []
        self.errors: dict[int, str] = {}  # by row, only where there is one
        # By row, the (part, text) a search finds in it (ImportReport.texts), where it has one.
        self.texts: dict[int, tuple[str, str]] = {}
        # By row, the API message usage it carries (ImportReport.texts), where it has one.
        self.usage: dict[int, MessageUsage] = {}

    def __len__(self) -> int:
        return len(self.offsets)

    def extend(self, more: Rows) -> None:
        """Append the rows of the piece read right after these."""
        shift = len(self)
        self.offsets.extend(more.offsets)
        self.lengths.extend(more.lengths)
        self.digests.extend(more.digests)
        self.tokens.extend(more.tokens)
        self.types.extend(more.types)
        self.subtypes.extend(more.subtypes)
        self.errors.update({shift + k: error for k, error in more.errors.items()})
        self.texts.update({shift + k: found for k, found in more.texts.items()})
        self.usage.update({shift + k: usage for k, usage in more.usage.items()})

    def row(self, k: int) -> tuple[int, int, int, str, str, str | None, int, int, int]:
        """(line, offset, length, raw type, subtype, error, tokens in, tokens out, digest)."""
        return (
            self.first_line + k,
            self.offsets[k],
            self.lengths[k],
            self.types[k],
            self.subtypes[k],
            self.errors.get(k),
            self.tokens[2 * k],
            self.tokens[2 * k + 1],
            self.digests[k],
        )
