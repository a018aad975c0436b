"""copage's default meaning channel (copage.dense.default_channel): on when the model's
files are installed, off without them (a log line says how to turn it on), pinned off by
``COPAGE_DENSE=off``, required by ``auto`` or a folder.

The test suite pins ``COPAGE_DENSE=off`` (tests/conftest.py); these tests lift the pin.
The ones marked by ``model_dir`` run the real all-MiniLM-L6-v2 (skipped without its
files, failed instead under COPAGE_REQUIRE_DENSE=1, as on CI).
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from copage import FillSettings, PagedMemory
from copage.core.dense_rank import DenseRanker
from copage.dense import ModelMissing
from copage.dense import model_files as mf
from copage.dense.default_channel import LazyEncoder, default_ranker, dense_setting
from copage.llm.scripted import ScriptedModel
from copage.session import PagedChat
from copage.session.fill_settings import resolve_dense

FACT = "Penicillin gives me a terrible rash, I found that out as a kid."
QUESTION = "Which antibiotic should my doctor avoid prescribing for me?"
FILLER = [
    "We talked about the weather and the long drive to the coast.",
    "The meeting moved to Thursday afternoon after lunch.",
    "My cousin is painting the kitchen a pale green colour.",
    "The train was late again, so I read a novel on the platform.",
]


@pytest.fixture
def no_model(nothing_fetched: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No model files anywhere copage looks (nothing fetched, and no bundled copy)."""
    monkeypatch.setattr(mf, "bundled_dir", lambda: nothing_fetched / "no-bundle")
    return nothing_fetched


