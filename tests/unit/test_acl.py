from __future__ import annotations

import pytest

from acl.directory import InMemoryDirectory, expand_principals
from acl.errors import InvalidArgument
from acl.model import EVERYONE, Acl


def test_transitive_groups_and_everyone() -> None:
    directory = InMemoryDirectory({"group:finance": ["user:alice", "group:auditors"], "group:auditors": ["user:carol"]})
    assert expand_principals("user:carol", directory.memberships()) == {
        "user:carol",
        "group:auditors",
        "group:finance",
        EVERYONE,
    }
    assert expand_principals("user:alice", directory.memberships()) == {"user:alice", "group:finance", EVERYONE}


def test_cycles_terminate() -> None:
    directory = InMemoryDirectory({"group:a": ["group:b", "user:u"], "group:b": ["group:a"]})
    assert expand_principals("user:u", directory.memberships()) == {"user:u", "group:a", "group:b", EVERYONE}


def test_asserted_groups_expand_too() -> None:
    directory = InMemoryDirectory({"group:parent": ["group:child"]})
    got = expand_principals("user:x", directory.memberships(), ["group:child"])
    assert {"group:child", "group:parent"} <= got


def test_deny_wins() -> None:
    acl = Acl.of(["group:finance"], ["user:mallory"])
    assert acl.permits(frozenset({"user:alice", "group:finance"}))
    assert not acl.permits(frozenset({"user:mallory", "group:finance"}))
    assert not acl.permits(frozenset({"user:bob", EVERYONE}))


def test_empty_acl_is_nobody() -> None:
    assert not Acl().permits(frozenset({"user:a", EVERYONE}))


@pytest.mark.parametrize("bad", ["alice", "user:", "role:x", "user:a b", "group:x/y", ""])
def test_malformed_principals_are_refused(bad: str) -> None:
    with pytest.raises(InvalidArgument):
        Acl.of([bad])
