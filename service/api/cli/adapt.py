"""``docqa adapt STORE``: train the store's own reranker offline and install it when it ranks better.

Progress goes to stderr as lines (the phase, how far, the elapsed time and an estimate of what is left):
every ``--progress-every`` seconds and at each new phase, so a run of an hour under a Job or cron is
never silent. The result goes to stdout: a few lines, or one JSON object with ``--json``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from typing import Any, TextIO

from acl.errors import InvalidArgument
from acl.model import EVERYONE, user_principal


class PhaseLines:
    """Logs "adapt STORE: PHASE done/total (pct), elapsed, ETA" at each phase change and every ``interval_s``."""

    def __init__(self, store_id: str, out: TextIO, interval_s: float, quiet: bool) -> None:
        self._store = store_id
        self._out = out
        self._interval = interval_s
        self._quiet = quiet
        self._phase = ""
        self._phase_started = self._last = time.monotonic()
        self._started = self._last

    def __call__(self, phase: str, done: int, total: int) -> None:
        now = time.monotonic()
        if phase != self._phase:
            self._phase, self._phase_started = phase, now
        elif now - self._last < self._interval and done < total:
            return
        self._last = now
        if self._quiet:
            return
        share = done / total if total else 1.0
        spent = now - self._phase_started
        eta = f", about {_duration(spent / share - spent)} left in this phase" if 0 < share < 1 and spent > 1 else ""
        print(
            f"adapt {self._store}: {phase} {done}/{total} ({share:.0%}), elapsed {_duration(now - self._started)}{eta}",
            file=self._out,
            flush=True,
        )


def _duration(seconds: float) -> str:
    seconds = max(0, round(seconds))
    minutes, secs = divmod(seconds, 60)
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


def cmd_adapt(args: argparse.Namespace, app: Any) -> int:
    from service.adaptation.job import adapt
    from service.adaptation.options import AdaptOptions

    principals = frozenset(args.principal or [EVERYONE])
    if args.all_content and args.principal:
        raise InvalidArgument("--all-content and --principal exclude each other")
    if bool(args.questions) != bool(args.as_user):
        raise InvalidArgument(
            "--questions needs --as USER (whose access the questions are asked with), and --as needs --questions"
        )
    options = AdaptOptions(
        principals=frozenset() if args.all_content else principals,
        everything=args.all_content,
        max_queries=args.max_queries,
        layers=args.layers,
        max_tokens=args.max_tokens,
        epochs=args.epochs,
        depth=args.depth,
        restart=args.restart,
        device=args.device,
        seed=args.seed,
    )
    options.check()
    evaluate_questions = None
    if args.questions:
        evaluate_questions = _question_runner(app, args)
    if args.all_content:
        print(
            "warning: --all-content trains on every document whatever its ACL; the model then ranks every "
            "caller's sources with what it learned from documents some of them may not read",
            file=sys.stderr,
        )
    result = adapt(
        app,
        args.store,
        options,
        on_progress=PhaseLines(args.store, sys.stderr, args.progress_every, args.quiet),
        evaluate_questions=evaluate_questions,
    )
    if args.json:
        print(json.dumps(result.to_dict(), ensure_ascii=False))
        return 0
    r = result
    print(r.message)
    print(
        f"learned from {r.documents} documents ({r.chunks} chunks, {r.scope}): {r.training_queries} pseudo-queries; "
        f"{r.precision} model of {r.model_bytes / 1e6:.1f} MB, blend {r.blend:.2f}"
    )
    for name, figures in (("current", r.current), ("new", r.new)):
        print(
            f"  {name:<8} held-out hit@1 {figures['hit@1']:.3f}  hit@5 {figures['hit@5']:.3f}  "
            f"MRR {figures['mrr']:.3f}  ({figures['queries']} queries)"
        )
    for name, figures in r.questions.items():
        print(
            f"  {name:<8} questions hit@1 {figures['hit_at_1']:.3f}  hit@5 {figures['hit_at_5']:.3f}  "
            f"MRR {figures['mrr']:.3f}"
        )
    seconds = ", ".join(f"{k} {v:.0f} s" for k, v in r.seconds.items())
    print(f"time: {seconds}")
    return 0


def _question_runner(app: Any, args: argparse.Namespace) -> Any:
    from service.domain.queries import Caller
    from service.quality.evaluation import evaluate
    from service.quality.questions import load_questions

    user_principal(args.as_user)
    questions = load_questions(args.questions)

    def run(current: Any, new: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        summaries = []
        for reranker in (current, new):
            variant = dataclasses.replace(
                app, _engine=None, _embedders=app._embedders, _reranker=_Fixed(reranker), _reranker_ready=True
            )
            report = evaluate(variant.one_shot_engine, app.repository, Caller(args.as_user), args.store, questions)
            summaries.append(dataclasses.asdict(report.summary))
        return summaries[0], summaries[1]

    return run


class _Fixed:
    """A reranker that is the given one for every store (the question runs compare two for one store)."""

    def __init__(self, reranker: Any) -> None:
        self._reranker = reranker
        self.name = reranker.name
        self.notice = None

    def for_store(self, store_id: str) -> Any:
        return self._reranker

    def for_model(self, embedding_model: str) -> Any:
        return self._reranker.for_model(embedding_model)

    def rerank(self, *a: Any) -> Any:
        return self._reranker.rerank(*a)

    def close(self) -> None:
        return None
