"""A question's principal expansion against the size of the directory: the caller's groups read by member, one
level of nesting at a time (``Caller.principals``, what a question runs), against the whole membership table read
and expanded in Python (``memberships`` then ``expand_principals``, what a question ran before 0009).

Each directory has ``users`` users, each in 3 of 150 groups, the 150 groups all in one more group (so a caller's
expansion has three levels); the settings database is SQLite in a temporary folder, as on a laptop. Both ways
must give the same set; the script says so or fails.

    python bench/principals.py --users 0,1000,10000,50000
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from provenance import record  # noqa: E402  (bench/provenance.py)

from acl.directory import expand_principals  # noqa: E402
from service.domain.queries import Caller  # noqa: E402
from service.persistence.sql_settings import SqlSettingsRepository, make_engine  # noqa: E402

GROUPS = 150


def per_call_ms(call: Callable[[], object], budget_s: float) -> float:
    """Mean ms of ``call`` over at least 3 calls and about ``budget_s`` seconds."""
    call()
    began, n = time.perf_counter(), 0
    while n < 3 or time.perf_counter() - began < budget_s:
        call()
        n += 1
    return (time.perf_counter() - began) * 1000 / n


def measure(users: int, seconds: float) -> dict[str, float]:
    """Both expansions of one caller in a directory of ``users`` users."""
    folder = Path(tempfile.mkdtemp(prefix="docqa-bench-principals-"))
    repo = SqlSettingsRepository(make_engine(f"sqlite:///{folder / 'settings.db'}"))
    groups = {f"group:g{g}": [f"user:u{u}" for u in range(users) if u % 50 == g % 50] for g in range(GROUPS)}
    groups["group:all-staff"] = list(groups)
    repo.replace_memberships(groups, scope="", source="directory-sync")
    caller = Caller("u7")

    def whole_table() -> frozenset[str]:
        return expand_principals(caller.principal, repo.memberships("store"), caller.asserted_groups)

    def by_member() -> frozenset[str]:
        return caller.principals(repo, "store")

    if by_member() != whole_table():
        raise SystemExit(f"the two expansions differ at {users} users")
    pairs = sum(len(members) for members in groups.values())
    return {
        "users": users,
        "pairs": pairs,
        "whole_table_ms": per_call_ms(whole_table, seconds),
        "by_member_ms": per_call_ms(by_member, seconds),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", default="0,1000,10000,50000", help="directory sizes (default 0,1000,10000,50000)")
    parser.add_argument("--seconds", type=float, default=2.0, help="seconds per measurement (default 2)")
    args = parser.parse_args()
    rows = []
    print(f"{'users':>7} {'pairs':>7} | {'whole table ms':>14} | {'by member ms':>12} | ratio")
    for users in (int(u) for u in args.users.split(",")):
        row = measure(users, args.seconds)
        rows.append(row)
        before, now = row["whole_table_ms"], row["by_member_ms"]
        print(f"{users:>7} {row['pairs']:>7} | {before:>14.2f} | {now:>12.2f} | {before / now:.1f}x", flush=True)
    record("principals", {"rows": rows})


if __name__ == "__main__":
    main()
