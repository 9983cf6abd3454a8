"""JCSE's evaluation data (issue 31): the readers on the mirror's real files (row counts,
the BOM, multi-line CSV fields, whitespace as SentEval reads it), QAbot retrieval against
rankings worked out by hand, and the jacsts / qabot / unsup_sts_ja jobs on a tiny encoder."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from stage_helpers import squeezed

from paracl.core.errors import InputError
from paracl.core.params import RunSettings
from paracl.parts.evaluation.jcse_readers import (
    QAbotPool,
    identical_pairs,
    read_jacsts,
    read_qabot,
    read_qabot_pool,
    read_sts_ja_year,
)
from paracl.parts.evaluation.retrieval import evaluate_qabot
from paracl.stages.evaluate import EMBEDDING_JOBS, job_info, run_job

YEARS = {"STS12": 2615, "STS13": 1063, "STS14": 3165, "STS15": 2901, "STS16": 1143}  # README
CFG = {"raw_dir": None, "max_eval_pairs": 12, "encode_batch_size": 32}
RUN = RunSettings(seed=1, lang="ja", device="cpu", precision="fp32")  # the run-wide keys

pytestmark = pytest.mark.usefixtures("one_thread")


def test_jacsts_counts_scores_and_whitespace(mirror):
    dev = read_jacsts(mirror / "jcse" / "JAC-STS" / "JAC-sts-dev.csv")
    test = read_jacsts(mirror / "jcse" / "JAC-STS" / "JAC-sts-test.csv")
    assert (len(dev), len(test)) == (184, 3482)
    counts = test["label"].value_counts().sort_index().tolist()
    assert counts == [929, 457, 69, 762, 664, 601]  # scores 0..5, as the mirror README
    assert test.iloc[0].tolist()[2] in range(6) and list(test.columns) == [
        "sentence1", "sentence2", "label"
    ]  # fmt: skip
    text = pd.concat([test["sentence1"], test["sentence2"]])
    assert not text.str.contains("\u3000|  |\t").any()  # SentEval's split-and-join


def test_sts_ja_years_keep_every_pair_and_count_the_identical_ones(mirror):
    years = {y: read_sts_ja_year(mirror / "jcse" / f"{y}-ja-test") for y in YEARS}
    assert {y: len(f) for y, f in years.items()} == YEARS
    assert sum(identical_pairs(f) for f in years.values()) == 191  # kept, as JCSE scores them
    assert sorted(years["STS13"]["subset"].unique()) == ["FNWN", "OnWN", "headlines"]


def test_qabot_pools_bom_crlf_and_multiline_fields(mirror):
    root = mirror / "jcse" / "QAbot"
    assert (root / "1" / "data.csv").read_bytes().startswith(b"\xef\xbb\xbfquestion,")
    pools = read_qabot(root)
    assert [p.name for p in pools] == [str(i) for i in range(1, 21)]
    sizes = {p.name: len(p.pool) for p in pools}
    assert {n for n, k in sizes.items() if k == 1142} == {"3", *map(str, range(13, 21))}
    assert set(sizes.values()) == {1141, 1142}
    assert sum(int(p.pool["label"].sum()) for p in pools) == 53
    first = pools[0]
    assert list(first.pool.columns) == ["question", "answer", "label"]  # no BOM in the name
    assert first.pool["question"].str.contains("\n").sum() > 0  # quoted multi-line fields
    assert not first.pool["question"].str.contains("\r").any()  # CRLF ends records only
    physical = (root / "1" / "data.csv").read_bytes().count(b"\n") - 1
    assert physical > len(first.pool)  # so a line reader would have miscounted
    assert not first.query.endswith("\n") and first.query.endswith("？")
    assert len({q for p in pools for q in p.pool["question"]}) == 1142  # one shared pool


def test_qabot_reader_names_the_file_and_record(tmp_path):
    (tmp_path / "question.txt").write_text("q\n", encoding="utf-8")
    (tmp_path / "data.csv").write_text('question,answer,label\r\n"a\nb",x,2\r\n')
    with pytest.raises(InputError, match=r"data.csv: record 1: .*label"):
        read_qabot_pool(tmp_path)
    (tmp_path / "data.csv").write_text("q,a,l\r\n")
    with pytest.raises(InputError, match=r"data.csv:1: expected the header"):
        read_qabot_pool(tmp_path)


class _Vectors:
    """A stand-in encoder: each text's vector is given."""

    device = torch.device("cpu")  # where EmbeddingCache runs it (under `precision`)

    def __init__(self, vectors: dict[str, list[float]]):
        self.vectors = vectors

    def encode(self, texts, **_):
        return np.array([self.vectors[t] for t in texts], dtype=np.float32)


