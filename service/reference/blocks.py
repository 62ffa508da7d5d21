"""The generated part of a documentation page, between a BEGIN and an END marker."""

from __future__ import annotations

import re

COMMAND = "python -m service.reference"


def begin(name: str) -> str:
    return f"<!-- BEGIN GENERATED {name}: edit the source, then run `{COMMAND}` -->"


def end(name: str) -> str:
    return f"<!-- END GENERATED {name} -->"


def _pattern(name: str) -> re.Pattern[str]:
    return re.compile(re.escape(begin(name)) + r"\n(.*?)" + re.escape(end(name)), re.DOTALL)


def generated_part(page: str, name: str) -> str | None:
    """The text between the page's markers for ``name``; None when the page has no such markers."""
    found = _pattern(name).search(page)
    return None if found is None else found.group(1)


def with_generated_part(page: str, name: str, content: str) -> str:
    """The page with ``content`` between its markers for ``name``; ValueError when they are missing."""
    if generated_part(page, name) is None:
        raise ValueError(f"the page has no markers {begin(name)!r} ... {end(name)!r}")
    return _pattern(name).sub(lambda _: f"{begin(name)}\n{content}{end(name)}", page, count=1)


def cell(text: str) -> str:
    """Text that is safe in one cell of a Markdown table: one line, no bare pipe."""
    return " ".join(text.split()).replace("|", "\\|")
