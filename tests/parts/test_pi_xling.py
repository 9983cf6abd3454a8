"""The cross-lingual PI paper's experiment offline (presets/pi-en-ja.yaml): its data (the
leakage filter, line-aligned cross-lingual pairs, PAWS-X dev's threshold and scored
halves), mining by both of Algorithm 2's rules, the threshold chosen on held-out pairs
drawn like the scored ones, ROC AUC, and the paper's tables (Table I's mean over Table
II's classes) and claims (not testable against a reference at chance)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from stage_helpers import squeezed

from paracl.core.errors import InputError
from paracl.parts.evaluation import readers
from paracl.parts.evaluation.metrics import best_threshold, roc_auc
from paracl.parts.evaluation.paraphrase_id import evaluate_pi
from paracl.parts.evaluation.pi_classes import paper_mean
from paracl.parts.evaluation.tasks import load_task, read_paws_unseen
from paracl.parts.losses import additive_margin as ams
from paracl.stages import summary as sm
from paracl.stages.train_contrastive.training.data import load_examples

HEADER = "id\tsentence1\tsentence2\tlabel\n"


def _raw(tmp_path, wiki_dev: list, xdev_en: list, xdev_ja: list, wiki_test: list | None = None):
    """A raw-data folder in the mirror's layout from (s1, s2, label) rows."""
    (tmp_path / "paws-wiki").mkdir()
    (tmp_path / "pawsx").mkdir()
    rows = lambda r: "".join(f"{i}\t{a}\t{b}\t{y}\n" for i, (a, b, y) in enumerate(r))  # noqa: E731
    (tmp_path / "paws-wiki" / "dev.tsv").write_text(HEADER + rows(wiki_dev), encoding="utf-8")
    test = wiki_test or [(f"t{i} a", f"t{i} b", str(i % 2)) for i in range(8)]
    (tmp_path / "paws-wiki" / "test.tsv").write_text(HEADER + rows(test), encoding="utf-8")
    for name, r in (("dev-en.tsv", xdev_en), ("dev-ja.tsv", xdev_ja)):
        text = "".join(f"{a}\t{b}\t{y}\n" for a, b, y in r)
        (tmp_path / "pawsx" / name).write_text(text, encoding="utf-8")
    return tmp_path


def test_leakage_filter_drops_every_pair_sharing_a_pawsx_dev_sentence(tmp_path):
    raw = _raw(
        tmp_path,
        wiki_dev=[("A met B .", "B met A .", "0"), ("A met B .", "B was met by A .", "1"),
                  ("C ran .", "C runs .", "1"), ("D sat .", "D sits .", "0")],
        xdev_en=[("A met B .", "B met A .", "0")],
        xdev_ja=[("AはBに会った。", "BはAに会った。", "0")],
    )  # fmt: skip
    kept = read_paws_unseen(raw / "paws-wiki" / "dev.tsv")
    # the PAWS-X pair itself and its sibling (same source sentence) are both out
    assert kept[["sentence1", "sentence2"]].values.tolist() == [
        ["C ran .", "C runs ."],
        ["D sat .", "D sits ."],
    ]
    (raw / "pawsx" / "dev-en.tsv").unlink()
    with pytest.raises(InputError, match="dev-en.tsv: not found"):
        read_paws_unseen(raw / "paws-wiki" / "dev.tsv")


def test_the_mirrors_training_pairs_share_no_sentence_with_pawsx_dev(mirror):
    data = load_task("paws_xling", mirror, seed=7)
    seen = readers.pawsx_sentences(mirror / "pawsx" / "dev-en.tsv")
    for split in (data.train, data.dev):
        assert not (split["sentence1"].isin(seen) | split["sentence2"].isin(seen)).any()
    assert len(data.train) + len(data.dev) == 2231
    # the held-out split is fixed (not the caller's seed) and stratified by label
    again = load_task("paws_xling", mirror, seed=1)
    assert again.dev.equals(data.dev)
    share = data.dev["label"].eq("1").mean() - data.train["label"].eq("1").mean()
    assert abs(share) < 0.01
    # training reads exactly that train split: its positive pairs, none of dev's
    ex = load_examples(mirror / "paws-wiki" / "dev.tsv", None, 0, task="paws_xling")
    train_pos = data.train[data.train["label"] == "1"]
    pairs = set(zip(train_pos["sentence1"], train_pos["sentence2"], strict=True))
    assert len(ex) == len(train_pos)  # every paraphrase pair (one occurs twice in PAWS)
    assert all((a, p) in pairs or (p, a) in pairs for a, p in ex[["anchor", "positive"]].values)


