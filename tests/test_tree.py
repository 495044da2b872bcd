"""One tree per family: branch, fork, edit & fork, rewind with its backup, a branch brought
back, and the branches an in-CLI rewind left inside a file; children in the order made."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.test import Client

from sessions_app.models import Session
from sessions_app.selectors.tree import TreeNode, family_tree
from sessions_app.services.branching import session_fork, session_rewind

from .facts import FORKS_TREE

pytestmark = pytest.mark.django_db


def walk(node: TreeNode) -> list[TreeNode]:
    out, stack = [], [node]
    while stack:
        n = stack.pop()
        out.append(n)
        stack.extend(reversed(n.children))
    return out


def test_a_family_forms_one_tree_with_the_right_split_turns(
    imported: Path, client: Client, settings
) -> None:
    settings.BRANCHBOARD_BUSY_SECONDS = 0
    source = Session.objects.select_related("project").get(path=str(imported / FORKS_TREE))
    leaf = source.abandoned[0]["leaf_uuid"]
    branch = session_fork(session=source)
    fork = session_fork(session=source, turn=2)
    edit = session_fork(session=source, turn=2, include_turn=False)
    revived = session_fork(session=source, leaf=leaf)
    source.refresh_from_db()
    session_rewind(session=source, turn=2)
    backup = Session.objects.get(kind=Session.Kind.REWIND_BACKUP, parent=source)
    tree = family_tree(Session.objects.get(pk=fork.pk))
    # The forks tree is itself a branch the CLI made of another session: that is the root.
    origin = source.parent
    assert origin is not None and tree.root.session.pk == origin.pk
    assert [s.pk for s in tree.trail] == [origin.pk, source.pk, fork.pk]
    (node,) = [n for n in tree.root.children if n.session and n.session.pk == source.pk]
    kids = node.children
    made = [(n.session.kind, n.session.fork_turn) for n in kids if n.session]
    assert made == [("branch", 3), ("fork", 2), ("fork_before", 2), ("revived", 2),
                    ("rewind_backup", 2)]  # fmt: skip
    assert [n.session.pk for n in kids if n.session] == [
        branch.pk, fork.pk, edit.pk, revived.pk, backup.pk
    ]  # fmt: skip
    # The rewound-away branch now lives on in the backup's file: shown under it.
    (in_file,) = [n for n in walk(tree.root) if n.abandoned]
    assert in_file.owner.pk == backup.pk and in_file.abandoned["leaf_uuid"] == leaf
    assert in_file.abandoned["at_turn"] == 3 and in_file.depth == 3
    assert tree.nodes == 8 and tree.left_out == 0
    page = client.get(f"/sessions/{fork.session_id}/lineage/").content.decode()
    assert 'id="family-tree"' in page and page.count('class="tree-node') == 8
    assert "1 turns" not in page and "1 branches" not in page
    assert f"?leaf={leaf}" in page and "this session" in page
    assert page.count("compare with parent") >= 5


def test_a_long_chain_is_one_tree_and_stays_bounded(imported: Path) -> None:
    source = Session.objects.select_related("project").get(path=str(imported / FORKS_TREE))
    chain = [source]
    for _ in range(12):
        chain.append(session_fork(session=chain[-1], turn=1))
    tree = family_tree(chain[-1])
    assert len(tree.trail) == 14 and tree.nodes >= 14  # the forks tree's own origin first
    deepest = max(walk(tree.root), key=lambda n: n.depth)
    assert deepest.session.pk == chain[-1].pk and deepest.depth == 13


def test_a_fork_of_an_old_session_lists_by_when_it_was_made(imported: Path, client: Client) -> None:
    source = Session.objects.select_related("project").get(path=str(imported / FORKS_TREE))
    fork = session_fork(session=source, turn=1)
    fork.refresh_from_db()
    assert fork.made_at is not None and fork.updated_at < fork.made_at
    for sort in ("updated", "made"):
        page = client.get(f"/projects/{source.project_id}/", {"sort": sort}).content.decode()
        first_row = page.index("<tbody")
        assert page.index(fork.title, first_row) < page.index(">my-experiment<", first_row), sort
    assert "· made" in page
