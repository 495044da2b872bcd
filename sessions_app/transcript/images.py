"""The images a record holds, pure: in the one order a page's URLs and the image view count
them, each checked before it is shown.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..formats import Agent

IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})


BASE64_RE = re.compile(r"^[A-Za-z0-9+/=\s]+$")


@dataclass(slots=True)
class Image:
    """An image a record holds; pages load it by URL (its record's line and its number)."""

    media_type: str
    data: str
    line: int = 0  # the record that holds it
    number: int = 0  # its place among the record's images (`record_images`)

    @property
    def src(self) -> str:
        """The image inline, for a self-contained export; pages use its URL instead."""
        return f"data:{self.media_type};base64,{self.data}"

    @property
    def kind(self) -> str:
        """ "PNG", "JPEG", ...: for its alternative text."""
        return self.media_type.removeprefix("image/").upper()

    @property
    def size_label(self) -> str:
        """Its size decoded, e.g. "297 KB"."""
        size = len(self.data) * 3 // 4
        return f"{size / 1_048_576:.1f} MB" if size >= 1_048_576 else f"{size // 1024 or 1} KB"


def record_images(data: Any, agent: Agent) -> list[tuple[str, str]]:
    """Every image a record holds, unchecked (media type, base64 data), in one fixed order:
    its blocks in order, each searched depth first (a tool result's images are inside it).
    An image's number is its place here; the page and the image's URL both count this way."""
    found: list[tuple[str, str]] = []
    stack: list[Any] = list(reversed(agent.content_blocks(data))) if isinstance(data, dict) else []
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            image = agent.image_of(value)
            if image is not None:
                found.append(image)
                continue
            stack.extend(reversed(list(value.values())))
        elif isinstance(value, list):
            stack.extend(reversed(value))
    return found


def numbered_images(
    line: int, data: Any, agent: Agent, pairs: list[tuple[str, str]] | tuple[tuple[str, str], ...]
) -> list[Image]:
    """The images of `pairs` a page may show, each with its place among the record's images."""
    # Matched by value, not identity: a reader may cut the data out of a data URL anew on
    # each call (Codex), so the same image is a different string each time. The same image
    # twice in a record takes the numbers in order.
    numbers: dict[str, list[int]] = {}
    for n, (_, payload) in enumerate(record_images(data, agent)):
        numbers.setdefault(payload, []).append(n)
    images = []
    for media, payload in pairs:
        image = image_of(media, payload)
        free = numbers.get(payload) if image is not None else None
        if image is not None and free:
            image.line, image.number = line, free.pop(0)
            images.append(image)
    return images


def images_of(data: dict, agent: Agent, line: int = 0) -> list[Image]:
    """The images of a record's own blocks (a prompt's), not those inside a tool result."""
    pairs = [found for block in agent.content_blocks(data) if (found := agent.image_of(block))]
    return numbered_images(line, data, agent, pairs)


def image_of(media: str, payload: str) -> Image | None:
    """An image the page may show: a known type and base64 data, nothing else."""
    if media in IMAGE_TYPES and isinstance(payload, str) and BASE64_RE.match(payload[:4096]):
        return Image(media, payload)
    return None
