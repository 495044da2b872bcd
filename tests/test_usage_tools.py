"""The tools a project used most and their failure rates: a call fails as the transcript
shows it (a result marked an error, a shell's exit status not 0), each call once across a
fork; as a selector, `/usage/tools.csv` and `GET /api/usage/tools`."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest
from django.test import Client

from sessions_app.models import Project, Session
from sessions_app.selectors.usage.tools import ToolStats, tool_stats
from sessions_app.services.branching import session_fork
from sessions_app.services.importing import sessions_import

from .factories import assistant_record, tool_result, user_record, write_session
from .four_agents import AGENTS, four_agents_imported  # noqa: F401 (the fixture `four`)

pytestmark = pytest.mark.django_db
SID = "00000000-0000-4000-8000-0000000000c1"


def _call(call_id: str, name: str) -> dict:
    return {"type": "tool_use", "id": call_id, "name": name, "input": {"command": "x"}}


def _session(root: Path) -> Session:
    """Two turns: the first calls Bash three times (one an error, one interrupted), Read
    once, and Edit once without an answer; the second calls Bash once more, fine."""
    records: list[dict] = []

    def add(record: dict) -> dict:
        records.append(record)
        return record

    last = add(user_record("first", sid=SID))["uuid"]
    calls = [_call("b1", "Bash"), _call("b2", "Bash"), _call("b3", "Bash"), _call("r1", "Read")]
    last = add(assistant_record([*calls, _call("e1", "Edit")], sid=SID, parent=last))["uuid"]
    error = tool_result("b1", "Exit code 2")
    error[0]["is_error"] = True
    for content in (error, tool_result("b2", "ok"), tool_result("r1", "text")):
        last = add(user_record(content, sid=SID, parent=last))["uuid"]
    stopped = add(user_record(tool_result("b3", "[Request interrupted]"), sid=SID, parent=last))
    stopped["toolUseResult"] = {"stdout": "", "stderr": "", "interrupted": True}
    last = add(assistant_record("done", sid=SID, parent=stopped["uuid"]))["uuid"]
    last = add(user_record("second", sid=SID, parent=last))["uuid"]
    last = add(assistant_record([_call("b4", "Bash")], sid=SID, parent=last))["uuid"]
    last = add(user_record(tool_result("b4", "ok"), sid=SID, parent=last))["uuid"]
    add(assistant_record("done too", sid=SID, parent=last))
    write_session(root / "-work-demo", records)
    report = sessions_import(roots=[root])
    assert not report.errors, report.errors
    return Session.objects.get(session_id=SID)


def _by_name(stats: list[ToolStats]) -> dict[str, tuple[int, int, int]]:
    return {t.name: (t.calls, t.answered, t.failed) for t in stats}


def test_failures_are_errors_and_exit_statuses_and_a_fork_counts_once(
    tmp_path: Path, settings
) -> None:
    settings.SESSION_ROOTS = [tmp_path]
    session = _session(tmp_path)
    stats = tool_stats(session.project)
    assert _by_name(stats) == {"Bash": (4, 4, 2), "Read": (1, 1, 0), "Edit": (1, 0, 0)}
    assert stats[0].name == "Bash" and stats[0].failure_rate == 0.5

    fork = session_fork(session=session, turn=2)
    assert fork.project_id == session.project_id
    assert _by_name(tool_stats(session.project)) == _by_name(stats)


def test_every_agent_and_a_shell_that_failed_in_the_corpus(four: None) -> None:
    for agent in AGENTS:
        found = [tool_stats(p) for p in Project.objects.filter(agent=agent)]
        assert any(t.calls for stats in found for t in stats), agent
    # The manifest session's `Bash` ended with exit 127 (tests/test_tools_view.py).
    manifest = Session.objects.get(session_id="a7da6a22-facc-4fcd-8bab-f83c87862004")
    bash = {t.name: t for t in tool_stats(manifest.project)}["Bash"]
    assert bash.failed >= 1 and bash.answered >= bash.failed


def test_the_csv_and_the_api(tmp_path: Path, settings, client: Client, token: str) -> None:
    settings.SESSION_ROOTS = [tmp_path]
    project = _session(tmp_path).project
    response = client.get(f"/usage/tools.csv?project={project.pk}")
    assert response.status_code == 200
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert [(r["tool"], r["calls"], r["failed"], r["failure_rate"]) for r in rows] == [
        ("Bash", "4", "2", "0.5000"),
        ("Edit", "1", "0", "0.0000"),
        ("Read", "1", "0", "0.0000"),
    ]
    assert client.get("/usage/tools.csv").status_code == 400

    auth = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    body = client.get(f"/api/usage/tools?project={project.pk}", **auth).json()
    assert body["project"]["id"] == project.pk
    assert [(t["name"], t["calls"], t["failed"]) for t in body["tools"]] == [
        ("Bash", 4, 2),
        ("Edit", 1, 0),
        ("Read", 1, 0),
    ]
    assert body["tools"][0]["failure_rate"] == 0.5
    assert client.get("/api/usage/tools", **auth).status_code == 400
    assert client.get("/api/usage/tools?project=999999", **auth).status_code == 404
    assert Client().get(f"/api/usage/tools?project={project.pk}").status_code == 401
