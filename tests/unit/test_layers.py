"""The layering is checked, not hoped for: import-linter's contracts in pyproject.toml hold."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_every_import_contract_is_kept() -> None:
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    assert len(contracts) >= 7
    result = subprocess.run(
        [sys.executable, "-c", "import sys; from importlinter.cli import lint_imports_command; lint_imports_command()"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
    assert f"Contracts: {len(contracts)} kept, 0 broken." in result.stdout


def test_no_module_outgrows_its_room() -> None:
    """A module over ~300 lines is a smell; the few that hold one idea at length say why here."""
    explained = {
        # The strawberry schema: the GraphQL types and resolvers of one API, exported as one SDL file.
        "service/api/graphql/schema.py",
        # One SQLAlchemy adapter of the store, catalog and audit ports over the same session and tables.
        "service/persistence/sql_settings.py",
        # The watsonx adapter: credentials, TLS, retries, streaming and the doctor check of one SDK.
        "service/generation/watsonx.py",
        # The ingest pipeline: scan, compare, load, chunk, embed, write, record — one resumable run.
        "indexer/ingest/pipeline.py",
        # The OpenSearch adapter's client: retries, bulk, by-query calls and searches of one port.
        "indexer/index/opensearch/index.py",
        # The one place that wires adapters together: each adapter's lazy construction, read as one page.
        "service/bootstrap.py",
        # The embedded index's one SQLite file: schema, in-place upgrades, chunk rows, the full-text table's writes.
        "indexer/index/embedded/sqlite.py",
    }
    long = {
        path.relative_to(ROOT).as_posix()
        for package in ("acl", "indexer", "service")
        for path in (ROOT / package).rglob("*.py")
        if "_gen" not in path.parts and len(path.read_text(encoding="utf-8").splitlines()) > 330
    }
    assert long <= explained, sorted(long - explained)
