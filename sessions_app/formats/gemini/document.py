"""Older Gemini CLI releases' one-document session files (`chats/session-*.json`), pure.

Until 0.3x the CLI rewrote its whole conversation after every message as one JSON document
`{sessionId, projectHash, startTime, lastUpdated, messages: [...], summary?}`,
pretty-printed (`JSON.stringify(conversation, null, 2)`) over hundreds of lines: no line of
it is a record. Such a file is read as records that are spans of its bytes: record 0 is the
whole document (its metadata, which is how the CLI itself reads a legacy file: one metadata
record holding `messages`), and record k (k >= 1) is the k-th message object, byte for byte
where it lies in the document (its `offset`, its `length`; the separators between the
messages belong to no record but record 0). So one Record row per record stays, every row
still names bytes of the file that parse alone, and the line numbers are positions in the
document, not lines of the file. A document is read whole, from its start, every time it
changes (the CLI never appended to one); one that does not parse is one invalid record.

The 0.61 CLI resuming such a file goes on in a sibling `<name>.jsonl` (its metadata line,
then one line per message, then what the resume adds) and leaves the `.json` as it was, so
a `.json` beside its `.jsonl` is superseded (`continuation`). A branch or fork of a `.json`
session is a new `.jsonl` in that same shape: its metadata line, then each kept message made
one line (`message_line`, what the CLI's `JSON.stringify(message)` writes). A rewind leaves
the document alone (`REFUSAL`): a `$rewindTo` appended to it would break the document.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import orjson

DOCUMENT_SUFFIX = ".json"
REFUSAL = (
    "this session is an older Gemini CLI release's one-document .json file, which is not "
    "rewound in place: fork it before the turn instead (the fork is a .jsonl the CLI "
    "resumes), or resume it once in the CLI (gemini --resume <id>), which goes on in a "
    ".jsonl file beside it, and rewind that"
)
# A JSON string (escapes skipped whole), or one of the structural characters.
TOKEN_RE = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{},:]', re.DOTALL)


def is_document(path: Path) -> bool:
    """Whether `path` is a one-document session file (`session-*.json`)."""
    return path.suffix == DOCUMENT_SUFFIX


def continuation(path: Path) -> Path:
    """The `.jsonl` file the 0.61 CLI goes on in when it resumes the document at `path`."""
    return path.with_name(path.name + "l")


def message_line(record: bytes) -> bytes:
    """A message of the document as one line of a `.jsonl` session (no newline): compact,
    its keys in their order, as the CLI writes each message it carries over on resume."""
    return orjson.dumps(orjson.loads(record))


def message_spans(document: bytes) -> list[tuple[int, int]] | None:
    """(offset, end) of each object in the top-level `messages` array of `document`; None
    when it is no JSON object holding such an array (then it is not read as a session)."""
    try:
        data = orjson.loads(document)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("messages"), list):
        return None
    spans: list[tuple[int, int]] = []
    depth = 0  # of the token just read: 1 inside the document object
    previous = b""
    array = 0  # the depth inside the messages array, once found (0: not in it)
    key_next = False  # the string just read is a top-level key
    start = -1
    for match in TOKEN_RE.finditer(document):
        token = match.group()
        first = token[:1]
        if first == b'"':
            key_next = depth == 1 and previous in (b"{", b",")
            if key_next and not array and not spans and orjson.loads(token) == "messages":
                array = -1  # its `[` comes next
            previous = b'"'
            continue
        if first in b"[{":
            depth += 1
            if array == -1 and first == b"[" and previous == b":":
                array = depth
            elif array > 0 and depth == array + 1 and first == b"{":
                start = match.start()
        elif first in b"]}":
            if array > 0 and depth == array + 1 and first == b"}" and start >= 0:
                spans.append((start, match.end()))
                start = -1
            if array > 0 and depth == array:
                array = 0  # the array is closed: nothing after it is a message
            depth -= 1
        previous = token
    objects = sum(isinstance(m, dict) for m in data["messages"])
    return spans if len(spans) == objects else None


def document_records(document: bytes) -> Iterator[tuple[int, bytes]]:
    """(offset, bytes) of each record of a one-document file: the document, then its
    messages (see the module); the whole file as its only record when it does not parse."""
    yield 0, document
    for start, end in message_spans(document) or ():
        yield start, document[start:end]
