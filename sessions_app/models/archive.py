"""The archive's pieces: a session file's bytes, compressed, kept beside its index."""

from __future__ import annotations

from django.db import models


class ArchivePiece(models.Model):
    """One stretch of a session file (`start`, `length` raw bytes), zstd-compressed,
    with the SHA-256 of the raw bytes: a piece whose bytes do not match is never served."""

    session = models.ForeignKey(
        "sessions_app.Session", on_delete=models.CASCADE, related_name="archive_pieces"
    )
    start = models.BigIntegerField()  # byte offset in the file
    length = models.BigIntegerField()  # raw bytes
    data = models.BinaryField()  # zstd frame
    digest = models.CharField(max_length=64)  # sha256 hex of the raw bytes

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["session", "start"], name="unique_archive_piece")
        ]

    def __str__(self) -> str:
        return f"{self.session_id}@{self.start}+{self.length}"


class ArchivedFile(models.Model):
    """A whole file that belongs to a session besides its lines (a file-history backup, an
    earlier version of its own file, a file of its folder), zstd-compressed with the SHA-256
    of its raw bytes; backups and versions are stored once, as they never change, a folder's
    file again when it changed."""

    class Kind(models.TextChoices):
        FILE_HISTORY = "file-history", "file-history backup"
        # A session file's bytes as they were before its CLI rewrote it in place (Gemini CLI's
        # one-document files), named by their SHA-256 (`archive.versions`).
        EARLIER_VERSION = "earlier-version", "earlier version of the session file"
        # A file of the folder the session owns beside its file (`archive.sidecars`), named
        # by its path in that folder: `custom-title.json`, `subagents/agent-<id>.meta.json`.
        SIDECAR = "sidecar", "file of the session's folder"

    session = models.ForeignKey(
        "sessions_app.Session", on_delete=models.CASCADE, related_name="archived_files"
    )
    kind = models.CharField(max_length=32, choices=Kind)
    # The file's name in its folder; a sidecar's, its path in the session's folder
    # (`/`-separated, never absolute, no `.` or `..`).
    name = models.CharField(max_length=255)
    length = models.BigIntegerField()  # raw bytes
    mode = models.PositiveIntegerField(default=0o600)  # permission bits as found
    data = models.BinaryField()  # zstd frame
    digest = models.CharField(max_length=64)  # sha256 hex of the raw bytes
    # A sidecar's mtime when it was read: an unchanged file is not read again.
    mtime_ns = models.BigIntegerField(null=True, blank=True)
    # Why the file's bytes are not kept (then `data` is empty and `digest` ""): a restore
    # names it instead of leaving it out unsaid. NULL: kept. Nullable, as the mtime, so that
    # adding them is a plain ALTER TABLE on SQLite, not a copy of every archived file.
    not_kept = models.CharField(max_length=255, null=True, blank=True)  # noqa: DJ001

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["session", "kind", "name"], name="unique_archived_file")
        ]

    def __str__(self) -> str:
        return f"{self.session_id}/{self.kind}/{self.name}"
