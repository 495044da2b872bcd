"""Fork every public Codex rollout at its first, a middle and its last turn and check that the
real codex 0.169 resumes each fork with exactly the source's prompts 1..N (issue 42).

Run by hand (it installs nothing but the CLI cache's codex, reaches nothing beyond loopback,
and uses a throwaway SQLite database and CODEX_HOME per file):

    .venv/bin/python tests/compat/codex_wild_check.py [/work/shared/corpus/public/codex/sessions]

Prints one line per file and a summary; exits 1 when any fork is not resumed as intended.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DEFAULT = Path("/work/shared/corpus/public/codex/sessions")
PROVIDER = re.compile(r"[A-Za-z0-9_-]{1,64}")


def provider_options(path: Path, url: str) -> list[str]:
    """A rollout recorded under a provider of its own (`codex`, `freemodel`, ...) resumes only
    under that provider: the same fake model, configured under its id."""
    import orjson

    try:
        payload = orjson.loads(path.read_bytes().split(b"\n", 1)[0]).get("payload") or {}
    except (orjson.JSONDecodeError, AttributeError):
        return []
    provider = payload.get("model_provider") if isinstance(payload, dict) else None
    # A provider id is a bare word of a `-c` key path: "amd-openai" (1.17.7) has a hyphen.
    if (
        not isinstance(provider, str)
        or provider in ("", "openai")
        or not PROVIDER.fullmatch(provider)
    ):
        return []
    key = f"model_providers.{provider}"
    return [
        *("-c", f'model_provider="{provider}"'),
        *("-c", f'{key}.name="{provider}"'),
        *("-c", f'{key}.base_url="{url}"'),
        *("-c", f'{key}.wire_api="responses"'),
    ]


def main(root: Path) -> int:
    """Check every rollout under `root`; 0 when all forks resumed with their prompts."""
    if (root / "sessions").is_dir():
        # The corpus folder itself: its rollouts keep their `sessions/YYYY/MM/DD` layout
        # only when copied from there (else none is imported and none is checked).
        root = root / "sessions"
    scratch = Path(tempfile.mkdtemp(prefix="codex-wild-"))
    os.environ["BRANCHBOARD_DATA_DIR"] = str(scratch / "data")
    os.environ.pop("DATABASE_URL", None)
    os.environ["DJANGO_SETTINGS_MODULE"] = "branchboard.settings"
    sys.path.insert(0, str(REPO))
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command

    from sessions_app.models import Session
    from sessions_app.services.branching import BranchError, session_fork
    from sessions_app.services.importing import sessions_import
    from tests.compat.clis import codex_home, ensure_codex, run_codex
    from tests.compat.fake_model import FakeModel
    from tests.compat.test_codex_wild_compat import (
        context_texts,
        same_prompts,
        sent_prompts,
        turns_of,
    )

    call_command("migrate", verbosity=0)
    ensure_codex()
    failed = checked = 0
    for n, source_file in enumerate(sorted(root.rglob("rollout-*.jsonl"))):
        Session.objects.all().delete()
        home = scratch / f"home{n}"
        cwd = home / "project"
        cwd.mkdir(parents=True)
        sessions = codex_home(home) / "sessions"
        copy = sessions / source_file.relative_to(root)
        copy.parent.mkdir(parents=True)
        shutil.copy2(source_file, copy)
        settings.SESSION_ROOTS = [sessions]
        sessions_import(roots=[sessions])
        source = Session.objects.filter(path=str(copy)).first()
        name = source_file.name[-45:]
        if source is None or source.turn_count == 0:
            print(f"{name}: no turn to fork")
            continue
        prompts = list(source.records.turn_starts().order_by("line").values_list("text", flat=True))
        context = context_texts(copy, prompts)
        results = []
        for turn in turns_of(source):
            try:
                new = session_fork(session=source, turn=turn, include_turn=True)
            except BranchError as exc:
                results.append(f"turn {turn}: refused ({exc})")
                continue
            checked += 1
            with FakeModel() as fake_model:
                extra = provider_options(copy, fake_model.openai_url)
                run = run_codex(
                    home,
                    cwd,
                    fake_model,
                    ["resume", str(new.session_id), *extra, "next"],
                    check=False,
                )
            if run.returncode != 0:
                failed += 1
                results.append(f"turn {turn}: codex failed: {run.stderr.strip()[-200:]}")
                continue
            sent = [r for r in fake_model.requests if r.api == "responses"]
            got = sent_prompts(sent[0].body, context) if sent else []
            want = [*prompts[:turn], "next"]
            ok = run.session_id == str(new.session_id) and same_prompts(got, want)
            failed += not ok
            if ok:
                results.append(f"turn {turn}: exact")
                continue
            k = next(
                (i for i, (a, b) in enumerate(zip(got, want, strict=False)) if a != b),
                min(len(got), len(want)),
            )
            seen = repr(got[k][:80]) if k < len(got) else "nothing"
            results.append(
                f"turn {turn}: sent {len(got)} for {len(want)}; #{k + 1} {seen} for {want[k][:80]!r}"
                if k < len(want)
                else f"turn {turn}: sent {len(got)} for {len(want)}"
            )
        print(f"{name} ({source.turn_count} turns): {'; '.join(results)}")
    print(f"{checked} forks resumed by codex, {checked - failed} with exactly their prompts")
    shutil.rmtree(scratch, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT))
