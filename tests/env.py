"""A test's own DocQA environment: none of the developer's ``DOCQA_*`` variables leak into it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


def clear_docqa_env(monkeypatch: pytest.MonkeyPatch, data_dir: Path | None = None) -> None:
    """Remove every ``DOCQA_*`` variable for this test; then point ``DOCQA_DATA_DIR`` at ``data_dir`` if given."""
    for key in [k for k in os.environ if k.startswith("DOCQA_")]:
        monkeypatch.delenv(key)
    if data_dir is not None:
        monkeypatch.setenv("DOCQA_DATA_DIR", str(data_dir))
