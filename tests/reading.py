"""Test helper: run the pure readers over a file, as the importer would."""

from __future__ import annotations

from pathlib import Path

from sessions_app.conversation import Analysis, Node, analyse, node_from_record
from sessions_app.formats import detect_agent_from_path, parse_line


def read_nodes(path: Path) -> tuple[str, list[Node]]:
    agent = detect_agent_from_path(path)
    with path.open("rb") as f:
        nodes = [node_from_record(i, parse_line(agent, raw)) for i, raw in enumerate(f)]
    return agent, nodes


def analyse_file(path: Path) -> tuple[list[Node], Analysis]:
    agent, nodes = read_nodes(path)
    return nodes, analyse(nodes, agent)
