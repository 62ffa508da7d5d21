"""``calibrate``: one entry for the CLI, gRPC and GraphQL — run the calibration, apply it when asked.

Only an admin may calibrate (``require_admin`` here, for every transport; the CLI
is the server's own administrator); applying goes through the one writer of
settings, which records the change in the audit trail.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from service.domain.authorization import AdminOperation, HasRole, require_admin
from service.domain.calibration_report import CalibrationReport
from service.query.calibration import Calibrator

if TYPE_CHECKING:
    from indexer.embedder import Embedder
    from indexer.index import Index
    from service.access.admin import Admin
    from service.persistence.ports import SettingsRepository


class CalibrationApp(Protocol):
    """What calibrating needs of the wiring (``service.bootstrap.App``)."""

    @property
    def repository(self) -> SettingsRepository: ...

    @property
    def index(self) -> Index: ...

    def embedder(self, model: str | None = None) -> Embedder: ...

    def admin_without_index(self) -> Admin: ...


def calibrate(
    app: CalibrationApp,
    caller: HasRole,
    store_id: str,
    *,
    sample: int | None,
    apply: bool,
    user_id: str,
    interface: str,
) -> CalibrationReport:
    """The store's calibration report; with ``apply`` its proposed scale is stored (``applied`` is then True).
    PermissionDenied unless ``caller`` is an admin."""
    require_admin(caller, AdminOperation.CALIBRATE_STORE)
    calibrator = Calibrator(stores=app.repository, catalog=app.repository, index=app.index, embedder_for=app.embedder)
    report = calibrator.run(store_id, sample)
    if not apply:
        return report
    app.admin_without_index().apply_calibration(report, user_id, interface)
    return report.as_applied()