def test_cross_lingual_pairs_are_line_aligned(tmp_path):
    en = [("e1a", "e1b", "1"), ("e2a", "e2b", "0"), ("e3a", "e3b", "1"), ("e4a", "e4b", "0")]
    ja = [("j1a", "j1b", "1"), ("j2a", "NS", "0"), ("j3a", "j3b", "0"), ("j4a", "j4b", "0")]
    raw = _raw(tmp_path, [("x", "y", "1")], en, ja)
    en_path, ja_path = raw / "pawsx" / "dev-en.tsv", raw / "pawsx" / "dev-ja.tsv"
    en_ja = readers.read_pawsx_cross(en_path, ja_path, "en_ja")
    # line 2: untranslated (NS) sentence 2; line 3: the en and ja labels differ
    assert en_ja.values.tolist() == [["e1a", "j1b", "1"], ["e4a", "j4b", "0"]]
    ja_en = readers.read_pawsx_cross(en_path, ja_path, "ja_en")
    assert ja_en.values.tolist() == [["j1a", "e1b", "1"], ["j2a", "e2b", "0"], ["j4a", "e4b", "0"]]
    same = readers.read_pawsx_cross(en_path, ja_path, "translation")
    assert ("e3a", "j3a", "1") in set(map(tuple, same.values.tolist()))
    assert ("e2b", "NS", "1") not in set(map(tuple, same.values.tolist()))
    (raw / "pawsx" / "dev-ja.tsv").write_text("j1a\tj1b\t1\n", encoding="utf-8")
    with pytest.raises(InputError, match="not line-aligned"):
        readers.read_pawsx_cross(en_path, ja_path, "en_ja")


def test_the_mirrors_cross_lingual_pairs(mirror):
    en_path, ja_path = mirror / "pawsx" / "dev-en.tsv", mirror / "pawsx" / "dev-ja.tsv"
    en, ja = readers._pawsx_lines(en_path), readers._pawsx_lines(ja_path)
    differ = [k for k, ((_, e), (_, j)) in enumerate(zip(en, ja, strict=True)) if e[2] != j[2]]
    assert len(en) == len(ja) == 2000 and len(differ) == 9
    pairs = readers.read_pawsx_cross(en_path, ja_path, "en_ja")
    expect = [(e[0], j[1], e[2]) for k, ((_, e), (_, j)) in enumerate(zip(en, ja, strict=True))
              if k not in differ and "NS" not in (e[0], j[1])]  # fmt: skip
    assert list(map(tuple, pairs.values.tolist())) == expect


def test_mining_selects_by_either_rule():
    anchors = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [1.0, 0.2]])
    cands = torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.9, 0.1], [1.0, 0.1]])
    closest = ams.Params(mine_k=2, mine_rule="closest")
    assert ams.mine_hard_negatives(anchors, cands, closest.mine_k) == [
        [3, 2], [2, 3], [3, 0], [2, 0]]  # fmt: skip
    by_threshold = ams.Params(mine_k=3, mine_rule="threshold", threshold=0.99)
    picked = ams.mine_hard_negatives(anchors, cands, by_threshold.mine_k, by_threshold.threshold)
    assert picked == [[3, 2], [], [], [2]]  # every one with cosine >= 0.99 (a3·c0 = 0.98 is not)
    with pytest.raises(ValueError, match="threshold is set exactly when"):
        ams.Params(mine_rule="threshold")
    with pytest.raises(ValueError, match="threshold is set exactly when"):
        ams.Params(threshold=0.5)
    with pytest.raises(ValueError, match="mine_rule must be one of"):
        ams.Params(mine_rule="random")


class _Model(torch.nn.Module):
    """Stands in for the encoder in `prepare` (only train/eval state is used)."""


def test_prepare_takes_the_datasets_negatives_only_when_asked():
    vec = {"a1": [1.0, 0.0], "p1": [1.0, 0.0], "a2": [0.0, 1.0], "p2": [0.1, 1.0],
           "a3": [1.0, 1.0], "p3": [0.9, 1.0]}  # fmt: skip
    embed = lambda model, texts: torch.tensor([vec[t] for t in texts])  # noqa: E731
    mega = pd.DataFrame({"anchor": ["a1", "a2", "a3"], "positive": ["p1", "p2", "p3"],
                         "negative": ["n1", None, "n3"]})  # fmt: skip
    full = ams.AdditiveMarginObjective(0.5, 0.5, 1.0, 1, None, embed)
    assert full.prepare(mega, _Model())["hard"].tolist() == [["n1", "p3"], ["p3"], ["n3", "p2"]]
    alone = ams.AdditiveMarginObjective(0.5, 0.5, 1.0, 0, None, embed, hard_negatives=False)
    assert alone.prepare(mega, _Model())["hard"].tolist() == [[], [], []]


