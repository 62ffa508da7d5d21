"""What of a finished answer its caller is shown, decided once for every transport.

Step timings are measured over work done before access is decided: the lexical search reads the postings of
every row that holds a word, readable or not (on OpenSearch it scores them all), so how long it took tells
whether a word exists in documents the caller cannot read (one question carries many guesses). ``total``
includes that step.
So a caller who is not an admin gets no timings at all; an admin (who may read the audit trail, where the
timings are kept as measured) gets them. ``AuditedQueries`` and ``AuditedAnalysis`` — the one path by which
the gRPC and GraphQL servers, their streams and the remote CLI get an answer — apply this after the audit row
is written.
"""

from __future__ import annotations

import dataclasses
from typing import TypeVar

from service.domain.analysis import Comparison, Summary
from service.domain.authorization import HasRole
from service.domain.queries import Answer

R = TypeVar("R", Answer, Summary, Comparison)


def shown_to(caller: HasRole, result: R) -> R:
    """``result`` as ``caller`` may see it: without timings unless the caller is an admin."""
    if caller.is_admin or not result.timings_ms:
        return result
    return dataclasses.replace(result, timings_ms={})
