"""The CLI's queries, audited as the servers' are: one row per query (interface ``cli``), written in one
transaction with the answer's history entry, and a failure row for a refused or failed query."""

from __future__ import annotations

from typing import Any

from acl.model import user_principal
from service.api.errors import outcome_of
from service.observability.metrics import Metrics
from service.security.tokens import Identity
from service.usecases.audit import AuditedQueries
from service.usecases.audited_analysis import AuditedAnalysis

#: The audit trail's interface name for queries the CLI answers in-process (``--as USER``).
CLI_INTERFACE = "cli"


def cli_identity(user_id: str) -> Identity:
    """The user ``--as`` names, with that user's rights only (the CLI is the operator's tool on the server)."""
    user_principal(user_id)  # validates the user id before any work
    return Identity(user_id)


def cli_queries(app: Any) -> AuditedQueries:
    """The audited query path over ``app``'s engine and settings database. The operator, who may read the
    audit trail where the timings are kept, is shown them (``operator``)."""
    return AuditedQueries(lambda: app.engine, lambda: app.repository, Metrics(), operator=True, outcome_of=outcome_of)


def cli_analysis(app: Any) -> AuditedAnalysis:
    """Summaries and comparisons by the same audited path."""
    return AuditedAnalysis(cli_queries(app))
