"""``python -m bench.soak [--minutes 30] [--faults all] [--llm watsonx-standin] [--index opensearch-fake]``: the
soak, its table.

Two ``docqa serve`` replicas on a PostgreSQL of the soak's own (initdb in a temporary folder) and one data
directory, under mixed load from ``--clients`` threads, while the faults run in turn every ``--fault-every``
seconds. The run ends with the invariants checked and exit 1 when any is broken (see ``bench/soak/run.py``).
A fault this machine or these options cannot inject is named with the reason and skipped.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.provenance import record
from bench.soak.postgres import Cluster
from bench.soak.run import Soak, faults_named, write_json
from bench.soak.standins import INDEXES, LLMS

FAULT_HELP = """fault kinds (--faults):
  postgres-down     PostgreSQL stopped 8 s (/readyz must answer 503, then 200)
  postgres-slow     every PostgreSQL process frozen 5 s (SIGSTOP)
  replica-kill      a replica SIGKILLed and restarted
  indexer-kill      an indexing run SIGKILLed; a re-run must leave a clean run's chunks
  disk-full         the data disk filled under an indexing run (as root: a tmpfs of the soak's own)
  read-only         the data directory read-only to an indexing run (as root: a mount namespace)
 with --llm watsonx-standin (group watsonx), each 5 s; the replicas must answer with the sources and
 "No answer was generated", never an error, and recover without a restart:
  watsonx-429       every generation request answered 429 with Retry-After
  watsonx-500       every generation request answered 500
  watsonx-hang      every generation request held past the replicas' 3 s timeout
  watsonx-cut       every streamed answer cut after its first tokens, connection closed
 with --index opensearch-fake (group opensearch), each 5 s:
  opensearch-429    every request answered 429 (/readyz must answer 503, then 200)
  opensearch-503    every request answered 503 (/readyz must answer 503, then 200)
  opensearch-hang   every request held past the client's 2 s timeout (/readyz 503, then 200)
  opensearch-drop   the first 3 bulk replies of an indexing run cut half-way, connection closed (the bulk
                    applied): the run must succeed, OpenSearch hold each chunk once, a re-run change nothing
Without --llm watsonx-standin or --index opensearch-fake those faults are skipped, with the reason."""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.soak",
        description=__doc__.split("\n\n")[1],
        epilog=FAULT_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--minutes", type=float, default=30.0, help="length of the loaded run (default 30)")
    parser.add_argument("--fault-every", type=float, default=40.0, metavar="S", help="seconds between faults")
    parser.add_argument(
        "--faults", default="all", help="comma-separated fault kinds or groups (watsonx, opensearch), or all (default)"
    )
    parser.add_argument(
        "--llm",
        choices=LLMS,
        default="extractive",
        help="what the replicas answer with: extractive (default) or a watsonx.ai stand-in the soak runs and fails",
    )
    parser.add_argument(
        "--index",
        choices=INDEXES,
        default="embedded",
        help="where the replicas keep chunks: embedded (default) or an OpenSearch k-NN fake the soak runs and fails",
    )
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
        work,
        args.minutes,
        args.fault_every,
        faults,
        args.clients,
        args.seed,
        args.rss_limit_mb,
        args.each_once,
        llm=args.llm,
        index=args.index,
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
    record("soak", report)
    if args.json:
        write_json(report, args.json)
    return 1 if report["violations"] else 0


if __name__ == "__main__":
    sys.exit(main())
