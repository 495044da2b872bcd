"""A namespace's quota on a hub (BRANCHBOARD_HUB_QUOTA_BYTES), the zstd bomb refused before
it is inflated, and pushes never committed let go (BRANCHBOARD_HUB_STAGED_SECONDS).

The hub is this process, reached through Django's test client (as in test_hub_hostile).
"""

from __future__ import annotations

import hashlib
import os
import sys
import time
from pathlib import Path

import orjson
import pytest
from django.core.management import call_command

from sessions_app.models import AuditEntry, HubFile, Session
from sessions_app.services.hub.chunks import chunk_decode
from sessions_app.services.hub.namespaces import hub_folder

from .corpus import FIXTURES
from .test_hub_batch import _batch, _body, _hub_path
from .test_hub_hostile import PATH, SOURCE, Hub, _stored
from .test_hub_hostile import hub as hub  # the fixture

if sys.version_info >= (3, 14):
    from compression import zstd
else:
    from backports import zstd

pytestmark = pytest.mark.django_db

OTHER = next(p for p in sorted((FIXTURES / "cli/claude").rglob("*.jsonl")) if p != SOURCE)
OTHER_PATH = _hub_path(OTHER)


def namespace_used(namespace: object) -> int:
    from sessions_app.services.hub.quotas import namespace_used as used  # new with the quota

    return used(namespace)


def staged_expire() -> list[Path]:
    from sessions_app.services.hub.expiring import staged_expire as expire  # new, as above

    return expire()


def _said(response) -> str:
    return response.json()["error"]


def test_a_push_past_the_namespaces_quota_is_refused_naming_the_quota(hub: Hub, settings) -> None:
    data, other = SOURCE.read_bytes(), OTHER.read_bytes()
    settings.HUB_QUOTA_BYTES = len(data) + len(other) - 1
    assert hub.chunk(data).status_code == 200
    assert hub.commit(data).status_code == 200
    before = _stored()
    response = hub.chunk(other, path=OTHER_PATH)
    assert response.status_code == 413
    said = _said(response)
    assert "quota" in said and "BRANCHBOARD_HUB_QUOTA_BYTES" in said and "alice@laptop" in said
    assert str(settings.HUB_QUOTA_BYTES) in said
    assert _stored() == before  # nothing of it on the hub, no staging file
    assert AuditEntry.objects.filter(action="push-refused", detail__contains="quota").exists()
    # One byte more of quota and it fits: the quota counts the bytes, not the files.
    settings.HUB_QUOTA_BYTES += 1
    assert hub.chunk(other, path=OTHER_PATH).status_code == 200
    assert hub.commit(other, path=OTHER_PATH).status_code == 200
    assert namespace_used(HubFile.objects.get(path=PATH).namespace) == len(data) + len(other)


