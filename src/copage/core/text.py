"""Word-level text helpers shared by retrieval, keywords and segmentation.

Two readings of a text: :func:`content_words` (the words as written, for keywords
and bookmarks a reader sees) and :func:`index_terms` (the same words reduced to
their Snowball stems, for every search: BM25 over pages and passages, recall by
query, the speculative fill, routing and the benchmark's retrieval baselines), so
that "peanut" finds "peanuts" and "allergies" finds "allergy".
"""

from __future__ import annotations

import re
from functools import lru_cache

import snowballstemmer

# A standard English stopword list (close to NLTK's), used for retrieval and
# segmentation. The paper's heuristic keyword extractor has its own 60-word list.
ENGLISH_STOPWORDS: frozenset[str] = frozenset(
    ["a", "about", "above", "after", "again", "against", "all", "am", "an", "and", "any", "are", "aren't", "as", "at", "be", "because", "been", "before", "being", "below", "between", "both", "but", "by", "can", "can't", "cannot", "could", "couldn't", "did", "didn't", "do", "does", "doesn't", "doing", "don't", "down", "during", "each", "few", "for", "from", "further", "had", "hadn't", "has", "hasn't", "have", "haven't", "having", "he", "he'd", "he'll", "he's", "her", "here", "here's", "hers", "herself", "him", "himself", "his", "how", "how's", "i", "i'd", "i'll", "i'm", "i've", "if", "in", "into", "is", "isn't", "it", "it's", "its", "itself", "let's", "me", "more", "most", "mustn't", "my", "myself", "no", "nor", "not", "of", "off", "on", "once", "only", "or", "other", "ought", "our", "ours", "ourselves", "out", "over", "own", "same", "shan't", "she", "she'd", "she'll", "she's", "should", "shouldn't", "so", "some", "such", "than", "that", "that's", "the", "their", "theirs", "them", "themselves", "then", "there", "there's", "these", "they", "they'd", "they'll", "they're", "they've", "this", "those", "through", "to", "too", "under", "until", "up", "very", "was", "wasn't", "we", "we'd", "we'll", "we're", "we've", "were", "weren't", "what", "what's", "when", "when's", "where", "where's", "which", "while", "who", "who's", "whom", "why", "why's", "will", "with", "won't", "would", "wouldn't", "you", "you'd", "you'll", "you're", "you've", "your", "yours", "yourself", "yourselves", "also", "just", "really", "yeah", "yes", "oh", "ok", "okay", "so", "get", "got", "like", "going", "gonna", "thanks", "thank", "hey", "hi", "hello", "well"]
)

# The commonest function words (question words included) of Spanish, Portuguese,
# French, German and Italian, so that a chat in (or straying into) one of them gets
# keywords and search terms, not "que" and "não". Words that are also English words or
# names are left out ("son", "war", "die", "hat", "la", "os", "mit", "dei", "al", "dove").
OTHER_LANGUAGE_STOPWORDS: frozenset[str] = frozenset(["el", "los", "las", "una", "unos", "unas", "del", "que", "por", "para", "pero", "como", "más", "muy", "este", "esta", "estos", "estas", "ese", "esa", "eso", "esto", "está", "están", "es", "fue", "ser", "yo", "él", "ellos", "ellas", "nosotros", "usted", "qué", "cuando", "cuándo", "donde", "dónde", "porque", "sí", "también", "sobre", "entre", "hasta", "desde", "todo", "todos", "lo", "le", "les", "se", "su", "sus", "nos", "tu", "tengo", "tiene", "hace", "estoy", "estás", "soy", "eres", "aunque", "así", "algo", "nada", "ya", "mí", "ti", "um", "uma", "dos", "das", "em", "nas", "não", "com", "mais", "mas", "você", "ele", "ela", "isso", "isto", "essa", "esse", "meu", "minha", "seu", "sua", "muito", "muita", "também", "já", "são", "tem", "tenho", "há", "ao", "aos", "à", "pelo", "pela", "estou", "é", "les", "une", "du", "et", "est", "qui", "dans", "au", "aux", "cette", "ces", "il", "elle", "ils", "elles", "je", "vous", "nous", "mes", "ses", "avec", "mais", "ou", "où", "très", "être", "avoir", "été", "était", "c'est", "j'ai", "suis", "sont", "avait", "tout", "tous", "aussi", "comme", "moi", "toi", "lui", "leur", "leurs", "notre", "votre", "cela", "ça", "der", "das", "und", "ist", "nicht", "ein", "eine", "einen", "einem", "einer", "des", "zu", "sich", "auf", "für", "im", "ich", "du", "er", "sie", "wir", "ihr", "aber", "auch", "noch", "wie", "wenn", "dass", "haben", "sind", "wird", "oder", "nach", "bei", "nur", "schon", "mein", "meine", "dein", "sein", "kein", "keine", "mich", "dich", "uns", "ihm", "ihn", "il", "gli", "della", "delle", "degli", "che", "di", "non", "per", "ma", "più", "anche", "sono", "ho", "hai", "ha", "questo", "questa", "quello", "quella", "io", "noi", "voi", "mio", "mia", "tuo", "tua", "suo", "nel", "nella", "alla", "wann", "wo", "wohin", "woher", "warum", "wer", "wen", "wem", "welche", "welcher", "welches", "wieso", "quand", "pourquoi", "quel", "quelle", "quels", "quelles", "cuál", "quién", "quiénes", "cómo", "quando", "onde", "qual", "quem", "perché", "cosa", "chi", "quale"]) - ENGLISH_STOPWORDS
STOPWORDS: frozenset[str] = ENGLISH_STOPWORDS | OTHER_LANGUAGE_STOPWORDS
"""What retrieval, keywords and segmentation skip: English's stopwords and the others'."""

