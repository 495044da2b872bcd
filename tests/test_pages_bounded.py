"""Transcript pages stay small whatever a turn holds; the rest loads on demand, exports stay whole."""

from __future__ import annotations

import re
import uuid
from pathlib import Path
from typing import Any

import pytest
from django.utils.html import escape

from sessions_app.models import Session
from sessions_app.services.importing import sessions_import
from sessions_app.transcript import PAGE_LIMITS

from .factories import assistant_record, tool_result, user_record, write_session

pytestmark = pytest.mark.django_db

PAGE_BYTES = 300_000
HX = {"HTTP_HX_REQUEST": "true"}
NEXT_PART = re.compile(r'<p class="more-part"><a href="([^"]+)"')
# Text that escaping makes longer, on lines of a listing's length.
LINE = "drwxr-xr-x 2 dev dev 4096 <dir> & \"quoted\" 'name'\n"
BIG = (LINE * (3_000_000 // len(LINE) + 1))[:3_000_000] + "THE END"
SHOW_ALL = re.compile(r'<a class="show-all" href="([^"]+)" hx-get="\1" hx-target="#([^"]+)"')
MORE = re.compile(r'<div class="more" hx-get="([^"]+)"')


def in_parts(client, url: str, **headers: str) -> list[str]:
    """ "Show all" of an item: every part of it, each following the link of the one before."""
    found = [body(client.get(url, **headers))]
    while match := NEXT_PART.search(found[-1]):
        found.append(body(client.get(match.group(1).replace("&amp;", "&"), **headers)))
    return found


def outputs(parts: list[str]) -> str:
    """The text of the outputs shown in `parts`, joined."""
    return "".join(
        m for part in parts for m in re.findall(r'<pre class="output">(.*?)</pre>', part, re.S)
    )


def body(response) -> str:
    assert response.status_code == 200, response.status_code
    if response.streaming:
        return b"".join(response.streaming_content).decode()
    return response.content.decode()


class Chain:
    """Records of one session, each the child of the one before."""

    def __init__(self) -> None:
        self.sid = str(uuid.uuid4())
        self.records: list[dict[str, Any]] = []

    def add(self, make, content, **kwargs) -> None:
        parent = self.records[-1]["uuid"] if self.records else None
        self.records.append(make(content, sid=self.sid, parent=parent, **kwargs))

    def call(self, n: int, output: str, *, name: str = "Bash", args: dict | None = None) -> None:
        use = {"type": "tool_use", "id": f"t{n}", "name": name, "input": args or {}}
        if args is None:
            use["input"] = {"command": f"ls dir{n}"}
        self.add(assistant_record, [use])
        self.add(user_record, tool_result(f"t{n}", output))

    def imported(self, root: Path) -> Session:
        write_session(root / "-work-demo", self.records)
        sessions_import(roots=[root])
        return Session.objects.get(session_id=self.sid)


def session_with(root: Path, build) -> Session:
    chain = Chain()
    chain.add(user_record, "Show me everything.")
    build(chain)
    chain.add(assistant_record, "Done.")
    return chain.imported(root)


def first_page(client, session: Session, django_assert_max_num_queries) -> str:
    with django_assert_max_num_queries(12):
        html = body(client.get(f"/sessions/{session.session_id}/"))
    assert len(html.encode()) < PAGE_BYTES
    return html


def test_a_3_mb_tool_output_is_cut_and_shown_whole_on_demand(
    client, tmp_path: Path, django_assert_max_num_queries
) -> None:
    session = session_with(tmp_path, lambda chain: chain.call(0, BIG))
    html = first_page(client, session, django_assert_max_num_queries)
    assert '<p class="cut">' in html and f"{len(BIG)} characters" in html
    assert "THE END" not in html and "Done." in html
    url, target = SHOW_ALL.search(html).groups()
    assert f'id="{target}"' in html
    # Shown whole in parts (of PART_CHARS), each part's link loading the next.
    fragments = in_parts(client, url, **HX)
    assert len(fragments) > 1 and not any("<html" in f for f in fragments)
    assert outputs(fragments) == escape(BIG)
    pages = in_parts(client, url)  # the links without JavaScript: pages of their own
    assert all("<html" in page for page in pages) and outputs(pages) == escape(BIG)


def test_a_3_mb_message_is_cut_and_shown_whole_on_demand(
    client, tmp_path: Path, django_assert_max_num_queries
) -> None:
    session = session_with(tmp_path, lambda chain: chain.add(assistant_record, BIG))
    html = first_page(client, session, django_assert_max_num_queries)
    assert '<p class="cut">' in html and "THE END" not in html
    url, _ = SHOW_ALL.search(html).groups()
    fragments = in_parts(client, url, **HX)
    assert not any("<html" in f or "<dir>" in f for f in fragments) and "THE END" in fragments[-1]


def test_a_3_mb_prompt_and_a_3_mb_write_are_cut(
    client, tmp_path: Path, django_assert_max_num_queries
) -> None:
    chain = Chain()
    chain.add(user_record, BIG)
    chain.call(0, "ok", name="Write", args={"file_path": "/work/demo/big.txt", "content": BIG})
    session = chain.imported(tmp_path)
    html = first_page(client, session, django_assert_max_num_queries)
    assert html.count('<p class="cut">') == 2 and "THE END" not in html
    urls = [url for url, _ in SHOW_ALL.findall(html)]
    assert all("THE END" in in_parts(client, url, **HX)[-1] for url in urls)


def test_a_turn_of_5000_tool_calls_is_paged_within_the_turn(
    client, tmp_path: Path, django_assert_max_num_queries
) -> None:
    calls = 5000
    session = session_with(
        tmp_path, lambda chain: [chain.call(n, f"entry {n}\n" * 3) for n in range(calls)]
    )
    html = first_page(client, session, django_assert_max_num_queries)
    assert html.count('<details class="tool') <= PAGE_LIMITS.items
    assert "More of turn 1" in html and "Done." not in html
    seen = [int(n) for n in re.findall(r"ls dir(\d+)</code>", html)]
    pages = 1
    while match := MORE.search(html):
        with django_assert_max_num_queries(12):
            html = body(client.get(match.group(1).replace("&amp;", "&"), **HX))
        assert "<html" not in html and len(html.encode()) < PAGE_BYTES
        assert 'class="turn continued"' in html and 'class="prompt"' not in html
        seen += [int(n) for n in re.findall(r"ls dir(\d+)</code>", html)]
        pages += 1
    assert seen == list(range(calls)) and "Done." in html
    assert pages <= calls // (PAGE_LIMITS.items // 2)
    # Each result sits with its call: no call waits for a result further on.
    assert "result further on" not in html


def test_many_long_outputs_that_escaping_grows_still_fit_a_page(
    client, tmp_path: Path, django_assert_max_num_queries
) -> None:
    nasty = '<&"' * 100_000
    session = session_with(tmp_path, lambda chain: [chain.call(n, nasty) for n in range(30)])
    html = first_page(client, session, django_assert_max_num_queries)
    assert html.count('<p class="cut">') >= 1 and "More of turn 1" in html


def test_many_turns_of_long_outputs_end_the_page_early(
    client, tmp_path: Path, django_assert_max_num_queries
) -> None:
    chain = Chain()
    for n in range(20):
        chain.add(user_record, f"Prompt {n}")
        chain.call(n, BIG[:200_000])
    session = chain.imported(tmp_path)
    html = first_page(client, session, django_assert_max_num_queries)
    assert "More of turn" in html or "More turns" in html
    more = MORE.search(html).group(1).replace("&amp;", "&")
    rest = body(client.get(more, **HX))
    assert "<html" not in rest and 'class="turn-no"' in rest


def test_exports_stay_whole(client, tmp_path: Path) -> None:
    session = session_with(tmp_path, lambda chain: chain.call(0, BIG))
    markdown = body(client.get(f"/sessions/{session.session_id}/export.md"))
    assert BIG in markdown
    html = body(client.get(f"/sessions/{session.session_id}/export.html"))
    assert escape(BIG) in html and '<p class="cut">' not in html


def test_show_all_of_an_unknown_item_is_404(client, tmp_path: Path) -> None:
    session = session_with(tmp_path, lambda chain: chain.call(0, "small"))
    base = f"/sessions/{session.session_id}/records"
    assert client.get(f"{base}/1/output/7/").status_code == 404
    assert client.get(f"{base}/999/output/0/").status_code == 404
    assert client.get(f"{base}/2/output/0/", **HX).status_code == 200
