"""The admin page: who gets it at all, the live relevancy preview, calibration's plot, settings with the server's
validation messages, why a user can or cannot read a document, and the audit view."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.browser.conftest import Server, browser_unavailable, shot, sign_in

pytestmark = pytest.mark.e2e

_REASON = browser_unavailable()
if _REASON:
    pytest.skip(_REASON, allow_module_level=True)

from playwright.sync_api import expect  # noqa: E402

ADMIN_MARKER = 'id="admin-console"'
SAMPLE = "How many vacation days do I get?"
_SETTINGS = "level minThreshold maxThreshold maxChunks"


def _graphql(server: Server, query: str, **variables: Any) -> Any:
    request = urllib.request.Request(
        f"{server.url}/graphql",
        data=json.dumps({"query": query, "variables": variables}).encode(),
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {server.token('root', admin=True)}"},
    )
    with urllib.request.urlopen(request, timeout=30) as reply:
        body = json.loads(reply.read())
    assert not body.get("errors"), body
    return body["data"]


@pytest.fixture
def acme_settings_restored(server: Server) -> Iterator[dict[str, Any]]:
    """The acme store's level and scale, put back after a test that changes them from the page."""
    before = _graphql(server, f'{{ store(storeId: "acme") {{ {_SETTINGS} }} }}')["store"]
    yield before
    _graphql(
        server,
        f'mutation($s: StoreSettingsInput!) {{ updateStoreSettings(storeId: "acme", settings: $s) {{ {_SETTINGS} }} }}',
        s=before,
    )


def _open_admin(page: Any, server: Server) -> None:
    sign_in(page, server.token("root", admin=True))
    link = page.get_by_role("link", name="Admin console")
    expect(link).to_be_visible()
    link.click()
    page.wait_for_url("**/admin")
    expect(page.locator("#console")).to_be_visible()
    expect(page.locator("#store-stats")).to_contain_text("Documents")


def test_admin_page_is_served_to_admins_only(open_page: Any, server: Server) -> None:
    # Not signed in: 401, and none of the admin page.
    anonymous = open_page().page
    reply = anonymous.goto("/admin")
    assert reply is not None and reply.status == 401
    body = reply.text()
    assert ADMIN_MARKER not in body and "admin.js" not in body
    expect(anonymous.get_by_role("heading", name="Sign in first")).to_be_visible()

    # Signed in, not an admin: no link to it, and 403 with none of the admin page.
    bob = open_page().page
    sign_in(bob, server.token("bob"))
    expect(bob.locator("#admin-link")).to_be_hidden()
    reply = bob.goto("/admin")
    assert reply is not None and reply.status == 403
    body = reply.text()
    assert ADMIN_MARKER not in body and "admin.js" not in body and "relevancyPreview" not in body
    expect(bob.get_by_role("heading", name="This page is for administrators")).to_be_visible()
    shot(bob, "admin-forbidden")

    # An admin gets it (the marker the checks above look for is really on the admin page).
    root = open_page().page
    sign_in(root, server.token("root", admin=True))
    reply = root.goto("/admin")
    assert reply is not None and reply.status == 200
    assert ADMIN_MARKER in reply.text()


