"""``docqa settings calibrate STORE``: the calibration report as a table (or JSON), applied with --apply."""

from __future__ import annotations

import argparse
import json
from typing import Any

from acl.errors import InvalidArgument
from service.domain.calibration import REPORT_PERCENTILES
from service.domain.calibration_report import CalibrationReport


def _pct(share: float) -> str:
    return f"{share * 100:.0f}%"


def format_report(report: CalibrationReport) -> str:
    """The report as a person reads it: samples, the proposed scale, predicted rates per level, warnings."""
    r = report
    lines = [
        f"Calibration of store {r.store_id} ({r.embedding_model}): {r.documents_sampled} of {r.documents} "
        f"documents sampled, {r.chunks} chunks",
        f"probes: {r.probes.titles} titles, {r.probes.headings} headings, {r.probes.sentences} sentences "
        f"({r.answerable.count} answerable), {r.off_topic.count} off-topic questions, "
        f"{r.near_domain_probes} near-domain "
        f"({_pct(r.near_domain_refused_by_names)} refused by the names they ask about)",
        "",
        "best score per probe  "
        + "".join(f"{name:>7}" for name in ("min", *(f"p{p}" for p in REPORT_PERCENTILES), "max")),
    ]
    for name, d in (("answerable", r.answerable), ("off-topic", r.off_topic)):
        values = (d.minimum, *(v for _, v in d.percentiles), d.maximum)
        lines.append(f"  {name:<19}" + "".join(f"{v:>7.3f}" for v in values))
    s = r.separation
    lines += [
        "",
        f"separation: cut {s.cut:.3f} ({s.method}; balanced accuracy {s.balanced_accuracy:.2f}, AUC {s.auc:.2f})",
        f"scale at level {r.anchor_level:.2f}   min_threshold  max_threshold  threshold  relevance 1.00",
    ]
    for name, scale, share in (
        ("current", r.current, r.current_saturated),
        ("proposed", r.proposed, r.proposed_saturated),
    ):
        threshold = scale.score_for(r.anchor_level)
        shown = "-" if threshold is None else f"{threshold:.3f}"
        lines.append(
            f"  {name:<18} {scale.minimum:>13.4f}  {scale.maximum:>13.4f}  {shown:>9}  {_pct(share):>5} of answerable"
        )
    lines += [
        "",
        "predicted       current scale                       proposed scale",
        "  level  threshold answered refused near     threshold answered refused near",
    ]
    for p in r.predictions:
        lines.append(
            f"  {p.level:>5.1f}  {p.current_threshold:>9.3f} {_pct(p.current_answer_rate):>8} "
            f"{_pct(p.current_refusal_rate):>7} {_pct(p.current_near_refusal_rate):>4}     "
            f"{p.proposed_threshold:>9.3f} {_pct(p.proposed_answer_rate):>8} {_pct(p.proposed_refusal_rate):>7} "
            f"{_pct(p.proposed_near_refusal_rate):>4}"
        )
    lines += [""] + [f"warning: {w}" for w in r.warnings]
    if r.applied:
        lines.append(f"applied: min_threshold {r.proposed.minimum:.4f}, max_threshold {r.proposed.maximum:.4f}")
    else:
        lines.append(
            f"not applied: re-run with --apply to store min_threshold {r.proposed.minimum:.4f} "
            f"and max_threshold {r.proposed.maximum:.4f}"
        )
    return "\n".join(lines)


def cmd_calibrate(args: argparse.Namespace, app: Any, actor: str) -> int:
    """Run the calibration of ``args.store``; print it; store the proposal only with ``--apply``."""
    from service.domain.authorization import SERVER_OPERATOR
    from service.domain.store import STORE_SETTINGS
    from service.usecases.calibration import calibrate

    # The options of ``settings set`` (one per store setting): refused rather than ignored.
    given = [s.flag for s in STORE_SETTINGS if getattr(args, s.name, None) is not None]
    given += [f"--clear-{s.flag[2:]}" for s in STORE_SETTINGS if s.optional and getattr(args, f"clear_{s.name}", False)]
    if given:
        raise InvalidArgument(f"'settings calibrate' does not take {', '.join(given)} (an option of 'settings set')")
    report = calibrate(
        app, SERVER_OPERATOR, args.store, sample=args.sample, apply=args.apply, user_id=actor, interface="cli"
    )
    print(json.dumps(report.to_dict()) if args.json else format_report(report))
    return 0
