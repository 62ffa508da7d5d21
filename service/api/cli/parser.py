"""The command line's parser: the global options and exit codes; each command group's grammar is in ``grammar/``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from service.api.cli.access import add_access_commands
from service.api.cli.analysis import add_analysis_commands
from service.api.cli.grammar import Command
from service.api.cli.grammar.acl import add_acl_commands
from service.api.cli.grammar.operations import add_operations_commands
from service.api.cli.grammar.quality import add_quality_commands
from service.api.cli.grammar.queries import add_query_commands
from service.api.cli.grammar.stores import add_store_commands
from service.api.cli.history import add_history_commands


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # argparse's own exit code 2, no traceback
        self.print_usage(sys.stderr)
        self.exit(2, f"error: {message}\n")


EXIT_CODES = """exit codes:
  0  done
  1  the work ran but failed: nothing could be indexed, a doctor check failed, the schema is out of date
  2  bad input (an option, a question, a level, an id, a manifest)
  3  not found: an unknown store or document, or one the user may not read
  4  permission denied
  5  unauthenticated
  6  unavailable: the settings database, the index or the language model is down
  7  deadline exceeded
  8  configuration error (the message names the key)
  70 internal error (re-run with --debug for the traceback)
  130 interrupted; 141 output closed early (e.g. piped into head)"""


def _command(sub: Any, name: str, summary: str, examples: str) -> argparse.ArgumentParser:
    """A subcommand whose --help ends with examples."""
    parser: argparse.ArgumentParser = sub.add_parser(
        name,
        help=summary,
        description=summary,
        epilog="examples:\n" + examples,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    return parser


#: Each group adds its subcommands, in the order ``docqa --help`` lists them. ``history`` comes last: it adds
#: ``--conversation`` to ``ask`` and ``search`` and ``--history-auditor`` to ``token``.
COMMAND_GROUPS: tuple[Callable[[Any, Command], None], ...] = (
    add_query_commands,  # index, ask, search
    add_analysis_commands,  # summarize, compare
    add_quality_commands,  # eval, adapt
    add_store_commands,  # stores, settings
    add_acl_commands,  # groups, acl
    add_access_commands,  # access, scim
    add_operations_commands,  # doctor, serve, token, db
    add_history_commands,  # history, feedback
)


def build_parser() -> argparse.ArgumentParser:
    """The ``docqa`` parser: every command, option, help text and example."""
    parser = _Parser(
        prog="docqa",
        description="Access-controlled document question answering.",
        epilog="examples:\n"
        "  docqa index examples/acme --store acme\n"
        '  docqa ask "How many vacation days can I carry over?" --store acme --as bob\n'
        "  docqa COMMAND --help     (every command has examples)\n\n" + EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--config", help="YAML configuration file (default: $DOCQA_CONFIG; none = built-in defaults)")
    parser.add_argument("--data-dir", help="data directory (default: $DOCQA_DATA_DIR or ~/.local/share/docqa)")
    parser.add_argument("-v", "--verbose", action="store_true", help="log what happens (INFO level)")
    parser.add_argument("--debug", action="store_true", help="show tracebacks of internal errors")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser, metavar="COMMAND")
    for add_commands in COMMAND_GROUPS:
        add_commands(sub, _command)
    return parser
