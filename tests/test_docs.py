"""The project's own docs tell the truth: what they cite is in the repository, every module
they name exists, and what a command or a page says of the agents names all of them."""

from __future__ import annotations

import re
from pathlib import Path

from sessions_app.formats import agents
from sessions_app.management.commands.import_sessions import Command as ImportCommand

REPO = Path(__file__).resolve().parent.parent
APP = REPO / "sessions_app"

# What the project writes about itself: the app's docstrings and comments, its docs, the
# contracts' comments, the tests' docstrings.
DOCS = [REPO / "README.md", REPO / "pyproject.toml", *sorted((REPO / "docs").glob("*.md"))]


def _sources() -> list[Path]:
    found = [p for p in APP.rglob("*.py") if "migrations" not in p.parts]
    return sorted(found) + sorted((REPO / "tests").glob("*.py")) + DOCS


def _line(text: str, start: int) -> int:
    return text.count("\n", 0, start) + 1


def test_no_doc_cites_a_file_outside_the_repository() -> None:
    """A rule the code cites is in the project's own docs (`docs/design.md`,
    `docs/architecture.md`), not in a design note kept somewhere else."""
    outside = re.compile(r"\b(?:DESIGN|STYLE)\.md")
    found = [
        f"{path.relative_to(REPO)}:{_line(text, m.start())}: {m.group(0)}"
        for path in _sources()
        if path != Path(__file__).resolve()
        for text in [path.read_text()]
        for m in outside.finditer(text)
    ]
    assert found == []


def test_every_section_a_citation_names_is_in_the_design() -> None:
    """`docs/design.md, "One definition of a turn"` names a section the file has."""
    design = (REPO / "docs/design.md").read_text()
    sections = set(re.findall(r"^## (.+)$", design, flags=re.M))
    cited = re.compile(r"docs/design\.md`?,\s+\"([^\"]+)\"")
    found = [
        f"{path.relative_to(REPO)}: {m.group(1)}"
        for path in _sources()
        for m in cited.finditer(path.read_text())
        if " ".join(m.group(1).split()) not in sections
    ]
    assert sections and found == []


def test_the_map_names_every_module_once() -> None:
    """`docs/architecture.md` has one line for every module of the app, and no line for a
    module that is gone."""
    rows = re.findall(r"^\| `([^`]+\.py)` \|", (REPO / "docs/architecture.md").read_text(), re.M)
    modules = {str(p.relative_to(APP)) for p in APP.rglob("*.py") if "migrations" not in p.parts}
    assert sorted(modules - set(rows)) == []
    assert sorted(set(rows) - modules) == []
    assert sorted(r for r in set(rows) if rows.count(r) > 1) == []


# A module named by its path (`services/hub/namespaces.py`), from the repository, the app or
# its services, or from the folder of the file naming it (or one above).
PATH = re.compile(r"(?<![\w./-])((?:[a-z_][a-z_0-9]*/)+[a-z_][a-z_0-9]*\.py)\b")
# A module named by its dotted name from the app (`sessions_app.services.hub`), or from one of
# the app's packages (`selectors.search`, `hub.namespaces`): a module, or a module's attribute.
TOPS = (
    "formats|services|selectors|pages|api|models|rendering|transcript|conversation"
    "|templatetags|management"
)
# Only in backticks or parentheses: a name in prose, not code's `api.json()`.
DOTTED = re.compile(rf"(?<=[`(])((?:sessions_app\.)?(?:{TOPS})(?:\.[a-z_][a-z_0-9]*)+)(?=[`)])")


def _modules() -> set[tuple[str, ...]]:
    found = set()
    for path in APP.rglob("*.py"):
        parts = path.relative_to(REPO).with_suffix("").parts
        found.add(parts[:-1] if parts[-1] == "__init__" else parts)
    return found


def _ours(name: str) -> bool:
    """Whether a path is one of the project's (`services/...`, `tests/...`), not an example's
    (`src/app.py`)."""
    first = name.split("/", 1)[0]
    return any((base / first).is_dir() for base in (REPO, APP, APP / "services"))


def _path_exists(name: str, where: Path) -> bool:
    bases = [REPO, APP, APP / "services", *where.parents]
    return any((base / name).exists() for base in bases)


