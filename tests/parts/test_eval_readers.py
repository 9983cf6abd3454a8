"""Each reader on a few real lines of its format (embedded, with the mirror's quirks),
and on the mirror files themselves where present."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from stage_helpers import write_sick

from paracl.core.stage import InputError
from paracl.parts.evaluation import readers


def _write(path: Path, text: str, encoding: str = "utf-8") -> Path:
    path.write_bytes(text.encode(encoding))
    return path


def test_stsb_seven_or_more_fields(tmp_path):
    f = _write(
        tmp_path / "sts.csv",
        "main-captions\tMSRvid\t2012test\t0001\t5.000\ta plane is taking off .\tan air plane "
        "is taking off .\n"
        "main-news\theadlines\t2013\t0002\t1.6\tA man.\tA dog.\tsrc-a\tsrc-b\n",
    )
    df = readers.read_stsb(f)
    assert df["label"].tolist() == [5.0, 1.6]
    assert df["sentence2"].iloc[1] == "A dog."


def test_stsb_bad_score_names_line(tmp_path):
    f = _write(tmp_path / "sts.csv", "g\tf\ty\t1\tfive\ta\tb\n")
    with pytest.raises(InputError, match=r"sts.csv:1"):
        readers.read_stsb(f)


def test_senteval_sts_skips_blank_gold(tmp_path):
    inp = _write(tmp_path / "STS.input.x.txt", "a man .\ta person .\nfoo\tbar\nc\td\n")
    gs = _write(tmp_path / "STS.gs.x.txt", "4.2\n\n1.0\n")
    df = readers.read_senteval_sts(inp, gs)
    assert df["label"].tolist() == [4.2, 1.0]
    assert df["sentence1"].tolist() == ["a man .", "c"]


def test_senteval_sts_length_mismatch(tmp_path):
    inp = _write(tmp_path / "STS.input.x.txt", "a\tb\n")
    gs = _write(tmp_path / "STS.gs.x.txt", "1\n2\n")
    with pytest.raises(InputError, match="gold lines"):
        readers.read_senteval_sts(inp, gs)


def test_sts_year_skips_all_and_missing_input(tmp_path):
    _write(tmp_path / "STS.input.a.txt", "x\ty\n")
    _write(tmp_path / "STS.gs.a.txt", "3\n")
    _write(tmp_path / "STS.gs.ALL.txt", "3\n")
    _write(tmp_path / "STS.gs.SMT.txt", "3\n")  # no input: not redistributable
    assert list(readers.read_sts_year(tmp_path)) == ["a"]


SICK_HEADER = (
    "pair_ID\tsentence_A\tsentence_B\tentailment_label\trelatedness_score\tentailment_AB\t"
    "entailment_BA\tsentence_A_original\tsentence_B_original\tsentence_A_dataset\t"
    "sentence_B_dataset\tSemEval_set"
)


def test_sick_crlf_no_final_newline(tmp_path):
    row = (
        "1\tA group of kids is playing in a yard\tA group of boys in a yard is playing\t"
        "NEUTRAL\t4.5\tA_neutral_B\tB_neutral_A\tx\ty\tFLICKR\tFLICKR\tTRAIN"
    )
    f = _write(tmp_path / "SICK.txt", SICK_HEADER + "\r\n" + row + "\r\n" + row.replace(
        "TRAIN", "TEST").replace("NEUTRAL", "ENTAILMENT"))  # fmt: skip
    df = readers.read_sick(f)
    assert df["entailment"].tolist() == ["neutral", "entailment"]
    assert df["split"].tolist() == ["train", "test"]
    assert df["label"].tolist() == [4.5, 4.5]
    assert df["pair_id"].tolist() == [1, 1] and df["pair_id"].dtype == "int64"
    assert not df["split"].str.contains("\r").any()


# (id, A, B, label, split) as the mirror writes them; pair 2's sentences end in a space, as
# 104 of SICK.txt's do, and pair 3's has a space inside kept as it is
SICK_ROWS = [
    (1, "A man plays", "Someone plays", "ENTAILMENT", "TRAIN"),
    (2, "A dog runs ", " An animal runs ", "NEUTRAL", "TRAIN"),
    (3, "A cat  sleeps", "Nobody sleeps", "CONTRADICTION", "TRIAL"),
    (4, "A bird sings", "A bird is silent ", "CONTRADICTION", "TEST"),
]


def test_sick_cells_are_stripped_and_nothing_inside_changes(tmp_path):
    df = readers.read_sick(write_sick(tmp_path / "SICK.txt", SICK_ROWS))
    assert df["sentence1"].tolist() == ["A man plays", "A dog runs", "A cat  sleeps",
                                        "A bird sings"]  # fmt: skip
    assert df["sentence2"].tolist()[1:] == ["An animal runs", "Nobody sleeps", "A bird is silent"]
    assert df["split"].tolist() == ["train", "train", "trial", "test"]
    assert df.columns.tolist() == [*readers.COLUMNS, "entailment", "split", "pair_id"]


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ((1, "a", "b", "MAYBE", "TRAIN"), r"SICK.txt:2: entailment label 'MAYBE' is not one of"),
        ((1, "a", "b", "NEUTRAL", "DEV"), r"SICK.txt:2: split 'DEV' is not one of"),
        (("x", "a", "b", "NEUTRAL", "TRAIN"), r"SICK.txt:2: pair_ID 'x' is not a number"),
    ],
)
def test_a_bad_sick_cell_is_a_one_line_error_naming_file_and_line(tmp_path, row, message):
    with pytest.raises(InputError, match=message) as err:
        readers.read_sick(write_sick(tmp_path / "SICK.txt", [row]))
    assert "\n" not in str(err.value)


def test_a_malformed_sick_file_is_a_one_line_error_naming_it(tmp_path):
    with pytest.raises(InputError, match="nope.txt: not found"):
        readers.read_sick(tmp_path / "nope.txt")
    bad = _write(tmp_path / "bad.txt", "pair_ID\tsentence_A\n1\ta\n")
    with pytest.raises(InputError, match=r"bad.txt:1: header lacks columns \['sentence_B'"):
        readers.read_sick(bad)
    f = write_sick(tmp_path / "SICK.txt", SICK_ROWS[:1])
    f.write_bytes(f.read_bytes().replace(b"\t4.0\t", b"\tfour\t"))
    with pytest.raises(InputError, match=r"SICK.txt:2: score 'four' is not a number"):
        readers.read_sick(f)
    f = write_sick(tmp_path / "SICK.txt", SICK_ROWS[:1])
    f.write_bytes(f.read_bytes() + b"\r\n5\tcut short")
    with pytest.raises(InputError, match=r"SICK.txt:3: expected at least 12 tab-separated"):
        readers.read_sick(f)


def _callers_rows(raw: Path, split: str) -> dict[str, list[list[str]]]:
    """The sentence pairs of one SICK split as each caller of read_sick sees them: the
    SICK-E and SICK-R tasks and stage nli_pairs (with the NLI label where it has one), and
    the split's entailments as stage nli_triplets' (anchor, positive)."""
    from paracl.parts.evaluation.tasks import load_task
    from paracl.stages import nli_pairs, nli_triplets

    part = {"TRAIN": "train", "TRIAL": "dev", "TEST": "test"}[split]
    sicke, sickr = (getattr(load_task(t, raw, 0), part) for t in ("sicke", "sickr"))
    pairs = nli_pairs.read_pairs("sick", raw, [split])
    triplets = nli_triplets.sick_triplets(readers.read_sick(raw / "sick" / "SICK.txt"), [split])
    both, labelled = ["sentence1", "sentence2"], ["sentence1", "sentence2", "label"]
    return {
        "sicke": sicke[labelled].values.tolist(),
        "nli_pairs": pairs[labelled].values.tolist(),
        "sickr": sickr[both].values.tolist(),
        "pairs": pairs[both].values.tolist(),
        "entailments": pairs.loc[pairs["label"] == "entailment", both].values.tolist(),
        "nli_triplets": triplets[["anchor", "positive"]].values.tolist(),
    }


def test_evaluation_and_the_nli_stages_see_the_same_sentences_for_a_row(tmp_path):
    write_sick(tmp_path / "sick" / "SICK.txt", SICK_ROWS)
    for split in ("TRAIN", "TRIAL", "TEST"):
        got = _callers_rows(tmp_path, split)
        assert got["sicke"] == got["nli_pairs"] and got["sickr"] == got["pairs"], split
        assert got["entailments"] == got["nli_triplets"], split
    got = _callers_rows(tmp_path, "TRAIN")
    assert got["nli_pairs"][1] == ["A dog runs", "An animal runs", "neutral"]
    assert got["nli_triplets"] == [["A man plays", "Someone plays"]]


def test_the_mirrors_sick_rows_are_the_same_for_every_caller(mirror):
    """SICK.txt is in pair id order, so every caller's rows line up one for one."""
    for split in ("TRAIN", "TRIAL", "TEST"):
        got = _callers_rows(mirror, split)
        assert got["sicke"] == got["nli_pairs"] and got["sickr"] == got["pairs"], split
        assert got["entailments"] == got["nli_triplets"], split
    sick = readers.read_sick(mirror / "sick/SICK.txt")
    for column in ("sentence1", "sentence2"):  # 51 and 53 cells end in a space in the file
        assert (sick[column] == sick[column].str.strip()).all()


