"""Everything DocQA creates under its data directory is private (0600 / 0700), whatever the umask."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from indexer.index import StoreSpec
from indexer.index.embedded.index import EmbeddedIndex
from indexer.private_files import private_dir, private_file, wider_than_private
from service.config import Settings
from service.persistence.sql_settings import SqlSettingsRepository
from service.security.tokens import hs256_secret


@pytest.fixture
def loose_umask() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def modes(root: Path) -> dict[str, int]:
    return {p.relative_to(root).as_posix() or ".": stat.S_IMODE(p.stat().st_mode) for p in [root, *root.rglob("*")]}


@pytest.mark.usefixtures("loose_umask")
def test_database_index_and_secret_are_created_private(tmp_path: Path) -> None:
    data = tmp_path / "a" / "data"
    repository = SqlSettingsRepository.from_url(f"sqlite:///{data / 'settings.sqlite'}")
    repository.list_stores()
    index = EmbeddedIndex(private_dir(data / "index"))
    index.ensure(StoreSpec("acme", 4))
    hs256_secret(Settings(data_dir=data))
    try:
        seen = modes(data)  # while open: the -wal and -shm files exist too
    finally:
        index.close()
        repository.close()
    assert {"settings.sqlite", "settings.sqlite-wal", "settings.sqlite-shm", "index/acme.sqlite", "jwt-secret"} <= set(
        seen
    )
    for name, mode in seen.items():
        expected = 0o700 if (data / name).is_dir() else 0o600
        assert mode == expected, (name, oct(mode))
    assert stat.S_IMODE((tmp_path / "a").stat().st_mode) == 0o700  # a missing parent is made private too
    assert wider_than_private(data) == []


@pytest.mark.usefixtures("loose_umask")
def test_wider_entries_are_reported_and_existing_files_left_alone(tmp_path: Path) -> None:
    data = private_dir(tmp_path / "data")
    loose = data / "loose.txt"
    loose.write_text("x")  # 0644 under this umask
    assert private_file(loose) == loose and stat.S_IMODE(loose.stat().st_mode) == 0o644
    (data / "link").symlink_to("/etc/passwd")  # links are never followed nor reported
    assert wider_than_private(data) == [(loose, 0o644)]
