"""Who may write, and what was written: the audit log of writes and the API's tokens."""

from __future__ import annotations

import hashlib
import secrets

from django.conf import settings
from django.db import models


class AuditEntry(models.Model):
    """One write done through the dashboard or the API: who, what, when."""

    at = models.DateTimeField(auto_now_add=True, db_index=True)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    actor = models.CharField(max_length=150)  # username, "token:<name>" or "local"
    via = models.CharField(max_length=16)  # web, api
    action = models.CharField(max_length=32)
    session_id = models.UUIDField(null=True, blank=True)  # None: no session (a worktree)
    result_session_id = models.UUIDField(null=True, blank=True)
    turn = models.IntegerField(null=True, blank=True)
    remote_addr = models.GenericIPAddressField(null=True, blank=True)
    detail = models.CharField(max_length=4096, blank=True)  # e.g. the worktree's path

    class Meta:
        ordering = ["-at"]
        verbose_name_plural = "audit log"

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M} {self.actor} {self.action} {self.session_id}"


class ApiToken(models.Model):
    """A bearer token for the JSON API; only its hash is stored."""

    name = models.CharField(max_length=100)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE
    )
    key_hash = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return self.name

    @staticmethod
    def hash(key: str) -> str:
        """The stored form of a token."""
        return hashlib.sha256(key.encode()).hexdigest()

    @classmethod
    def issue(cls, *, name: str, user: object | None = None) -> tuple[ApiToken, str]:
        """A new token and its secret, which is shown once and never stored."""
        key = "bb_" + secrets.token_urlsafe(32)
        token = cls.objects.create(name=name, user=user, key_hash=cls.hash(key))
        return token, key
