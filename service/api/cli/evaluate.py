"""``docqa eval``: a store's answer quality on a question file, per question and in sum."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, TextIO

from acl.errors import InvalidArgument
from acl.model import user_principal


def cmd_eval(args: argparse.Namespace, app: Any) -> int:
    from service.domain.queries import Caller
    from service.domain.threshold import parse_level
    from service.quality.evaluation import evaluate
    from service.quality.questions import load_questions

    user_principal(args.as_user)  # validates the user id before any work
    level = parse_level(args.level)
    if not 1 <= args.depth <= app.settings.query.max_k:
        raise InvalidArgument(f"--depth must be between 1 and {app.settings.query.max_k}, got {args.depth}")
    questions = load_questions(args.questions)  # every mistake named with its line, before the model loads
    out = sys.stdout if args.json != "-" else sys.stderr
    progress = None if args.quiet else (lambda r: _print_result(r, out))
    report = evaluate(
        app.one_shot_engine,
        app.repository,
        Caller(args.as_user),
        args.store,
        questions,
        level=level,
        depth=args.depth,
        on_result=progress,
    )
    if args.json == "-":
        print(json.dumps(report.to_dict(), ensure_ascii=False))
    elif args.json:
        Path(args.json).write_text(json.dumps(report.to_dict(), ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    _print_summary(report, out)
    return 0


def _print_result(result: Any, out: TextIO) -> None:
    if result.unanswerable:
        mark = "ok  " if not result.answered else "MISS"
        detail = "refused" if not result.answered else f"answered (top score {_score(result.top_score)})"
    else:
        mark = "ok  " if result.rank == 1 else ("near" if result.rank is not None and result.rank <= 5 else "MISS")
        found = "not in top" if result.rank is None else f"rank {result.rank}"
        first = result.ranked[0] if result.ranked else "-"
        detail = f"{found}; first {first}" + ("" if result.answered else "; REFUSED")
        if result.term_found is False:
            detail += "; key term missing"
        if result.passage_found is False:
            detail += "; passage not quoted"
    if result.debris:
        detail += "; extraction debris in the answer"
    print(f"{mark} {result.id:<8} {detail}", file=out)


def _score(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _print_summary(report: Any, out: TextIO) -> None:
    s = report.summary
    level = "store default" if report.level is None else str(report.level)
    print(f"\n{report.questions_file} on store {report.store_id} (level {level}):", file=out)
    print(f"  answerable {s.answerable}: hit@1 {s.hit_at_1:.3f}  hit@5 {s.hit_at_5:.3f}  MRR {s.mrr:.3f}", file=out)
    if s.identifier_hit_at_3 is not None:
        print(f"  naming an identifier {s.identifier_questions}: hit@3 {s.identifier_hit_at_3:.3f}", file=out)
    print(
        f"  answered {s.answered:.1%} of answerable, refused {s.refused:.1%} of {s.unanswerable} unanswerable", file=out
    )
    if s.refused_near is not None or s.refused_off is not None:
        near = "n/a" if s.refused_near is None else f"{s.refused_near:.1%}"
        off = "n/a" if s.refused_off is None else f"{s.refused_off:.1%}"
        print(f"  refused {near} of those near the domain, {off} of those off it", file=out)
    if s.terms is not None:
        print(f"  key term quoted in {s.terms:.1%} of answers", file=out)
    if s.passages is not None:
        print(f"  answering passage quoted in {s.passages:.1%} of answers", file=out)
    print(f"  {s.debris} answers with extraction debris (character references, spaced or glued letters)", file=out)
    print(f"  retrieval p50 {s.retrieval_p50_ms:.1f} ms, p95 {s.retrieval_p95_ms:.1f} ms", file=out)
