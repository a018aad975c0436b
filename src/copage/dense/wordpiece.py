"""BERT's uncased WordPiece tokenizer in pure Python (no ``tokenizers`` package).

Reproduces the ``tokenizer.json`` of all-MiniLM-L6-v2 as Hugging Face's ``tokenizers``
runs it (``BertNormalizer`` with lowercase and accent stripping, ``BertPreTokenizer``,
``WordPiece`` with ``##`` continuations and at most 100 characters a word, the
``[CLS] ... [SEP]`` template), which is BERT's ``BasicTokenizer`` + ``WordpieceTokenizer``
(Devlin et al. 2019, google-research/bert ``tokenization.py``) with these differences,
followed here because they decide ids:

* the special tokens (``[CLS]``, ``[SEP]``, ``[UNK]``, ``[PAD]``, ``[MASK]``) written in
  the text are matched first, verbatim, and keep their ids;
* a control character is one of category Cc, Cf, Co or Cs (not Cn: a character newer
  than the tables is kept, then becomes ``[UNK]``);
* whitespace is Unicode's White_Space property, as Rust's ``char::is_whitespace``;
* the CJK ranges split into single characters are the Rust crate's;
* accents are stripped (NFD, drop Mn) before lowercasing, one character at a time
  (no final-sigma rule);
* the reference's category tables are Unicode 8.0's, older than Python's: the code
  points whose category differs are listed below (found by comparing every code point
  with the reference on Python 3.11, Unicode 14.0; characters assigned after 14.0, seen
  by a newer Python, may still be read differently: rare scripts and symbols).
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

__all__ = ["WordPiece"]

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
MAX_WORD_CHARS = 100
"""A longer word (in characters) is one ``[UNK]``, as the reference's ``max_input_chars_per_word``."""

_CJK = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
        (0x2B740, 0x2B81F), (0x2B920, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))
_WHITESPACE = frozenset("\t\n\x0b\x0c\r \x85\xa0\u1680\u2028\u2029\u202f\u205f\u3000"
                        + "".join(chr(c) for c in range(0x2000, 0x200B)))
_CONTROL_CATEGORIES = frozenset({"Cc", "Cf", "Co", "Cs"})


def _codepoints(*items: int | tuple[int, int]) -> frozenset[int]:
    out: set[int] = set()
    for it in items:
        out.update(range(it[0], it[1] + 1) if isinstance(it, tuple) else (it,))
    return frozenset(out)


# The reference's category tables are Unicode 8.0's, Python's are newer. These lists are
# the whole difference (503 code points) as found on Python 3.11 (Unicode 14.0) by
# comparing every code point, between two letters, with the reference: mostly
# characters added after 8.0, which the reference reads as ordinary letters, and three
# whose category changed since (U+166D, U+111C9, U+1734).
_NOT_PUNCTUATION = _codepoints(
    0x61D, 0x9FD, 0xA76, 0xC77, 0xC84, (0x1B7D, 0x1B7E), (0x2E43, 0x2E4F),
    (0x2E52, 0x2E5D), 0x10EAD, (0x10F55, 0x10F59), (0x10F86, 0x10F89), (0x1144B, 0x1144F),
    (0x1145A, 0x1145B), 0x1145D, (0x11660, 0x1166C), 0x116B9, 0x1183B, (0x11944, 0x11946),
    0x119E2, (0x11A3F, 0x11A46), (0x11A9A, 0x11A9C), (0x11A9E, 0x11AA2),
    (0x11C41, 0x11C45), (0x11C70, 0x11C71), (0x11EF7, 0x11EF8), 0x11FFF,
    (0x12FF1, 0x12FF2), (0x16E97, 0x16E9A), 0x16FE2, (0x1E95E, 0x1E95F),
)
_NOT_MN = _codepoints(
    0x7FD, (0x898, 0x89F), (0x8CA, 0x8E1), 0x9FE, (0xAFA, 0xAFF), 0xB55, 0xC04, 0xC3C,
    0xD00, (0xD3B, 0xD3C), 0xD81, 0xEBA, 0x180F, (0x1885, 0x1886), (0x1ABF, 0x1ACE),
    (0x1DF6, 0x1DFB), 0xA82C, 0xA8C5, 0xA8FF, 0xA9BD, (0x10D24, 0x10D27),
    (0x10EAB, 0x10EAC), (0x10F46, 0x10F50), (0x10F82, 0x10F85), 0x11070,
    (0x11073, 0x11074), 0x110C2, 0x111CF, 0x1123E, 0x1133B, (0x11438, 0x1143F),
    (0x11442, 0x11444), 0x11446, 0x1145E, 0x111C9, (0x1182F, 0x11837), (0x11839, 0x1183A),
    (0x1193B, 0x1193C), 0x1193E, 0x11943, (0x119D4, 0x119D7), (0x119DA, 0x119DB), 0x119E0,
    (0x11A01, 0x11A0A), (0x11A33, 0x11A38), (0x11A3B, 0x11A3E), 0x11A47,
    (0x11A51, 0x11A56), (0x11A59, 0x11A5B), (0x11A8A, 0x11A96), (0x11A98, 0x11A99),
    (0x11C30, 0x11C36), (0x11C38, 0x11C3D), 0x11C3F, (0x11C92, 0x11CA7),
    (0x11CAA, 0x11CB0), (0x11CB2, 0x11CB3), (0x11CB5, 0x11CB6), (0x11D31, 0x11D36),
    0x11D3A, (0x11D3C, 0x11D3D), (0x11D3F, 0x11D45), 0x11D47, (0x11D90, 0x11D91), 0x11D95,
    0x11D97, (0x11EF3, 0x11EF4), 0x16F4F, 0x16FE4, (0x1CF00, 0x1CF2D), (0x1CF30, 0x1CF46),
    (0x1E000, 0x1E006), (0x1E008, 0x1E018), (0x1E01B, 0x1E021), (0x1E023, 0x1E024),
    (0x1E026, 0x1E02A), (0x1E130, 0x1E136), 0x1E2AE, (0x1E2EC, 0x1E2EF),
    (0x1E944, 0x1E94A),
)
_NOT_CONTROL = _codepoints(
    (0x890, 0x891), 0x8E2, 0x110CD, (0x13430, 0x13438),
)
_EXTRA_PUNCTUATION = frozenset({0x166D, 0x111C9})
_EXTRA_MN = frozenset({0x1734})