def test_relevancy_preview_slider_is_live_and_calibration_plots(
    open_page: Any, server: Server, acme_settings_restored: dict[str, Any]
) -> None:
    watched = open_page()
    page = watched.page
    _open_admin(page, server)
    page.locator("#admin-store").select_option("acme")
    expect(page.locator("#store-stats")).not_to_have_attribute("aria-busy", "true")  # a late load hides previews
    page.get_by_label("Sample question").fill(SAMPLE)
    page.get_by_role("button", name="Preview").click()
    expect(page.locator("#preview-result")).to_be_visible()
    rows = page.locator("#preview-rows tr")
    total = rows.count()
    assert total > 1

    calls: list[str] = []
    page.on("request", lambda r: calls.append(r.url) if r.url.endswith("/graphql") else None)
    slider = page.locator("#preview-level")
    count = page.locator("#preview-count")
    slider.fill("0")
    expect(count).to_have_text(f"{total} of {total} pass")
    expect(page.locator("#preview-threshold")).to_contain_text("no threshold")
    slider.fill("1")
    expect(page.locator("#preview-threshold")).to_contain_text(f"{acme_settings_restored['maxThreshold']:.3f}")
    at_one = int(count.get_attribute("data-passing") or -1)
    assert at_one < total
    expect(count).to_have_text(f"{at_one} of {total} pass")
    assert page.locator("#preview-rows tr.fail").count() == total - at_one
    # The keyboard moves it too.
    slider.focus()
    page.keyboard.press("Home")
    expect(count).to_have_text(f"{total} of {total} pass")
    for _ in range(40):
        page.keyboard.press("ArrowRight")
    expect(page.locator("#preview-level-value")).to_have_text("0.40")
    assert calls == [], "moving the slider must not call the server"

    # "Use this level" stores it.
    page.get_by_role("button", name="Use this level").click()
    expect(page.locator("#use-level-state")).to_contain_text("now 0.40")
    expect(page.locator("#store-stats")).to_contain_text("0.40")
    expect(page.locator("#preview-current")).to_contain_text("0.40")

    # Calibrate: predicted rates per level, plotted as inline SVG; then applied.
    page.get_by_role("button", name="Calibrate").click()
    plot = page.locator("#calibration-plot svg#calibration-svg")
    expect(plot).to_be_visible(timeout=60_000)
    expect(plot.locator("g.series path")).to_have_count(4)
    points = page.locator("#calibration-rows tr").count()
    assert points >= 5
    expect(plot.locator("g.series circle")).to_have_count(4 * points)
    assert plot.evaluate("svg => svg.namespaceURI") == "http://www.w3.org/2000/svg"
    expect(page.locator("#calibration-summary")).to_contain_text("Proposed scale")
    page.evaluate("window.scrollTo(0, 0)")
    shot(page, "admin")
    page.get_by_role("button", name="Apply the proposed scale").click()
    expect(page.locator("#calibration-state")).to_contain_text("Applied")
    assert not watched.csp_violations()


def test_settings_show_the_servers_validation_messages(
    open_page: Any, server: Server, acme_settings_restored: dict[str, Any]
) -> None:
    page = open_page().page
    _open_admin(page, server)
    page.locator("#admin-store").select_option("acme")  # reloads the store: its settings fill the form
    expect(page.locator("#store-stats")).not_to_have_attribute("aria-busy", "true")
    page.get_by_label("Min threshold").fill("0.7")
    page.get_by_label("Max threshold").fill("0.2")
    page.get_by_role("button", name="Save settings").click()
    errors = page.locator("#settings-errors")
    expect(errors).to_be_visible()
    expect(errors).to_contain_text("did not accept")
    text = errors.text_content() or ""
    assert "{" not in text and "extensions" not in text
    expect(page.locator("#settings-state")).to_have_text("Not saved.")
    shot(page, "admin-validation")

    page.get_by_role("button", name="Discard changes").click()
    expect(errors).to_be_hidden()
    page.get_by_label("Max chunks").fill("6")
    page.get_by_role("button", name="Save settings").click()
    expect(page.locator("#settings-state")).to_have_text("Saved.")
    expect(page.locator("#store-stats")).to_contain_text("Max chunks6")


def test_a_setting_the_page_does_not_lay_out_gets_a_field_from_its_declaration(
    open_page: Any, server: Server, acme_settings_restored: dict[str, Any]
) -> None:
    page = open_page().page
    _open_admin(page, server)
    page.locator("#admin-store").select_option("acme")
    expect(page.locator("#store-stats")).not_to_have_attribute("aria-busy", "true")
    field = page.get_by_label("max_chunks_per_document")  # built by admin.js from storeSettingFields
    expect(field).to_have_value("0")
    expect(field).to_have_attribute("max", "50")
    try:
        field.fill("3")
        page.get_by_role("button", name="Save settings").click()
        expect(page.locator("#settings-state")).to_have_text("Saved.")
        store = _graphql(server, '{ store(storeId: "acme") { maxChunksPerDocument } }')["store"]
        assert store["maxChunksPerDocument"] == 3
    finally:
        _graphql(
            server,
            'mutation { updateStoreSettings(storeId: "acme", settings: {maxChunksPerDocument: 0}) { id } }',
        )


