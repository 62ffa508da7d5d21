"""The ask page as people use it: who sees what, the streamed answer and its citations, untrusted text, the
keyboard, conversations, history and feedback, "no relevant document" and its retry."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.conftest import (
    XSS_DOCUMENT,
    XSS_LINK,
    XSS_MARKUP,
    Server,
    ask,
    browser_unavailable,
    shot,
    sign_in,
    wait_for_result,
)

pytestmark = pytest.mark.e2e

_REASON = browser_unavailable()
if _REASON:
    pytest.skip(_REASON, allow_module_level=True)

from playwright.sync_api import expect  # noqa: E402

VACATION = "How many vacation days do I get?"


def _store_ids(page: Any) -> list[str]:
    return [value for value in page.locator("#store option").evaluate_all("options => options.map(o => o.value)")]


def _pick_scope(page: Any, label: str) -> None:
    page.get_by_role("radio", name=label, exact=True).check()
    expect(page.locator("#picker")).to_be_visible()
    expect(page.locator("#doc-status")).not_to_have_text("Loading documents…")


def _listed_documents(page: Any) -> list[str]:
    return page.locator("#doc-list .doc-path").all_text_contents()


def _source_documents(page: Any) -> list[str]:
    return page.locator("#source-list .doc-group-meta .doc-path").all_text_contents()


def test_each_user_sees_only_their_stores_documents_and_sources(open_page: Any, server: Server) -> None:
    alice = open_page().page
    bob = open_page().page
    sign_in(alice, server.token("alice"))
    sign_in(bob, server.token("bob"))

    # Stores: eng is bob's alone (only engineering reads it).
    assert _store_ids(alice) == ["acme"]
    assert sorted(_store_ids(bob)) == ["acme", "eng"]

    # The document picker lists only readable documents.
    for page in (alice, bob):
        page.locator("#store").select_option("acme")
        _pick_scope(page, "Chosen documents")
    alice_docs = _listed_documents(alice)
    bob_docs = _listed_documents(bob)
    assert "finance/q3-results.md" in alice_docs and "handbook/vacation-policy.md" in alice_docs
    assert not [d for d in alice_docs if d.startswith(("engineering/", "hr/"))], alice_docs
    assert "engineering/on-call.md" in bob_docs and "handbook/vacation-policy.md" in bob_docs
    assert not [d for d in bob_docs if d.startswith(("finance/", "hr/"))], bob_docs

    # Its search box narrows the list (id or title, ignoring case), still within what the user may read.
    bob.locator("#doc-search").fill("Q3")
    expect(bob.locator("#doc-status")).to_have_text("No document you can read matches that.")
    alice.locator("#doc-search").fill("Q3")
    expect(alice.locator("#doc-list .doc-path")).to_have_text(["finance/q3-results.md"])

    # The same question: alice's sources include the Q3 results; bob's never show a finance document.
    for page in (alice, bob):
        page.get_by_role("radio", name="The whole store", exact=True).check()
        ask(page, "What was the revenue in the third quarter?")
    assert "finance/q3-results.md" in _source_documents(alice)
    bob_sources = _source_documents(bob)
    assert not [d for d in bob_sources if d.startswith("finance/")], bob_sources
    expect(bob.locator("#result")).not_to_contain_text("finance/")
    shot(alice, "rights-alice")
    shot(bob, "rights-bob")


def test_the_answer_streams_in_before_its_sources_and_a_citation_leads_to_its_source(
    open_page: Any, server: Server
) -> None:
    page = open_page().page
    streams: list[Any] = []
    page.on(
        "response",
        lambda r: streams.append(r) if "text/event-stream" in (r.headers.get("content-type") or "") else None,
    )
    sign_in(page, server.token("bob"))
    # Record, at every change of the result card, how much answer text and how many source cards it shows.
    page.evaluate(
        """() => {
        window.__snapshots = [];
        const answer = document.getElementById('answer');
        const sources = document.getElementById('source-list');
        window.__sse = '';
        const realFetch = window.fetch;
        window.fetch = async (...args) => {  // a copy of every event stream's text, read as it arrives
          const response = await realFetch(...args);
          if (!(response.headers.get('content-type') || '').includes('text/event-stream')) return response;
          const [forPage, copy] = response.body.tee();
          (async () => {
            const reader = copy.getReader();
            const decoder = new TextDecoder();
            for (;;) {
              const {done, value} = await reader.read();
              if (done) break;
              window.__sse += decoder.decode(value, {stream: true});
            }
            window.__sseDone = true;
          })();
          const {status, statusText, headers} = response;
          return new Response(forPage, {status, statusText, headers});
        };
        new MutationObserver(() => window.__snapshots.push(
            [answer.textContent.length, sources.querySelectorAll('.source').length]))
          .observe(document.getElementById('result'), {subtree: true, childList: true, characterData: true});
        }"""
    )
    ask(page, VACATION, store="acme")

    snapshots = page.evaluate("window.__snapshots")
    assert any(text > 0 and cards == 0 for text, cards in snapshots), snapshots  # text first ...
    assert snapshots[-1][1] > 0  # ... then the sources
    assert int(page.locator("#answer").get_attribute("data-pieces") or 0) >= 1
    assert len(streams) == 1
    # The stream's text as the page read it (the browser may not keep a streamed body for the network API).
    page.wait_for_function("window.__sseDone === true")
    body = page.evaluate("window.__sse")
    events = body.count("event: next")
    assert events >= 2, body  # text piece(s), then the result
    assert "event: complete" in body

    answer = page.locator("#answer")
    expect(answer).to_contain_text("25 days")
    cite = answer.locator("a.cite").first
    n = cite.get_attribute("data-source")
    assert cite.get_attribute("href") == f"#source-{n}"
    page.evaluate("window.scrollTo(0, 0)")
    cite.click()
    card = page.locator(f"#source-{n}")
    expect(card).to_be_focused()
    expect(card).to_be_in_viewport()
    # The card is the chunk the sentence quotes: its highlighted sentence is in the answer.
    marked = card.locator("mark").first.text_content() or ""
    assert " ".join(marked.split())[:40] in " ".join((answer.text_content() or "").split()), marked
    expect(card.locator(".source-relevance meter")).to_have_count(1)
    # Sources are grouped per document, with a link to the original on the store's intranet.
    group = page.locator(".doc-group", has=page.locator(f"#source-{n}"))
    expect(group.locator(".doc-group-title")).to_have_text("Vacation policy")
    open_original = group.locator("a.doc-open")
    assert (open_original.get_attribute("href") or "").startswith("https://intranet.example/docs/handbook/")
    page.evaluate("window.scrollTo(0, 0)")
    shot(page, "ask")


def test_markup_and_javascript_links_in_documents_stay_inert_text(open_page: Any, server: Server) -> None:
    page = open_page().page
    sign_in(page, server.token("bob"))
    ask(page, "What must I do when I lose my badge?", store="acme")

    group = page.locator(".doc-group", has=page.locator(".doc-path", has_text=XSS_DOCUMENT))
    expect(group.locator(".doc-group-title")).to_have_text(f"Badges {XSS_MARKUP} policy")
    # The card's whole chunk (its last text: the passage first, the whole behind "Show the whole passage").
    whole = group.locator(".source").first.locator(".chunk-text").last
    expect(whole).to_contain_text(XSS_MARKUP)
    expect(whole).to_contain_text(XSS_LINK)
    expect(page.get_by_text(XSS_MARKUP).first).to_be_visible()
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert page.locator("script:not([src])").count() == 0
    assert page.locator("#result script, #history script").count() == 0
    assert page.locator('a[href^="javascript:" i]').count() == 0
    assert group.locator(".chunk-text a").count() == 0

    # The picker shows the same title as text too.
    _pick_scope(page, "One document")
    page.locator("#doc-search").fill("badges")
    expect(page.locator("#doc-list .doc-title")).to_have_text([f"Badges {XSS_MARKUP} policy"])
    assert page.evaluate("typeof window.__pwned") == "undefined"
    shot(page, "inert-markup")


def _tab_to(page: Any, selector: str, limit: int = 40) -> None:
    for _ in range(limit):
        page.keyboard.press("Tab")
        if page.evaluate("s => document.activeElement && document.activeElement.matches(s)", selector):
            return
    raise AssertionError(f"Tab never reached {selector}")


def test_the_ask_flow_works_with_the_keyboard_alone(open_page: Any, server: Server) -> None:
    page = open_page().page
    page.goto("/")
    page.locator("body[data-ready]").wait_for(state="attached")
    _tab_to(page, "#token")
    page.keyboard.insert_text(server.token("bob"))
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.id") == "token-submit"
    page.keyboard.press("Enter")
    page.locator("#app").wait_for(state="visible")
    page.locator("#store option").first.wait_for(state="attached")

    _tab_to(page, "#store")
    # Focus is visible (a focus ring), not only present.
    assert page.evaluate("getComputedStyle(document.activeElement).boxShadow") != "none"
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.id") == "question"
    page.keyboard.type(VACATION)
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.id") == "ask-button"
    page.keyboard.press("Shift+Tab")
    assert page.evaluate("document.activeElement.id") == "question"
    page.keyboard.press("Enter")  # Enter in the question asks
    wait_for_result(page)
    expect(page.locator("#question")).to_have_value(VACATION)

    _tab_to(page, "#answer a.cite")
    n = page.evaluate("document.activeElement.dataset.source")
    page.keyboard.press("Enter")
    assert page.evaluate("document.activeElement.id") == f"source-{n}"
    expect(page.locator(f"#source-{n}")).to_be_in_viewport()
    shot(page, "keyboard")


def test_history_feedback_and_conversations(open_page: Any, server: Server) -> None:
    page = open_page().page
    sign_in(page, server.token("frank"))  # a user of their own: an empty history to start with
    expect(page.locator("#history-empty")).to_be_visible()
    ask(page, VACATION, store="acme")
    state = page.locator("#conversation-state")
    first = state.get_attribute("data-conversation")
    assert first
    expect(state).to_contain_text("1 question so far")

    # Thumbs up, then a comment sent with the rating.
    page.get_by_role("button", name="Helpful", exact=True).click()
    expect(page.locator("#rate-up")).to_have_attribute("aria-pressed", "true")
    expect(page.locator("#feedback-state")).to_contain_text("saved")
    page.locator("#comment-box summary").click()
    page.get_by_label("Comment (optional)").fill("Clear and <b>right</b>")
    page.get_by_role("button", name="Send with my rating").click()
    expect(page.locator("#feedback-state")).to_contain_text("rating and comment were saved")
    entry = page.locator("#history-list .history-item").first
    expect(entry).to_contain_text(VACATION)
    expect(entry).to_contain_text("rated helpful")

    # A follow-up continues the conversation and says what was searched.
    ask(page, "and can they be carried over?")
    assert state.get_attribute("data-conversation") == first
    expect(state).to_contain_text("2 questions so far")
    expect(page.locator("#searched")).to_be_visible()
    expect(page.locator("#searched")).to_contain_text("Searched:")
    expect(page.locator("#searched")).to_contain_text("vacation")

    # "New conversation" resets it: the next question starts another one.
    page.get_by_role("button", name="New conversation").click()
    expect(state).to_have_text("New conversation.")
    assert state.get_attribute("data-conversation") == ""
    ask(page, "Who approves expense reports?")
    second = state.get_attribute("data-conversation")
    assert second and second != first
    expect(page.locator("#searched")).to_be_hidden()

    items = page.locator("#history-list .history-item .history-question")
    expect(items).to_have_text(["Who approves expense reports?", "and can they be carried over?", VACATION])

    # An entry reopens from the history, with its rating; then it is deleted.
    page.locator("#history-list .history-open", has_text=VACATION).click()
    expect(page.locator("#asked")).to_have_text(VACATION)
    expect(page.locator("#result-meta")).to_contain_text("From your history")
    expect(page.locator("#rate-up")).to_have_attribute("aria-pressed", "true")
    expect(page.locator("#answer")).to_contain_text("25 days")
    shot(page, "history")
    page.get_by_role("button", name=f"Delete “{VACATION}” from your history").click()
    expect(items).to_have_text(["Who approves expense reports?", "and can they be carried over?"])
    page.get_by_role("button", name="Refresh").click()
    expect(items).to_have_text(["Who approves expense reports?", "and can they be carried over?"])


def test_no_relevant_document_offers_a_retry_without_threshold(open_page: Any, server: Server) -> None:
    page = open_page().page
    sign_in(page, server.token("bob"))
    page.locator("#store").select_option("acme")
    _pick_scope(page, "Chosen documents")  # one document chosen: a retry without threshold is allowed
    page.locator("#doc-search").fill("expenses")
    page.get_by_label("handbook/expenses.md", exact=False).check()
    expect(page.locator("#doc-chosen .chip")).to_have_count(1)
    page.locator("#options summary").click()
    page.get_by_label("Use the store's level", exact=False).uncheck()
    page.locator("#level").fill("1")
    expect(page.locator("#level-value")).to_have_text("1.00")
    ask(page, "Which team won the football world cup?")  # (no year: a name no document mentions is refused outright)

    expect(page.locator("#no-answer")).to_be_visible()
    expect(page.locator("#no-answer")).to_contain_text("No relevant document")
    retry = page.get_by_role("button", name="Retry without threshold")
    expect(retry).to_be_visible()
    shot(page, "no-relevant-document")
    previous = page.locator("#result").get_attribute("data-query-id") or ""
    retry.click()
    wait_for_result(page, previous)
    expect(page.locator("#no-answer")).to_be_hidden()
    expect(page.locator("#result-meta")).to_contain_text("chosen documents · no threshold")
    assert _source_documents(page) == ["handbook/expenses.md"]


def test_filters_narrow_the_sources(open_page: Any, server: Server) -> None:
    page = open_page().page
    sign_in(page, server.token("bob"))
    page.locator("#options summary").click()
    page.get_by_label("Path starts with").fill("handbook/")
    page.get_by_label("Content type").select_option("text/html")
    ask(page, "What does the security policy say about passwords?", store="acme")
    assert _source_documents(page) == ["handbook/security.html"]


def test_api_errors_are_readable_messages(open_page: Any, server: Server) -> None:
    page = open_page().page
    sign_in(page, server.token("bob"))
    notice = page.locator("#notice")
    expect(notice).to_have_attribute("role", "alert")

    # A filter the server refuses (BAD_USER_INPUT inside the SSE stream): its own words, not JSON.
    page.locator("#options summary").click()
    page.get_by_label("Modified from").fill("2024-02-01")
    page.get_by_label("Modified to").fill("2024-01-01")
    page.locator("#question").fill(VACATION)
    page.locator("#ask-button").click()
    expect(notice).to_be_visible()
    expect(notice).to_contain_text("modified date range is empty")
    assert "{" not in (notice.text_content() or "")
    expect(page.locator("#ask-button")).to_be_enabled()

    # A token the server no longer accepts: back to the sign-in form, saying why.
    page.evaluate("sessionStorage.setItem('docqa.token', 'expired.or.forged')")
    page.get_by_label("Modified from").fill("")
    page.get_by_label("Modified to").fill("")
    page.locator("#ask-button").click()
    expect(page.locator("#signin")).to_be_visible()
    expect(notice).to_contain_text("sign in again")
    assert page.evaluate("sessionStorage.getItem('docqa.token')") is None
    shot(page, "errors")


def test_a_card_shows_the_quoted_passage_and_opens_the_whole_chunk_on_demand(open_page: Any, server: Server) -> None:
    # Was: every card showed its whole chunk (an answer page 5,800 px tall on man pages' option lists).
    page = open_page().page
    sign_in(page, server.token("bob"))
    page.locator("#store").select_option("acme")
    expect(page.locator("#question")).to_have_attribute("placeholder", "Ask a question about acme")
    ask(page, VACATION, store="acme")
    n = page.locator("#answer a.cite").first.get_attribute("data-source")
    card = page.locator(f"#source-{n}")
    passage = card.locator(":scope > .chunk-text")
    expect(passage.locator("mark").first).to_contain_text("25 days")
    whole = card.locator("details.whole-chunk")
    expect(whole).to_have_count(1)
    hidden = "Public holidays are not deducted"
    assert hidden not in (passage.text_content() or "")
    expect(whole.locator(".chunk-text")).to_be_hidden()
    whole.locator("summary").click()
    expect(whole.locator(".chunk-text")).to_be_visible()
    expect(whole.locator(".chunk-text")).to_contain_text(hidden)
