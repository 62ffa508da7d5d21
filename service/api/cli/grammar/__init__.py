"""The command line's grammar, one module per command group.

Each module holds one ``add_..._commands(sub, command)`` that adds its group's subcommands, options, help
texts and examples; ``service.api.cli.parser.build_parser`` calls them in the order ``docqa --help`` lists
them. The handlers they point at live in the modules named for what they do (``queries``, ``admin``, ...).
``access``, ``analysis`` and ``history`` (``docqa access|scim``, ``summarize|compare``, ``history|feedback``)
keep their grammar next to their handlers. ``tests/unit/test_cli_surface.py`` pins the whole surface.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

#: The parser's subcommand factory: ``command(sub, name, summary, examples)`` adds a subcommand whose
#: ``--help`` ends with the examples.
Command = Callable[[Any, str, str, str], argparse.ArgumentParser]
