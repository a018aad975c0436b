"""Bookmarks a model can route on: never only numbers, dates or filler (issue 17).

The chat is what a new user might try: small talk with a number on every line
("Day 31 check-in: I walked 48 steps") and a few planted facts. Before the fix the
default extractor gave bookmarks such as ``[p3:day 15, 13, 12, 14]``.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import pytest
from kw_fixture import make_page

from copage import PagedMemory
from copage.core.keywords import Corpus, get_extractor
from copage.core.keywords.routable import is_number, routable, speaker_words
from copage.core.text import STOPWORDS
from copage.core.types import Page, Turn, page_id, render_turns

SMALL = [
    "I walked {n} steps today, feeling good.", "We had {n} degrees outside this morning.",
    "My phone battery is at {n} percent again.", "Traffic took {n} minutes, ugh.",
    "I drank {n} cups of coffee, too many.", "The game ended {n} to {m}, what a match.",
    "Only {n} emails left in my inbox now.", "Slept about {n} hours, not great.",
    "It is {n}:{m} already, time flies.", "I read {n} pages of my book last night.",
]
REPLIES = ["Nice, {n} is a lot!", "Ha, {n}? Same here.", "Wow, {n} sounds about right.",
           "Only {n}? Not bad.", "{n} and {m}, classic."]
FACTS = [
    ("I have a dentist appointment with Dr Okafor on March 14 at 3pm.",
     "Got it: dentist appointment with Dr Okafor, March 14 at 3pm.", "Okafor"),
    ("We booked a trip to Lisbon for 5 nights in June, flights cost $450.",
     "A Lisbon trip for 5 nights in June, $450 flights. Sounds lovely.", "Lisbon"),
    ("My sister Priya is moving to Toronto next month.",
     "Priya moving to Toronto, exciting!", "Toronto"),
    ("Our dog Biscuit turns 3 on Saturday, we're getting him a cake.",
     "Happy birthday to Biscuit! 3 years old.", "Biscuit"),
    ("I started a pottery class, 8 sessions on Tuesday evenings.",
     "A pottery class, 8 Tuesday sessions, fun.", "pottery"),
]


def number_chat(seed: int, exchanges: int = 60) -> list[tuple[str, str]]:
    """(role, text) of a number-heavy small-talk chat with the ``FACTS`` planted."""
    rng = random.Random(seed)
    at = dict(zip(sorted(rng.sample(range(2, exchanges - 1), len(FACTS))), FACTS, strict=True))
    out: list[tuple[str, str]] = []
    for day in range(1, exchanges + 1):
        if day in at:
            user, assistant, _ = at[day]
        else:
            n, m = rng.randint(2, 60), rng.randint(1, 59)
            user = rng.choice(SMALL).format(n=n, m=m)
            assistant = rng.choice(REPLIES).format(n=n + rng.randint(0, 3), m=m)
        out.append(("user", f"Day {day} check-in: {user}"))
        out.append(("assistant", f"Day {day}, noted. {assistant}"))
    return out


def names_nothing(keyword: str) -> bool:
    """A keyword made only of numbers, dates, times or stop words."""
    words = keyword.lower().replace("$", "").split()
    return all(w in STOPWORDS or not routable(w) for w in words)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_default_bookmarks_name_something_on_number_heavy_chat(seed: int) -> None:
    mem = PagedMemory()  # the library default configuration
    for role, text in number_chat(seed):
        mem.add(role, text)
    mem.close_page()
    bookmarks = mem.bookmarks()
    assert len(bookmarks) == 12
    for page in mem.pages:
        keywords = bookmarks[page.id].keywords
        assert keywords, page.id
        bad = [k for k in keywords if names_nothing(k)]
        assert not bad, (page.id, keywords)
        facts = [fact for *_, fact in FACTS if fact in page.text]
        if facts:  # a page holding planted facts is named by one of them
            shown = " ".join(keywords).lower()
            assert any(fact.lower() in shown for fact in facts), (facts, keywords)


@pytest.mark.parametrize("name", ["askable", "contrast", "discriminative"])
def test_a_number_pair_ranks_no_higher_than_its_noun(name: str) -> None:
    # Small talk with a number on every line makes each pair ("32 coffees") unique to
    # its page, so it used to outrank the page's fact; now it ranks where its noun
    # does, and is still shown whole (the number beside what it counts).
    from copage.core.keywords.discriminative import counted_at_noun_rank

    pages = [make_page(i, [f"I had {20 + i} coffees today.", f"Noted, {20 + i} coffees!",
                           "Thanks."]) for i in range(8)]
    pages[2] = make_page(2, ["I had 32 coffees today.", "Noted, 32 coffees!",
                             "My dentist is Dr Okafor.", "Dr Okafor, noted."])
    corpus = Corpus.from_pages(pages)
    ex = get_extractor(name)
    view = ex.view(pages[2], corpus)  # type: ignore[attr-defined]
    scores = counted_at_noun_rank(ex.rank_terms(pages[2], corpus, view))  # type: ignore[attr-defined]
    assert scores["32 coffees"] <= scores["coffees"] + 1e-6
    assert ex.extract(pages[2], corpus, 1) == ("Dr Okafor",)  # was ("32 coffees",)
    assert "32 coffees" in ex.extract(pages[2], corpus, 4)  # shown whole, number and noun
    assert counted_at_noun_rank({"32 coffees": 3.0, "coffees": 1.0, "7": 2.0}) == {
        "32 coffees": 1.0 + 1e-6, "coffees": 1.0, "7": 2.0}


@pytest.mark.parametrize("name", ["askable", "contrast"])
def test_a_name_counts_as_a_thing_in_a_chat_with_a_model(name: str) -> None:
    # "a trip to Lisbon": no determiner before the name, so it had no noun cue and
    # ranked below the model's one-off words ("absurdity", "context"); in a chat with
    # a model (roles, no speaker names) a name now earns ``name_cue`` like a noun.
    from copage.core.keywords.contrast import NAME_CUE, NOUN_CUE

    assert NAME_CUE == NOUN_CUE

    def page(index: int, speakers: tuple[str | None, str | None]) -> Page:
        lines = ["We booked a trip to Lisbon for five nights.",
                 ("What a context! The absurdity of travel, the context of it all, "
                  "and the absurdity of packing.")]
        turns = tuple(Turn(id=f"t{index}-{i}", role=role, speaker=who, text=text)
                      for i, (role, who, text) in enumerate(
                          zip(("user", "assistant"), speakers, lines, strict=True)))
        text = render_turns(turns)
        return Page(page_id(index), index, turns, text, len(text) // 4)

    other = make_page(9, ["I walked to the shop.", "Nice walk."])
    for speakers, cued in (((None, None), True), (("User", "Assistant"), True),
                           (("Jon", "Gina"), False)):
        p = page(0, speakers)
        corpus = Corpus.from_pages([p, other])
        on, off = get_extractor(name), get_extractor(name, name_cue=0)
        s_on = on.rank_terms(p, corpus, on.view(p, corpus))  # type: ignore[attr-defined]
        s_off = off.rank_terms(p, corpus, off.view(p, corpus))  # type: ignore[attr-defined]
        assert s_on["lisbon"] - s_off["lisbon"] == pytest.approx(NAME_CUE if cued else 0.0)
        assert s_on["trip"] == s_off["trip"]  # "a trip": a noun already
    with pytest.raises(ValueError, match="name_cue"):
        get_extractor("contrast", name_cue=-1)


@pytest.mark.parametrize("name", ["askable", "contrast"])
def test_what_a_model_says_on_most_pages_loses_points(name: str) -> None:
    # SmolLM2 answering a whole chat repeats itself ("PhD dream" on five of eight
    # pages, seen through the proxy); in a chat with a model a term on more than half
    # of the pages loses ``SPREAD`` points per share beyond half. Named speakers: none.
    from copage.core.keywords.contrast import SPREAD, SPREAD_FROM

    def page(index: int, word: str, who: tuple[str | None, str | None]) -> Page:
        lines = [f"The {word} fair was fun.", f"Your PhD dream and the {word} fair, lovely."]
        turns = tuple(Turn(id=f"t{index}-{i}", role=role, speaker=sp, text=text)
                      for i, (role, sp, text) in enumerate(
                          zip(("user", "assistant"), who, lines, strict=True)))
        text = render_turns(turns)
        return Page(page_id(index), index, turns, text, len(text) // 4)

    words = ["Lisbon", "Toronto", "Biscuit", "garden", "harbour"]
    for who, penalised in (((None, None), True), (("User", "Assistant"), True),
                           (("Jon", "Gina"), False)):
        pages = [page(i, w, who) for i, w in enumerate(words)]
        corpus = Corpus.from_pages(pages)
        on, off = get_extractor(name), get_extractor(name, spread=0)
        s_on = on.rank_terms(pages[0], corpus, on.view(pages[0], corpus))  # type: ignore[attr-defined]
        s_off = off.rank_terms(pages[0], corpus, off.view(pages[0], corpus))  # type: ignore[attr-defined]
        loss = SPREAD * (1.0 - SPREAD_FROM) if penalised else 0.0
        assert s_off["phd"] - s_on["phd"] == pytest.approx(loss), who
        assert (s_on["phd"] < s_off["phd"]) is penalised  # the default penalises
        assert s_on["lisbon"] == s_off["lisbon"]  # on one page of five
    few = [page(i, w, (None, None)) for i, w in enumerate(words[:3])]  # under 4 pages
    ex = get_extractor(name)
    few_corpus = Corpus.from_pages(few)
    assert ex.rank_terms(few[0], few_corpus, ex.view(few[0], few_corpus))[  # type: ignore[attr-defined]
        "phd"] == get_extractor(name, spread=0).rank_terms(  # type: ignore[attr-defined]
        few[0], few_corpus, ex.view(few[0], few_corpus))["phd"]  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match="spread"):
        get_extractor("contrast", spread=-1)


def test_a_title_opens_the_name_and_is_no_keyword_alone() -> None:
    # "Dr" was a chat acronym (tl;dr): "Dr Okafor" became two keywords, "Dr" and "Okafor",
    # and under the 12-token cap the bookmark kept "Dr" and dropped the name.
    from copage.core.keywords.names import find_names

    assert [n.text for n in find_names("A dentist appointment with Dr Okafor on Monday.")] == [
        "Dr Okafor"]
    assert [n.text for n in find_names("Sorry, Dr. Okafor. Mrs Patel called. tl;dr fine.")] == [
        "Dr. Okafor", "Mrs Patel"]
    assert not routable("dr") and not routable("Mrs.") and routable("dr okafor")
    page = make_page(0, ["I have a dentist appointment with Dr Okafor on March 14.",
                         "Got it: Dr. Okafor, March 14. Dr. Okafor is the dentist."])
    other = make_page(1, ["I walked to the shop.", "Nice walk."])
    for name in ("askable", "contrast"):
        keywords = get_extractor(name).extract(page, Corpus.from_pages([page, other]), 4)
        assert "Dr Okafor" in keywords and "Dr" not in keywords, keywords
    # written only with the title's period, the name keeps its capitals ("dr. okafor" was
    # shown: the lower-cased display missed the name's key, "dr okafor")
    dotted = make_page(0, ["My dentist appointment with Dr. Okafor is on March 14.",
                           "Noted: Dr. Okafor on March 14."])
    for name in ("askable", "contrast", "discriminative"):
        keywords = get_extractor(name).extract(dotted, Corpus.from_pages([dotted, other]), 4)
        assert "Dr. Okafor" in keywords, keywords


@pytest.mark.parametrize("name", ["askable", "contrast", "discriminative"])
def test_numbers_stay_beside_what_they_count(name: str) -> None:
    page = make_page(0, [
        "Day 31 check-in: flights were 450 dollars, 450 dollars each way.",
        "Day 31, noted: 450 dollars, 31 and 32 and 33.",
    ])
    other = make_page(1, ["Day 12 check-in: I walked to the shop.", "Day 12, nice walk."])
    corpus = Corpus.from_pages([page, other])
    keywords = get_extractor(name).extract(page, corpus, 4)
    assert keywords and not [k for k in keywords if names_nothing(k)], keywords
    assert all(not is_number(k) for k in keywords)


def test_routable_words() -> None:
    for word in ("31", "18,000", "9:30", "3pm", "2nd", "$450", "1990s"):
        assert is_number(word), word
    for term in ("31", "day 15", "march 14", "55:46", "tomorrow morning", "monday"):
        assert not routable(term), term
    for term in ("450 flights", "Lisbon", "dentist appointment", "may", "sun", "time flies"):
        assert routable(term), term


def _two_speaker_page(index: int, lines: list[tuple[str, str]]) -> Page:
    turns = tuple(Turn(id=f"t{index}-{i}", role="user", speaker=who, text=text)
                  for i, (who, text) in enumerate(lines))
    text = render_turns(turns)
    return Page(page_id(index), index, turns, text, len(text) // 4)


def test_speaker_names_are_not_keywords() -> None:
    # Both names occur in nearly every LoCoMo question: a bookmark carrying one wins
    # questions about other pages. Here "Caroline" is the page's most repeated word.
    lines = [("Melanie", "Caroline, Caroline! Did you see the pottery fair, Caroline?"),
             ("Caroline", "Yes Melanie, the pottery fair was lovely, Melanie."),
             ("Melanie", "Caroline, I bought a vase at the pottery fair, Caroline.")]
    page = _two_speaker_page(0, lines)
    other = _two_speaker_page(1, [("Melanie", "Hi Caroline, how was the hike?"),
                                  ("Caroline", "Great hike, Melanie.")])
    corpus = Corpus.from_pages([page, other])
    assert speaker_words(page) == {"caroline", "caroline's", "melanie", "melanie's"}
    for name in ("contrast", "askable"):
        keywords = get_extractor(name).extract(page, corpus, 4)
        assert keywords and not {"caroline", "melanie"} & {k.lower() for k in keywords}
    kept = get_extractor("contrast", skip_speakers=False).extract(page, corpus, 4)
    assert "Caroline" in kept


@pytest.mark.parametrize("name", ["askable", "contrast", "discriminative"])
def test_refresh_reuses_the_page_analysis(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # A stale bookmark's refresh used to tokenize its page again (four times); a closed
    # page never changes, so its analysis is kept and only the corpus-dependent scores
    # are computed again. Same keywords as a fresh extractor.
    from copage.core.keywords import discriminative, features, names, terms

    pages = [make_page(i, [f"Day {i}: the pottery class {i} and the {w} fair.",
                           f"Nice, {w} fair and pottery."])
             for i, w in enumerate(["Lisbon", "Toronto", "Biscuit", "garden"])]
    ex = get_extractor(name)
    corpus = Corpus.from_pages(pages[:2])
    first = ex.extract(pages[0], corpus, 4)
    corpus.add(pages[2].id, pages[2].text)
    corpus.add(pages[3].id, pages[3].text)
    calls = 0

    def counting(real: Callable[[str], list[Any]]) -> Callable[[str], list[Any]]:
        def wrapped(text: str) -> list[Any]:
            nonlocal calls
            calls += 1
            return real(text)
        return wrapped

    # every module that tokenizes page text, and the tokenizer it uses
    patched = [(terms, "tokenize"), (names, "tokenize"), (discriminative, "tokenize"),
               (features, "lower_words")]
    for module, attr in patched:
        monkeypatch.setattr(module, attr, counting(getattr(module, attr)))
    again = ex.extract(pages[0], corpus, 4)
    assert calls == 0
    monkeypatch.undo()
    assert again == get_extractor(name).extract(pages[0], corpus, 4)
    assert first and again
    # A different page text under the same id is analysed afresh, not served stale.
    other = make_page(0, ["Totally different words about sailing boats.", "Sailing boats!"])
    assert "sailing boats" in " ".join(ex.extract(other, Corpus(), 4)).lower()


def test_page_analysis_cache_is_bounded() -> None:
    # About 60 KB per LoCoMo page: an extractor keeps the most recently used closed
    # pages only, and nothing for text outside its corpus (a group's pages as one page).
    from copage.core.keywords.discriminative import VIEW_CACHE_PAGES

    pages = [make_page(i, [f"Turn {i} about topic{i} and theme{i % 7}.", f"Yes, topic{i}."])
             for i in range(VIEW_CACHE_PAGES + 40)]
    corpus = Corpus.from_pages(pages)
    ex = get_extractor("contrast")
    for page in pages:
        ex.extract(page, corpus, 4)
    ex.extract(pages[0], corpus, 4)  # used again: now the most recent
    views = ex._views  # type: ignore[attr-defined]
    assert len(views) == VIEW_CACHE_PAGES and list(views)[-1] == pages[0].id
    outside = make_page(999, ["A page the corpus does not hold.", "Not kept."])
    ex.extract(outside, corpus, 4)
    assert outside.id not in views and len(views) == VIEW_CACHE_PAGES
