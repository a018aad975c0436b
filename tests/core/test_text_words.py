"""The words BM25 reads (``copage.core.text``): possessives, apostrophes, any script.

Search, the speculative fill, routing and the bm25 baseline all read text through
``content_words``; a question about "Caroline's son" must meet a page about her
son, and a page written in French or German must have words at all.
"""

from __future__ import annotations

from copage import PagedMemory
from copage.core.keywords.terms import tokenize
from copage.core.text import content_words, words
from copage.eval.routing import route


def _chat(*lines: str) -> PagedMemory:
    """Two turns a page, one page resident: the lines alternate user and assistant."""
    mem = PagedMemory(boundary="fixed_2", resident_pages=1)
    for i, text in enumerate(lines):
        mem.add("user" if i % 2 == 0 else "assistant", text)
    return mem


def test_a_possessive_reads_as_its_word() -> None:
    assert content_words("Caroline's son's new bike") == ["caroline", "son", "new", "bike"]
    assert content_words("the kids\u2019 school, my son\u2019s school") == ["kids", "school",
                                                                           "son", "school"]


def test_contractions_stay_whole_and_stay_stopwords() -> None:
    assert words("it's don't let's I'm") == ["it's", "don't", "let's", "i'm"]
    assert content_words("it's fine, let's go, don\u2019t worry") == ["fine", "go", "worry"]


def test_letters_of_any_script_are_words() -> None:
    assert content_words("Ein Café in Zürich, Kraków, Málaga") == ["café", "zürich", "kraków",
                                                                   "málaga"]
    assert [t.text for t in tokenize("Grüße aus Köln")] == ["Grüße", "aus", "Köln"]


def test_search_finds_a_page_by_a_possessive_and_by_an_accented_word() -> None:
    mem = _chat("My son's bike was stolen outside the gym.",
                "Sorry to hear that. Did you report it?",
                "We had dinner at a café in Zürich last spring.", "Sounds lovely.",
                "Tomorrow I start the new job at the bank.", "Good luck!")
    assert {"p1", "p2"} <= set(mem.evicted)
    assert [h.page for h in mem.search("What happened to my son?")][:1] == ["p1"]
    assert [h.page for h in mem.search("Which café in Zürich?")][:1] == ["p2"]
    assert {"café", "Zürich"} <= set(mem.bookmarks()["p2"].keywords)


def test_chinese_reads_as_character_pairs_and_is_found() -> None:
    assert content_words("北京欢迎你") == ["北京", "京欢", "欢迎", "迎你"]
    mem = _chat("我下周要去北京看牙医，预约在周三下午三点。", "好的，祝你顺利。",
                "Tomorrow I start the new job at the bank.", "Good luck!",
                "And the weather is fine.", "Nice.")
    assert "p1" in mem.evicted
    assert mem.bookmarks()["p1"].keywords  # was "[p1]": no word was a word
    assert [h.page for h in mem.search("牙医预约是什么时候？")][:1] == ["p1"]


def test_chinese_and_japanese_keywords_are_words_not_clauses() -> None:
    """A run of Han or kana between punctuation is a clause: it was one keyword, so a
    bookmark held one clause (``[p1: 约的是奥卡福医生]``, the appointment's day lost)."""
    assert [t.text for t in tokenize("我的牙医在成都")] == ["牙医", "成都"]  # 我, 的, 在: function
    assert [t.text for t in tokenize("我用iPhone拍照，下周2号")] == ["iPhone", "拍照", "下周",
                                                                  "2"]
    # a piece longer than a word (4 characters) is read as the reader reads it: pairs
    assert [t.text for t in tokenize("约的是奥卡福医生")] == ["奥卡", "卡福", "福医", "医生"]
    # Japanese: particles (hiragana) part its words; a katakana loanword stays whole
    assert [t.text for t in tokenize("新しい車は赤いトヨタカローラです")] == ["トヨタカローラ"]
    assert [t.text for t in tokenize("会社の忘年会は京都の旅館で")] == ["会社", "忘年会", "京都",
                                                                  "旅館"]
    mem = _chat("我的牙医预约在下周二上午九点，奥卡福医生。", "好的，牙医预约我记住了。",
                "我们六月去里斯本旅行，和姐姐一起。", "里斯本很美，旅行愉快！",
                "今天天气很好，我走了五公里。", "真不错。")
    books = mem.bookmarks()
    for pid in ("p1", "p2"):
        assert all(len(k) <= 4 for k in books[pid].keywords), books[pid].keywords
    assert "牙医预约" in books["p1"].keywords and "六月" in books["p2"].keywords
    texts = [books["p1"].text, books["p2"].text]
    assert route("我的牙医预约是什么时候？", texts, [0]).credit == 1.0
    assert route("我们六月去哪里？", texts, [1]).credit == 1.0


def test_function_words_of_other_languages_are_no_keywords() -> None:
    assert content_words("Não sei o que fazer com o meu carro") == ["sei", "fazer", "carro"]
    assert content_words("Ich bin müde und der Zug ist spät") == ["bin", "müde", "zug", "spät"]
    # English words that are also theirs stay words
    assert content_words("my son at war, a hat") == ["son", "war", "hat"]


def test_a_bookmark_spends_no_room_on_a_keyword_the_reader_already_sees() -> None:
    from copage.core.bookmarks import get_format, make_bookmark
    from copage.core.tokens import get_tokenizer
    from copage.core.types import Page

    page = Page("p1", 0, (), "", 0)
    book = make_bookmark(page, ("son", "son's", "accident", "canyon"), get_format("compact"),
                         get_tokenizer("o200k_base"), 12)
    assert book.keywords == ("son", "accident", "canyon")


def test_a_german_question_fills_the_page_it_asks_about() -> None:
    """"Wann" (when) was read as a word found on no page, which halved the match score
    of "Wann ist mein Zahnarzttermin?" below the fill's threshold."""
    from copage.session.speculate import Speculator

    mem = _chat("Mein Zahnarzttermin bei Dr. Okafor ist am 14. März um 15 Uhr.", "Notiert.",
                "Im Mai fliege ich nach Lissabon.", "Schön!",
                "Heute waren es 12 Grad.", "Kalt.")
    spec = Speculator()
    question = "Wann ist mein Zahnarzttermin?"
    best, score = spec.ranked(mem, question)[0]
    assert best == "p1" and score >= spec.threshold_for(question)
    assert spec.plan(mem, question).paged_in[:1] == ("p1",)
