"""What one import run did, counted as it goes and summed up in one line at the end."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime


@dataclass
class ImportReport:
    """What one import run did; `errors` name the file (and line) of each problem."""

    # Whether the import stores the records' search texts with them, from its own read of
    # each line (False: the search pass reads them again; a hub's commit of a big file).
    texts: bool = True
    files: int = 0
    subagent_files: int = 0  # of `files`: subagent transcripts, not sessions of their own
    sessions: int = 0  # imported (new or changed); subagent transcripts are counted apart
    subagents: int = 0
    records: int = 0
    skipped: int = 0
    invalid: int = 0
    dropped: int = 0  # fields of otherwise good records dropped or clamped
    cut_lines: int = 0  # lines past BRANCHBOARD_MAX_RECORD_BYTES, indexed cut (kept whole)
    archived: int = 0  # raw bytes added to the archive
    removed: int = 0  # files found gone since the last pass (their sessions stay, archived)
    # The archived end of each archived session as the pass began (row: byte).
    archive_ends: dict[int, int] = field(default_factory=dict, repr=False)
    archive_ends_known: bool = field(default=False, repr=False)
    errors: list[str] = field(default_factory=list)
    # Of `errors`: a line of a file (not JSON, a field dropped), counted and said; the file
    # is imported all the same, so no pass failed for it and trying again changes nothing.
    line_problems: int = 0
    # Files left out on purpose (a name that is no session id, another file's session id):
    # said once, until they change (`skips`); not errors, trying again changes nothing.
    left_out: list[str] = field(default_factory=list)
    # The projects this run has met (folder: id), each looked up once; only committed ones.
    project_ids: dict[str, int] = field(default_factory=dict, repr=False)
    # The rows of the sessions and subagent transcripts this run imported (new or changed),
    # for search and usage to catch up with those alone.
    session_pks: list[int] = field(default_factory=list, repr=False)
    # CLI branches read before the session they came from (newest first): (row id, source
    # session id, turns copied, when made), linked at the end of the run.
    unlinked: list[tuple[int, str, int | None, datetime | None]] = field(
        default_factory=list, repr=False
    )

    @property
    def failed(self) -> bool:
        """Whether something failed that another pass may do better (a bad line is no failure)."""
        return len(self.errors) > self.line_problems

    def summary(self) -> str:
        """The one-line summary printed at the end of an import."""
        files = _n(self.files, "file")
        if self.subagent_files:
            files += f" ({_n(self.subagent_files, 'subagent transcript')})"
        imported = _n(self.sessions, "session")
        if self.subagents:
            imported += f" and {_n(self.subagents, 'subagent transcript')}"
        left_out = f"{len(self.left_out)} left out, " if self.left_out else ""
        if self.cut_lines:
            left_out += f"{_n(self.cut_lines, 'long line')} indexed cut, "
        return (
            f"{files}, {imported} imported, {_n(self.records, 'record')}, "
            f"{self.skipped} unchanged, {left_out}{_n(self.invalid, 'invalid line')}, "
            f"{_n(self.dropped, 'bad field')} dropped, "
            f"{_n(len(self.errors) - self.line_problems, 'error')}"
        )


def _n(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"
