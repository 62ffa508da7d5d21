"""Shared fixtures: markers by folder, and no network outside loopback in unit tests."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.env import clear_docqa_env

_LOOPBACK = ("127.", "::1", "localhost")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        parts = Path(str(item.fspath)).parts
        for marker in ("unit", "integration", "e2e", "contract"):
            if marker in parts:
                item.add_marker("unit" if marker == "contract" else marker)


@pytest.fixture(autouse=True)
def _no_network(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Refuse any connection that leaves the machine; unit tests may not connect at all."""
    original = socket.socket.connect
    unit = request.node.get_closest_marker("unit") is not None

    def guarded(self: socket.socket, address: Any) -> Any:
        host = address[0] if isinstance(address, tuple) else str(address)
        if self.family == socket.AF_UNIX:
            return original(self, address)
        if unit:
            raise RuntimeError(f"unit tests may not open network connections (to {host})")
        if not str(host).startswith(_LOOPBACK):
            raise RuntimeError(f"tests may not connect outside loopback (to {host})")
        return original(self, address)

    monkeypatch.setattr(socket.socket, "connect", guarded)
    yield


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No ``DOCQA_*`` variable of the developer's; the data directory in the test's own temp dir."""
    clear_docqa_env(monkeypatch, tmp_path)
