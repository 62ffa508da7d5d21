"""``docqa adapt`` started by the servers: one background run per store, and what it has done so far.

A server cannot hold a request open for the minutes to an hour a run takes, so ``AdaptJobs.start`` checks the
request and the store, starts ``job.adapt`` in a daemon thread and answers at once; ``status`` then tells how
far the run is (its phase and steps) and how it ended. The per-store lock of ``lock.store_lock`` still decides:
a run of the CLI on the store refuses a start here, and one started here refuses the CLI.

What a caller of the servers may choose is ``AdaptRequest`` (whose content to learn from, and how much); the
rest is the server's base options (``AdaptOptions()``; a test hands in options that train in seconds). There
is no question file over the servers: a run is judged on its held-out pseudo-queries.

The status is kept in memory for the last run of each store since the server started; a store with none is
``idle``, and while a run this server did not start holds the store's lock it is ``running``. A server that
stops ends its runs with it; the work folder a run leaves lets the next one with the same options go on from
its last checkpoint. A failed run's status carries its error's message only, never a traceback or a server path.

The training stack (``job``) is imported when a run starts or a status is read, not with the servers.
"""

from __future__ import annotations

import logging
import os
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Any

from acl.errors import ConfigurationError, DocQAError, InvalidArgument, NotFound, ResourceExhausted
from service.adaptation.options import AdaptOptions

log = logging.getLogger("docqa.adapt")

#: Most principals a request may name (each is validated; the run learns from what any of them may read).
MAX_PRINCIPALS = 100
#: The phase of a run that has been started but has not reported a step yet.
STARTING = "starting"
#: What a failed run says when its error is not one of ours (the traceback goes to the server log).
INTERNAL = "the adaptation failed on an internal error; the server log has the details"
#: What it says when the server's configuration stopped it (the detail may name paths: it goes to the log).
MISCONFIGURED = "the adaptation could not run: the server's configuration is wrong; its log says why"
#: The status of a run on the store that this server did not start (``docqa adapt`` on the command line).
ELSEWHERE = "a docqa adapt this server did not start is running on the store"


class AdaptState(StrEnum):
    IDLE = "idle"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"


@dataclass(frozen=True, slots=True)
class AdaptStatus:
    """A store's adaptation as the servers tell it: the last run this server started, or idle."""

    store_id: str
    state: AdaptState
    #: "starting", then job.adapt's phases: reading, mining, training, exporting, evaluating, installing.
    phase: str = ""
    done: int = 0
    total: int = 0
    started_at: datetime | None = None
    finished_at: datetime | None = None
    started_by: str | None = None
    #: The run's outcome in a sentence (installed, or kept the current ranking and by how much it lost).
    message: str = ""
    installed: bool = False
    error: str | None = None


@dataclass(frozen=True, slots=True)
class AdaptRequest:
    """What a caller of the servers chooses of a run (None: the server's base option)."""

    #: Whose readable documents it learns from (None: the base's, group:everyone by default).
    principals: tuple[str, ...] | None = None
    #: Learn from every document whatever its ACL (excludes ``principals``).
    all_content: bool = False
    max_queries: int | None = None
    layers: int | None = None
    epochs: int | None = None

    def options(self, base: AdaptOptions) -> AdaptOptions:
        """``base`` with this request's choices, checked as the CLI's are (InvalidArgument otherwise)."""
        if self.all_content and self.principals:
            raise InvalidArgument("adapt: all content and principals exclude each other: name principals, or neither")
        if self.principals is not None and len(self.principals) > MAX_PRINCIPALS:
            raise InvalidArgument(f"adapt: name at most {MAX_PRINCIPALS} principals, got {len(self.principals)}")
        principals = base.principals if self.principals is None else frozenset(self.principals)
        sizes = (("max_queries", self.max_queries), ("layers", self.layers), ("epochs", self.epochs))
        chosen: dict[str, Any] = {name: value for name, value in sizes if value is not None}
        options = replace(
            base,
            principals=frozenset() if self.all_content else principals,
            everything=self.all_content,
            **chosen,
        )
        options.check()
        return options