class _Cache:
    """Cosines from a lookup: sentence1 "s<score>" gives that score."""

    def cosine(self, a: list[str], b: list[str]) -> np.ndarray:
        return np.array([float(x.split("|")[0]) for x in a])

    def embed(self, texts: list[str]) -> np.ndarray:
        return np.array([[1.0, float(len(t))] for t in texts])


def test_threshold_is_chosen_on_the_held_out_split_never_on_test(tmp_path):
    # held-out positives score >= 0.6, negatives <= 0.4; on test the best cut would be 0.85
    rng = np.random.default_rng(0)
    dev = [(f"{0.6 + rng.random() * 0.4:.3f}|d{i}", f"x{i}", "1") for i in range(40)]
    dev += [(f"{rng.random() * 0.4:.3f}|e{i}", f"y{i}", "0") for i in range(40)]
    test = [("0.9|t1", "u1", "1"), ("0.8|t2", "u2", "0"), ("0.7|t3", "u3", "0")]
    en = [("0.9|q", "0.5|w", "1")]
    raw = _raw(tmp_path, dev, en, [("0.9|q", "0.5|w", "1")], wiki_test=test)
    data = load_task("paws_xling", raw, seed=3)
    data.threshold_sets = {}  # English pairs alone here (the halves: the next test)
    data.eval_sets = {k: v for k, v in data.eval_sets.items() if len(v)}
    out = evaluate_pi(_Cache(), data)
    held_out = data.dev  # the fixed carve: not train ∪ dev (train trains the encoder)
    assert out["selection_pairs"] == len(held_out) < len(dev)
    cos = np.array([float(s.split("|")[0]) for s in held_out["sentence1"]])
    assert out["threshold"] == best_threshold(cos, held_out["label"].astype(int))[0]
    assert 0.4 <= out["threshold"] <= 0.6  # test's own best (0.85) is not what was chosen
    assert out["accuracy"] == pytest.approx(100 / 3)
    assert out["provenance"]["threshold"] == "dev"
    assert set(out["eval_sets"]) == {"ja", "en_ja", "ja_en", "translation"}


def _xling_raw(tmp_path):
    """English pairs whose cosines separate between 0.3 and 0.8, and 40 PAWS-X dev lines
    whose pairs (every kind) separate between 0.2 and 0.32: a threshold chosen on English
    alone rejects every cross-lingual pair, one chosen on both lies in (0.3, 0.32)."""
    rng = np.random.default_rng(0)
    dev = [(f"{0.8 + rng.random() * 0.2:.3f}|d{i}", f"x{i}", "1") for i in range(40)]
    dev += [(f"{rng.random() * 0.3:.3f}|e{i}", f"y{i}", "0") for i in range(40)]
    test = [(f"{0.9 if i % 2 else 0.1}|t{i}", f"u{i}", str(i % 2)) for i in range(8)]
    cos = [0.32 + rng.random() * 0.04 if i % 2 else rng.random() * 0.2 for i in range(40)]
    en = [(f"{c:.3f}|en{i}", f"{c:.3f}|enb{i}", str(i % 2)) for i, c in enumerate(cos)]
    ja = [(f"{c:.3f}|ja{i}", f"{c:.3f}|jab{i}", str(i % 2)) for i, c in enumerate(cos)]
    return _raw(tmp_path, dev, en, ja, wiki_test=test)


def test_pawsx_dev_is_halved_by_line_seeded_stratified_and_not_a_prefix(tmp_path):
    raw = _xling_raw(tmp_path)
    en_path = raw / "pawsx" / "dev-en.tsv"
    chosen, scored = readers.pawsx_half(en_path, "threshold"), readers.pawsx_half(en_path, "scored")
    assert chosen.isdisjoint(scored) and chosen | scored == set(range(1, 41))
    assert len(chosen) == 20 and chosen != set(range(1, 21))  # a draw, not the first lines
    labels = {i: str((i - 1) % 2) for i in range(1, 41)}
    assert sum(labels[i] == "1" for i in chosen) == 10  # stratified by label
    assert readers.pawsx_half(en_path, "threshold") == chosen  # seeded: the same every time
    data = load_task("paws_xling", raw, seed=3)
    sentences = lambda sets: {s for df in sets.values() for s in df["sentence1"]}  # noqa: E731
    assert sentences(data.threshold_sets).isdisjoint(sentences(data.eval_sets))
    assert (
        set(data.threshold_sets) == set(data.eval_sets) == {"ja", "en_ja", "ja_en", "translation"}
    )