def _dotted_exists(name: str, modules: set[tuple[str, ...]]) -> bool:
    parts = tuple(name.split("."))
    for module in modules:
        if module[-len(parts) :] == parts:
            return True
        if len(parts) > 1 and module[-len(parts) + 1 :] == parts[:-1]:
            # a module's attribute: a name its source defines or imports
            base = REPO.joinpath(*module)
            source = base / "__init__.py" if base.is_dir() else base.with_suffix(".py")
            if re.search(rf"\b{parts[-1]}\b", source.read_text()):
                return True
    return False


def test_every_module_a_doc_names_exists() -> None:
    """A module that moved or was split leaves no docstring, comment or doc naming its old
    place (a reader following it finds nothing, or the wrong thing)."""
    modules = _modules()
    missing = []
    for path in _sources():
        if path == Path(__file__).resolve():
            continue  # its own examples of names that do not exist
        text = path.read_text()
        for m in PATH.finditer(text):
            if _ours(m.group(1)) and not _path_exists(m.group(1), path):
                missing.append(f"{path.relative_to(REPO)}:{_line(text, m.start())}: {m.group(1)}")
        for m in DOTTED.finditer(text):
            name = m.group(1)
            if name.startswith("models.") and not name.startswith("models.archive"):
                continue  # Django's `models.CharField`, `models.Q`
            if not _dotted_exists(name, modules):
                missing.append(f"{path.relative_to(REPO)}:{_line(text, m.start())}: {name}")
    assert missing == []


def test_the_check_finds_a_module_that_moved(tmp_path: Path) -> None:
    """The check above fails on a docstring naming an old place."""
    modules = _modules()
    assert _dotted_exists("hub.namespaces", modules)
    assert _dotted_exists("sessions_app.services.hub.namespaces.hub_roots", modules)
    assert not _dotted_exists("branching.process", modules)
    assert _path_exists("services/hub/namespaces.py", tmp_path)
    assert not _path_exists("services/branching/namespaces.py", tmp_path)
    assert _ours("services/branching/namespaces.py") and not _ours("src/app.py")
    assert DOTTED.search("read by `services.import_status`").group(1) == "services.import_status"
    assert DOTTED.search("assert api.status_code == 400") is None


def _words(text: str) -> str:
    return " ".join(text.split())


def test_import_sessions_help_names_every_agent() -> None:
    """`import_sessions --help` says which CLIs' sessions it imports, and their default roots:
    every agent of the registry."""
    shown = _words(ImportCommand().create_parser("manage.py", "import_sessions").format_help())
    for agent in agents():
        assert agent.label in shown
        for folder in agent.root_folders:
            assert f"~/{agent.home_folder}/{folder}" in shown


def _css_blocks(css: str) -> dict[str, str]:
    """The stylesheet's three places for the palette: light, dark by the system, dark by
    choice, each its custom properties' text."""
    dark_system = css.index("@media (prefers-color-scheme: dark)")
    dark_chosen = css.index(':root[data-theme="dark"]')
    return {
        "light": css[css.index(":root") : dark_system],
        "dark (system)": css[dark_system:dark_chosen],
        "dark (chosen)": css[dark_chosen : css.index("}", dark_chosen)],
    }


def test_every_agent_has_a_badge_colour_in_light_and_dark() -> None:
    """The agent badge (`<span class="agent agent-<name>">`) has a colour of its own for every
    agent, set in the light palette and in both dark ones, and no two agents share one."""
    css = (REPO / "static/sessions_app/app.css").read_text()
    blocks = _css_blocks(css)
    colours: dict[str, dict[str, str]] = {place: {} for place in blocks}
    for agent in agents():
        rule = re.search(rf"\.agent-{agent.name}\s*\{{\s*color:\s*var\((--[\w-]+)\)", css)
        assert rule, f"no badge colour for {agent.name}"
        variable = rule.group(1)
        for place, block in blocks.items():
            value = re.search(rf"{variable}:\s*(#[0-9a-fA-F]{{3,8}})", block)
            assert value, f"{variable} ({agent.name}) is not set in the {place} palette"
            colours[place][agent.name] = value.group(1).lower()
    for place, by_agent in colours.items():
        assert len(set(by_agent.values())) == len(by_agent), (place, by_agent)
