"""The core is pure: it imports nothing from the adapters or the edges of the package."""

from __future__ import annotations

import ast
from pathlib import Path

import copage.core

CORE = Path(copage.core.__file__).parent
OUTSIDE = ("copage.stores", "copage.llm", "copage.server", "copage.session", "copage.eval",
           "copage.cli", "copage.memory", "copage.eval.llmkeywords")
IO_MODULES = {"os", "socket", "sqlite3", "time", "subprocess", "urllib", "http", "psycopg",
              "pathlib", "glob", "io", "shutil", "tempfile"}
# importlib itself is allowed (registries import their parts lazily); loading files is not
IO_SUBMODULES = ("importlib.machinery", "importlib.util", "importlib.resources")
FILE_CALLS = {"open", "glob", "rglob", "iterdir", "read_text", "read_bytes", "write_text",
              "write_bytes", "spec_from_file_location", "exec_module"}


def _imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
    return names


def test_core_imports_no_adapter_and_no_io() -> None:
    bad = []
    for path in sorted(CORE.rglob("*.py")):
        for name in _imports(path):
            if (name.startswith(OUTSIDE) or name.split(".")[0] in IO_MODULES
                    or name.startswith(IO_SUBMODULES)):
                bad.append(f"{path.relative_to(CORE)}: {name}")
    assert bad == []


def test_core_reads_no_files() -> None:
    """No ``open()``, ``Path.glob`` or extension loading in the core (copage.encodings does
    the file work for core/tokens.py and passes the loaded encoding in)."""
    bad = []
    for path in sorted(CORE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                f = node.func
                name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(
                    f, ast.Attribute) else ""
                if name in FILE_CALLS:
                    bad.append(f"{path.relative_to(CORE)}:{node.lineno}: {name}()")
    assert bad == []


def test_token_counts_come_from_the_loader_passed_in() -> None:
    from copage.core import tokens
    from copage.encodings import load_bpe

    calls: list[str] = []

    class Counter:
        def count(self, text: str) -> int:
            return 7

    def loader(name: str) -> Counter:
        calls.append(name)
        return Counter()

    try:
        tokens.set_encoding_loader(loader)
        assert tokens.get_tokenizer("o200k_base").count("anything") == 7
        assert calls == ["o200k_base"]
        tokens.set_encoding_loader(None)  # no loader: the documented estimate
        assert tokens.get_tokenizer("o200k_base").name == "estimate-v1"
    finally:
        tokens.set_encoding_loader(load_bpe)
    assert tokens.get_tokenizer("o200k_base").name == "o200k_base"


def test_change_types_are_the_cores_and_stores_reexport_them() -> None:
    from copage.core import changes
    from copage.stores import ChangeSet, Event, PageRecord

    assert (ChangeSet, Event, PageRecord) == (changes.ChangeSet, changes.Event, changes.PageRecord)


def test_pager_names_no_keyword_extractor() -> None:
    """Whether an extractor reads the corpus is its own attribute, not a list in the pager:
    no extractor name appears as a string in core/pager.py."""
    from copage.core.keywords import EXTRACTORS

    names = set(EXTRACTORS.names())
    tree = ast.parse((CORE / "pager.py").read_text(encoding="utf-8"))
    named = sorted({node.value for node in ast.walk(tree)
                    if isinstance(node, ast.Constant) and isinstance(node.value, str)
                    and node.value in names})
    assert named == []


def test_extractors_say_whether_they_use_the_corpus() -> None:
    from copage.core.config import PagerConfig
    from copage.core.keywords import EXTRACTORS, get_extractor, refreshes_with_corpus, uses_corpus
    from copage.core.pager import Pager

    reads = {n: uses_corpus(get_extractor(n)) for n in EXTRACTORS.names()}
    assert reads == {"random": False, "heuristic": False, "generic": False,
                     "tfidf": True, "discriminative": True, "contrast": True,
                     "askable": True}
    assert {n: refreshes_with_corpus(get_extractor(n)) for n in EXTRACTORS.names()} == reads

    class Plain:  # an extractor that says nothing: corpus kept, never refreshed
        name = "plain"

    assert uses_corpus(Plain()) and not refreshes_with_corpus(Plain())  # type: ignore[arg-type]
    for name, want in reads.items():
        pager = Pager(PagerConfig(keywords=name))
        assert (pager._uses_corpus, pager._refreshes) == (want, want)
