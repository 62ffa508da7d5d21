"""The CLI's whole surface is pinned: every command path, its arguments, their defaults, help texts and handlers.

``tests/data/cli_surface.json`` was captured from the parser before ``build_parser`` was split per command
group (issue 38), so the split is shown to change nothing a user can type or read. A change meant to be seen
(a new flag, a new default) rewrites the file with ``python -m tests.unit.test_cli_surface``; its diff shows it.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest

from service.api.cli.parser import build_parser
from service.reference.cli_surface import commands, surface

pytestmark = pytest.mark.unit

SNAPSHOT = Path(__file__).resolve().parents[1] / "data" / "cli_surface.json"


def _now(parser: argparse.ArgumentParser | None = None) -> dict[str, Any]:
    """The surface as the snapshot holds it (through JSON: lists, not tuples)."""
    now: dict[str, Any] = json.loads(json.dumps(surface(parser or build_parser()), ensure_ascii=False))
    return now


def _differences(now: dict[str, Any], pinned: dict[str, Any]) -> list[str]:
    gone = [f"{path}: gone" for path in pinned if path not in now]
    new = [f"{path}: new" for path in now if path not in pinned]
    changed = [f"{path}: changed" for path in pinned if path in now and now[path] != pinned[path]]
    return gone + new + changed


def test_the_cli_surface_is_the_pinned_one() -> None:
    pinned = json.loads(SNAPSHOT.read_text(encoding="utf-8"))
    now = _now()
    assert _differences(now, pinned) == [], "if meant, rewrite the snapshot: python -m tests.unit.test_cli_surface"
    assert list(now) == list(pinned)  # and `docqa --help` lists the commands in the same order
    assert len(now) >= 35 and sum(len(command["arguments"]) for command in now.values()) >= 150


def _argument(parser: argparse.ArgumentParser, path: str, flag: str) -> argparse.Action:
    command = next(command for command in commands(parser) if command.path == path)
    return next(action for action in command.parser._actions if flag in action.option_strings)


@pytest.mark.parametrize(
    ("path", "flag", "field", "value"),
    [
        ("docqa index", "--progress-every", "default", 11.0),
        ("docqa settings", "--level", "help", "another help text"),
        ("docqa groups list", "--store", "required", True),
        ("docqa serve", "--http-port", "type", float),
    ],
)
def test_a_changed_default_help_text_or_type_is_caught(path: str, flag: str, field: str, value: object) -> None:
    parser = build_parser()
    setattr(_argument(parser, path, flag), field, value)
    assert _differences(_now(parser), _now()) == [f"{path}: changed"]


def test_a_command_added_or_removed_is_caught() -> None:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    sub.add_parser("extra")
    assert _differences(_now(parser), _now()) == ["docqa extra: new", "docqa: changed"]


def write_snapshot() -> None:
    """Rewrite the snapshot from today's parser (a change meant to be seen)."""
    text = json.dumps(_now(), indent=1, ensure_ascii=False) + "\n"
    SNAPSHOT.write_text(text, encoding="utf-8")
    print(f"wrote {SNAPSHOT}")


if __name__ == "__main__":
    write_snapshot()