def test_audit_view_filters_by_user_and_dates_without_question_text(open_page: Any, server: Server) -> None:
    page = open_page().page
    _open_admin(page, server)
    page.get_by_label("Sample question").fill(SAMPLE)  # audited as the admin's console-preview
    page.get_by_role("button", name="Preview").click()
    expect(page.locator("#preview-result")).to_be_visible()

    today = datetime.now(UTC).date()
    page.get_by_label("User id").fill("root")
    page.get_by_label("Since").fill(today.isoformat())
    page.get_by_label("Until").fill(today.isoformat())
    page.get_by_role("button", name="Show").click()
    table = page.locator("#audit-table")
    expect(table).to_be_visible()
    expect(table.locator("tbody tr").first).to_contain_text("console-preview")
    users = table.locator("tbody tr td:nth-child(2)").all_text_contents()
    assert users and set(users) == {"root"}
    assert SAMPLE not in (table.text_content() or "")
    shot(page, "audit")

    page.get_by_label("Since").fill((today - timedelta(days=9)).isoformat())
    page.get_by_label("Until").fill((today - timedelta(days=8)).isoformat())
    page.get_by_role("button", name="Show").click()
    expect(page.locator("#audit-state")).to_have_text("No audited query matches.")
    expect(table).to_be_hidden()


def test_the_audit_table_fits_its_card(open_page: Any, server: Server) -> None:
    page = open_page().page
    _open_admin(page, server)
    page.get_by_label("Sample question").fill(SAMPLE)
    page.get_by_role("button", name="Preview").click()
    expect(page.locator("#preview-result")).to_be_visible()
    page.get_by_role("button", name="Show").click()
    table = page.locator("#audit-table")
    expect(table).to_be_visible()
    wrap = page.locator("#audit-table").locator("xpath=..")
    fits = wrap.evaluate("w => w.scrollWidth <= w.clientWidth + 1")
    assert fits, wrap.evaluate("w => [w.scrollWidth, w.clientWidth]")


def test_explain_panel_shows_the_decision_acl_and_chains(open_page: Any, server: Server) -> None:
    page = open_page().page
    _open_admin(page, server)
    page.locator("#admin-store").select_option("eng")
    page.get_by_label("User", exact=True).fill("bob")
    page.get_by_label("Document id").fill("runbooks/deploy.md")
    page.get_by_role("button", name="Explain").click()
    decision = page.locator("#explain-decision")
    expect(decision).to_have_text("user:bob CAN read runbooks/deploy.md")
    expect(page.locator("#explain-reason")).to_contain_text("allows group:engineering")
    expect(page.locator("#explain-acl")).to_contain_text("manifest")
    row = page.locator('#explain-rows tr[data-principal="group:engineering"]')
    expect(row).to_contain_text("user:bob → group:engineering (manifest of store eng)")
    expect(row).to_contain_text("allow group:engineering")
    shot(page, "explain-access")

    page.get_by_label("User", exact=True).fill("alice")
    page.get_by_role("button", name="Explain").click()
    expect(decision).to_have_text("user:alice CANNOT read runbooks/deploy.md")
    expect(page.locator("#explain-acl")).to_contain_text("none allows the user")

    page.get_by_label("Document id").fill("no/such.md")
    page.get_by_role("button", name="Explain").click()
    expect(page.locator("#notice")).to_be_visible()
    expect(page.locator("#explain-result")).to_be_hidden()


def test_explain_panel_marks_the_admins_chunks_for_a_question(open_page: Any, server: Server) -> None:
    page = open_page().page
    _open_admin(page, server)
    page.locator("#admin-store").select_option("acme")
    page.get_by_label("User", exact=True).fill("bob")
    page.get_by_label("Document id").fill("handbook/vacation-policy.md")
    page.get_by_label("Or a question").fill(SAMPLE)
    page.get_by_role("button", name="Explain").click()
    expect(page.locator("#notice")).to_contain_text("either a document id or a question")

    page.get_by_label("Document id").fill("")
    page.get_by_role("button", name="Explain").click()
    # root (an admin in no group) searches: only the handbook, which group:everyone lets bob read.
    rows = page.locator("#explain-chunk-rows tr")
    expect(rows.first).to_be_visible()
    count = rows.count()
    expect(page.locator("#explain-decision")).to_have_text(f"user:bob would see {count} of your top {count} chunks")
    expect(page.locator('#explain-chunk-rows tr[data-visible="true"]')).to_have_count(count)
    expect(rows.first).to_contain_text("allow group:everyone")
    expect(rows.first).to_contain_text("handbook/")
    expect(page.locator('#explain-rows tr[data-principal="group:engineering"]')).to_contain_text(
        "manifest of store acme"
    )
    shot(page, "explain-access-question")
