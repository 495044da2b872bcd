"""What the import stores beside the record rows, from its one read of each line: each
row's search text (`searching.TextLinks`) and the usage of the API messages it carries
(`usage.usage_store`), as the search and usage passes would from a second read."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from ...conversation import Node
from ...formats.usage import MessageUsage
from ...models import Session
from ..searching import TextLinks
from ..usage import usage_store
from .rows import Rows


def usage_stored(
    session: Session, nodes: list[Node], rows: Rows, adapt: Callable[[datetime], Any]
) -> None:
    """Count the API messages of the rows read (`Rows.usage`), as the usage pass would."""
    found: dict[str, tuple[int, Any, MessageUsage]] = {}
    for k, usage in rows.usage.items():
        if usage.key in found:
            line, at, seen = found[usage.key]
            found[usage.key] = (line, at, seen.merged(usage))
        else:
            stamp = nodes[k].timestamp
            found[usage.key] = (rows.first_line + k, adapt(stamp) if stamp else None, usage)
    usage_store(session, found)


def texts_stored(session: Session, nodes: list[Node], rows: Rows) -> dict[int, int]:
    """Store the texts of the rows read (`Rows.texts`); each row's text id, by row."""
    if not rows.texts:
        return {}
    links = TextLinks(session, [nodes[k].uuid or "" for k in rows.texts])
    first = rows.first_line
    for k, found in rows.texts.items():
        uuid = nodes[k].uuid or ""
        if not links.known_link(first + k, uuid):
            links.add(first + k, uuid, nodes[k].kind, found)
    return {line - first: text_id for text_id, line in links.store()}