def test_the_threshold_is_chosen_on_pairs_drawn_like_the_scored_ones(tmp_path):
    data = load_task("paws_xling", _xling_raw(tmp_path), seed=3)
    out = evaluate_pi(_Cache(), data)
    assert out["threshold_on"] == ["en", "ja", "en_ja", "ja_en", "translation"]
    pooled = pd.concat([data.dev, *data.threshold_sets.values()])
    cos = np.array([float(s.split("|")[0]) for s in pooled["sentence1"]])
    assert out["threshold"] == best_threshold(cos, pooled["label"].astype(int))[0]
    assert out["selection_pairs"] == len(pooled)
    english_alone = best_threshold(cos[: len(data.dev)], data.dev["label"].astype(int))[0]
    assert english_alone >= 0.4 and 0.3 < out["threshold"] < 0.32  # the first rejects every pair
    assert out["eval_sets"]["en_ja"]["accuracy"] == 100.0  # this one separates them
    assert out["eval_sets"]["en_ja"]["threshold_sample"]["pairs"] == len(
        data.threshold_sets["en_ja"]
    )


def test_every_accuracy_has_its_roc_auc_per_set_and_per_class(tmp_path):
    data = load_task("paws_xling", _xling_raw(tmp_path), seed=3)
    out = evaluate_pi(_Cache(), data)
    cos = lambda df: np.array([float(s.split("|")[0]) for s in df["sentence1"]])  # noqa: E731
    assert out["auc"] == pytest.approx(roc_auc(cos(data.test), data.test["label"].astype(int)))
    ja = data.eval_sets["ja"]
    assert out["eval_sets"]["ja"]["auc"] == pytest.approx(roc_auc(cos(ja), ja["label"].astype(int)))
    assert out["eval_sets"]["translation"]["auc"] is None  # all paraphrases: one label
    cross = pd.concat([data.eval_sets["en_ja"], data.eval_sets["ja_en"]])
    inter_para = out["classes"]["inter_para"]
    assert inter_para["auc"] == pytest.approx(roc_auc(cos(cross), cross["label"].astype(int)))
    assert inter_para["pairs"] == len(cross) and out["classes"]["inter_same"]["auc"] is None
    intra = out["classes"]["intra"]  # accuracy over the class's pairs pooled
    n_en, n_ja = len(data.test), len(ja)
    pooled = (out["accuracy"] * n_en + out["eval_sets"]["ja"]["accuracy"] * n_ja) / (n_en + n_ja)
    assert intra["accuracy"] == pytest.approx(pooled)


def _bi(score: float, ja: float, align: float = 0.5) -> dict:
    sets = {"en": score, "ja": ja, "en_ja": score - 5, "ja_en": score - 6, "translation": 90.0}
    return {"score": float(np.mean([sets[k] for k in sm.PI_SETS])), "breakdown": sets,
            "alignment": align, "uniformity": -2.0, "parameters": 268_098_176,
            "encoder": {"base_model": {"id": "google/gemma-3-270m"}}, "kind": "pi_xling",
            "official_split": True, "score_std": 0.0}  # fmt: skip


def _cross(values: list[float]) -> dict:
    runs = [{"seed": i + 1, "test": {"accuracy": v},
             "eval_sets": {**{k: {"accuracy": v - 2} for k in ("ja", "en_ja", "ja_en")},
                           "translation": {"accuracy": 70.0}}}
            for i, v in enumerate(values)]  # fmt: skip
    return {"score": float(np.mean(values)), "score_std": 1.0, "kind": "finetune",
            "metric": "accuracy", "runs": runs, "test": {"n": len(values)},
            "official_split": True}  # fmt: skip


def _results() -> tuple[dict, dict]:
    results = {"none": {"pi_xling": _bi(55.0, 52.0), "paws_xling": _cross([80.0, 82.0, 81.0])}}
    groups = {"none": ["none"]}
    for method, base in (("ams_pos", 58.0), ("ams_hn", 61.0), ("ams_full", 64.0)):
        groups[method] = [f"{method}_s{i}" for i in (1, 2, 3)]
        for i, run in enumerate(groups[method]):
            results[run] = {"pi_xling": _bi(base + i * 0.5, base - 2 + i * 0.3)}
            results[run]["paws_xling"] = {"skipped": sm.NOT_RUN, "score": None, "not_run": True}
    return results, groups