def test_qabot_retrieval_by_hand():
    from paracl.parts.encoder.embed import EmbeddingCache

    # query along x; cosines: a 1.0, b 0.8, c 0.6, d 0.0, e -1.0
    vec = {"q1": [1, 0], "q2": [0, 1], "a": [1, 0], "b": [0.8, 0.6], "c": [0.6, 0.8],
           "d": [0, 1], "e": [-1, 0]}  # fmt: skip
    pool = pd.DataFrame({"question": list("abcde"), "answer": "", "label": [0, 1, 0, 0, 1]})
    pools = [QAbotPool("1", "q1", pool), QAbotPool("2", "q2", pool.assign(label=[0, 0, 0, 1, 0]))]
    out = evaluate_qabot(EmbeddingCache(_Vectors(vec)), pools)
    one, two = out["pools"]["1"], out["pools"]["2"]
    # pool 1 ranks a b c d e: relevant at ranks 2 and 5
    assert one["mrr"] == pytest.approx(50.0)
    assert one["map"] == pytest.approx((1 / 2 + 2 / 5) / 2 * 100)  # the authors' i / rank_i
    assert (one["p@1"], one["p@5"]) == (0.0, pytest.approx(40.0))
    # pool 2 (query along y) ranks d c b a e: its one relevant row first
    assert (two["mrr"], two["map"], two["p@1"]) == (100.0, 100.0, 100.0)
    assert two["p@5"] == pytest.approx(20.0)  # at most 1/5 with one relevant row
    assert out["metrics"]["mrr"] == pytest.approx(75.0)  # pools weigh the same
    assert out["metrics"]["map"] == pytest.approx((45.0 + 100.0) / 2)
    assert out["unique_questions"] == 5 and out["queries"] == 2


def test_domain_jobs_are_registered():
    assert {"jacsts", "qabot"} <= set(EMBEDDING_JOBS)
    assert job_info("qabot")["kind"] == "retrieval" and job_info("jacsts")["metric"] == "spearman"


def test_jacsts_and_qabot_jobs_on_a_tiny_encoder(tiny_bert, mirror):
    cfg = {**CFG, "raw_dir": mirror}
    res = run_job("none", "jacsts", tiny_bert, cfg, RUN)
    assert res["sets"]["test"]["pairs"] == res["sets"]["dev"]["pairs"] == 12
    strata = res["sets"]["test"]["sample"]["strata"]
    assert set(strata) == {"0", "1", "2", "3", "4", "5"}  # stratified by gold score
    assert res["score"] == res["sets"]["test"]["spearman"] and "dev_score" in res
    qa = run_job("none", "qabot", tiny_bert, {**cfg, "max_eval_pairs": None}, RUN)
    assert qa["queries"] == 20 and qa["unique_questions"] == 1142 and qa["max_length"] == 64
    assert set(qa["breakdown"]) == {"MRR", "MAP", "P@1", "P@5"}
    assert qa["score"] == qa["breakdown"]["MAP"] and 0 <= qa["score"] <= 100
    assert qa["split_note"] == "the authors' 20 pools, whole"
    cut = run_job("none", "qabot", tiny_bert, {**cfg, "max_eval_pairs": 100}, RUN)
    relevant = cut["sample"]["relevant_kept"]
    assert cut["unique_questions"] == 100 and 20 <= relevant <= 53
    assert [p["relevant"] for p in cut["pools"].values()] == [
        p["relevant"] for p in qa["pools"].values()
    ]  # every relevant row stays
    assert "cut to 100 of their 1142 questions" in cut["split_note"]


def test_unsup_sts_ja_is_jcse_table_3(tiny_bert, mirror):
    cfg = {**CFG, "raw_dir": mirror}  # the mirror has data/raw's layout
    res = run_job("none", "unsup_sts_ja", tiny_bert, cfg, RUN)
    assert list(res["sets"]) == [*YEARS, "JSICK", "JSTS"]  # Table 3's order (no STS-B-ja)
    assert res["embedding_space"]["set"] == "JSTS"
    assert res["score"] == pytest.approx(np.mean([s["spearman"] for s in res["sets"].values()]))


def test_summary_has_table_6s_layout_and_jcses_claims():
    from paracl.stages.summary import build_summary, to_markdown

    def result(mrr: float, map_: float) -> dict:
        breakdown = {"MRR": mrr, "MAP": map_, "P@1": 50.0, "P@5": 20.0}
        return {"qabot": {**job_info("qabot"), "score": map_, "score_std": 0.0,
                          "official_split": True, "breakdown": breakdown}}  # fmt: skip

    base = {"none": (60.0, 50.0)}
    seeds = {"jcse": (70, 61), "jcse_unadapted": (66, 58), "simcse_wiki": (65, 57)}
    results = {"none": result(*base["none"])}
    groups = {"none": ["none"]}
    for method, (mrr, map_) in seeds.items():
        groups[method] = [f"{method}_s{s}" for s in (1, 2, 3)]
        for s in (1, 2, 3):
            results[f"{method}_s{s}"] = result(mrr + s, map_ + s / 2)
    summary = build_summary(results, ["qabot"], "all", groups)
    md = squeezed(to_markdown(summary))
    assert "QAbot by metric (×100):" in md and "| Method | MRR | MAP | P@1 | P@5 |" in md
    assert "| jcse | 72.0 ± 1.0 | 62.0 ± 0.5 | 50.0 ± 0.0 | 20.0 ± 0.0 |" in md
    claims = {(c["method"], c["other"]): c for c in summary["claims"]}
    assert claims[("jcse", "jcse_unadapted")]["diff"] == pytest.approx(3.0)  # on MAP
    assert claims[("jcse", "simcse_wiki")]["holds"] is True
