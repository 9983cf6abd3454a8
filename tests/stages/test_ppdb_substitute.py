"""Dictionary readers, phrase substitution and the ppdb_substitute stage."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest
import yaml
from stage_helpers import run_stage

from paracl.core import schemas
from paracl.core.errors import InputError
from paracl.core.io import read_metadata, read_parquet, write_parquet
from paracl.schema import load_params
from paracl.stages.ppdb_substitute import (
    RuleIndex,
    align,
    candidates,
    detokenize,
    keep_rules,
    matched_sentences,
)
from paracl.stages.ppdb_substitute.ppdb_rules import DictionaryError, read_dictionary

REPO = Path(__file__).resolve().parents[2]


def _write(tmp_path: Path, name: str, lines: list[str]) -> Path:
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _rules(table) -> dict[tuple[str, str], float]:
    cols = (table.rules.source, table.rules.target, table.rules.prob)
    return {(s, t): p for s, t, p in zip(*cols, strict=True)}


# ---------------------------------------------------------------- readers


def test_ppdb2_reader_converts_neg_log_probability(tmp_path):
    path = _write(
        tmp_path,
        "ppdb2",
        [
            "[JJ] ||| big ||| large ||| PPDB2.0Score=3.5 -logp(e1|e2)=2.39790 "
            "-logp(e2|e1)=0.69315 Equivalence=0.5 ||| 0-0 ||| Equivalence",
            "[NN] ||| film ||| movie ||| p(e|f)=0.10536 p(f|e)=1.2 ||| 0-0",  # PPDB 1.0 name
            "[NP] ||| [DT,1] car ||| [DT,1] automobile ||| -logp(e2|e1)=0.1 ||| 0-0 1-1",
            "[JJ] ||| broken line without features",
            "[JJ] ||| red ||| crimson ||| PPDB2.0Score=2.0 ||| 0-0",  # no p(e|f)
            "[JJ] ||| red ||| scarlet ||| -logp(e2|e1)=abc ||| 0-0",
            "",
        ],
    )
    table = read_dictionary(path, "ppdb2")
    rules = _rules(table)
    assert rules[("big", "large")] == pytest.approx(0.5, abs=1e-5)  # exp(-ln 2)
    assert rules[("film", "movie")] == pytest.approx(0.9, abs=1e-5)
    assert set(rules) == {("big", "large"), ("film", "movie")}
    extra = json.loads(table.rules.set_index("source").loc["big", "extra"])
    assert extra == {"lhs": "[JJ]", "ppdb2_score": "3.5", "entailment": "Equivalence"}
    assert table.malformed == 3
    assert table.malformed_lines == [4, 5, 6]
    assert table.skipped["nonterminal"] == 1
    report = table.report()
    assert report["stand_in_probability"] is False and "exp(-x)" in report["probability"]


def test_ehimer_and_tsv_readers(tmp_path):
    ehimer = _write(
        tmp_path,
        "ehimer.txt",
        [
            "大きい ||| でかい ||| 0.42 ||| big large",
            "壊れた行",
            "赤 ||| 紅 ||| 1.7 ||| x",
            "a ||| b ||| 0.3",
        ],
    )
    table = read_dictionary(ehimer, "ehimer")
    assert _rules(table) == {("大きい", "でかい"): 0.42, ("a", "b"): 0.3}
    assert table.malformed_lines == [2, 3]  # too few fields; probability above 1
    assert json.loads(table.rules.extra[table.rules.source == "大きい"].iloc[0]) == {
        "pivots": "big large"
    }

    tsv = _write(
        tmp_path,
        "rules.tsv",
        ["source\ttarget\tprob", "buy\tpurchase\t0.6", "oops", "sell\tvend\tnan", "x\t\t0.5"],
    )
    table = read_dictionary(tsv, "tsv")
    assert _rules(table) == {("buy", "purchase"): 0.6}
    assert table.malformed == 3 and table.malformed_lines == [3, 4, 5]


def test_ppdb_sample_reader_stand_in(tmp_path):
    path = _write(
        tmp_path,
        "ppdb-sample.tsv",
        [
            "4.0\t[NP]\tthis video\tthe movie\t3.0,4.0,4.0,4.0,5.0",
            "1.0\t[FRAG]\tmr. brunner\toh , mr collins .\t1.0,1.0,1.0,1.0",
            "9.0\t[NN]\ta\tb\t1",
            "abc\t[NN]\ta\tb\t1",
        ],
    )
    table = read_dictionary(path, "ppdb-sample")
    rules = _rules(table)
    assert rules == {("this video", "the movie"): 0.75, ("mr. brunner", "oh , mr collins ."): 0.0}
    assert table.malformed_lines == [3, 4]
    assert table.report()["stand_in_probability"] is True
    assert "STAND-IN" in table.report()["probability"]


def test_sudachi_reader_respects_expansion_control(tmp_path):
    path = _write(
        tmp_path,
        "synonyms.txt",
        [
            "000001,1,0,1,0,0,0,(),曖昧,,",
            "000001,1,0,1,0,0,2,(),あいまい,,",
            "000001,1,1,2,0,0,0,(),不明確,,",  # target only, never a trigger
            "000001,1,2,3,0,0,0,(),あやふや,,",  # never used
            "000001,1,0,4,4,0,0,(),誤用語,,",  # a misuse: trigger, never a target
            "000001,1,0,5,1,0,0,(),vague,,",  # a translation: left out
            "",
            "000002,1,0,1,0,0,0,(),単独,,",  # a group of one
            "broken,line",
            "00003,1,0,1,0,0,0,(),短いID,,",
        ],
    )
    table = read_dictionary(path, "sudachi")
    rules = _rules(table)
    third = pytest.approx(1 / 3)
    assert rules[("曖昧", "あいまい")] == pytest.approx(0.5)
    assert rules[("曖昧", "不明確")] == pytest.approx(0.5)
    assert rules[("誤用語", "曖昧")] == third
    assert not any(s == "不明確" for s, _ in rules)  # flag 1: never a trigger
    assert not any("あやふや" in pair for pair in rules)  # flag 2: never used
    assert not any(t == "誤用語" for _, t in rules)
    assert not any("vague" in pair for pair in rules)
    assert table.malformed_lines == [9, 10]
    assert table.skipped["singleton_group"] == 1


def test_reader_errors_name_the_file(tmp_path):
    bad = _write(tmp_path, "bad.txt", ["nothing here", "nor here"])
    with pytest.raises(DictionaryError, match=r"bad.txt: no valid ppdb2 rule.*lines: 1, 2"):
        read_dictionary(bad, "ppdb2")
    with pytest.raises(DictionaryError, match="not found"):
        read_dictionary(tmp_path / "missing.txt", "tsv")
    with pytest.raises(DictionaryError, match="unknown dictionary format"):
        read_dictionary(bad, "xml")


def test_duplicates_keep_highest_probability(tmp_path):
    path = _write(tmp_path, "d.tsv", ["a\tb\t0.2", "a\tb\t0.7", "a\tc\t0.1"])
    table = read_dictionary(path, "tsv")
    assert _rules(table) == {("a", "b"): 0.7, ("a", "c"): 0.1}
    assert table.skipped["duplicate_pair"] == 1


def test_offline_dictionaries_read(mirror):
    sample = read_dictionary(mirror / "ppdb" / "ppdb-sample.tsv", "ppdb-sample")
    assert len(sample.rules) > 20000 and sample.rules.prob.between(0, 1).all()
    syn = read_dictionary(mirror / "sudachi-synonyms" / "synonyms.txt", "sudachi")
    assert len(syn.rules) > 50000 and syn.malformed == 0


# ---------------------------------------------------------------- substitution


def _index(rows: list[tuple[str, str, float]], lang: str, max_words: int = 6) -> RuleIndex:
    return RuleIndex(pd.DataFrame(rows, columns=["source", "target", "prob"]), lang, max_words)


def test_english_substitution_one_rule_per_candidate():
    index = _index(
        [
            ("the film", "this movie", 0.8),
            ("film", "picture", 0.5),
            ("great", "excellent", 0.6),
            ("is great", "is great", 0.9),  # identity after normalisation: dropped
            ("a b c d e f g", "x", 0.9),  # 7 words > max 6
        ],
        "en",
    )
    assert index.too_long == 1
    text = 'The film is great, isn\'t it? "Yes."'
    tokens = ["The", "film", "is", "great", ",", "isn", "'t", "it", "?", '"', "Yes", ".", '"']
    cands = candidates(tokens, text, index, max_candidates=10)
    texts = [c.text for c in cands]
    assert texts == [
        'This movie is great, isn\'t it? "Yes."',  # capital kept, best rule first
        'The film is excellent, isn\'t it? "Yes."',
        'The picture is great, isn\'t it? "Yes."',
    ]
    assert [r.prob for r in cands[0].rules] == [0.8]
    assert len(candidates(tokens, text, index, max_candidates=2)) == 2


def test_english_substitution_punctuation_spacing_and_fallback():
    index = _index([("and", ",", 0.5), ("do n't", "do not", 0.5)], "en")
    text = "Cats and dogs don't fly."
    tokens = ["Cats", "and", "dogs", "do", "n't", "fly", "."]
    texts = [c.text for c in candidates(tokens, text, index, 10)]
    assert texts == ["Cats, dogs don't fly.", "Cats and dogs do not fly."]
    # tokens that cannot be aligned with the text: the Moses detokeniser builds it
    assert align(["&amp;"], "&") is None
    cands = candidates(["Cats", "and", "dogs", "&amp;", "birds"], "x", index, 10)
    assert cands[0].text == "Cats, dogs & birds"
    assert detokenize(["He", "said", '"', "hi", '"', "."], "en") == 'He said "hi".'


def test_combinations_behind_a_param():
    index = _index([("big", "large", 0.9), ("dog", "hound", 0.5), ("big dog", "giant", 0.4)], "en")
    text = "a big dog barks"
    tokens = text.split()
    one = [c.text for c in candidates(tokens, text, index, 10, max_substitutions=1)]
    two = [c.text for c in candidates(tokens, text, index, 10, max_substitutions=2)]
    assert one == ["a large dog barks", "a big hound barks", "a giant barks"]
    assert two == one + ["a large hound barks"]  # overlapping spans never combine


def test_japanese_substitution_matches_token_runs():
    index = _index(
        [("曖昧", "不明確", 0.5), ("東京都", "首都", 0.4), ("京都", "古都", 0.9)], "ja", 7
    )
    text = "東京都の説明は 曖昧 だった。"
    tokens = ["東京", "都", "の", "説明", "は", "曖昧", "だっ", "た", "。"]
    texts = [c.text for c in candidates(tokens, text, index, 10)]
    # "京都" is not a run of whole tokens ("東京|都"), so it never matches
    assert texts == ["東京都の説明は 不明確 だった。", "首都の説明は 曖昧 だった。"]
    assert detokenize(tokens, "ja") == "東京都の説明は曖昧だった。"
    assert candidates(["猫", "が", "いる"], "猫がいる", index, 10) == []


def test_matching_is_case_insensitive_and_unescapes_moses():
    index = _index([("it 's", "it is", 0.5)], "en")
    assert [m[:2] for m in index.matches(["IT", "&apos;s", "fine"])] == [(0, 2)]


# ---------------------------------------------------------------- stage


def _corpus(rows: list[tuple[str, str, list[str]]], lang: str = "en") -> pd.DataFrame:
    return pd.DataFrame(
        {
            "id": [r[0] for r in rows],
            "doc_id": [r[0].split("-")[0] for r in rows],
            "title": ["" for _ in rows],
            "text": [r[1] for r in rows],
            "tokens": [r[2] for r in rows],
            "n_words": [len(r[2]) for r in rows],
            "lang": [lang for _ in rows],
        }
    )


ENGINE = {
    "executor": "local",
    "ray_address": None,
    "workers": 1,
    "model_workers": 1,
    "gpus_per_model_worker": 1.0,
}


def _params(tmp_path: Path, theta: float, lang: str = "en") -> dict:
    return {
        **load_params(REPO / "params.yaml"),  # run_stage expands every dvc.yaml stage
        "lang": lang,
        "theta": theta,
        **ENGINE,
        "ppdb_substitute": {
            "dictionary": {
                "en": {"format": "tsv", "path": str(tmp_path / "dict.tsv")},
                "ja": {"format": "tsv", "path": str(tmp_path / "dict.tsv")},
            },
            "max_phrase_words": {"en": 6, "ja": 7},
            "max_substitutions": 1,
            "max_candidates": 10,
            "shard_size": 1,
        },
    }


def test_keep_rules_is_the_theta_filter():
    rules = pd.DataFrame({"source": ["a", "b", "c"], "target": ["x", "y", "z"]})
    rules["prob"] = [0.3, 0.29, 1.0]
    kept = keep_rules(rules, 0.3)
    assert kept["source"].tolist() == ["a", "c"] and kept.index.tolist() == [0, 1]
    assert len(keep_rules(rules, 1.01)) == 0


def test_matched_sentences_counts_a_sentence_once_across_batches(tmp_path):
    ids = ["s1"] * 3 + ["s2"] + ["s3"] * 2
    frame = pd.DataFrame({"id": ids, "candidate": [str(i) for i in range(len(ids))]})
    out = tmp_path / "cands"
    out.mkdir()
    frame.iloc[:4].to_parquet(out / "part-00000.parquet", row_group_size=2)
    frame.iloc[4:].to_parquet(out / "part-00001.parquet")
    assert matched_sentences(str(out)) == 3


def test_ppdb_substitute_stage(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _write(tmp_path, "dict.tsv", ["big\tlarge\t0.6", "dog\thound\t0.2", "bad line"])
    corpus = _corpus(
        [
            ("d1-0", "A big dog barks.", ["A", "big", "dog", "barks", "."]),
            ("d2-0", "Nothing here.", ["Nothing", "here", "."]),
        ]
    )
    write_parquet(corpus, "data/corpus/sentences.parquet", schemas.CORPUS)
    run_stage("ppdb_substitute", _params(tmp_path, 0.1))
    cands = read_parquet("data/ppdb/candidates.parquet", schemas.PPDB_CANDIDATES)
    assert cands.candidate.tolist() == ["A large dog barks.", "A big hound barks."]
    assert cands.n_candidates.tolist() == [2, 2]
    metrics = json.loads(Path("metrics/ppdb_substitute.json").read_text())
    assert metrics["dictionary"]["malformed_lines"] == 1
    assert metrics["dictionary"]["malformed_line_sample"] == [3]
    assert (metrics["rules_kept_theta"], metrics["sentences_matched"]) == (2, 1)
    manifest = json.loads(Path("data/ppdb/candidates.parquet/_manifest.json").read_text())
    assert [s["rows"] for s in manifest["shards"]] == [2, 0]  # one sentence per shard
    assert read_metadata("data/ppdb/rules.parquet")["metrics"] == metrics
    first = Path("data/ppdb/candidates.parquet/_manifest.json").read_bytes()
    run_stage("ppdb_substitute", _params(tmp_path, 0.1))
    assert Path("data/ppdb/candidates.parquet/_manifest.json").read_bytes() == first

    run_stage("ppdb_substitute", _params(tmp_path, 0.9))  # theta above every rule: valid, empty
    assert len(read_parquet("data/ppdb/candidates.parquet", schemas.PPDB_CANDIDATES)) == 0
    metrics = json.loads(Path("metrics/ppdb_substitute.json").read_text())
    assert metrics["rules_kept_theta"] == 0 and "theta=0.9" in metrics["notes"][0]
    assert read_metadata("data/ppdb/candidates.parquet")["theta"] == 0.9


def test_ppdb_substitute_stage_bad_dictionary(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _write(tmp_path, "dict.tsv", ["only", "garbage"])
    with pytest.raises(InputError, match=r"ppdb_substitute.dictionary.en: .*dict.tsv"):
        run_stage("ppdb_substitute", _params(tmp_path, 0.1))


def test_dvc_theta_reruns_only_ppdb_and_downstream():
    stages = yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"]
    assert "theta" in stages["ppdb_substitute"]["params"]
    assert "lang" in stages["ppdb_substitute"]["params"]
    for name in ("fetch", "prepare_corpus"):
        assert "theta" not in stages[name].get("params", [])
    assert "data/ppdb/candidates.parquet" in stages["rank_fluency"]["deps"]


def test_probability_is_never_nan(tmp_path):
    path = _write(tmp_path, "d.tsv", ["a\tb\t0.5"])
    assert not math.isnan(read_dictionary(path, "tsv").rules.prob.iloc[0])
