"""Where settings come from besides the defaults: the YAML file ``load_settings`` names, and the
``DOCQA_DATABASE_URL`` alias of ``DOCQA_DATABASE__URL``; ``DOCQA_*`` names of dotted keys."""

from __future__ import annotations

import os
from contextvars import ContextVar
from typing import Any

from pydantic_settings import PydanticBaseSettingsSource

_YAML_FILE: ContextVar[str | None] = ContextVar("docqa_yaml_file", default=None)


class _DatabaseUrlAlias(PydanticBaseSettingsSource):
    """``DOCQA_DATABASE_URL``, the usual name for a service's database URL, sets ``database.url``
    (``DOCQA_DATABASE__URL`` wins when both are set)."""

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        url = os.environ.get("DOCQA_DATABASE_URL")
        return {"database": {"url": url}} if url else {}


def _env_name(key: str) -> str:
    return "DOCQA_" + key.upper().replace(".", "__")