def test_jsick_header_columns(tmp_path):
    header = (
        "pair_ID\tdata\tsentence_A_En\tsentence_B_En\tentailment_label_En\t"
        "relatedness_score_En\tcorr_entailment_labelAB_En\tcorr_entailment_labelBA_En\t"
        "sentence_A_Ja\tsentence_B_Ja\tentailment_label_Ja\trelatedness_score_Ja\timage_ID\t"
        "original_caption\tsemtag_short\tsemtag_long"
    )
    row = (
        "52\ttest\tKids in red shirts are playing in the leaves\tThree kids are jumping\t"
        "neutral\t3.9\t\t\t赤いシャツを着た子供たちが木の葉の中で遊んでいる\t"
        "三人の子供が跳んでいる\tneutral\t3.6\tx.jpg\tcap\t\t"
    )
    df = readers.read_jsick(_write(tmp_path / "jsick.tsv", header + "\n" + row + "\n"))
    assert df.iloc[0]["sentence1"].startswith("赤いシャツ")
    assert df.iloc[0]["label"] == 3.6 and df.iloc[0]["split"] == "test"


def test_jglue_jsonl(tmp_path):
    lines = [
        {"sentence_pair_id": "0", "sentence1": "時計がついている。", "sentence2": "屋根の上に看板。",
         "label": "neutral"},
        {"sentence_pair_id": "1", "sentence1": "キリン", "sentence2": "きりん", "label": "entailment"},
    ]  # fmt: skip
    text = "\n".join(json.dumps(x, ensure_ascii=False) for x in lines)
    df = readers.read_jglue(_write(tmp_path / "valid.json", text))
    assert df["label"].tolist() == ["neutral", "entailment"]
    sts = _write(tmp_path / "sts.json", '{"sentence1": "a", "sentence2": "b", "label": 3.2}\n')
    assert readers.read_jglue(sts)["label"].dtype.kind == "f"
    with pytest.raises(InputError, match=r"bad.json:1"):
        readers.read_jglue(_write(tmp_path / "bad.json", '{"sentence1": "a"}\n'))


