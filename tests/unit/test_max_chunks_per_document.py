"""A store's ``max_chunks_per_document``: at most that many chunks of one document among a question's sources."""

from __future__ import annotations

import pytest

from acl.errors import InvalidArgument
from acl.model import Acl
from service.access.admin import Admin
from service.domain.queries import VectorQuery
from tests.unit.engine_world import STORE, World, make_world

pytestmark = pytest.mark.unit

EVERYONE = Acl.of(["group:everyone"])
QUESTION = "How do contractors claim travel expenses?"
LONG = [f"Contractors claim travel expenses with form T-{n}, step {n} of the travel expenses claim." for n in range(6)]


@pytest.fixture
def world() -> World:
    """One long document that speaks of the question in every chunk, two short ones that speak of it once."""
    w = make_world(max_chunks=6, level=0.0, min_threshold=-1.0, max_threshold=1.0)
    w.add("long.md", LONG, EVERYONE)
    w.add("other.md", ["Contractors claim travel expenses monthly."], EVERYONE)
    w.add("third.md", ["Travel expenses of contractors are claimed in the portal."], EVERYONE)
    w.add("secret.md", ["Contractors claim travel expenses: the secret way."], Acl.of(["group:finance"]))
    return w


def _sources(world: World) -> list[str]:
    return [c.document_id for c in world.ask("anyone", VectorQuery(STORE, QUESTION)).chunks]


def test_a_new_store_has_no_cap_and_one_document_may_fill_the_sources(world: World) -> None:
    assert world.repo.get_store(STORE).max_chunks_per_document == 0  # type: ignore[union-attr]
    assert _sources(world).count("long.md") >= 4


def test_the_cap_keeps_at_most_n_chunks_of_each_document_and_gives_the_room_to_others(world: World) -> None:
    Admin(world.repo).update_settings(STORE, max_chunks_per_document=2)
    sources = _sources(world)
    assert sources.count("long.md") == 2
    assert {"other.md", "third.md"} <= set(sources)
    assert "secret.md" not in sources  # after the access filter, as before
    assert len(sources) == 4  # fewer than max_chunks: nothing else passes


@pytest.mark.parametrize("value", [-1, 51, 2.5, True, "2"])
def test_a_cap_out_of_bounds_is_refused(world: World, value: object) -> None:
    with pytest.raises(InvalidArgument, match="max_chunks_per_document must be an integer between 0 and 50"):
        Admin(world.repo).update_settings(STORE, max_chunks_per_document=value)