_ASCII_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
"""Kana and Han, as a regex character range: scripts written without spaces."""
_WORD = re.compile(rf"[{CJK}]+|[^\W_{CJK}]+(?:'[^\W\d_{CJK}]+)?")  # as ASCII's on ASCII
_CJK_RUN = re.compile(rf"[{CJK}]")


def words(text: str) -> list[str]:
    """Lower-cased word tokens: runs of letters or digits of any script (``"café"``,
    ``"zürich"``), an inner apostrophe kept (``"don't"``, a typographic one read as
    plain). A possessive ``'s`` is dropped (``"caroline's"`` -> ``"caroline"``, as
    Lucene's English possessive filter does) unless the whole word is a stopword
    (``"it's"``, ``"let's"``). Chinese and Japanese, written without spaces, are read
    as overlapping character pairs (``"北京欢迎"`` -> ``"北京"``, ``"京欢"``, ``"欢迎"``),
    as Lucene's CJK bigram filter does."""
    low = text.lower()
    if low.isascii():  # the usual case: half the time of the Unicode pattern
        out = _ASCII_WORD.findall(low)
    else:
        low = low.replace("\u2019", "'")
        out = _WORD.findall(low)
        if _CJK_RUN.search(low):
            out = [pair for w in out for pair in _pairs(w)]
    if "'s" in low:
        stop = STOPWORDS
        out = [w[:-2] if "'" in w and w.endswith("'s") and w not in stop else w for w in out]
    return out


def _pairs(word: str) -> list[str]:
    """A Chinese or Japanese run as its overlapping character pairs; any other word whole."""
    if len(word) > 2 and _CJK_RUN.match(word):
        return [word[i : i + 2] for i in range(len(word) - 1)]
    return [word]


def content_words(text: str) -> list[str]:
    """Lower-cased word tokens without stopwords and one-character tokens."""
    return [w for w in words(text) if w not in STOPWORDS and len(w) > 1]


_STEMMER = snowballstemmer.stemmer("english")  # PyStemmer's C code when installed


@lru_cache(maxsize=1 << 16)
def stem(word: str) -> str:
    """The English Snowball stem of a lower-cased word (Porter 2001, "Snowball: A
    language for stemming algorithms"; the ``snowballstemmer`` package): ``peanuts``
    and ``peanut`` -> ``peanut``, ``allergies`` -> ``allergi``. A word with no Latin
    letter (digits, Chinese or Japanese pairs, ...) is returned as it is."""
    if not word.isascii() and not any("a" <= c <= "z" for c in word):
        return word
    return str(_STEMMER.stemWord(word))


def index_terms(text: str) -> list[str]:
    """The search reading of ``text``: :func:`content_words`, each reduced to its stem
    (:func:`stem`). Every BM25 index and query of copage reads text this way."""
    return [stem(w) for w in content_words(text)]


def query_terms(text: str) -> tuple[str, ...]:
    """A search query: the distinct :func:`index_terms` of ``text``, sorted."""
    return tuple(sorted(set(index_terms(text))))