def test_table_one_and_two_are_rendered_from_the_jobs_json():
    results, groups = _results()
    summary = sm.build_summary(results, ["pi_xling", "paws_xling"], "all", groups)
    pi = summary["pi_xling"]
    assert pi["rows"]["cross-encoder"]["type"] == "Cross-encoder"
    assert pi["rows"]["ams_full"]["mean"]["n"] == 3
    text = sm.to_markdown(summary)
    one = text[text.index("Table I (") : text.index("Table II (")]
    assert "| Model" in one and "Mean accuracy" in one and "Model type" in one
    row = next(line for line in one.splitlines() if line.startswith("| ams_full"))
    # the mean of the classes: ((en_ja + ja_en) / 2 + translation + (en + ja) / 2) / 3
    assert [c.strip() for c in row.split("|")[1:-1]] == [
        "ams_full (3 seeds)", "268M", "70.8 ± 0.3", "Bi-encoder"]  # fmt: skip
    assert "cross-encoder" in one and "Cross-encoder" in one and "79.3" in one
    two = text[text.index("Table II (") : text.index("Embedding space")]
    assert "Inter-para (en–ja, ja–en)" in two and "Intra (en, ja)" in two
    row = next(line for line in two.splitlines() if line.startswith("| none "))
    assert "| 49.5 " in row and "| 90.0 " in row and "| 53.5 " in row  # (50+49)/2, 90, (55+52)/2
    assert "Alignment" in text and "| 0.500 " in text
    header = text.splitlines()[0]  # cross- and bi-encoder accuracy: never one average
    assert "| PI acc |" in squeezed(header) and "| PI acc (cross-encoder) |" in squeezed(header)
    assert "Avg." not in header


def test_the_papers_claims_are_judged_over_seeds():
    results, groups = _results()
    summary = sm.build_summary(results, ["pi_xling", "paws_xling"], "all", groups)
    by = {c["claim"]: c for c in summary["claims"]}
    full = by[sm.PI_CLAIMS[0][0]]  # the full method above the base: one-sample, 3 seeds
    assert full["holds"] and sm.verdict(full) == "holds" and full["n_seeds"] == [3]
    mining = by[sm.PI_CLAIMS[1][0]]  # ams_full − ams_hn: Welch over 3 and 3 seeds
    # 3 points apart on every set but the translation pairs: 2 on the mean of the classes
    assert mining["diff"] == pytest.approx(2.0) and mining["n_seeds"] == [3, 3]
    within = by[sm.PI_CLAIMS[3][0]]  # ams_full vs 0.9 × cross-encoder (Table I's means)
    ce = np.mean([np.mean([v - 2, 70.0, (v + v - 2) / 2]) for v in (80.0, 82.0, 81.0)])
    bi = np.mean([_paper_mean(results[r]["pi_xling"]["breakdown"]) for r in groups["ams_full"]])
    assert within["diff"] == pytest.approx(bi - 0.9 * ce)
    assert sm.verdict(within) == ("holds" if within["holds"] else "does not hold")
    text = sm.to_markdown(summary)
    assert sm.PI_MEASURES["pi_ja"] in text  # the claim's "On" names its PI accuracy
    # the paper presets' rows (labse_*): the same tests, the base's one value included
    labse = {f"labse_{name}": [f"labse_{r}" for r in runs] for name, runs in groups.items()}
    renamed = {f"labse_{r}": v for r, v in results.items()}
    tested = sm.build_summary(renamed, ["pi_xling", "paws_xling"], "all", labse)["claims"]
    assert [(c["method"], c["other"], c["n_seeds"], c["p"]) for c in tested] == [
        (f"labse_{c['method']}", _labse(c["other"]), c["n_seeds"], c["p"]) for c in summary["claims"]
    ]  # fmt: skip


def _paper_mean(sets: dict) -> float:
    """Table I's mean worked out by hand: inter-para, inter-same and intra, each once."""
    inter_para = (sets["en_ja"] + sets["ja_en"]) / 2
    return (inter_para + sets["translation"] + (sets["en"] + sets["ja"]) / 2) / 3