def test_an_append_past_the_quota_is_refused_and_the_file_stays_as_it_was(
    hub: Hub, settings
) -> None:
    data = SOURCE.read_bytes()
    cut = data.index(b"\n", len(data) // 2) + 1
    settings.HUB_QUOTA_BYTES = cut + 10
    assert hub.chunk(data[:cut]).status_code == 200
    assert hub.commit(data[:cut]).status_code == 200
    response = hub.chunk(data[cut:], offset=cut, staged=False, held=data[:cut])
    assert response.status_code == 413 and "quota" in _said(response)
    assert _stored() == {f"alice@laptop/{PATH}": data[:cut]}


def test_staged_bytes_count_and_a_staging_file_started_over_frees_its_own(
    hub: Hub, settings
) -> None:
    data = SOURCE.read_bytes()
    cut = data.index(b"\n", len(data) // 2) + 1
    settings.HUB_QUOTA_BYTES = 2 * cut - 1
    assert hub.chunk(data[:cut]).status_code == 200  # staged, not committed: counted
    elsewhere = PATH.replace(SOURCE.name, "elsewhere.jsonl")
    response = hub.chunk(data[:cut], path=elsewhere)
    assert response.status_code == 413 and "quota" in _said(response)
    settings.HUB_QUOTA_BYTES = len(data)
    # The same file's push starting over replaces its staged bytes: it fits.
    assert hub.chunk(data[:cut]).status_code == 200
    assert hub.chunk(data[cut:], offset=cut, held=data[:cut]).status_code == 200
    assert hub.commit(data).status_code == 200
    row = HubFile.objects.get(path=PATH)
    assert (row.stored, row.staged) == (len(data), 0)


def test_another_namespaces_quota_is_its_own(hub: Hub, settings) -> None:
    data = SOURCE.read_bytes()
    settings.HUB_QUOTA_BYTES = len(data)
    assert hub.chunk(data).status_code == 200
    assert hub.commit(data).status_code == 200
    response = hub.chunk(data, token=hub.bob, namespace="bob@desk")
    assert response.status_code == 200


def test_a_zstd_bomb_past_the_quota_is_refused_before_a_byte_is_decompressed(
    hub: Hub, settings
) -> None:
    settings.HUB_QUOTA_BYTES = 4 << 20
    settings.HUB_MAX_CHUNK = 2 << 20
    settings.HUB_MAX_RATIO = 0  # the quota alone, not the ratio (tested below)
    line = b'{"type":"user","message":{"role":"user","content":"' + b"a" * 200 + b'"}}\n'
    block = line * ((2 << 20) // len(line))
    packed = zstd.compress(block, level=19)
    assert len(packed) < 8 << 10  # 2 MB in a few kB: the bomb's chunk
    assert hub.chunk(block).status_code == 200
    assert hub.chunk(block, offset=len(block), held=block).status_code == 200
    # The third would pass the quota: refused on its announced length alone. A body
    # that is no zstd at all shows it: decompressing it would have said so (400).
    response = hub.chunk(block, offset=2 * len(block), held=block * 2, body=b"not zstd")
    assert response.status_code == 413 and "quota" in _said(response)
    staging = hub_folder() / "alice@laptop" / Path(PATH).parent / f".{Path(PATH).name}.push"
    assert staging.stat().st_size == 2 * len(block) <= settings.HUB_QUOTA_BYTES


def test_a_batch_past_the_quota_is_refused_before_its_files_are_inflated(
    hub: Hub, settings
) -> None:
    settings.HUB_QUOTA_BYTES = 1 << 20
    settings.HUB_MAX_RATIO = 0  # the quota alone, not the ratio
    zeros = b"\0" * (2 << 20)
    response = _batch(hub, _body([(_hub_path(SOURCE), zeros)]))
    assert response.status_code == 413 and "quota" in _said(response)
    assert _stored() == {}
    files = [(_hub_path(SOURCE), SOURCE.read_bytes())]
    assert _batch(hub, _body(files)).status_code == 200
    assert HubFile.objects.get(path=_hub_path(SOURCE)).stored == SOURCE.stat().st_size


def _staging() -> Path:
    return hub_folder() / "alice@laptop" / Path(PATH).parent / f".{Path(PATH).name}.push"


def test_a_push_never_committed_expires_and_leaves_the_quota(hub: Hub, settings) -> None:
    data = SOURCE.read_bytes()
    cut = data.index(b"\n", len(data) // 2) + 1
    settings.HUB_STAGED_SECONDS = 3600
    assert hub.chunk(data[:cut]).status_code == 200
    namespace = HubFile.objects.get(path=PATH).namespace
    assert namespace_used(namespace) == cut
    assert staged_expire() == []  # fresh: kept
    old = time.time() - 3601
    os.utime(_staging(), (old, old))
    assert staged_expire() == [_staging()]
    assert not _staging().exists()
    assert namespace_used(namespace) == 0
    assert not HubFile.objects.filter(path=PATH).exists()  # a push that never held a file
    # Its next chunk is told to push the file whole again; from the start it is taken.
    response = hub.chunk(data[cut:], offset=cut, held=data[:cut])
    assert response.status_code == 409 and "push it whole" in _said(response)
    assert hub.chunk(data).status_code == 200 and hub.commit(data).status_code == 200
    assert Session.objects.filter(namespace="alice@laptop").count() == 1


def test_the_import_command_lets_expired_pushes_go_and_keeps_committed_files(
    hub: Hub, settings
) -> None:
    data = SOURCE.read_bytes()
    assert hub.chunk(data).status_code == 200 and hub.commit(data).status_code == 200
    cut = data.index(b"\n", len(data) // 2) + 1
    assert hub.chunk(data[:cut]).status_code == 200  # a rewrite begun, never committed
    settings.HUB_STAGED_SECONDS = 3600
    old = time.time() - 3601
    os.utime(_staging(), (old, old))
    call_command("import_sessions", "--no-progress", "--root", str(settings.DATA_DIR / "none"))
    assert not _staging().exists()
    assert (hub_folder() / "alice@laptop" / PATH).read_bytes() == data
    row = HubFile.objects.get(path=PATH)
    assert (row.stored, row.staged) == (len(data), 0)
    state = hub.client.post(
        "/api/hub/state?namespace=alice@laptop",
        orjson.dumps({"paths": [PATH]}),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {hub.alice}",
    ).json()["files"][PATH]
    assert state["size"] == len(data) and "staging" not in state


def test_a_zstd_bomb_is_refused_by_its_ratio_under_the_default_quota(hub: Hub, settings) -> None:
    """11.8 KB on the wire made a 134 MB file: a chunk that claims to inflate more than
    BRANCHBOARD_HUB_MAX_RATIO times its body is refused before it is decompressed, whatever
    room the quota leaves; a real session (at most 17x on the shared corpus) goes."""
    line = b'{"type":"user","message":{"role":"user","content":"' + b"a" * 200 + b'"}}\n'
    block = line * ((8 << 20) // len(line))
    packed = zstd.compress(block, level=19)
    assert len(block) // len(packed) > 1000  # the bomb: thousands of times its size
    response = hub.chunk(block, body=packed)
    assert response.status_code == 413 and "BRANCHBOARD_HUB_MAX_RATIO" in _said(response)
    assert not _staging().exists() and not HubFile.objects.exists()
    batch = _batch(hub, _body([(_hub_path(SOURCE), block)]))
    assert batch.status_code == 413 and "BRANCHBOARD_HUB_MAX_RATIO" in _said(batch)
    assert _stored() == {}
    data = SOURCE.read_bytes()
    assert hub.chunk(data).status_code == 200
    # A small body may inflate far: below a mebibyte the ratio is not asked.
    small = b"\n" * (512 << 10)
    packed = zstd.compress(small, level=19)
    assert len(small) // len(packed) > 1000
    digest = hashlib.sha256(small).hexdigest()
    assert chunk_decode(packed, length=len(small), sha256=digest) == small