class _Job:
    """One run's status, written by its thread and read by the servers."""

    def __init__(self, store_id: str, started_by: str) -> None:
        self.id = str(uuid.uuid4())
        self._lock = threading.Lock()
        self._status = AdaptStatus(
            store_id=store_id,
            state=AdaptState.RUNNING,
            phase=STARTING,
            started_at=datetime.now(UTC),
            started_by=started_by,
        )

    def snapshot(self) -> AdaptStatus:
        with self._lock:
            return self._status

    def progress(self, phase: str, done: int, total: int) -> None:
        with self._lock:
            self._status = replace(self._status, phase=phase, done=done, total=total)

    def end(self, *, message: str = "", installed: bool = False, error: str | None = None) -> None:
        with self._lock:
            self._status = replace(
                self._status,
                state=AdaptState.FAILED if error is not None else AdaptState.SUCCEEDED,
                finished_at=datetime.now(UTC),
                message=message,
                installed=installed,
                error=error,
            )


class AdaptJobs:
    """The adaptations a server runs in the background: at most one per store (``App.adapt_jobs``)."""

    def __init__(self, app: Any, base: AdaptOptions | None = None) -> None:
        """``app``: the application whose stores are adapted; ``base``: the options a request starts from."""
        self._app = app
        self._base = base or AdaptOptions()
        self._lock = threading.Lock()
        self._jobs: dict[str, _Job] = {}

    def start(
        self,
        store_id: str,
        request: AdaptRequest,
        started_by: str,
        *,
        on_start: Callable[[str, AdaptStatus], None] | None = None,
    ) -> AdaptStatus:
        """Start a run of ``store_id`` in the background and return its first status. InvalidArgument for bad
        options, NotFound for an unknown store, ResourceExhausted while a run holds the store (this server's
        or another process's). ``on_start(job_id, status)`` runs before the thread starts (the audit row): when
        it fails, nothing starts."""
        from service.adaptation.lock import store_lock

        options = request.options(self._base)
        self._store(store_id)
        data_dir = Path(self._app.settings.data_dir)
        with self._lock:
            current = self._jobs.get(store_id)
            if current is not None and current.snapshot().state is AdaptState.RUNNING:
                raise _busy(store_id, current.snapshot())
            with store_lock(data_dir, store_id):  # a run elsewhere is refused in the lock's own words
                pass
            job = _Job(store_id, started_by)
            if on_start is not None:
                on_start(job.id, job.snapshot())
            self._jobs[store_id] = job
            threading.Thread(target=self._run, args=(job, options), name=f"docqa-adapt-{store_id}", daemon=True).start()
        log.info("store %s: %s started an adaptation in the background", store_id, started_by)
        return job.snapshot()

    def status(self, store_id: str) -> AdaptStatus:
        """The store's run now going on, else its last run since the server started, else idle; a run this
        server did not start is told by the store's lock. NotFound for an unknown store."""
        from service.adaptation.lock import running

        self._store(store_id)
        # Under the jobs' lock: the lock probe never meets a run of ours about to take the store's lock (a run
        # of ours that is running is answered without it).
        with self._lock:
            job = self._jobs.get(store_id)
            last = None if job is None else job.snapshot()
            if last is not None and last.state is AdaptState.RUNNING:
                return last
            if running(Path(self._app.settings.data_dir), store_id):
                return AdaptStatus(store_id=store_id, state=AdaptState.RUNNING, message=ELSEWHERE)
        return last or AdaptStatus(store_id=store_id, state=AdaptState.IDLE)

    def _store(self, store_id: str) -> None:
        if self._app.repository.get_store(store_id) is None:
            raise NotFound(f"store {store_id!r} not found")

    def _run(self, job: _Job, options: AdaptOptions) -> None:
        from service.adaptation.job import adapt

        store_id = job.snapshot().store_id
        try:
            result = adapt(self._app, store_id, options, on_progress=job.progress)
        except ConfigurationError as exc:
            log.error("store %s: the adaptation could not run: %s", store_id, exc.message)
            job.end(error=MISCONFIGURED)
        except DocQAError as exc:
            log.warning("store %s: the adaptation failed: %s", store_id, exc.message)
            job.end(error=exc.message)
        except Exception:
            log.exception("store %s: the adaptation failed", store_id)
            job.end(error=INTERNAL)
        else:
            job.end(message=result.message, installed=result.installed)


def _busy(store_id: str, status: AdaptStatus) -> ResourceExhausted:
    """The refusal of a second run, in the words of ``lock.store_lock``."""
    since = status.started_at.isoformat(timespec="seconds") if status.started_at else "now"
    holder = f"pid {os.getpid()} since {since}, started by {status.started_by} through the server"
    return ResourceExhausted(f"another docqa adapt is running on store {store_id!r} ({holder}); wait for it to end")
