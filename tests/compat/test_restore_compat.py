"""The real CLIs judge a restore: a session whose file was deleted, restored from the archive,
resumes with exactly its history."""

from __future__ import annotations

import pytest

from sessions_app.models import Session
from tests.compat.test_fork_compat import Agent, _no_busy_wait, agent  # noqa: F401 (fixtures)

pytestmark = [pytest.mark.compat, pytest.mark.django_db]


def test_a_deleted_session_restored_from_the_archive_resumes_with_its_prompts(
    agent: Agent,  # noqa: F811
    settings,
) -> None:
    prompts = ["alpha one", "RUN: echo tool-output-two", "gamma three"]
    sid = agent.session(prompts)
    agent.import_all()
    source = agent.file(sid)
    # A restore writes only into today's roots (issue 41 item 8): this agent's is one.
    root = next(p for p in source.parents if p.name == "projects")
    settings.SESSION_ROOTS = [*settings.SESSION_ROOTS, root]
    raw = source.read_bytes()
    full = agent.control(sid, "next question")  # what resuming the whole history sends
    assert all(("user", p) in full for p in prompts)

    source.unlink()  # the CLI's cleanup
    agent.import_all()
    assert Session.objects.get(session_id=sid).file_removed_at is not None

    restored = agent.command("restore_session", sid)
    assert restored["restored"] == [str(source)]
    assert source.read_bytes() == raw
    assert agent.resume_conversation(sid, "next question") == full
