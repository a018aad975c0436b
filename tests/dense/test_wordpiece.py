"""copage.dense.wordpiece: the pure-Python BERT tokenizer.

Against Hugging Face's ``tokenizers`` on the model's own tokenizer.json (when present),
on strings chosen to hit each rule; and on a toy vocabulary everywhere.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from copage.dense import WordPiece

TRICKY = [
    "",
    "   ",
    "Hello, World!",
    "Café naïve résumé façade Ångström",
    "ÀÉÎÕÜ àéîõü ñ Ñ ç",
    "İstanbul ΣΊΣΥΦΟΣ straße Æsir Øresund ǅemal",
    "東京タワーに行きました。北京欢迎你！",
    "한국어 텍스트도 있어요",
    "𠀋𡈽 CJK extension B and 𫠝 and 丽 compatibility",
    "emoji 😀🎉👍🏽 and flags 🇫🇷 and ZWJ 👩‍👩‍👧 and 🫠",
    "I'm can't won't y'all 'quoted' “curly” ‘single’",
    "3.14159 1,000,000 $42.50 12:30pm 2023-05-07 50% #1 @user",
    "https://example.com/path?q=a&b=c#frag and mail me at a.b@c.org",
    "pneumonoultramicroscopicsilicovolcanoconiosis",
    "a" * 100,
    "b" * 101,
    "x" * 300 + " tail",
    "supercalifragilisticexpialidocious antidisestablishmentarianism",
    "tab\there\nnewline\r\nwindows\x0bvt\x0cff",
    "null\x00byte bell\x07 esc\x1b del\x7f replacement\ufffd",
    "zero\u200bwidth soft\u00adhyphen bom\ufeff joiner\u200d",
    "nbsp\u00a0ideographic\u3000space em\u2003space line\u2028sep",
    "combining e\u0301 vs é and a\u0308",
    "fullwidth ＡＢＣ１２３ and ﬁ ligature and ℌ",
    "dashes – — ‐ and ellipsis … and bullets • ·",
    "math ∑∫√≠≤ ≥ ± × ÷ ∞ °C",
    "brackets [x] {y} (z) <w> «guillemets»",
    "Special [CLS] and [SEP] inside text [MASK] [UNK] [PAD] [cls] [ SEP ]",
    "[CLS][SEP]",
    "Arabic: مرحبا بالعالم، كيف حالك؟",
    "Hindi: नमस्ते दुनिया। Thai: สวัสดีครับ",
    "Hebrew: שָׁלוֹם Russian: Привет, мир! Ёлка",
    "Greek: Καλημέρα κόσμε; ΑΘΗΝΑ",
    "unassigned \u0378 private \ue000 and new 🪿 \u2e52",
    "in words: x\u2e52y x\u1734y x\U0002b830y x\U0002b920y x\u0890y x\u166dy x\U000111c9y x\u08cay",
    "CamelCaseWord snake_case_word kebab-case-word",
    "...!!!???",
    "I'll be there at 10 a.m. on Jan. 5th, O.K.?",
    "Caroline: I went to the LGBTQ+ support group yesterday & it was so powerful!!",
    "repeated " * 200,
    "😀" * 120,
]


def test_tricky_strings_match_the_reference(vocab_dir: Path, reference_tokenizer: Any) -> None:
    wp = WordPiece.from_file(vocab_dir / "vocab.txt")
    refs = reference_tokenizer.encode_batch(TRICKY)
    diffs = [(t[:60], wp.encode(t), r.ids) for t, r in zip(TRICKY, refs) if wp.encode(t) != r.ids]
    assert diffs == []
    assert len(TRICKY) >= 40


def _boundary_code_points() -> list[int]:
    """Every code point whose Python category decides something (punctuation, marks,
    controls, separators), the CJK ranges' ends, and the first 0x3000 code points."""
    import unicodedata

    from copage.dense import wordpiece

    cps = set(range(1, 0x3000))
    for lo, hi in wordpiece._CJK:
        cps.update((lo - 1, lo, hi, hi + 1))
    for c in range(0x3000, 0x110000):
        if 0xD800 <= c <= 0xDFFF:
            continue
        cat = unicodedata.category(chr(c))
        if cat[0] in "PMZ" or cat in ("Cc", "Cf", "So"):
            cps.add(c)
    cps.update(wordpiece._NOT_PUNCTUATION | wordpiece._NOT_MN | wordpiece._NOT_CONTROL
               | wordpiece._EXTRA_PUNCTUATION | wordpiece._EXTRA_MN)
    return sorted(cps)


def test_each_character_class_matches_the_reference(vocab_dir: Path,
                                                     reference_tokenizer: Any) -> None:
    """One character between two letters shows how it is read: dropped (control, mark),
    a word break (space), a word of its own (punctuation, CJK) or part of the word."""
    wp = WordPiece.from_file(vocab_dir / "vocab.txt")
    cps = _boundary_code_points()
    texts = [f"a{chr(c)}b" for c in cps]
    refs = reference_tokenizer.encode_batch(texts)
    diffs = [hex(c) for c, t, r in zip(cps, texts, refs) if wp.encode(t) != r.ids]
    assert diffs == []
    assert len(cps) > 10_000


def test_truncation_matches_the_reference(vocab_dir: Path, reference_tokenizer: Any) -> None:
    wp = WordPiece.from_file(vocab_dir / "vocab.txt")
    text = "word " * 400
    assert len(wp.encode(text)) == 256 == len(reference_tokenizer.encode(text).ids)
    assert wp.encode(text, max_len=10) == [101] + [2773] * 8 + [102]


@pytest.fixture
def toy(tmp_path: Path) -> WordPiece:
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "un", "##aff", "##able", "aff",
              "able", ",", "!", "'", "s", "cafe", "##s", "x", "##x", "东"]
    p = tmp_path / "vocab.txt"
    p.write_text("\n".join(tokens) + "\n", encoding="utf-8")
    return WordPiece.from_file(p)


def test_greedy_longest_match_first(toy: WordPiece) -> None:
    assert toy.encode("unaffable") == [2, 5, 6, 7, 3]
    assert toy.encode("UNAFFABLE!") == [2, 5, 6, 7, 11, 3]
    assert toy.encode("unaffablez") == [2, 1, 3]  # one piece missing: the whole word is [UNK]


def test_accents_punctuation_cjk_and_specials(toy: WordPiece) -> None:
    assert toy.encode("Cafés, able's") == [2, 14, 15, 10, 9, 12, 13, 3]
    assert toy.encode("x东x") == [2, 16, 18, 16, 3]
    assert toy.encode("able[SEP]able") == [2, 9, 3, 9, 3]
    assert toy.encode("") == [2, 3]


def test_word_length_limit_and_truncation(toy: WordPiece) -> None:
    assert toy.encode("x" * 100) == [2, 16] + [17] * 99 + [3]
    assert toy.encode("x" * 101) == [2, 1, 3]
    assert toy.encode("able " * 10, max_len=4) == [2, 9, 9, 3]
    with pytest.raises(ValueError, match="max_len"):
        toy.encode("able", max_len=1)


def test_a_vocabulary_without_the_bert_tokens_is_refused(tmp_path: Path) -> None:
    p = tmp_path / "vocab.txt"
    p.write_text("a\nb\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"vocab\.txt.*\[CLS\]"):
        WordPiece.from_file(p)
