"""The rows each round-trip and PI method trains on: tag's train split only, one
generated tag pair, a greedy round trip's non-empty outputs, and the cross-lingual PI
paper's (anchor, paraphrase, label-0 partner) triples from a labelled PI file."""

from __future__ import annotations

import pandas as pd
import pytest

from paracl.core import schemas
from paracl.core.errors import InputError
from paracl.core.io import write_parquet
from paracl.stages.train_contrastive.training.data import load_examples


def _tagged(tmp_path) -> str:
    df = pd.DataFrame(
        {
            "id": ["1", "2", "3", "4"],
            "candidate": [0, 1, 0, 2],
            "text": ["train a", "dev b", "test c", "train d"],
            "paraphrase": ["train a'", "dev b'", "test c'", "train d'"],
            "sim": [90.0] * 4,
            "bleu": [20.0] * 4,
            "sim_tag": ["<SIM90>"] * 4,
            "bleu_tag": ["<BLEU20>"] * 4,
            "split": ["train", "dev", "test", "train"],
        }
    )
    path = tmp_path / "tagged.parquet"
    write_parquet(df, path, schemas.ROUNDTRIP_TAGGED)
    return path


def test_roundtrip_trains_on_the_train_split_only(tmp_path):
    path = _tagged(tmp_path)
    ex = load_examples(path, None, 0)
    assert ex["anchor"].tolist() == ["train a", "train d"]
    df = pd.read_parquet(path)
    write_parquet(df[df["split"] != "train"], path, schemas.ROUNDTRIP_TAGGED)
    with pytest.raises(InputError, match=r"tagged.parquet: no 'train' rows.*'dev': 1"):
        load_examples(path, None, 0)


def _generated(tmp_path) -> str:
    tags = ["<SIM95><BLEU0_5>", "<SIM95><BLEU20>", "<SIM95><BLEU40>"]
    rows = [
        (str(i), f"sentence {i}", f"{tag} paraphrase {i}", tag, 90.0, 10.0, 5, 6)
        for tag in tags
        for i in range(3)
    ]
    df = pd.DataFrame(rows, columns=schemas.GENERATED_PARAPHRASES.names)
    path = tmp_path / "generated.parquet"
    write_parquet(df, path, schemas.GENERATED_PARAPHRASES)
    return path


def test_a_paraphraser_method_trains_on_its_tag_pair_only(tmp_path):
    path = _generated(tmp_path)
    assert len(load_examples(path, None, 0)) == 9  # `paraphraser`: every tag pooled
    ex = load_examples(path, None, 0, tags="<SIM95><BLEU20>")
    assert ex["positive"].tolist() == [f"<SIM95><BLEU20> paraphrase {i}" for i in range(3)]
    assert ex["anchor"].tolist() == ["sentence 0", "sentence 1", "sentence 2"]
    with pytest.raises(InputError, match=r"no row was generated for tags '<SIM70><BLEU20>'"):
        load_examples(path, None, 0, tags="<SIM70><BLEU20>")
    with pytest.raises(InputError, match="has no 'tags' column"):
        load_examples(_tagged(tmp_path), None, 0, tags="<SIM95><BLEU20>")


def test_greedy_round_trip_pairs_are_source_and_output(tmp_path):
    df = pd.DataFrame(
        {
            "id": ["1", "2", "3"],
            "candidate": [0, 0, 0],
            "text": ["a man plays", "a cat sits", "the sun"],
            "pivot": ["ein Mann spielt", "", "die Sonne"],
            "paraphrase": ["a man is playing", "", "the sun"],
            "forward": ["greedy"] * 3,
            "backward": ["greedy"] * 3,
        }
    )
    path = tmp_path / "greedy.parquet"
    write_parquet(df, path, schemas.ROUNDTRIP_CANDIDATES)
    ex = load_examples(path, None, 0)
    assert ex[["anchor", "positive"]].values.tolist() == [
        ["a man plays", "a man is playing"],  # the empty round trip is left out
        ["the sun", "the sun"],
    ]


def test_pi_triples_take_label_0_partners_as_hard_negatives(tmp_path):
    tsv = tmp_path / "pi.tsv"
    tsv.write_text(
        "id\tsentence1\tsentence2\tlabel\r\n"
        "1\tA met B in Paris .\tIn Paris , A met B .\t1\r\n"
        "2\tA met B in Paris .\tB met A in Paris .\t0\r\n"
        "3\tC left in 1902 .\tIn 1902 , C left .\t1\r\n"  # its positive has the partner
        "4\tC left in 1920 .\tIn 1902 , C left .\t0\r\n"
        "5\tNo partner here .\tHere , no partner .\t1\r\n",  # no label-0 pair: no negative
        encoding="utf-8",
    )
    ex = load_examples(tsv, None, 0).astype(object)
    assert ex.where(ex.notna(), None).values.tolist() == [
        ["A met B in Paris .", "In Paris , A met B .", "B met A in Paris ."],
        ["In 1902 , C left .", "C left in 1902 .", "C left in 1920 ."],
        ["No partner here .", "Here , no partner .", None],
    ]
    tsv.write_text("id\tsentence1\tsentence2\tlabel\n1\ta\tb\tyes\n2\ta\tc\t0\n")
    with pytest.raises(InputError, match=r"pi.tsv:2: label .yes. is not 0 or 1"):
        load_examples(tsv, None, 0)


def test_pi_triples_from_the_mirrors_paws_wiki_dev(mirror):
    """The real PAWS-Wiki dev file (8,000 pairs, CRLF, a header): every row is a label-1
    pair of the file, its negative (where it has one) a label-0 partner of its anchor."""
    path = mirror / "paws-wiki" / "dev.tsv"
    raw = pd.read_csv(path, sep="\t", dtype=str, quoting=3, keep_default_na=False)
    pairs = {
        (a.strip(), b.strip(), lab.strip())
        for a, b, lab in raw[["sentence1", "sentence2", "label"]].values
    }
    ex = load_examples(path, None, 0)
    assert len(ex) == int((raw["label"] == "1").sum()) == 3539  # every paraphrase pair
    assert 2000 < ex["negative"].notna().sum() < len(ex)
    for a, p, n in ex.sample(200, random_state=0).values:
        assert (a, p, "1") in pairs or (p, a, "1") in pairs
        assert pd.isna(n) or (a, n, "0") in pairs or (n, a, "0") in pairs
    assert load_examples(path, None, 0).equals(ex)  # deterministic