def test_pawsx_and_bad_label(tmp_path):
    f = _write(
        tmp_path / "dev-en.tsv",
        "Kathy and her husband Pete Beale ( Peter Dean ) are stable financially .\t"
        "Kathy and her husband Peter Dean ( Pete Beale ) are financially stable .\t1\n",
    )
    assert readers.read_pawsx(f)["label"].tolist() == ["1"]
    with pytest.raises(InputError, match=r"bad.tsv:1"):
        readers.read_pawsx(_write(tmp_path / "bad.tsv", "a\tb\tyes\n"))


def test_pawsx_csv_quoting_and_untranslated_rows(tmp_path):
    """XTREME's csv writer quotes a field holding `"` (dev-ja.tsv line 1 is one); NS marks
    an untranslated sentence: such a pair is dropped, as the PAWS-X README asks."""
    f = _write(
        tmp_path / "dev-ja.tsv",
        '"墓地は、""Macpelah Cemetery"" とも綴られる。"\tマックピーラ墓地である。\t0\r\n'
        "NS\t行列に似ています。\t0\r\n"
        "その発言は Easipower によるものです:\tNS\t1\r\n"
        "彼は来た。\t彼が来た。\t1",
    )
    df = readers.read_pawsx(f)
    assert df["sentence1"].tolist() == ['墓地は、"Macpelah Cemetery" とも綴られる。', "彼は来た。"]
    assert df["label"].tolist() == ["0", "1"]


def test_paws_wiki_header_crlf(tmp_path):
    f = _write(
        tmp_path / "dev.tsv",
        "id\tsentence1\tsentence2\tlabel\r\n"
        "2\tThey were there to enjoy us .\tThey were there for us to enjoy .\t1\r\n"
        '3\tHe said "no" .\tHe said no .\t0\r\n',
    )
    df = readers.read_paws(f)
    assert df["label"].tolist() == ["1", "0"] and df["sentence1"][1] == 'He said "no" .'
    with pytest.raises(InputError, match=r"bad.tsv:1: header lacks"):
        readers.read_paws(_write(tmp_path / "bad.tsv", "a\tb\t1\n"))


def test_mrpc_bom_header(tmp_path):
    f = _write(
        tmp_path / "msr.txt",
        "\ufeffQuality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
        "1\t702876\t702977\tAmrozi accused his brother.\tReferring to him, Amrozi accused.\n",
    )
    df = readers.read_mrpc(f)
    assert df.iloc[0].tolist() == ["Amrozi accused his brother.",
                                   "Referring to him, Amrozi accused.", "1"]  # fmt: skip