def _scored_on(job: dict, positives: dict[str, int], pairs: int = 100) -> dict:
    """A job's JSON with the sample records of its scored sets: `positives` of `pairs`."""
    record = lambda k: {"pairs": pairs, "strata": {"1": {"pairs": positives[k]}}}  # noqa: E731
    if job["kind"] == "finetune":
        return {**job, "samples": {"test" if k == "en" else k: record(k) for k in positives}}
    further = {k: {"accuracy": job["breakdown"][k], "pairs": pairs, "sample": record(k)}
               for k in positives if k != "en"}  # fmt: skip
    return {**job, "test_pairs": pairs, "samples": {"test": record("en")}, "eval_sets": further}


SHARES = {"en": 44, "ja": 44, "en_ja": 44, "ja_en": 44, "translation": 100}
CHANCE = (44 + 100 + 44) / 3  # accept every pair: Table I's mean of the classes' shares


def _at_chance_results(none_sets: dict, cross: list[float]) -> tuple[dict, dict]:
    results, groups = _results()
    results = {n: {**r, "pi_xling": _scored_on(r["pi_xling"], SHARES)} for n, r in results.items()}
    none = results["none"]
    none["pi_xling"]["breakdown"] = none_sets
    none["paws_xling"] = _scored_on(_cross(cross), SHARES)
    return results, groups


def test_chance_is_the_better_constant_answer_on_each_measure():
    results, groups = _at_chance_results(dict.fromkeys(SHARES, 80.0), [80.0, 82.0, 81.0])
    chance = sm.build_summary(results, ["pi_xling", "paws_xling"], "all", groups)["pi_xling"][
        "chance"
    ]
    assert chance["pi_mean"] == pytest.approx(CHANCE)  # accept all beats reject all (37.3)
    assert chance["pi_ja"] == pytest.approx(56.0) and chance["pi_cross"] == pytest.approx(56.0)


def test_a_claim_against_a_reference_at_chance_is_not_testable():
    # none as the committed jobs had it: every cross pair rejected, every ja pair accepted
    low = {"en": 56.0, "ja": 44.0, "en_ja": 56.0, "ja_en": 56.0, "translation": 0.0}
    results, groups = _at_chance_results(low, [60.0, 70.0, 80.0])
    summary = sm.build_summary(results, ["pi_xling", "paws_xling"], "all", groups)
    by = {c["claim"]: c for c in summary["claims"]}
    full = by[sm.PI_CLAIMS[0][0]]  # ams_full above none: holds as a test, none below chance
    assert full["holds"] and sm.verdict(full) == (
        f"not testable: none at chance ({_paper_mean(low):.1f}; chance {CHANCE:.1f})"
    )
    mining = by[sm.PI_CLAIMS[1][0]]  # ams_hn is well above chance: tested
    assert sm.verdict(mining) in ("holds", "does not hold")
    within = by[sm.PI_CLAIMS[3][0]]  # the cross-encoder: 69.0 ± 6.7, 6.3 above chance
    assert sm.verdict(within).startswith("not testable: cross-encoder at chance (69.0 ± 6.7;")
    table = sm.to_markdown(summary)
    assert "not testable: cross-encoder at chance" in table and "reference at chance" in table
    tight = _at_chance_results(dict.fromkeys(SHARES, 80.0), [66.0, 67.0, 68.0])
    summary = sm.build_summary(*tight[:1], ["pi_xling", "paws_xling"], "all", tight[1])
    by = {c["claim"]: c for c in summary["claims"]}
    assert sm.verdict(by[sm.PI_CLAIMS[0][0]]) in ("holds", "does not hold")  # none at 83.3
    assert "not_testable" not in by[sm.PI_CLAIMS[3][0]]  # 67.0 ± 0.7: above 62.7 by > sd


def test_each_figure_is_printed_once_with_one_value():
    """The cross-encoder's mean is Table I's in the main table too (not its English
    accuracy), and the PI jobs' sets are in Table II alone (no per-set table besides)."""
    results, groups = _results()
    summary = sm.build_summary(results, ["pi_xling", "paws_xling"], "all", groups)
    text = sm.to_markdown(summary)
    ce = f"{np.mean([np.mean([v - 2, 70.0, v - 1]) for v in (80.0, 82.0, 81.0)]):.1f}"
    main = [c.strip() for c in text.splitlines()[2].split("|")[1:-1]]  # none's row
    one = next(r for r in text.splitlines() if r.startswith("| cross-encoder (3 seeds)"))
    bi = f"{_paper_mean(results['none']['pi_xling']['breakdown']):.1f}"
    # none; its cross-encoder's cell; its bi-encoder cell, PI average, Δ, p; cross-encoder average
    assert main == ["none", f"{ce} ± 0.7", bi, bi, "", "", ce, "", ""]
    assert f"| {ce} ± 0.7 " in one  # Table I: the same value (not 81.0, its English accuracy)
    assert " by set (" not in text


