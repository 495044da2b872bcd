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
    """A whole file that belongs to a session besides its lines (a file-history backup, or an
    earlier version of its own file), zstd-compressed with the SHA-256 of its raw bytes;
    stored once, as such files never change."""

    class Kind(models.TextChoices):
        FILE_HISTORY = "file-history", "file-history backup"
        # A session file's bytes as they were before its CLI rewrote it in place (Gemini CLI's
        # one-document files), named by their SHA-256 (`archive.versions`).
        EARLIER_VERSION = "earlier-version", "earlier version of the session file"

    session = models.ForeignKey(
        "sessions_app.Session", on_delete=models.CASCADE, related_name="archived_files"
    )
    kind = models.CharField(max_length=32, choices=Kind)
    name = models.CharField(max_length=255)  # the file's name in its folder, never a path
    length = models.BigIntegerField()  # raw bytes
    mode = models.PositiveIntegerField(default=0o600)  # permission bits as found
    data = models.BinaryField()  # zstd frame
    digest = models.CharField(max_length=64)  # sha256 hex of the raw bytes

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["session", "kind", "name"], name="unique_archived_file")
        ]

    def __str__(self) -> str:
        return f"{self.session_id}/{self.kind}/{self.name}"