def test_glue_tsv_and_cola(tmp_path):
    rte = _write(tmp_path / "rte.tsv", "index\tsentence1\tsentence2\tlabel\n"
                 "0\tDana Reeve died.\tReeve had an accident.\tnot_entailment\n")  # fmt: skip
    df = readers.read_glue_tsv(rte, "sentence1", "sentence2", "label")
    assert df["label"].tolist() == ["not_entailment"]
    sst = _write(tmp_path / "sst.tsv", "sentence\tlabel\nit 's a charming journey . \t1\n")
    df = readers.read_glue_tsv(sst, "sentence", None, "label")
    assert (
        df.iloc[0]["sentence1"] == "it 's a charming journey ." and df.iloc[0]["sentence2"] is None
    )
    cola = _write(tmp_path / "cola.tsv", "gj04\t1\t\tThe sailors rode the breeze.\n"
                  "gj04\t0\t*\tThe more books.")  # fmt: skip
    assert readers.read_cola(cola)["label"].tolist() == ["1", "0"]


def test_snli_drops_no_consensus(tmp_path):
    rows = [{"sentence1": "a", "sentence2": "b", "gold_label": "neutral"},
            {"sentence1": "c", "sentence2": "d", "gold_label": "-"}]  # fmt: skip
    f = _write(tmp_path / "snli.jsonl", "\n".join(json.dumps(r) for r in rows) + "\n")
    assert readers.read_snli(f)["label"].tolist() == ["neutral"]


def test_esci_joins_titles(tmp_path):
    pd.DataFrame({
        "query": ["red shoes", "red shoes", "tv"], "product_id": ["p1", "p2", "p3"],
        "product_locale": ["us", "us", "jp"], "esci_label": ["E", "I", "S"],
        "small_version": [1, 0, 1], "split": ["train", "train", "train"],
    }).to_parquet(tmp_path / "shopping_queries_dataset_examples.parquet")  # fmt: skip
    pd.DataFrame({
        "product_id": ["p1", "p2", "p3"], "product_locale": ["us", "us", "jp"],
        "product_title": ["Red running shoes", "Blue hat", "テレビ"],
    }).to_parquet(tmp_path / "shopping_queries_dataset_products.parquet")  # fmt: skip
    df = readers.read_esci(tmp_path / "shopping_queries_dataset_examples.parquet", "us", "train")
    # the large version: small_version 0 rows are kept (PPDB paper Tables 1 and 2)
    assert df["sentence2"].tolist() == ["Red running shoes", "Blue hat"]
    assert df["label"].tolist() == ["E", "I"]


def test_missing_file_is_clear(tmp_path):
    with pytest.raises(InputError, match="not found"):
        readers.read_pawsx(tmp_path / "nope.tsv")


def test_mirror_files_parse_with_published_sizes(mirror):
    """The real mirror files: row counts as the mirror README publishes them."""
    assert len(readers.read_stsb(mirror / "stsbenchmark/sts-test.csv")) == 1379
    assert len(readers.read_stsb(mirror / "stsbenchmark/original/sts-train.csv")) == 5749
    sick = readers.read_sick(mirror / "sick/SICK.txt")
    assert sick["split"].value_counts().to_dict() == {"test": 4906, "train": 4439, "trial": 495}
    years = {y: readers.read_sts_year(mirror / f"sts12-16/{y}-en-test") for y in
             ("STS12", "STS13", "STS14", "STS15", "STS16")}  # fmt: skip
    sizes = {y: sum(len(d) for d in s.values()) for y, s in years.items()}
    assert sizes == {"STS12": 3108, "STS13": 1500, "STS14": 3750, "STS15": 3000, "STS16": 1186}
    assert len(readers.read_mrpc(mirror / "glue/MRPC/msr_paraphrase_test.txt")) == 1725
    assert len(readers.read_cola(mirror / "glue/CoLA/dev.tsv")) == 1043
    assert len(readers.read_pawsx(mirror / "pawsx/dev-ja.tsv")) == 1980  # 20 NS rows dropped
    assert len(readers.read_pawsx(mirror / "pawsx/dev-en.tsv")) == 2000
    for split, positives in (("dev", 3539), ("test", 3536)):
        paws = readers.read_paws(mirror / f"paws-wiki/{split}.tsv")
        assert len(paws) == 8000 and (paws["label"] == "1").sum() == positives
    genres = readers.read_stsb(mirror / "stsbenchmark/sts-test.csv")["genre"].value_counts()
    assert genres.to_dict() == {"main-captions": 625, "main-news": 500, "main-forums": 254}
    assert len(readers.read_jglue(mirror / "jglue/jsts-v1.3/test-v1.3.json")) == 1589
    jsick = readers.read_jsick(mirror / "jsick/jsick.tsv")
    assert jsick["split"].value_counts().to_dict() == {"test": 4927, "train": 4500, "trial": 500}