def test_jobs_measured_with_the_english_only_threshold_are_marked_for_re_measuring():
    results, groups = _results()
    text = sm.to_markdown(sm.build_summary(results, ["pi_xling", "paws_xling"], "all", groups))
    assert (
        "held-out English pairs alone" in text
        and "Re-measure with `paracl preset pi-en-ja`" in text
    )
    assert "ROC AUC: not recorded by these jobs" in text
    for per in results.values():  # the same jobs measured the new way, with their AUC
        per["pi_xling"] |= {"threshold_on": ["en", "ja"], "auc": 70.0,
                            "classes": {"intra": {"auc": 71.0}}}  # fmt: skip
    summary = sm.build_summary(results, ["pi_xling", "paws_xling"], "all", groups)
    text = sm.to_markdown(summary)
    assert "Re-measure" not in text and "drawn like the scored ones" in text
    two = text[text.index("Table II (") :].splitlines()
    row = next(r for r in two if r.startswith("| ams_full "))
    assert "/ 71.0 ± 0.0" in row and "/ 70.0 ± 0.0" in row  # intra's AUC, en's AUC


def _labse(row: str) -> str:
    return "labse_none + cross-encoder" if row == sm.CROSS_ENCODER else f"labse_{row}"


def test_cross_pairs_of_googles_layout_are_aligned_by_id(tmp_path):
    """x-final (the paper presets' PAWS-X): a header and an id per pair, checked line by line."""
    en, ja = tmp_path / "en.tsv", tmp_path / "ja.tsv"
    en.write_text(HEADER + "7\tea\teb\t1\n8\tec\ted\t0\n", encoding="utf-8")
    ja.write_text(HEADER + "7\tja\tjb\t1\n8\tjc\tjd\t0\n", encoding="utf-8")
    pairs = readers.read_pawsx_cross(en, ja, "en_ja")
    assert pairs.values.tolist() == [["ea", "jb", "1"], ["ec", "jd", "0"]]
    ja.write_text(HEADER + "8\tjc\tjd\t0\n7\tja\tjb\t1\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"ja.tsv:2: id '8', not line-aligned"):
        readers.read_pawsx_cross(en, ja, "en_ja")


def test_bi_encoder_and_cross_encoder_jobs_end_to_end(tiny_bert, tmp_path, one_thread):
    """On the tiny BERT: the pi_xling job and the cross-encoder (paws_xling fine-tuned),
    then the summary's Table I from their JSON, as the preset's stages run them."""
    from paracl.core.params import RunSettings
    from paracl.stages.evaluate import run_job
    from paracl.stages.evaluate_finetune import run_finetune_job

    words = "a man dog runs sat the cat big red old city river".split()
    rng = np.random.default_rng(0)
    sent = lambda: " ".join(rng.choice(words, 5)) + " ."  # noqa: E731
    rows = lambda n: [(sent(), sent(), str(i % 2)) for i in range(n)]  # noqa: E731
    xen = rows(12)
    xja = [(f"{a}ja", f"{b}ja", y) for a, b, y in xen]
    raw = _raw(tmp_path, rows(40), xen, xja, wiki_test=rows(12))
    cfg = {"raw_dir": raw, "max_eval_pairs": None, "encode_batch_size": 16, "seeds": [1, 2],
           "epochs": 1, "lr": 1e-3, "batch_size": 8, "patience": 1, "max_train": None,
           "max_dev": None, "max_test": 8, "max_seq_length": 32, "missing_splits": "resplit",
           "dev_fraction": 0.1, "test_fraction": 0.2, "train_layers": None,
           "length_grouping": False, "mini_batch_size": None, "finetune_head": "last_token",
           "baseline_seeds": None}  # fmt: skip
    run = RunSettings(seed=0, lang="en", device="cpu", precision="fp32")  # the run-wide keys
    bi = run_job("none", "pi_xling", tiny_bert, cfg, run)
    assert set(bi["breakdown"]) == {"en", "ja", "en_ja", "ja_en", "translation"}
    # 20 % of 40 English pairs, fixed, and PAWS-X dev's threshold half: 6 of 12 lines
    # (ja, en_ja, ja_en: a pair each; translation: two)
    assert bi["selection_pairs"] == 8 + 6 * 3 + 12 and bi["parameters"] > 0
    assert bi["threshold_on"] == ["en", "ja", "en_ja", "ja_en", "translation"]
    pairs = {"en": bi["test_pairs"], **{k: v["pairs"] for k, v in bi["eval_sets"].items()}}
    assert bi["score"] == pytest.approx(paper_mean(bi["breakdown"], pairs))  # Table I's mean
    ce = run_finetune_job("none", "paws_xling", tiny_bert, cfg, run)
    assert set(ce["eval_sets"]) == {"ja", "en_ja", "ja_en", "translation"}
    assert ce["samples"]["ja"]["pairs"] == 6 and len(ce["runs"]) == 2  # the scored half
    summary = sm.build_summary({"none": {"pi_xling": bi, "paws_xling": ce}},
                               ["pi_xling", "paws_xling"], "all")  # fmt: skip
    rows_ = summary["pi_xling"]["rows"]
    assert rows_["none"]["type"] == "Bi-encoder" and rows_["cross-encoder"]["mean"]["n"] == 2
    assert "| cross-encoder" in sm.to_markdown(summary)


@pytest.mark.parametrize("entry", [
    {"loss": "infonce"},
    {"loss": "ams", "mega_batch": 1, "mine_k": 0, "hard_negatives": False},
    {"loss": "ams", "mega_batch": 2, "mine_k": 2, "mine_rule": "threshold", "threshold": 0.0},
])  # fmt: skip
def test_the_rows_train_on_the_tasks_train_split(entry, tiny_bert, tmp_path, one_thread):
    """Each trained row of the preset, on the tiny BERT: PAWS pairs without a partner keep
    an empty negative, and training reads paws_xling's train split through `task`."""
    import yaml

    from paracl.stages.train_contrastive.training.methods import (
        method_spec,
        run_config,
        train_method,
    )

    rows = [(f"s{i} a b .", f"a b s{i} .", "1") for i in range(20)]
    rows += [(f"s{i} a b .", f"b a s{i} .", "0") for i in range(0, 20, 2)]
    (tmp_path / "raw").mkdir()
    raw = _raw(tmp_path / "raw", rows, [("x", "y", "1")], [("x", "y", "1")])
    dev = tmp_path / "sts-dev.csv"
    dev.write_text("".join(f"g\tf\t2012\t{i}\t{i % 5}.0\ts{i} a\ts{i} b\n" for i in range(8)))
    spec = method_spec("row", {**entry, "input": f"{raw}/paws-wiki/dev.tsv", "task": "paws_xling"})
    tc = yaml.safe_load(open("params.yaml"))["train_contrastive"]
    cfg = run_config(spec, {"precision": "fp32", **tc}) | {
        "base_model": str(tiny_bert),
        "batch_size": 4,
        "max_examples": None,
        "dev_max_pairs": None,
    }
    metrics = train_method(spec, cfg, 1, torch.device("cpu"), tmp_path / "enc", str(dev))
    assert metrics["examples"] == 16  # 20 positives, a fixed 20 % of all 30 pairs held out
    assert metrics["steps"] == 4 and (tmp_path / "enc").is_dir()


def test_the_results_page_shows_the_pi_papers_tables_as_their_own_part():
    """docs/presets-pi.md's `<!-- report:pi-en-ja:pi -->` block: Table I, Table II and the
    embedding space, without the main table or the claims (their own parts)."""
    from paracl.report import split_parts

    results, groups = _results()
    text = sm.to_markdown(sm.build_summary(results, ["pi_xling", "paws_xling"], "all", groups))
    pi = split_parts(text)["pi"]
    assert pi.startswith("Table I (") and "Table II" in pi and "Embedding space" in pi
    assert "The papers' claims" not in pi and "| Method " not in pi
    only_base = sm.build_summary({"none": results["none"]}, ["pi_xling", "paws_xling"], "all")
    assert split_parts(sm.to_markdown(only_base))["pi"].startswith("Table I (")  # no claims yet


def test_the_pi_tables_keep_the_papers_row_order_through_the_committed_json():
    """summary.json is written with sorted keys; the page renders Table I as the paper
    orders it: the base, its cross-encoder, then the ablations up to the full method."""
    import json

    from paracl.report import ordered

    results, groups = _results()
    summary = sm.build_summary(results, ["pi_xling", "paws_xling"], "all", groups)
    committed = json.loads(json.dumps(summary, sort_keys=True))
    rows = list(ordered(committed)["pi_xling"]["rows"])
    assert rows == ["none", "cross-encoder", "ams_pos", "ams_hn", "ams_full"]
