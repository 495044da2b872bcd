"""The importer's decision, on its own: skip, read from an offset, or read it all again."""

from __future__ import annotations

from sessions_app.services.importing.plan import (
    HEAD_BYTES,
    FileState,
    Plan,
    StoredState,
    digest,
    import_plan,
)

LINES = [b'{"a":1}\n', b'{"b":2}\n', b'{"c":3}\n']


def stored_for(data: bytes, *, inode: int = 7, mtime: int = 1) -> StoredState:
    """The state an import of `data` (whole lines) leaves."""
    last = data.rstrip(b"\n").rfind(b"\n") + 1
    return StoredState(
        size=len(data),
        mtime_ns=mtime,
        inode=inode,
        bytes_imported=len(data),
        head_digest=digest(data[:HEAD_BYTES]),
        tail_offset=last,
        tail_digest=digest(data[last:]),
    )


def plan_for(data: bytes, stored: StoredState | None, *, inode: int = 7, mtime: int = 2) -> Plan:
    def read(offset: int, n: int) -> bytes:
        return data[offset : offset + n]

    return import_plan(FileState(len(data), mtime, inode), stored, read)


def test_a_new_file_is_read_in_full() -> None:
    assert plan_for(b"".join(LINES), None) is Plan.FULL


def test_an_unchanged_file_is_skipped_without_reading() -> None:
    data = b"".join(LINES)

    def read(offset: int, n: int) -> bytes:
        raise AssertionError("an unchanged file must not be read")

    assert import_plan(FileState(len(data), 1, 7), stored_for(data), read) is Plan.SKIP


def test_a_file_that_only_grew_is_read_from_the_offset() -> None:
    old = b"".join(LINES[:2])
    assert plan_for(b"".join(LINES), stored_for(old)) is Plan.APPEND


def test_same_head_different_body_is_read_again() -> None:
    """The trust bug: after an undo the head matched and the body did not."""
    old = b"".join(LINES)
    new = LINES[0] + b'{"x":22222}\n' + b'{"y":3}\n' + b'{"z":4}\n'
    assert len(new) >= len(old)
    assert plan_for(new, stored_for(old)) is Plan.FULL


def test_last_line_moved_is_read_again() -> None:
    old = b"".join(LINES)
    new = LINES[0] + b'{"inserted":0}\n' + LINES[1] + LINES[2]
    assert plan_for(new, stored_for(old)) is Plan.FULL


def test_a_shorter_file_is_read_again() -> None:
    assert plan_for(b"".join(LINES[:2]), stored_for(b"".join(LINES))) is Plan.FULL


def test_a_replaced_file_is_read_again_even_if_it_only_grew() -> None:
    old = b"".join(LINES[:2])
    assert plan_for(b"".join(LINES), stored_for(old, inode=7), inode=8) is Plan.FULL


def test_a_state_without_a_tail_digest_is_read_again() -> None:
    old = b"".join(LINES[:2])
    legacy = stored_for(old)
    legacy = StoredState(**{**{f: getattr(legacy, f) for f in legacy.__slots__}, "tail_digest": ""})
    assert plan_for(b"".join(LINES), legacy) is Plan.FULL


def test_a_changed_head_is_read_again() -> None:
    old = b"".join(LINES)
    new = b'{"A":1}\n' + b"".join(LINES[1:]) + b'{"d":4}\n'
    assert plan_for(new, stored_for(old)) is Plan.FULL
