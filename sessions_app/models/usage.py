"""Tokens per API message, counted once per session (services.usage)."""

from __future__ import annotations

from django.db import models

from .sessions import Session


class Usage(models.Model):
    """One API message of a session: its tokens and model, at its first record.

    `key` is the message's id (or its record's uuid, formats.usage): a fork holds
    the messages it copied under the same keys, so a family counts each once.
    """

    session = models.ForeignKey(
        Session, on_delete=models.CASCADE, related_name="usage", db_index=False
    )
    line = models.PositiveIntegerField()  # the message's first record
    key = models.CharField(max_length=128)
    model = models.CharField(max_length=128, blank=True)
    at = models.DateTimeField(null=True, blank=True)
    input_tokens = models.BigIntegerField(default=0)
    output_tokens = models.BigIntegerField(default=0)
    cache_write_tokens = models.BigIntegerField(default=0)
    cache_read_tokens = models.BigIntegerField(default=0)
    cache_write_1h_tokens = models.BigIntegerField(default=0)  # of cache_write_tokens
    reasoning_tokens = models.BigIntegerField(default=0)  # of output_tokens (Codex says)
    # A session of its namespace made before this one holds this message too (a fork's
    # copied prefix): totals across sessions leave it out, so each message counts once
    # (once per namespace on a hub: another machine's message under the same key is its own).
    copy = models.BooleanField(default=False)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["session", "key"], name="unique_usage_key"),
        ]
        indexes = [
            models.Index(fields=["session", "line"], name="usage_session_line"),
            models.Index(fields=["at"], name="usage_at"),
            models.Index(fields=["key"], name="usage_key"),
        ]

    def __str__(self) -> str:
        return f"{self.session_id}:{self.line} {self.model}"
