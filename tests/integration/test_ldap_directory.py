"""Users' groups from a real OpenLDAP server (Debian's slapd, started by the test): nested groups, cycles,
paging, escaping, a removal taking effect, tombstones winning, and failing closed when the directory is gone.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from acl.errors import Unavailable
from acl.model import Acl
from service.bootstrap import App, build_app
from service.config import LdapConfig, Settings
from service.directory.cache import CachedSource
from service.directory.ldap import LdapGroupSource, _escaped
from service.domain.queries import Caller, VectorQuery
from tests.fakes_service import FakeEmbedder
from tests.ldap_world import SLAPD, LdapWorld, group_dn, user_dn

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(SLAPD is None, reason="slapd is not installed (apt-get install slapd; .ci/run installs it)"),
]

STORE = "ledger"
QUESTION = "What is the quarterly budget forecast for the ledger?"
WELCOME = b"# Welcome\n\nThe ledger team answers questions about the ledger on Mondays.\n"
FINANCE_DOC = b"# Budget forecast\n\nThe quarterly budget forecast for the ledger is 4.2 million euros.\n"


@pytest.fixture(scope="module")
def ldap(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LdapWorld]:
    world = LdapWorld(tmp_path_factory.mktemp("slapd"))
    world.start()
    world.seed()
    yield world
    world.stop()


@pytest.fixture
def sources() -> Iterator[list[LdapGroupSource]]:
    opened: list[LdapGroupSource] = []
    yield opened
    for source in opened:
        source.close()


def _source(ldap: LdapWorld, opened: list[LdapGroupSource], **overrides: object) -> LdapGroupSource:
    source = LdapGroupSource(LdapConfig(**ldap.settings(**overrides)))  # type: ignore[arg-type]
    opened.append(source)
    return source


def _app(tmp_path: Path, ldap: LdapWorld, **directory: object) -> App:
    settings = Settings(
        data_dir=tmp_path,
        directory={"ldap": ldap.settings(), "cache_ttl_s": 0, **directory},  # type: ignore[arg-type]
    )
    app = build_app(settings, embedder_factory=lambda _: FakeEmbedder())
    ingest = app.ingestor(STORE)
    ingest.upsert_bytes("forecast.md", FINANCE_DOC, "text/markdown", acl=Acl.of(["group:finance"]))
    ingest.upsert_bytes("welcome.md", WELCOME, "text/markdown", acl=Acl.of(["group:everyone"]))
    return app


def _reads(app: App, user: str) -> bool:
    answer = app.engine.ask(Caller(user), VectorQuery(STORE, QUESTION, level=0.0, perform_llm_query=False))
    return any(c.document_id == "forecast.md" for c in answer.chunks)


def test_a_users_groups_and_a_groups_groups_come_from_the_directory(
    ldap: LdapWorld, sources: list[LdapGroupSource]
) -> None:
    source = _source(ldap, sources)
    assert source.parents("user:alice") == {"group:finance"}
    assert source.parents("user:carol") == {"group:auditors"}
    assert source.parents("group:auditors") == {"group:finance"}
    assert source.parents("user:nobody-here") == frozenset()
    assert source.parents("group:rd(eu)") == {"group:rd-all"}  # a name that must be escaped in a filter
    assert _source(ldap, sources, group_prefix="corp-").parents("user:alice") == {"group:corp-finance"}


def test_nested_groups_and_cycles_expand_to_every_group_once(tmp_path: Path, ldap: LdapWorld) -> None:
    app = _app(tmp_path, ldap)
    try:
        carol = app.engine.principals(Caller("carol"))
        assert {"group:auditors", "group:finance"} <= carol
        dave = app.engine.principals(Caller("dave"))  # cycle-a ⊂ cycle-b ⊂ cycle-a
        assert {"group:cycle-a", "group:cycle-b"} <= dave
        assert "group:finance" not in app.engine.principals(Caller("bob"))
    finally:
        app.close()


def test_searches_are_paged(ldap: LdapWorld, sources: list[LdapGroupSource]) -> None:
    for n in range(7):
        ldap.add_group(f"paged-{n}", [user_dn("frank")])
    groups = _source(ldap, sources, page_size=2).parents("user:frank")
    assert {f"group:paged-{n}" for n in range(7)} <= groups


def test_a_directory_group_opens_a_document_and_a_removal_closes_it_on_the_next_query(
    tmp_path: Path, ldap: LdapWorld
) -> None:
    app = _app(tmp_path, ldap)
    try:
        assert _reads(app, "carol")  # carol → auditors → finance, in LDAP only
        assert not _reads(app, "bob")
        ldap.remove_member("auditors", user_dn("carol"))
        started = time.perf_counter()
        assert not _reads(app, "carol")
        took = time.perf_counter() - started
        print(f"LDAP removal to effect (cache_ttl_s 0): {took * 1000:.1f} ms")
    finally:
        ldap.add_member("auditors", user_dn("carol"))
        app.close()


def test_within_the_ttl_the_cache_answers_and_after_it_the_directory_does() -> None:
    calls: list[str] = []

    class Counting:
        name = "ldap"

        def parents(self, principal: str) -> frozenset[str]:
            calls.append(principal)
            return frozenset({"group:finance"})

    now = [0.0]
    cached = CachedSource(Counting(), ttl_s=30, max_entries=2, clock=lambda: now[0])
    cached.parents("user:a")
    cached.parents("user:a")
    assert calls == ["user:a"]
    now[0] = 31
    cached.parents("user:a")
    assert calls == ["user:a", "user:a"]
    cached.parents("user:b")
    cached.parents("user:c")  # the bound: user:a is forgotten
    cached.parents("user:a")
    assert calls[-1] == "user:a" and len(calls) == 5


def test_an_admins_tombstone_wins_over_the_directory(tmp_path: Path, ldap: LdapWorld) -> None:
    app = _app(tmp_path, ldap)
    try:
        assert _reads(app, "alice")
        app.access.remove_member("group:finance", "user:alice", "admin")
        assert not _reads(app, "alice")
        app.access.reset_member("group:finance", "user:alice")
        assert _reads(app, "alice")
    finally:
        app.close()


def test_an_unreachable_directory_fails_closed_and_a_grace_period_is_the_admins_choice(tmp_path: Path) -> None:
    world = LdapWorld(tmp_path / "slapd")
    world.start()
    world.seed()
    closed = _app(tmp_path / "closed", world, cache_ttl_s=0)
    graced = _app(tmp_path / "graced", world, cache_ttl_s=0, stale_grace_s=3600)
    try:
        assert _reads(closed, "carol") and _reads(graced, "carol")
        world.stop()
        with pytest.raises(Unavailable, match="directory"):
            _reads(closed, "carol")
        with pytest.raises(Unavailable):
            _reads(closed, "bob")  # no groups known for bob at all: nothing to fall back on
        assert _reads(graced, "carol")  # groups read before, within the grace period
        world.start()
        assert _reads(closed, "carol")  # back without a restart
    finally:
        world.stop()
        closed.close()
        graced.close()


def test_values_put_into_a_filter_are_escaped() -> None:
    assert _escaped("(uid={user})", "user", "*)(uid=*") == r"(uid=\2a\29\28uid=\2a)"
    assert _escaped("(cn={group})", "group", "a\x00b\\") == r"(cn=a\00b\5c)"


def test_check_names_the_setting_that_is_wrong(ldap: LdapWorld, sources: list[LdapGroupSource]) -> None:
    assert _source(ldap, sources).check() == []
    wrong_base = _source(ldap, sources, user_base_dn="ou=nobody,dc=example,dc=com").check()
    assert len(wrong_base) == 1 and wrong_base[0].startswith("directory.ldap.user_base_dn")
    unreachable = _source(ldap, sources, url="ldap://127.0.0.1:1").check()
    assert len(unreachable) == 1 and unreachable[0].startswith("directory.ldap.url")
    bad_password = _source(ldap, sources, bind_password="wrong").check()
    assert bad_password and bad_password[0].startswith("directory.ldap")


def test_the_group_dn_helper_escapes_like_the_server(ldap: LdapWorld) -> None:
    with ldap.admin() as c:
        assert c.search(group_dn("rd(eu)"), "(objectClass=*)", search_scope="BASE")


def test_explain_gives_the_decision_the_chain_and_the_deciding_entry(
    tmp_path: Path, ldap: LdapWorld, capsys: pytest.CaptureFixture[str]
) -> None:
    from service.access.explain import explain

    app = _app(tmp_path, ldap)
    try:
        acl = app.admin_without_index().acl_view("forecast.md", STORE)
        carol = explain(app.repository, app.group_sources, "carol", acl)
        assert carol.readable and carol.deciding == "allow group:finance"
        paths = {p.principal: p.path() for p in carol.principals}
        assert paths["group:finance"] == "user:carol → group:auditors (ldap) → group:finance (ldap)"
        bob = explain(app.repository, app.group_sources, "bob", acl)
        assert not bob.readable and bob.deciding is None and "no entry" in bob.reason
        app.admin.set_acl("forecast.md", ["group:finance"], ["group:auditors"], "root", STORE)
        acl = app.admin_without_index().acl_view("forecast.md", STORE)
        carol = explain(app.repository, app.group_sources, "carol", acl)
        assert not carol.readable and carol.deciding == "deny group:auditors"
        assert "deny wins" in carol.reason and carol.acl.changed_by == "root"
        # The explanation and a query agree.
        assert _reads(app, "carol") is False and _reads(app, "alice") is True
        app.access.add_member("group:finance", "user:bob", "root")
        bob = explain(app.repository, app.group_sources, "bob", app.admin_without_index().acl_view("forecast.md"))
        assert [p.path() for p in bob.principals if p.principal == "group:finance"] == [
            "user:bob → group:finance (admin)"
        ]
    finally:
        app.close()
