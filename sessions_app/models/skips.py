"""Files the import leaves out on purpose, as they were when it did (services.importing.skips)."""

from __future__ import annotations

from django.db import models


class SkippedFile(models.Model):
    """A file left out (its name is no session id, its session id is another file's):
    while its size, mtime and inode stay these, later imports pass it over unopened."""

    path = models.CharField(max_length=4096, unique=True)
    size = models.BigIntegerField()
    mtime_ns = models.BigIntegerField()
    inode = models.BigIntegerField()
    reason = models.TextField()  # what the import said when it left the file out

    def __str__(self) -> str:
        return self.path
