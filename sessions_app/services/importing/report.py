"""What one import run did, counted as it goes and summed up in one line at the end."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class ImportReport:
    """What one import run did; `errors` name the file (and line) of each problem."""

    files: int = 0
    sessions: int = 0
    records: int = 0
    skipped: int = 0
    invalid: int = 0
    dropped: int = 0  # fields of otherwise good records dropped or clamped
    errors: list[str] = field(default_factory=list)
    # The projects this run has met (folder: id), each looked up once; only committed ones.
    project_ids: dict[str, int] = field(default_factory=dict, repr=False)

    def summary(self) -> str:
        """The one-line summary printed at the end of an import."""
        return (
            f"{self.files} files, {self.sessions} sessions imported, {self.records} records, "
            f"{self.skipped} unchanged, {self.invalid} invalid lines, "
            f"{self.dropped} bad fields dropped, {len(self.errors)} errors"
        )
