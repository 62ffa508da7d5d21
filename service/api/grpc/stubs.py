"""The Python stubs of ``proto/docqa/v1``: generated at build time, typed by mypy-protobuf.

A wheel or an editable install carries the package ``service/api/grpc/_gen``, made by
the build step (``setup.py``, ``service.api.grpc.stubgen``): the messages, the services
and their ``.pyi`` files, so ``proto/`` is not needed at run time. In a source checkout
(``proto/`` beside the packages) whose stubs are missing or older than the contract,
importing this module (re)generates them first, as the build does. The servicers import
the typed modules from here (``from service.api.grpc.stubs import query_pb2``).
"""

from __future__ import annotations

import importlib
import threading
from dataclasses import dataclass
from types import ModuleType

from acl.errors import ConfigurationError
from service.api.grpc.stubgen import GEN_DIR, PROTO_ROOT, StubGenerationError, fresh, generate, proto_files

_lock = threading.Lock()


def _ensure() -> None:
    """Generate the stubs when this is a source checkout whose stubs are missing or stale."""
    with _lock:
        if not proto_files(PROTO_ROOT) or fresh(GEN_DIR, PROTO_ROOT):
            return  # an installed wheel (no proto/), or stubs made from the contract as it is
        try:
            generate(GEN_DIR, PROTO_ROOT)
        except StubGenerationError as error:
            raise ConfigurationError(str(error)) from error
        importlib.invalidate_caches()


_ensure()

from service.api.grpc._gen import (  # noqa: E402  (generated above when missing)
    admin_pb2,
    admin_pb2_grpc,
    analysis_pb2,
    analysis_pb2_grpc,
    common_pb2,
    history_pb2,
    history_pb2_grpc,
    indexing_pb2,
    indexing_pb2_grpc,
    query_pb2,
    query_pb2_grpc,
)

__all__ = [
    "Stubs",
    "admin_pb2",
    "admin_pb2_grpc",
    "analysis_pb2",
    "analysis_pb2_grpc",
    "common_pb2",
    "history_pb2",
    "history_pb2_grpc",
    "indexing_pb2",
    "indexing_pb2_grpc",
    "load",
    "query_pb2",
    "query_pb2_grpc",
]


@dataclass(frozen=True, slots=True)
class Stubs:
    """The generated modules by short name (for callers that pass them around; the servicers import them)."""

    common: ModuleType
    query: ModuleType
    query_grpc: ModuleType
    indexing: ModuleType
    indexing_grpc: ModuleType
    admin: ModuleType
    admin_grpc: ModuleType
    analysis: ModuleType
    analysis_grpc: ModuleType
    history: ModuleType
    history_grpc: ModuleType

    def service_names(self) -> tuple[str, ...]:
        """Full names of every DocQA service (for health and reflection)."""
        return service_names()


def service_names() -> tuple[str, ...]:
    """Full names of every DocQA service (for health and reflection)."""
    return tuple(
        service.full_name
        for module in (query_pb2, indexing_pb2, admin_pb2, analysis_pb2, history_pb2)
        for service in module.DESCRIPTOR.services_by_name.values()
    )


_STUBS = Stubs(
    common=common_pb2,
    query=query_pb2,
    query_grpc=query_pb2_grpc,
    indexing=indexing_pb2,
    indexing_grpc=indexing_pb2_grpc,
    admin=admin_pb2,
    admin_grpc=admin_pb2_grpc,
    analysis=analysis_pb2,
    analysis_grpc=analysis_pb2_grpc,
    history=history_pb2,
    history_grpc=history_pb2_grpc,
)


def load() -> Stubs:
    """The generated stubs (generated when this module was imported, if a source checkout needed them)."""
    return _STUBS
