"""A question's principals are read by member, one level of nesting at a time (``groups_of``), never the whole
membership table. Hypothesis checks the result against the whole-table expansion (``memberships`` then
``expand_principals``) on random directories: nested groups and cycles, global and store-scoped rows, admin
tombstones over manifest and sync rows, an outside directory (a ``GroupSource``) and a token's asserted groups.
"""

from __future__ import annotations

import itertools
import tempfile
from datetime import UTC, datetime
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acl.directory import InMemoryDirectory, expand_principals
from service.domain.queries import Caller
from service.persistence.ports import Tombstone
from service.persistence.sql_settings import SqlSettingsRepository, make_engine

USERS = [f"user:u{i}" for i in range(4)]
GROUPS = [f"group:g{i}" for i in range(6)]
PAIRS = st.tuples(st.sampled_from(GROUPS), st.sampled_from(USERS + GROUPS))
_examples = itertools.count()


class OutsideDirectory:
    """A GroupSource held in a dict (the LDAP directory's role)."""

    name = "outside"

    def __init__(self, pairs: list[tuple[str, str]]) -> None:
        self._parents: dict[str, set[str]] = {}
        for group, member in pairs:
            self._parents.setdefault(member, set()).add(group)

    def parents(self, principal: str) -> frozenset[str]:
        return frozenset(self._parents.get(principal, ()))


def _rename(pairs: list[tuple[str, str]], tag: str) -> list[tuple[str, str]]:
    """The example's own names, so examples sharing one database never meet."""
    return [(f"{g}-{tag}", f"{m}-{tag}") for g, m in pairs]


def _grouped(pairs: list[tuple[str, str]]) -> dict[str, list[str]]:
    groups: dict[str, list[str]] = {}
    for group, member in pairs:
        groups.setdefault(group, []).append(member)
    return groups


_repo: SqlSettingsRepository | None = None


def _repository() -> SqlSettingsRepository:
    global _repo
    if _repo is None:
        folder = Path(tempfile.mkdtemp(prefix="docqa-expansion-"))
        _repo = SqlSettingsRepository(make_engine(f"sqlite:///{folder / 'settings.db'}"))
    return _repo


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    global_rows=st.lists(PAIRS, max_size=12),
    store_rows=st.lists(PAIRS, max_size=8),
    other_store_rows=st.lists(PAIRS, max_size=6),
    tombstoned=st.lists(PAIRS, max_size=4),
    outside=st.lists(PAIRS, max_size=6),
    asserted=st.lists(st.sampled_from(GROUPS), max_size=2),
    user=st.sampled_from(USERS),
    with_outside=st.booleans(),
)
def test_by_level_equals_the_whole_table(
    global_rows: list[tuple[str, str]],
    store_rows: list[tuple[str, str]],
    other_store_rows: list[tuple[str, str]],
    tombstoned: list[tuple[str, str]],
    outside: list[tuple[str, str]],
    asserted: list[str],
    user: str,
    with_outside: bool,
) -> None:
    tag = f"e{next(_examples)}"
    repo = _repository()
    repo.replace_memberships(_grouped(_rename(global_rows, tag)), scope="", source="sync-a")
    repo.replace_memberships(_grouped(_rename(store_rows, tag)), scope=f"s-{tag}", source="manifest")
    repo.replace_memberships(_grouped(_rename(other_store_rows, tag)), scope=f"t-{tag}", source="manifest")
    repo.use_group_sources([OutsideDirectory(_rename(outside, tag))] if with_outside else [])
    try:
        for group, member in _rename(tombstoned, tag):  # a pair only the outside directory grants may be too
            repo.tombstone_membership(Tombstone(group, member, "root", datetime.now(UTC)))
        caller = Caller(f"{user.removeprefix('user:')}-{tag}", tuple(f"{g}-{tag}" for g in asserted))
        for store in (None, f"s-{tag}"):
            whole = expand_principals(caller.principal, repo.memberships(store), caller.asserted_groups)
            assert caller.principals(repo, store) == whole
    finally:
        repo.use_group_sources([])


def test_a_level_is_one_lookup_of_that_level_only() -> None:
    asked: list[list[str]] = []
    directory = InMemoryDirectory({"group:a": ["user:x"], "group:b": ["group:a"], "group:c": ["group:b", "user:y"]})

    class Counting:
        def memberships(self, store_id: str | None = None) -> object:
            raise AssertionError("a question never reads the whole directory")

        def groups_of(self, members: list[str], store_id: str | None = None) -> object:
            asked.append(list(members))
            return directory.groups_of(members, store_id)

    got = Caller("x").principals(Counting(), "s")  # type: ignore[arg-type]
    assert got == {"user:x", "group:a", "group:b", "group:c", "group:everyone"}
    assert asked == [["user:x"], ["group:a"], ["group:b"], ["group:c"]]
