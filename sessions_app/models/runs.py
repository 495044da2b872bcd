"""Runs of an agent's CLI on a session, started from the pages (services.runs)."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from ..formats.running import MODES
from .sessions import Session

SETTLING = timedelta(seconds=15)


class Run(models.Model):
    """One run of an agent's CLI on a session, started from the pages."""

    class State(models.TextChoices):
        RUNNING = "running", "running"
        FINISHED = "finished", "finished"
        FAILED = "failed", "failed"
        STOPPED = "stopped", "stopped"
        LOST = "lost", "ended (its process is gone)"

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="runs")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    actor = models.CharField(max_length=150)
    prompt = models.TextField()
    mode = models.CharField(max_length=16)
    model = models.CharField(max_length=128, blank=True)
    command = models.JSONField(default=list)  # as run, the prompt named, not repeated
    cwd = models.CharField(max_length=4096)
    # The session file as the run found it (services.runs.undoing): a failed run
    # takes back what it appended.
    file_before = models.JSONField(default=dict, blank=True)
    state = models.CharField(max_length=16, choices=State, default=State.RUNNING)
    # The runner process (a session leader: its group is the CLI's) and its start
    # time in clock ticks, so that a reused pid is never taken for it.
    pid = models.IntegerField(null=True, blank=True)
    pid_start = models.BigIntegerField(null=True, blank=True)
    started_at = models.DateTimeField(auto_now_add=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    stop_requested_at = models.DateTimeField(null=True, blank=True)
    exit_status = models.IntegerField(null=True, blank=True)
    message = models.TextField(blank=True)  # the CLI's own words when it failed
    stderr_tail = models.TextField(blank=True)

    class Meta:
        ordering = ["-started_at"]
        constraints = [
            # One run per session at a time: a second start (a double click) fails here.
            models.UniqueConstraint(
                fields=["session"], condition=Q(ended_at__isnull=True), name="one_run_per_session"
            )
        ]

    def __str__(self) -> str:
        return f"run {self.pk} of {self.session_id}: {self.state}"

    @property
    def ended(self) -> bool:
        return self.ended_at is not None

    @property
    def watched(self) -> bool:
        """Whether a page showing this run should still ask how it stands: while it runs,
        and for a moment after a page took it for gone (its following thread, which may
        live in another server process, then records how it really ended)."""
        if self.ended_at is None:
            return True
        recent = timezone.now() - self.ended_at < SETTLING
        return self.state == self.State.LOST and recent

    @property
    def mode_label(self) -> str:
        mode = MODES.get(self.mode)
        return mode.label if mode else self.mode
