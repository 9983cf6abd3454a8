"""The NLI training files the registry downloads, read in their published formats:
SimCSE's nli_for_simcse.csv (sent0, sent1, hard_neg), SNLI/MultiNLI .jsonl
(gold_label, sentence1, sentence2) and JSNLI's train_w_filtering.tsv (label, premise,
hypothesis; word-segmented, no header)."""

from __future__ import annotations

import json

import pytest

from paracl.core.errors import InputError
from paracl.stages.train_contrastive.training.data import load_examples

# SimCSE's file: csv module quoting, a header, one triplet per row (first rows as published)
SIMCSE_CSV = (
    "sent0,sent1,hard_neg\n"
    '"you know during the season and i guess at at your level uh you lose them to the next '
    "level if if they decide to recall the the parent team the Braves decide to call to "
    "recall a guy from triple A then a double A guy goes up to replace him and a single A "
    'guy goes up to replace him",You lose the things to the following level if the people '
    "recall.,They never perform recalls on anything.\n"
    "One of our number will carry out your instructions minutely.,A member of my team will "
    "execute your orders with immense precision.,We have no one free at the moment so you "
    "have to take action yourself.\n"
)


def _snli(gold: str, s1: str, s2: str, pair: str) -> str:
    return json.dumps(
        {
            "annotator_labels": [gold],
            "captionID": f"{pair}.jpg#0",
            "gold_label": gold,
            "pairID": f"{pair}.jpg#0r1{gold[0]}",
            "sentence1": s1,
            "sentence1_binary_parse": "( ... )",
            "sentence1_parse": "(ROOT ...)",
            "sentence2": s2,
            "sentence2_binary_parse": "( ... )",
            "sentence2_parse": "(ROOT ...)",
        }
    )


def test_simcse_csv_triplets_are_used_as_published(tmp_path):
    path = tmp_path / "nli_for_simcse.csv"
    path.write_text(SIMCSE_CSV, encoding="utf-8")
    ex = load_examples(path, None, seed=1)
    assert len(ex) == 2
    assert ex.loc[1].tolist() == [
        "One of our number will carry out your instructions minutely.",
        "A member of my team will execute your orders with immense precision.",
        "We have no one free at the moment so you have to take action yourself.",
    ]
    assert ex.loc[0, "anchor"].startswith("you know during the season")


def test_snli_jsonl_gives_entailment_positive_and_contradiction_negative(tmp_path):
    s1 = "A person on a horse jumps over a broken down airplane."
    lines = [
        _snli("neutral", s1, "A person is training his horse for a competition.", "3416050480"),
        _snli("contradiction", s1, "A person is at a diner, ordering an omelette.", "3416050480"),
        _snli("entailment", s1, "A person is outdoors, on a horse.", "3416050480"),
        _snli("-", "Two kids play.", "Kids are playing.", "1"),  # no gold label: unused
        _snli("entailment", "Two kids play.", "Kids are playing.", "2"),
        _snli("contradiction", "Two kids play.", "Nobody is playing.", "2"),
    ]
    path = tmp_path / "snli_1.0_dev.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    ex = load_examples(path, None, seed=1)
    assert sorted(map(tuple, ex.values.tolist())) == [
        (s1, "A person is outdoors, on a horse.", "A person is at a diner, ordering an omelette."),
        ("Two kids play.", "Kids are playing.", "Nobody is playing."),
    ]


def test_jsnli_train_tsv(tmp_path):
    path = tmp_path / "train_w_filtering.tsv"
    path.write_text(
        "entailment\t自転車 で 競走 して いる 人々 \t人々 は 自転車 に 乗って いる 。 \n"
        "contradiction\t自転車 で 競走 して いる 人々 \t人々 は 家 で 寝て いる 。 \n"
        "neutral\t自転車 で 競走 して いる 人々 \t人々 は 大会 に 出て いる 。 \n",
        encoding="utf-8",
    )
    ex = load_examples(path, None, seed=1, min_examples=1)
    assert ex.values.tolist() == [
        [
            "自転車 で 競走 して いる 人々",
            "人々 は 自転車 に 乗って いる 。 ",
            "人々 は 家 で 寝て いる 。 ",
        ]
    ]


def test_a_broken_csv_is_named(tmp_path):
    path = tmp_path / "nli_for_simcse.csv"
    path.write_text('sent0,sent1,hard_neg\n"unterminated,quote\n', encoding="utf-8")
    with pytest.raises(InputError, match="nli_for_simcse.csv"):
        load_examples(path, None, seed=1)
