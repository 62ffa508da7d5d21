"""``python -m bench.leakage --probes N [--seed S] [--json OUT]``: the leakage benchmark against DocQA."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from bench.leakage.docqa_target import DocQATarget
from bench.leakage.ldap import SLAPD
from bench.leakage.run import run, table
from bench.provenance import record


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.leakage", description=__doc__)
    parser.add_argument("--probes", type=int, default=10_000, help="requests in all, timing pairs included")
    parser.add_argument("--seed", type=int, default=35)
    parser.add_argument("--timing-pairs", type=int, default=500, help="pairs per timing test (default 500)")
    parser.add_argument("--cli-share", type=float, default=0.03, help="share of probes sent through the CLI")
    parser.add_argument(
        "--filler", type=int, default=200, help="more forbidden documents holding the timing probe's words"
    )
    parser.add_argument("--json", type=Path, default=None, help="write the whole report as JSON here")
    parser.add_argument("--keep", action="store_true", help="keep the temporary data directory")
    parser.add_argument(
        "--directory",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="groups from a real slapd and over SCIM too, revoked there (default: on when slapd is installed)",
    )
    args = parser.parse_args(argv)
    if args.directory and SLAPD is None:
        parser.error("--directory needs slapd (apt-get install slapd)")
    directory = SLAPD is not None if args.directory is None else args.directory
    target = DocQATarget(keep=args.keep, directory=directory)
    report = run(target, args.probes, args.seed, args.timing_pairs, args.cli_share, log=sys.stderr, filler=args.filler)
    if not directory:
        why = "--no-directory" if args.directory is False else "slapd is not installed (apt-get install slapd)"
        report.notes.append(f"directory sources (LDAP, SCIM): skipped, {why}")
    print(table(report), flush=True)
    found = report.as_dict()
    leaks = {channel: found["channels"][channel]["leaks"] for channel in found["channels"]}
    keys = ("probes_run", "latencies", "control", "statistics_inconclusive", "seconds", "setup_s")
    record("leakage", {"seed": args.seed, "leaks": leaks, **{key: found[key] for key in keys}})
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report.as_dict(), indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
