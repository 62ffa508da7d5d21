"""``python -m service.reference [--check] [ROOT]``: rewrite the generated parts of the reference pages.

With ``--check`` nothing is written; the exit code is 1 when a page is stale.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from service.reference.pages import stale, write


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m service.reference", description=__doc__)
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 when a page is stale")
    parser.add_argument("root", nargs="?", type=Path, default=Path.cwd(), help="the repository (default: here)")
    args = parser.parse_args(argv)
    if args.check:
        pages = stale(args.root)
        for page in pages:
            print(f"{page} is stale: run python -m service.reference", file=sys.stderr)
        return 1 if pages else 0
    for page in write(args.root):
        print(f"wrote {page}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
