"""The real codex 0.169 resumes forks of rollouts shaped like the public ones (issue 42): a
sub-agent replaying its parent under a second `session_meta`, a session resumed in Codex
Desktop, a 0.55 rollout with `token_count` events only; forked at the first, a middle and the
last turn, `codex exec resume <fork>` sends exactly the source's prompts 1..N."""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson
import pytest

from sessions_app.formats.codex import message_text, payload_of
from sessions_app.formats.codex.order import prompt_key
from sessions_app.formats.common import TEXT_LIMIT
from sessions_app.models import Session
from sessions_app.services.branching import session_fork
from sessions_app.services.importing import sessions_import
from tests.compat import fake_responses
from tests.compat.clis import CliHome, codex_home, run_codex
from tests.compat.fake_model import FakeModel

pytestmark = [pytest.mark.compat, pytest.mark.django_db(transaction=True)]

WILD = Path(__file__).parent.parent / "fixtures" / "codex_wild" / "sessions"
SOURCES = [
    "019a0000-aaaa-7aaa-8aaa-00000000000a",  # 0.55: token_count only, three turns
    "019a0000-bbbb-7bbb-8bbb-00000000000b",  # thread_spawn sub-agent replaying its parent
    "019a0000-dddd-7ddd-8ddd-00000000000d",  # Desktop: <recommended_plugins>, resumed
    "019a0000-eeee-7eee-8eee-00000000000e",  # 0.55 resumed from another rollout, replaying it
]


def sent_prompts(body: dict, context: set[str]) -> list[str]:
    """The user messages a request carries, minus the context Codex or the file injected."""
    users = [t for role, t in fake_responses.conversation(body) if role == "user"]
    return [t for t in users if t not in context and not fake_responses.is_injected(t)]


def same_prompts(sent: list[str], kept: list[str]) -> bool:
    """Whether the prompts sent are those kept: the fake model reads them stripped, and the
    index keeps a long prompt's first `TEXT_LIMIT` characters."""
    if len(sent) != len(kept):
        return False
    for a, b in zip(sent, kept, strict=True):
        a_key, b_key = prompt_key(a), prompt_key(b)
        if a_key != b_key and not (len(b) >= TEXT_LIMIT and a_key.startswith(b_key)):
            return False
    return True


def user_texts(path: Path) -> set[str]:
    """The text of every user message of a rollout."""
    out = set()
    for raw in path.read_bytes().splitlines():
        try:
            data = orjson.loads(raw)
        except orjson.JSONDecodeError:
            continue
        kind, payload = payload_of(data) if isinstance(data, dict) else ("", {})
        if kind == "response_item" and payload.get("role") == "user":
            out.add(message_text(payload))
    return out


def context_texts(path: Path, prompts: list[str]) -> set[str]:
    """The user texts of a rollout that are no prompt (context Codex or the file injected).

    A prompt is kept clipped to its first `TEXT_LIMIT` characters: its full text in the file
    is that prompt, not context (else a long prompt the real codex sends is dropped from what
    it sent, and the fork looks one prompt short)."""
    kept = set(prompts)
    clipped = [prompt_key(p) for p in prompts if len(p) >= TEXT_LIMIT]
    return {
        t
        for t in user_texts(path)
        if t not in kept and not any(prompt_key(t).startswith(c) for c in clipped)
    }


def turns_of(session: Session) -> list[int]:
    """The first, a middle and the last turn."""
    return sorted({1, (session.turn_count + 1) // 2, session.turn_count})


@pytest.mark.parametrize("session_id", SOURCES)
def test_codex_resumes_forks_of_wild_shapes_with_exactly_the_kept_prompts(
    codex_cli: Path, tmp_path: Path, settings, session_id: str
) -> None:
    home = CliHome(home=tmp_path / "home", cwd=tmp_path / "home" / "project")
    home.cwd.mkdir(parents=True)
    sessions = codex_home(home.home) / "sessions"
    (source_file,) = WILD.rglob(f"rollout-*-{session_id}.jsonl")
    copy = sessions / source_file.relative_to(WILD)
    copy.parent.mkdir(parents=True)
    shutil.copy2(source_file, copy)
    settings.SESSION_ROOTS = [sessions]
    sessions_import(roots=[sessions])
    source = Session.objects.get(session_id=session_id)
    prompts = list(source.records.turn_starts().order_by("line").values_list("text", flat=True))
    context = context_texts(copy, prompts)  # what the file holds as context, by our reading
    assert len(prompts) == source.turn_count >= 2

    for turn in turns_of(source):
        new = session_fork(session=source, turn=turn, include_turn=True)
        with FakeModel() as fake_model:
            run = run_codex(
                home.home, home.cwd, fake_model, ["resume", str(new.session_id), "next"]
            )
        assert run.session_id == str(new.session_id)
        (sent,) = [r for r in fake_model.requests if r.api == "responses"]
        got = sent_prompts(sent.body, context)
        assert same_prompts(got, [*prompts[:turn], "next"]), (turn, got)
