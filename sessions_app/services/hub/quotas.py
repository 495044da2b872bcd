"""A namespace's quota on a hub: the bytes its machine may make the hub hold.

What counts is what the machine sent, uncompressed, as it lies on the hub's disk: each
pushed file (indexed or not: a file the importer refuses is still bytes on the disk)
and each staging file of a push not yet committed (`HubFile.stored`, `.staged`). Forks
made on the hub in the namespace's folder do not count until the machine takes them:
no other user's action fills a machine's quota.

A push is measured by the size its chunk announces, before a byte of it is
decompressed, with the namespace's row locked so that two requests of one machine
cannot both take the last room (`room_for`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.conf import settings
from django.db import transaction
from django.db.models import F, Sum

from ...models import HubFile, HubNamespace
from .locking import PushRefused


class OverQuota(PushRefused):
    """A push that would take the namespace past BRANCHBOARD_HUB_QUOTA_BYTES."""

    status = 413


def quota() -> int:
    """The bytes one namespace may hold on this hub (BRANCHBOARD_HUB_QUOTA_BYTES)."""
    return int(getattr(settings, "HUB_QUOTA_BYTES", 10 << 30))


def namespace_used(namespace: HubNamespace) -> int:
    """The bytes the namespace's pushed files and staging files hold now."""
    total = HubFile.objects.filter(namespace=namespace).aggregate(n=Sum(F("stored") + F("staged")))
    return int(total["n"] or 0)


@contextmanager
def room_for(namespace: HubNamespace, *, adds: int, frees: int = 0) -> Iterator[None]:
    """Held while a push writes: refused (OverQuota) when `adds` more bytes (less `frees`,
    which the write replaces) take the namespace past its quota; one writer per namespace."""
    with transaction.atomic():
        # The namespace's row is the lock: a second request of the same machine waits here
        # until the first has written and recorded its bytes.
        list(HubNamespace.objects.select_for_update().filter(pk=namespace.pk).values("pk"))
        used = namespace_used(namespace)
        if used - frees + adds > quota():
            raise OverQuota(
                f"namespace {namespace.name} is over its quota: it holds {used} of its "
                f"{quota()} bytes (BRANCHBOARD_HUB_QUOTA_BYTES), and this push adds "
                f"{adds - frees} more"
            )
        yield


def held_of(namespace: HubNamespace, path: str) -> tuple[int, int]:
    """(stored, staged) bytes recorded for one path of the namespace."""
    row = HubFile.objects.filter(namespace=namespace, path=path).values_list("stored", "staged")
    return row.first() or (0, 0)


def held_record(
    namespace: HubNamespace, path: str, *, stored: int | None = None, staged: int | None = None
) -> None:
    """Record what the hub's disk holds for `path` now (its file, its staging file)."""
    values = {
        name: value for name, value in (("stored", stored), ("staged", staged)) if value is not None
    }
    HubFile.objects.update_or_create(namespace=namespace, path=path, defaults=values)
