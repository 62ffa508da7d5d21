"""What every fault returns, and the recovery time it reports: dependency back → the first successful request."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bench.soak.run import Call, Soak

RECOVERY_LIMIT_S = 90.0


def recovered(
    soak: Soak, since: float, replica: int | None = None, success: Callable[[Call], bool] | None = None
) -> float | None:
    """Seconds from ``since`` to the first successful request (on ``replica`` if given; one ``success`` accepts,
    when given: an answer the language model wrote, say), waited for; None past RECOVERY_LIMIT_S."""
    deadline = since + RECOVERY_LIMIT_S
    while True:
        with soak._lock:
            times = [
                c.at
                for c in soak.calls
                if c.ok
                and c.at >= since
                and (replica is None or c.replica == replica)
                and (success is None or success(c))
            ]
        if times and min(times) - since <= RECOVERY_LIMIT_S:
            return round(min(times) - since, 3)
        if time.monotonic() > deadline:
            return None
        time.sleep(0.2)


def result(
    kind: str, started: float, ended: float, recovery: float | None, note: str, bad: list[str]
) -> dict[str, Any]:
    """A fault's record: ``kind``, ``started``/``ended`` (monotonic: fault on, dependency back), ``recovery_s``,
    a ``note`` and its ``violations`` (no recovery within RECOVERY_LIMIT_S is one)."""
    if recovery is None:
        bad = [*bad, f"{kind}: no successful request within {RECOVERY_LIMIT_S:.0f} s of the recovery"]
    return {"kind": kind, "started": started, "ended": ended, "recovery_s": recovery, "note": note, "violations": bad}
