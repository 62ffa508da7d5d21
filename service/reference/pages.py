"""Which page holds which generated part, and how each part is made."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from service.reference import blocks


@dataclass(frozen=True)
class Part:
    """One generated part: its marker name, the page holding it (relative to the repository) and its maker."""

    name: str
    page: str
    make: Callable[[Path], str]

    @property
    def code(self) -> bool:
        """The page is source code (``//`` markers), not Markdown."""
        return self.page.endswith(".proto")


def _settings(_root: Path) -> str:
    from service.config import Settings
    from service.reference.settings_page import render

    return render(Settings)


def _graphql(root: Path) -> str:
    from service.reference.graphql_page import render

    return render(root / "graphql" / "schema.graphql")


def _grpc(root: Path) -> str:
    from service.reference.grpc_page import render

    return render(root / "proto")


def _cli(_root: Path) -> str:
    from service.api.cli.parser import build_parser
    from service.reference.cli_page import render

    return render(build_parser())


def _store_settings_proto(_root: Path) -> str:
    from service.reference.store_settings_page import proto_messages

    return proto_messages()


def _store_settings(_root: Path) -> str:
    from service.reference.store_settings_page import render

    return render()


PARTS = (
    # Before the gRPC page, which is read from the protos.
    Part("store settings", "proto/docqa/v1/admin.proto", _store_settings_proto),
    Part("store settings", "docs/store-settings.md", _store_settings),
    Part("cli", "docs/cli.md", _cli),
    Part("settings", "docs/configuration.md", _settings),
    Part("graphql", "docs/graphql.md", _graphql),
    Part("grpc", "docs/grpc.md", _grpc),
)


def stale(root: Path) -> list[str]:
    """The pages whose generated part differs from what its source generates now."""
    return [part.page for part in PARTS if _current(root, part) != part.make(root)]


def _current(root: Path, part: Part) -> str | None:
    return blocks.generated_part((root / part.page).read_text(encoding="utf-8"), part.name, part.code)


def write(root: Path) -> list[str]:
    """Rewrite every generated part; the pages that changed."""
    changed = []
    for part in PARTS:
        path = root / part.page
        page = path.read_text(encoding="utf-8")
        new = blocks.with_generated_part(page, part.name, part.make(root), part.code)
        if new != page:
            path.write_text(new, encoding="utf-8")
            changed.append(part.page)
    return changed
