"""The command line's surface read from its parser: every command path, its options, their defaults and help.

One walk over ``service.api.cli.parser.build_parser()`` feeds both the CLI reference page
(``service.reference.cli_page``) and ``tests/unit/test_cli_surface.py``, which pins the whole surface so a
refactoring of the parser cannot change a flag, a default or a help text unseen.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Command:
    """One command path (``docqa``, ``docqa groups list``) and its parser; ``summary`` is its line in its parent."""

    path: str
    summary: str | None
    parser: argparse.ArgumentParser


def commands(parser: argparse.ArgumentParser) -> Iterator[Command]:
    """Every command path of ``parser``, the root first, then each subcommand depth-first in declaration order."""
    yield from _walk(parser, parser.prog, None)


def _walk(parser: argparse.ArgumentParser, path: str, summary: str | None) -> Iterator[Command]:
    yield Command(path, summary, parser)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            summaries = {choice.dest: choice.help for choice in action._choices_actions}
            for name, child in action.choices.items():
                yield from _walk(child, f"{path} {name}", summaries.get(name))


def options(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    """The parser's own arguments, positionals and options, without ``--help`` and the subcommand slot."""
    return [
        action
        for action in parser._actions
        if not isinstance(action, (argparse._HelpAction, argparse._SubParsersAction))
    ]


def group_of(parser: argparse.ArgumentParser, action: argparse.Action) -> str | None:
    """The titled argument group holding ``action``; None for argparse's own two groups."""
    for group in parser._action_groups:
        if action in group._group_actions and group not in (parser._positionals, parser._optionals):
            return group.title
    return None


def exclusive_with(parser: argparse.ArgumentParser, action: argparse.Action) -> list[str]:
    """The options that may not be given together with ``action``."""
    for group in parser._mutually_exclusive_groups:
        if action in group._group_actions:
            return [_name(other) for other in group._group_actions if other is not action]
    return []


def surface(parser: argparse.ArgumentParser) -> dict[str, Any]:
    """The whole surface as plain data (JSON-ready): per command path its texts, arguments and set defaults."""
    return {command.path: _command(command) for command in commands(parser)}


def _command(command: Command) -> dict[str, Any]:
    parser = command.parser
    subcommands = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return {
        "summary": command.summary,
        "parser": f"{type(parser).__name__}, {getattr(parser.formatter_class, '__name__', parser.formatter_class)}",
        "description": parser.description,
        "epilog": parser.epilog,
        "subcommands": {
            "dest": subcommands[0].dest,
            "required": subcommands[0].required,
            "metavar": subcommands[0].metavar,
            "names": list(subcommands[0].choices),
        }
        if subcommands
        else None,
        "arguments": [_argument(parser, action) for action in options(parser)],
        "set_defaults": {key: _value(value) for key, value in sorted(parser._defaults.items())},
    }


def _argument(parser: argparse.ArgumentParser, action: argparse.Action) -> dict[str, Any]:
    return {
        "name": _name(action),
        "dest": action.dest,
        "action": type(action).__name__,
        "required": action.required,
        "default": _value(action.default),
        "const": _value(action.const),
        "type": None if action.type is None else _value(action.type),
        "nargs": action.nargs,
        "choices": None if action.choices is None else list(action.choices),
        "metavar": action.metavar,
        "help": action.help,
        "group": group_of(parser, action),
        "exclusive_with": exclusive_with(parser, action),
    }


def _name(action: argparse.Action) -> str:
    return ", ".join(action.option_strings) if action.option_strings else action.dest


def _value(value: Any) -> Any:
    """``value`` as JSON: a function by its module and name, anything else unusual by its repr."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [_value(item) for item in value]
    if callable(value) and hasattr(value, "__qualname__"):
        return f"{value.__module__}.{value.__qualname__}"
    return repr(value)
