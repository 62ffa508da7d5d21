"""The base of every configuration section, and the default data directory."""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import BaseModel, ConfigDict


def default_data_dir() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "docqa"


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
