"""``python -m bench.soak [--minutes 30] [--faults all] [--json bench/results/soak.json]``: the soak, its table.

Two ``docqa serve`` replicas on a PostgreSQL of the soak's own (initdb in a temporary folder) and one data
directory, under mixed load from ``--clients`` threads, while the faults run in turn every ``--fault-every``
seconds. The run ends with the invariants checked and exit 1 when any is broken (see ``bench/soak/run.py``).
A fault this machine cannot inject is named with the reason and skipped.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.soak.postgres import Cluster
from bench.soak.run import Soak, faults_named, write_json


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.soak", description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=30.0, help="length of the loaded run (default 30)")
    parser.add_argument("--fault-every", type=float, default=40.0, metavar="S", help="seconds between faults")
    parser.add_argument("--faults", default="all", help="comma-separated fault kinds, or all (default)")
    parser.add_argument("--clients", type=int, default=4, help="client threads (default 4)")
    parser.add_argument("--seed", type=int, default=37)
    parser.add_argument("--rss-limit-mb", type=float, default=2048.0, help="a replica's resident memory bound")
    parser.add_argument(
        "--each-once", action="store_true", help="inject every listed fault at least once, even past --minutes"
    )
    parser.add_argument("--json", type=Path, help="write the report here too")
    parser.add_argument("--work", type=Path, help="working folder (default: a temporary one, removed after)")
    args = parser.parse_args(argv)
    if args.minutes <= 0 or args.clients < 1 or args.fault_every <= 0:
        parser.error("--minutes and --fault-every must be positive and --clients at least 1")
    faults = faults_named(args.faults)
    ok, why = Cluster.available()
    if not ok:
        print(f"cannot run the soak: {why}", file=sys.stderr)
        return 2
    work = args.work or Path(tempfile.mkdtemp(prefix="docqa-soak-"))
    soak = Soak(
        work, args.minutes, args.fault_every, faults, args.clients, args.seed, args.rss_limit_mb, args.each_once
    )
    try:
        soak.setup()
        for name, reason in soak.skipped.items():
            print(f"skipped fault {name}: {reason}", file=sys.stderr)
        report = soak.run()
    finally:
        soak.close()
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(report, indent=1, default=str))
    if args.json:
        write_json(report, args.json)
    return 1 if report["violations"] else 0


if __name__ == "__main__":
    sys.exit(main())
