"""The time a list row shows is the time the list is sorted by."""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime, timedelta

import pytest

from sessions_app.models import Project, Session

pytestmark = pytest.mark.django_db

ROW = re.compile(r'<li class="recent-row" id="recent-([0-9a-f-]{36})">(.*?)</li>', re.S)


def _session(project: Project, title: str, **times: datetime) -> Session:
    session = Session.objects.create(
        project=project,
        session_id=uuid.uuid4(),
        path=f"/r/-w/{title}.jsonl",
        agent="claude",
        title=title,
        turn_count=1,
    )
    Session.objects.filter(pk=session.pk).update(**times)
    session.refresh_from_db()
    return session


def _words(row: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", row).replace("\xa0", " "))


def test_recent_fork_is_labelled_with_when_it_was_made(client) -> None:
    now = datetime.now(UTC)
    project = Project.objects.create(agent="claude", folder="/r/-w", root="/r", path="/w")
    source = _session(project, "source", updated_at=now - timedelta(days=8))
    # Made a minute ago from a week-old session: its copied records carry the old times.
    fork = _session(project, "fork", updated_at=now - timedelta(days=8), made_at=now)
    Session.objects.filter(pk=fork.pk).update(parent=source)
    other = _session(project, "other", updated_at=now - timedelta(minutes=12))

    html = client.get("/recent/").content.decode()
    rows = {sid: _words(row) for sid, row in ROW.findall(html)}
    order = [sid for sid, _ in ROW.findall(html)]
    assert order[:2] == [str(fork.session_id), str(other.session_id)]
    assert "made just now" in rows[str(fork.session_id)], rows[str(fork.session_id)]
    assert "week ago" not in rows[str(fork.session_id)]
    assert "12 minutes ago" in rows[str(other.session_id)]
    assert "week ago" in rows[str(source.session_id)]
