"""The tools a project's sessions used most, and how often each failed.

A call is a tool part of an assistant message (`Agent.assistant_parts`); it failed when
its result says so as the transcript shows it: the CLI marked it an error
(`ToolOutcome.is_error`) or its shell command ended with another exit status than 0
(`ToolOutcome.exit`). Every record of the project's session files counts (abandoned
branches, sidechains and subagents' files too: the tools ran), each call once by its id:
a fork holds its parent's calls under the same ids.

The index keeps no tool names, so this reads the project's files (the records that can
hold a call or a result, each line at its offset): the pages and the API ask for it as a
heavy request.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

from ...formats import ASSISTANT, TOOL_RESULT, agent_for
from ...models import Project, Record
from ...services.reading.records import PAGE_COLUMNS, iter_with_data


@dataclass
class ToolStats:
    name: str
    calls: int = 0
    failed: int = 0
    answered: int = 0  # calls whose result the files hold

    @property
    def failure_rate(self) -> float:
        """Failed calls of those answered (0 when none was)."""
        return self.failed / self.answered if self.answered else 0.0


def tool_stats(
    project: Project, *, since: date | None = None, until: date | None = None
) -> list[ToolStats]:
    """Each tool the project's sessions called (days in UTC), most calls first."""
    names: dict[str, str] = {}  # call id -> tool name
    outcome: dict[str, bool] = {}  # call id -> failed
    for session in project.sessions.order_by("pk"):
        agent = agent_for(session.agent)
        rows = Record.objects.filter(session=session, kind__in=(ASSISTANT, TOOL_RESULT))
        if since is not None:
            rows = rows.filter(timestamp__gte=datetime.combine(since, time(), tzinfo=UTC))
        if until is not None and until < date.max:
            end = datetime.combine(until + timedelta(days=1), time(), tzinfo=UTC)
            rows = rows.filter(timestamp__lt=end)
        rows = rows.order_by("line").only(*PAGE_COLUMNS)
        for rec in iter_with_data(session, rows.iterator(chunk_size=2000)):
            data = rec.data
            if not isinstance(data, dict):
                continue
            if rec.kind == ASSISTANT:
                for index, part in enumerate(agent.assistant_parts(data)):
                    if part.kind == "tool":
                        call = part.call_id or f"{session.pk}:{rec.line}:{index}"
                        names.setdefault(call, part.name or "(unnamed)")
            if rec.kind == TOOL_RESULT or (rec.kind == ASSISTANT and agent.results_in_reply):
                for result in agent.tool_results(data):
                    failed = result.is_error or (result.exit is not None and result.exit != "0")
                    # A result seen twice (a fork's copy) keeps the first answer.
                    outcome.setdefault(result.call_id, failed)
    stats: dict[str, ToolStats] = {}
    for call, name in names.items():
        entry = stats.setdefault(name, ToolStats(name))
        entry.calls += 1
        if call in outcome:
            entry.answered += 1
            entry.failed += outcome[call]
    return sorted(stats.values(), key=lambda s: (-s.calls, s.name))
