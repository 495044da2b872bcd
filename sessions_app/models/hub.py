"""A team hub's machines: who pushes into which namespace, and what each pushed."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class HubNamespace(models.Model):
    """One machine of one user on a hub (`user@machine`): the sessions it pushed live
    under their own folder of the hub, and only that user's tokens push into it."""

    name = models.CharField(max_length=130, unique=True)  # user@machine
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT)
    machine = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)
    last_push_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        permissions = [("push_sessions", "Can push a machine's sessions to the hub")]

    def __str__(self) -> str:
        return self.name


class HubFile(models.Model):
    """A file a machine pushed, by its path under the machine's home (`.claude/projects/
    <project>/<id>.jsonl`). A file of the namespace that is not here was made on the
    hub (a fork): the machine pulls it. A row with nothing stored yet is a push under
    way (its staging file)."""

    namespace = models.ForeignKey(HubNamespace, on_delete=models.CASCADE, related_name="files")
    path = models.CharField(max_length=1024)
    size = models.BigIntegerField(default=0)  # bytes the hub holds and has indexed
    # What counts against the namespace's quota (services.hub.quotas): the bytes of the
    # file at its path, indexed or not, and of its staging file (a push not committed).
    stored = models.BigIntegerField(default=0)
    staged = models.BigIntegerField(default=0)
    pushed_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["namespace", "path"], name="unique_hub_file")
        ]

    def __str__(self) -> str:
        return f"{self.namespace}:{self.path}"


class HubFork(models.Model):
    """A session made on the hub in a namespace's folder (a branch or fork of one of its
    sessions) and who made it. Only its namespace's owner decides what is written on
    their machine: it is offered to the machine when the owner made it, or accepted it;
    one a teammate made stays on the hub until then."""

    session = models.OneToOneField(
        "sessions_app.Session", on_delete=models.CASCADE, related_name="hub_fork"
    )
    made_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )  # None: made by no user (a command on the hub) or a user since deleted
    made_at = models.DateTimeField(auto_now_add=True)
    accepted_at = models.DateTimeField(null=True, blank=True)  # by the namespace's owner

    def __str__(self) -> str:
        return f"{self.session_id} by {self.made_by_id}"
