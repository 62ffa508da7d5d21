"""A migration that fails (or is killed) midway leaves the SQLite settings database as it was."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from sqlalchemy import inspect

from service.persistence import schema
from service.persistence.sql_settings import make_engine


def test_a_failing_migration_leaves_no_table_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    migrations = tmp_path / "migrations"
    shutil.copytree(schema.MIGRATIONS, migrations, ignore=shutil.ignore_patterns("__pycache__"))
    last = sorted((migrations / "versions").glob("0*.py"))[-1]
    # The last migration breaks after its first statements ran.
    source = last.read_text(encoding="utf-8").replace(
        "def upgrade() -> None:\n",
        "def upgrade() -> None:\n    _upgrade()\n    raise RuntimeError('killed')\n\n\ndef _upgrade() -> None:\n",
        1,
    )
    last.write_text(source, encoding="utf-8")
    monkeypatch.setattr(schema, "MIGRATIONS", migrations)
    monkeypatch.setattr(schema, "_head_from_files", lambda: None)
    engine = make_engine(f"sqlite:///{tmp_path / 'settings.sqlite'}")
    try:
        with pytest.raises(RuntimeError, match="killed"):
            schema.upgrade(engine)
        assert inspect(engine).get_table_names() == []  # the earlier migrations were rolled back too
        assert schema.current_revision(engine) is None
    finally:
        engine.dispose()
    # The real migrations then run from scratch, as a re-run after a kill would.
    monkeypatch.undo()
    engine = make_engine(f"sqlite:///{tmp_path / 'settings.sqlite'}")
    try:
        assert schema.upgrade(engine) == schema.head_revision()
    finally:
        engine.dispose()