def _is_cjk(cp: int) -> bool:
    return any(lo <= cp <= hi for lo, hi in _CJK)


def _is_punctuation(c: str) -> bool:
    cp = ord(c)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    if cp in _EXTRA_PUNCTUATION:
        return True
    return unicodedata.category(c).startswith("P") and cp not in _NOT_PUNCTUATION


def _normalize(text: str) -> str:
    """``BertNormalizer``: clean, space around CJK characters, strip accents, lowercase."""
    out: list[str] = []
    for c in text:
        if c in "\t\n\r":
            out.append(" ")
            continue
        cp = ord(c)
        if cp == 0 or cp == 0xFFFD or (unicodedata.category(c) in _CONTROL_CATEGORIES
                                        and cp not in _NOT_CONTROL):
            continue
        if c in _WHITESPACE:
            out.append(" ")
        elif cp >= 0x3400 and _is_cjk(cp):
            out.append(f" {c} ")
        else:
            out.append(c)
    cleaned = unicodedata.normalize("NFD", "".join(out))
    return "".join(c.lower() for c in cleaned if not _is_mn(c))


def _is_mn(c: str) -> bool:
    cp = ord(c)
    if cp in _EXTRA_MN:
        return True
    return unicodedata.category(c) == "Mn" and cp not in _NOT_MN


def _words(text: str) -> list[str]:
    """``BertPreTokenizer``: split at whitespace, each punctuation character a word."""
    words: list[str] = []
    for chunk in text.split(" "):
        start = 0
        for i, c in enumerate(chunk):
            if _is_punctuation(c):
                if start < i:
                    words.append(chunk[start:i])
                words.append(c)
                start = i + 1
        if start < len(chunk):
            words.append(chunk[start:])
    return words


class WordPiece:
    """Text to the ids of a BERT vocabulary (one token a line, the id is the line number)."""

    def __init__(self, vocab: dict[str, int], *, source: str = "vocabulary") -> None:
        missing = [t for t in ("[CLS]", "[SEP]", "[UNK]") if t not in vocab]
        if missing:
            raise ValueError(f"{source}: no {', '.join(missing)} token: not a BERT vocabulary")
        self.vocab = vocab
        self.cls, self.sep, self.unk = vocab["[CLS]"], vocab["[SEP]"], vocab["[UNK]"]
        specials = [t for t in SPECIAL_TOKENS if t in vocab]
        self._special = re.compile("|".join(re.escape(t) for t in specials))
        self._cache: dict[str, tuple[int, ...]] = {}

    @classmethod
    def from_file(cls, vocab_path: str | Path) -> WordPiece:
        """The vocabulary of a ``vocab.txt`` file."""
        lines = Path(vocab_path).read_text(encoding="utf-8").split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        vocab: dict[str, int] = {}
        for i, token in enumerate(lines):
            vocab.setdefault(token.rstrip("\r"), i)
        return cls(vocab, source=str(vocab_path))

    def _word_ids(self, word: str) -> tuple[int, ...]:
        """The pieces of one word (cached); ``[UNK]`` if it is too long or any part has none."""
        hit = self._cache.get(word)
        if hit is None:
            hit = (self.unk,) if len(word) > MAX_WORD_CHARS else self._greedy(word)
            if len(self._cache) >= 200_000:
                self._cache.clear()
            self._cache[word] = hit
        return hit

    def _greedy(self, word: str) -> tuple[int, ...]:
        """Longest match first, left to right, continuations prefixed with ``##``."""
        ids: list[int] = []
        start, n = 0, len(word)
        while start < n:
            for end in range(n, start, -1):
                found = self.vocab.get(word[start:end] if start == 0 else "##" + word[start:end])
                if found is not None:
                    ids.append(found)
                    start = end
                    break
            else:
                return (self.unk,)
        return tuple(ids)

    def tokens(self, text: str) -> list[int]:
        """The ids of ``text`` without ``[CLS]``/``[SEP]`` and without truncation."""
        ids: list[int] = []
        pos = 0
        for m in self._special.finditer(text):
            for w in _words(_normalize(text[pos:m.start()])):
                ids.extend(self._word_ids(w))
            ids.append(self.vocab[m.group()])
            pos = m.end()
        for w in _words(_normalize(text[pos:])):
            ids.extend(self._word_ids(w))
        return ids

    def encode(self, text: str, max_len: int = 256) -> list[int]:
        """``[CLS]``, the ids of ``text``, ``[SEP]``: at most ``max_len`` ids in all."""
        if max_len < 2:
            raise ValueError(f"max_len must be at least 2 (room for [CLS] and [SEP]), got {max_len}")
        return [self.cls, *self.tokens(text)[:max_len - 2], self.sep]