@pytest.fixture
def with_model(model_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The real model's files installed; ``COPAGE_DENSE`` unset (the default)."""
    monkeypatch.setenv("COPAGE_DENSE_MODEL", str(model_dir))
    monkeypatch.delenv("COPAGE_DENSE", raising=False)
    return model_dir


def test_the_switch_reads_off_words_and_values() -> None:
    assert dense_setting({}) is None and dense_setting({"COPAGE_DENSE": " "}) is None
    for word in ("off", "OFF", "0", "false", "no", "none"):
        assert dense_setting({"COPAGE_DENSE": word}) == "off"
    assert dense_setting({"COPAGE_DENSE": "auto"}) == "auto"
    for word in ("on", "ON", "1", "true", "yes"):  # what a user guesses turns it on
        assert dense_setting({"COPAGE_DENSE": word}) == "auto"
    assert dense_setting({"COPAGE_DENSE": "/m"}) == "/m"


def test_without_the_model_files_the_default_is_off_and_says_how_to_turn_it_on(
        no_model: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="copage.dense")
    assert default_ranker() is None
    assert FillSettings().speculator().dense is None
    said = [r.getMessage() for r in caplog.records if "copage dense fetch" in r.getMessage()]
    assert len(said) == 1  # once per process, not at every conversation
    # asked for explicitly, a missing model is an error that says what to run
    with pytest.raises(ModelMissing, match="copage dense fetch"):
        default_ranker("auto")
    with pytest.raises(ModelMissing, match="given path: not set"):
        FillSettings(dense="on")  # asked for, not read as a folder named "on"
    with pytest.raises(ModelMissing, match="copage dense fetch"):
        FillSettings(dense=str(no_model / "nowhere"))


def test_off_wins_even_with_the_files(with_model: Path,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    assert default_ranker("off") is None
    assert FillSettings(dense="off").speculator().dense is None
    assert FillSettings(dense=None).speculator().dense is None
    monkeypatch.setenv("COPAGE_DENSE", "off")
    assert FillSettings().speculator().dense is None


def test_with_the_files_the_default_is_on_shared_and_not_loaded_until_asked(
        with_model: Path) -> None:
    ranker = default_ranker()
    assert isinstance(ranker, DenseRanker) and isinstance(ranker.encoder, LazyEncoder)
    assert default_ranker() is ranker  # one per process and folder
    assert FillSettings().speculator().dense is ranker
    assert resolve_dense("default") is ranker and resolve_dense(ranker) is ranker
    assert default_ranker(cache=True) is not ranker  # the proxies keep vectors on disk
    assert ranker.wait is True  # the library waits for its turns' vectors by default


def test_copage_dense_wait_bounds_the_librarys_wait(with_model: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COPAGE_DENSE_WAIT", "2.5")
    ranker = default_ranker()
    assert ranker is not None and ranker.wait == 2.5
    assert FillSettings().speculator().dense is ranker
    assert default_ranker(wait=True) is not ranker
    monkeypatch.setenv("COPAGE_DENSE_WAIT", "soon")
    with pytest.raises(ValueError, match="COPAGE_DENSE_WAIT"):
        default_ranker()
    with pytest.raises(TypeError, match="DenseRanker, a string"):
        resolve_dense(3)  # type: ignore[arg-type]


def _prompt_after_300_turns(fill: FillSettings | None) -> str:
    """What the model is sent for QUESTION, FACT said once 300 turns before (evicted)."""
    mem = PagedMemory(budget_tokens=3000, budget_floor=1000)
    mem.add("user", FACT)
    mem.add("assistant", "Thanks for telling me, I'll keep that in mind.")
    for i in range(300):
        mem.add("user" if i % 2 == 0 else "assistant", FILLER[i % len(FILLER)] + f" ({i})")
    assert mem.evicted
    model = ScriptedModel(name="recorder")
    model.reply("ok")
    chat = PagedChat(mem, model) if fill is None else PagedChat(mem, model, fill=fill)
    chat.send_sync(QUESTION)
    return " ".join(str(m.get("content")) for m in model.requests[-1].messages)


def test_paged_chat_at_its_defaults_brings_back_a_fact_asked_in_other_words(
        with_model: Path) -> None:
    """The user's first test of a memory, at the defaults but for a small budget: a fact
    said once, evicted long ago, asked in words it shares none with."""
    assert "Penicillin" in _prompt_after_300_turns(None)  # the defaults
    assert "Penicillin" not in _prompt_after_300_turns(FillSettings(dense="off"))


def test_right_after_pip_install_the_bundled_model_brings_the_fact_back(
        nothing_fetched: Path) -> None:
    """Nothing fetched: the int8 model inside the package is the default channel."""
    ranker = default_ranker()
    assert ranker is not None and ranker.encoder.model == mf.bundled_dir()  # type: ignore[attr-defined]
    assert "Penicillin" in _prompt_after_300_turns(None)
    assert "Penicillin" not in _prompt_after_300_turns(FillSettings(dense="off"))


def test_damaged_files_warn_and_leave_the_default_off(
        no_model: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = no_model / "damaged"
    folder.mkdir()
    for name in mf.REQUIRED_SHA256:
        (folder / name).write_text("not the model")
    monkeypatch.setattr(mf, "_package_dir", lambda: folder)  # found, not named
    with pytest.warns(RuntimeWarning, match="meaning channel is off.*sha256"):
        assert default_ranker() is None
    with pytest.raises(mf.ModelDamaged):
        default_ranker("auto")  # asked for: an error
    monkeypatch.setenv("COPAGE_DENSE_MODEL", str(folder))
    with pytest.raises(mf.ModelDamaged):
        default_ranker()  # named in $COPAGE_DENSE_MODEL: an error too
    monkeypatch.setenv("COPAGE_DENSE_MODEL", str(no_model / "nowhere"))
    with pytest.raises(ModelMissing):
        default_ranker()
    with pytest.raises(ModelMissing):
        default_ranker(" AUTO ")  # the same words however written


def test_the_benchmarks_copage_default_follows_the_library_default(
        with_model: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from copage.eval.methods import METHODS

    def ranker_of(name: str) -> DenseRanker | None:
        return METHODS.create(name).variant.ranker()  # type: ignore[attr-defined]

    assert isinstance(ranker_of("bookmark_recall+copage"), DenseRanker)
    assert isinstance(ranker_of("bookmark_recall+copage+dense"), DenseRanker)
    assert ranker_of("bookmark_recall+speculative") is None  # the paper's methods: never
    monkeypatch.setenv("COPAGE_DENSE_WAIT", "0")
    bench = ranker_of("bookmark_recall+copage")
    assert bench is not None and bench.wait is True  # figures never depend on the clock
    monkeypatch.setenv("COPAGE_DENSE", "off")
    assert ranker_of("bookmark_recall+copage") is None
    assert isinstance(ranker_of("bookmark_recall+copage+dense"), DenseRanker)  # required


def test_search_adds_the_page_closest_in_meaning(with_model: Path) -> None:
    """``PagedMemory.search`` with the channel (the default once the model is
    installed): a query in other words than the fact finds its page, marked
    ``by_meaning``; BM25's hits keep their places; off, the search is BM25's."""
    mem = PagedMemory(boundary="fixed_4", resident_pages=2)
    mem.add("user", FACT)
    mem.add("assistant", "Thanks for telling me, I'll keep that in mind.")
    for i in range(120):
        mem.add("user" if i % 2 == 0 else "assistant", FILLER[i % len(FILLER)] + f" ({i})")
    assert "p1" in mem.evicted
    assert mem.search("antibiotic to avoid", dense=None) == []  # no shared word
    hits = mem.search("antibiotic to avoid")
    assert [(h.page, h.by_meaning) for h in hits] == [("p1", True)]
    assert 0.0 < hits[0].score <= 1.0
    lexical = mem.search("train late platform", dense=None)
    both = mem.search("train late platform", limit=len(lexical))
    assert [h.page for h in both[:-1]] == [h.page for h in lexical[:-1]]  # BM25 kept first
    assert len(both) == len(lexical)
    assert mem.search("penicillin rash")[0].page == "p1"  # found by its words: no extra
    assert not any(h.by_meaning for h in mem.search("penicillin rash", limit=1))


@pytest.mark.parametrize("adapter", ["langchain", "agents", "litellm"])
def test_the_adapters_default_to_the_channel_and_take_off(
        adapter: str, with_model: Path) -> None:
    """``CopageMiddleware``, ``CopageSession`` and ``CopageHook`` at their defaults have
    copage's default channel (the model installed); ``dense=None`` turns it off."""
    import os

    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    if adapter == "langchain":
        pytest.importorskip("langchain")
        from copage.adapters.langchain import CopageMiddleware as make
    elif adapter == "agents":
        pytest.importorskip("agents")
        from copage.adapters.agents import CopageSession

        def make(**kw: object) -> object:
            return CopageSession("s", **kw)  # type: ignore[arg-type]
    else:
        pytest.importorskip("litellm")
        from copage.adapters.litellm import CopageHook as make
    assert make().speculator.dense is default_ranker()
    assert make(dense=None).speculator.dense is None


def test_the_bench_report_says_whether_the_channel_was_on(
        no_model: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from copage.cli.bench import meaning_channel

    assert meaning_channel().startswith("off")
    monkeypatch.setenv("COPAGE_DENSE", "auto")
    assert meaning_channel().startswith("required but missing")
