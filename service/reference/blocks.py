"""The generated part of a documentation page, between a BEGIN and an END marker."""

from __future__ import annotations

import re

COMMAND = "python -m service.reference"


def begin(name: str, code: bool = False) -> str:
    """The opening marker: an HTML comment, or a ``//`` line in ``code`` (a ``.proto`` file)."""
    if code:
        return f"// BEGIN GENERATED {name}: edit the source, then run `{COMMAND}`"
    return f"<!-- BEGIN GENERATED {name}: edit the source, then run `{COMMAND}` -->"


def end(name: str, code: bool = False) -> str:
    return f"// END GENERATED {name}" if code else f"<!-- END GENERATED {name} -->"


def _pattern(name: str, code: bool) -> re.Pattern[str]:
    return re.compile(re.escape(begin(name, code)) + r"\n(.*?)" + re.escape(end(name, code)), re.DOTALL)


def generated_part(page: str, name: str, code: bool = False) -> str | None:
    """The text between the page's markers for ``name``; None when the page has no such markers."""
    found = _pattern(name, code).search(page)
    return None if found is None else found.group(1)


def with_generated_part(page: str, name: str, content: str, code: bool = False) -> str:
    """The page with ``content`` between its markers for ``name``; ValueError when they are missing."""
    if generated_part(page, name, code) is None:
        raise ValueError(f"the page has no markers {begin(name, code)!r} ... {end(name, code)!r}")
    return _pattern(name, code).sub(lambda _: f"{begin(name, code)}\n{content}{end(name, code)}", page, count=1)


def cell(text: str) -> str:
    """Text that is safe in one cell of a Markdown table: one line, no bare pipe."""
    return " ".join(text.split()).replace("|", "\\|")
