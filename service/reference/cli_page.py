"""The CLI reference, read from the parser itself (``service.api.cli.parser.build_parser``).

Every command path gets its summary, a synopsis, one table per argument group (argument, default, description)
and its examples, so a flag added to the parser is on the page the next time ``python -m service.reference``
runs, and ``tests/unit/test_reference_pages.py`` fails until it does. The synopsis is built here, not taken
from argparse's usage line, whose wrapping depends on the terminal and the Python version.
"""

from __future__ import annotations

import argparse

from service.reference.blocks import cell
from service.reference.cli_surface import Command, commands, exclusive_with, group_of, options

#: Width at which a synopsis wraps (its continuation lines are indented under the command).
_WIDTH = 100


def render(parser: argparse.ArgumentParser) -> str:
    """The overview table of every command, then one section per command path."""
    found = list(commands(parser))
    out = ["| command | what it does |", "| --- | --- |"]
    for command in found[1:]:
        out.append(f"| [`{command.path}`](#{_anchor(command.path)}) | {_text(command.parser.description or '')} |")
    out.append("")
    for command in found:
        out += _section(command)
    return "\n".join(out).rstrip("\n") + "\n"


def _anchor(path: str) -> str:
    """The heading's id as MkDocs' toc extension makes it (lower case, spaces to hyphens)."""
    return path.lower().replace(" ", "-")


def _section(command: Command) -> list[str]:
    parser = command.parser
    root = command.summary is None
    out = [f"### {command.path}", ""]
    if not root and parser.description:
        out += [_text(parser.description[0].upper() + parser.description[1:]).rstrip(".") + ".", ""]
    out += ["```text", *_synopsis(command), "```", ""]
    out += _tables(parser)
    examples = _examples(parser.epilog)
    if examples and not root:
        out += ["Examples:", "", "```sh", *examples, "```", ""]
    return out


def _synopsis(command: Command) -> list[str]:
    parser = command.parser
    words: list[str] = []
    done: set[int] = set()
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction) or id(action) in done:
            continue
        if isinstance(action, argparse._SubParsersAction):
            words.append(str(action.metavar or "COMMAND"))
            continue
        group = [action, *(a for a in parser._actions if _name(a) in exclusive_with(parser, action))]
        done.update(id(a) for a in group)
        if len(group) > 1:
            words.append("[" + " | ".join(_usage(a) for a in group) + "]")
        else:
            words.append(_usage(action) if action.required or not action.option_strings else f"[{_usage(action)}]")
    lines = [command.path]
    for word in words:
        if len(lines[-1]) + 1 + len(word) > _WIDTH and lines[-1].strip() != command.path:
            lines[-1] += " \\"
            lines.append(" " * 4 + word)
        else:
            lines[-1] += " " + word
    return lines


def _usage(action: argparse.Action, flag: str | None = None) -> str:
    """One argument as a synopsis shows it: ``--store STORE``, ``--json``, ``QUESTION``, ``ID [ID ...]``."""
    value = _metavar(action)
    if action.nargs == "+":
        value = f"{value} [{value} ...]"
    elif action.nargs == "?":
        value = f"[{value}]"
    if not action.option_strings:
        return value
    flag = flag or max(action.option_strings, key=len)
    return flag if action.nargs == 0 else f"{flag} {value}"


def _metavar(action: argparse.Action) -> str:
    if isinstance(action.metavar, str):
        return action.metavar
    if action.choices is not None:
        return "{" + ",".join(str(choice) for choice in action.choices) + "}"
    return action.dest.upper()


def _name(action: argparse.Action) -> str:
    return ", ".join(action.option_strings) if action.option_strings else action.dest


def _tables(parser: argparse.ArgumentParser) -> list[str]:
    """One table of the parser's own arguments, then one per titled group (with the group's description)."""
    groups: dict[str | None, list[argparse.Action]] = {}
    for action in options(parser):
        groups.setdefault(group_of(parser, action), []).append(action)
    out: list[str] = []
    for title, actions in groups.items():
        if title is not None:
            found = next(g for g in parser._action_groups if g.title == title)
            out += [f"*{title}*" + (f": {_text(found.description)}" if found.description else ""), ""]
        out += ["| argument | default | description |", "| --- | --- | --- |"]
        for action in actions:
            shown = [f"`{_usage(action, flag)}`" for flag in action.option_strings] or [f"`{_usage(action)}`"]
            out.append(f"| {', '.join(shown)} | {_default(action)} | {_text(action.help or '')} |")
        out.append("")
    return out


def _text(text: str) -> str:
    """A help text in a table cell, its ``<id>`` placeholders kept as text rather than read as HTML."""
    return cell(text).replace("<", "&lt;")


def _default(action: argparse.Action) -> str:
    if action.required:
        return "required"
    if action.nargs == 0 or action.default is None or action.default == [] or action.default is argparse.SUPPRESS:
        return ""
    return f"`{action.default}`"


def _examples(epilog: str | None) -> list[str]:
    """The examples of a ``--help``'s epilog, without their two-space indent."""
    if not epilog or not epilog.startswith("examples:\n"):
        return []
    lines = epilog.removeprefix("examples:\n").split("\n\n", 1)[0].splitlines()
    return [line.removeprefix("  ") for line in lines]
