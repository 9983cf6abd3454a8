"""Adding a language is a profile: a third, toy language registered here runs the
prepare_corpus stage and the tag stage's text rules with no other change to the code.

The toy language `xx` is German text under a code no code path knows: every step must
take its splitter, tokenizer, language-ID code and BLEU tokenizer from the profile, so
a branch on "en"/"ja" left in a part makes this test fail.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import get_args

import pytest
import yaml
from stage_helpers import TOY_LANGUAGE

from paracl.core import languages, params
from paracl.core.distributed.sharded import Engine
from paracl.core.errors import UserError
from paracl.core.io import read_parquet
from paracl.parts.tags.tagging import sentence_bleu
from paracl.parts.tags.text import strip_symbols, word_count
from paracl.stages.prepare_corpus import build_corpus

REPO = Path(__file__).resolve().parents[2]

TOY = dataclasses.replace(  # English, then every language-dependent field set for the toy
    languages.ENGLISH, **TOY_LANGUAGE, sts_dev="data/raw/none.csv", pi_sets=()
)
GERMAN = [
    "Der alte Lehrer besuchte gestern das neue Museum in der Nähe des Flusses.",
    "Die kleine Firma baute im letzten Sommer eine Brücke über den breiten Kanal.",
    "Meine Nachbarin fotografierte am Abend die alte Kirche neben dem Marktplatz.",
    "Nach einer langen Debatte beschloss der Stadtrat den Bau einer neuen Schule.",
]
ENGLISH = "The old teacher visited the new museum near the river yesterday evening."


@pytest.fixture
def toy(monkeypatch) -> languages.Profile:
    """The toy profile registered for one test (the registry is restored after it)."""
    monkeypatch.setattr(languages, "PROFILES", dict(languages.PROFILES))
    languages.register(TOY)
    return TOY


def toy_params(source: Path) -> dict:
    """params.yaml with the toy language's preset: its `lang` and its corpus input."""
    base = yaml.safe_load((REPO / "params.yaml").read_text(encoding="utf-8"))
    base["lang"] = "xx"
    base["executor"] = "local"
    section = base["prepare_corpus"]
    section["input"]["xx"] = {"source": str(source), "format": "text"}
    section.update(workers=1, max_sentences=None, langdetect_threshold=0.99)
    return base


def test_prepare_corpus_runs_on_a_registered_toy_language(toy, tmp_path):
    source = tmp_path / "toy.txt"
    # two German sentences on one line (Moses splits them), one per line, one English line
    source.write_text(f"{GERMAN[0]} {GERMAN[1]}\n{GERMAN[2]}\n{ENGLISH}\n{GERMAN[3]}\n", "utf-8")
    out = tmp_path / "corpus.parquet"
    values = toy_params(source)
    settings, engine = params.RunSettings.of(values), Engine.from_params(values)
    metrics = build_corpus(values["prepare_corpus"], settings, engine, str(out))
    frame = read_parquet(out)
    assert list(frame["text"]) == GERMAN  # split by Moses, the English line dropped by langdetect
    assert set(frame["lang"]) == {"xx"}
    assert metrics["dropped"]["langdetect"] == 1
    assert "Moses split-sentences.perl, de" in metrics["tools"]["sentence_splitter"]
    assert "MosesTokenizer(lang=de" in metrics["tools"]["tokenizer"]
    assert frame["tokens"].iloc[0][-1] == "."


def test_tag_text_rules_read_the_toy_profile(toy):
    assert strip_symbols("Ja — «genau» so, bitte.", "xx") == "Ja genau so, bitte."
    assert word_count(GERMAN[0], "xx") == 13  # spaced: words, not characters / 2
    assert sentence_bleu(GERMAN[0], GERMAN[0], "xx") == pytest.approx(100.0)


def test_an_unknown_language_is_one_line_naming_the_param_and_the_known_ones(toy):
    with pytest.raises(UserError) as err:
        languages.profile("yy")
    known = ", ".join(languages.codes())  # en, ja and the toy (and any language added)
    assert known.startswith("en, ja") and known.endswith("xx")
    assert str(err.value) == f"params.yaml: 'lang': unknown language 'yy' (known: {known})"


def test_params_accept_exactly_the_languages_with_a_profile():
    """Every module of paracl.core.languages is found (tests/pipeline/test_extending.py
    adds one as a file): params.yaml's `lang` takes the codes of those with a profile."""
    codes = languages.codes()
    assert get_args(params.Lang) == tuple(codes) and codes[:2] == ["en", "ja"]
    assert "de" not in codes and languages.pivot("de").name == "German"  # a pivot only
    known = ", ".join(f"'{c}'" for c in codes)
    with pytest.raises(params.ParamsError, match=f"'lang' must be one of {known}, got 'yy'"):
        params.validate({"lang": "yy"}, {"lang": params.keys_of(params.RunSettings)["lang"]})
