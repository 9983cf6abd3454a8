"""End to end on fixtures with the tiny BERT: unsupervised STS, cosine-threshold PI, a
tiny fine-tune with early stopping, the stage script, and the summary table."""

from __future__ import annotations

import json
import math
import random
import sys
from pathlib import Path

import pytest
import torch
from conftest import part_config
from stage_helpers import load_stage, run_stage, squeezed

from paracl.core.params import ParamsError, RunSettings
from paracl.parts.encoder.build import build_encoder, save_encoder
from paracl.parts.encoder.embed import EmbeddingCache, load_encoder
from paracl.parts.evaluation.tasks import load_task
from paracl.parts.evaluation.unsup_sts import evaluate_unsup_sts, sts_sets
from paracl.parts.finetune.tuning import FinetuneConfig, finetune_task
from paracl.schema import load_params
from paracl.stages.evaluate import run_job
from paracl.stages.evaluate_finetune import finetune_seeds, run_finetune_job
from paracl.stages.summary import build_summary, load_results, to_markdown

REPO = Path(__file__).resolve().parents[2]
WORDS = "a man is playing guitar on the stage cat sat mat dogs running field woman".split()
CPU = torch.device("cpu")

# tiny models on shared cores: one torch thread (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("one_thread")


def _sent(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 7))) + " ."


def make_raw(root: Path, n: int = 24) -> Path:
    """A miniature data/raw with the mirror's file formats (random sentences)."""
    rng = random.Random(0)
    for year in ("STS12", "STS13", "STS14", "STS15", "STS16"):
        d = root / "sts12-16" / f"{year}-en-test"
        d.mkdir(parents=True)
        pairs = [(_sent(rng), _sent(rng)) for _ in range(n)]
        (d / "STS.input.sub.txt").write_text("".join(f"{a}\t{b}\n" for a, b in pairs))
        (d / "STS.gs.sub.txt").write_text("".join(f"{rng.uniform(0, 5):.2f}\n" for _ in pairs))
    d = root / "stsbenchmark"
    d.mkdir()
    for split in ("train", "dev", "test"):
        rows = [f"g\tf\t2012\t{i:04d}\t{rng.uniform(0, 5):.3f}\t{_sent(rng)}\t{_sent(rng)}\n"
                for i in range(n)]  # fmt: skip
        (d / f"sts-{split}.csv").write_text("".join(rows))
    (root / "sick").mkdir()
    header = ("pair_ID\tsentence_A\tsentence_B\tentailment_label\trelatedness_score\t"
              "entailment_AB\tentailment_BA\tA_o\tB_o\tA_d\tB_d\tSemEval_set")  # fmt: skip
    rows = [
        f"{i}\t{_sent(rng)}\t{_sent(rng)}\t{rng.choice(['NEUTRAL', 'ENTAILMENT', 'CONTRADICTION'])}"
        f"\t{rng.uniform(1, 5):.1f}\tx\tx\tx\tx\tF\tF\t{['TRAIN', 'TRIAL', 'TEST'][i % 3]}"
        for i in range(3 * n)
    ]
    (root / "sick" / "SICK.txt").write_bytes(("\r\n".join([header, *rows])).encode())
    (root / "paws-wiki").mkdir()
    for split in ("dev", "test"):
        rows = [f"{i}\t{_sent(rng)}\t{_sent(rng)}\t{i % 2}\r\n" for i in range(2 * n)]
        (root / "paws-wiki" / f"{split}.tsv").write_text(
            "id\tsentence1\tsentence2\tlabel\r\n" + "".join(rows))  # fmt: skip
    (root / "glue" / "MRPC").mkdir(parents=True)
    for split in ("train", "test"):
        rows = [f"{i % 2}\t1\t2\t{_sent(rng)}\t{_sent(rng)}\n" for i in range(n)]
        (root / "glue" / "MRPC" / f"msr_paraphrase_{split}.txt").write_text(
            "\ufeffQuality\t#1 ID\t#2 ID\t#1 String\t#2 String\n" + "".join(rows))  # fmt: skip
    return root


@pytest.fixture(scope="module")
def raw(tmp_path_factory) -> Path:
    return make_raw(tmp_path_factory.mktemp("raw"))


CFG = {
    "raw_dir": None, "seeds": [1, 2], "epochs": 2, "lr": 1e-3, "batch_size": 8, "patience": 1,
    "max_train": 16, "max_dev": None, "max_eval_pairs": None, "max_seq_length": 32,
    "encode_batch_size": 16, "missing_splits": "resplit", "dev_fraction": 0.1,
    "test_fraction": 0.2, "max_test": None, "train_layers": None,
    "length_grouping": False, "mini_batch_size": None, "finetune_head": "last_token",
    "baseline_seeds": None,
}  # fmt: skip
RUN = RunSettings(seed=0, lang="en", device="cpu", precision="fp32")  # the run-wide keys


def test_unsup_sts_encodes_each_sentence_once(tiny_bert, raw):
    cache = EmbeddingCache(load_encoder(tiny_bert, CPU), batch_size=16)
    sets = sts_sets("en", raw)
    out = evaluate_unsup_sts(cache, sets)
    assert set(out["sets"]) == {"STS12", "STS13", "STS14", "STS15", "STS16", "STSBenchmark",
                                "SICKRelatedness"}  # fmt: skip
    assert cache.encoded == out["unique_sentences"] < out["total_sentences"]
    assert all(-100 <= r["spearman"] <= 100 for r in out["sets"].values())
    assert out["embedding_space"]["uniformity"] <= 0
    before = cache.encoded
    evaluate_unsup_sts(cache, sets)  # all cached: nothing new to encode
    assert cache.encoded == before


def test_pi_threshold_job(tiny_bert, raw):
    res = run_job("none", "pi_en", tiny_bert, {**CFG, "raw_dir": raw}, RUN)
    assert set(res["sets"]) == {"paws", "mrpc"}
    paws, mrpc = res["sets"]["paws"], res["sets"]["mrpc"]
    # PAWS: threshold on PAWS-Wiki dev (all of it: its re-split train ∪ dev), test = test
    assert res["official_split"] is True and paws["selection_pairs"] == paws["test_pairs"] == 48
    assert mrpc["official_split"] is True  # official train → official test
    assert 0 <= res["score"] <= 100
    assert mrpc["test_pairs"] == 24 and mrpc["provenance"]["threshold"] == "train ∪ dev"
    capped = run_job("none", "pi_en", tiny_bert, {**CFG, "raw_dir": raw, "max_eval_pairs": 10}, RUN)
    sample = capped["sets"]["paws"]["samples"]["test"]
    assert sample["pairs"] == 10 and sample["strata"] == {
        "0": {"pairs": 5, "of": 24},
        "1": {"pairs": 5, "of": 24},
    }
    assert "seeded sample of at most 10" in capped["split_note"]


def test_finetune_regression_and_classification(tiny_bert, raw):
    cfg = part_config(
        FinetuneConfig, epochs=2, lr=1e-3, batch_size=8, max_seq_length=32, patience=1
    )
    data = load_task("stsb", raw, seed=0)
    out = finetune_task(tiny_bert, data, cfg, seeds=[1, 2], device=CPU)
    assert out["metric"] == "spearman" and out["test"]["n"] == 2
    assert out["ran_in"]["precision"] == "fp32"  # auto, resolved (the suite: no native bf16)
    assert {"spearman", "pearson"} <= set(out["runs"][0]["test"])
    assert all(1 <= r["best_epoch"] <= r["epochs_run"] <= 2 for r in out["runs"])
    again = finetune_task(tiny_bert, data, cfg, seeds=[1], device=CPU)
    assert again["runs"][0]["test"] == out["runs"][0]["test"]  # same seed → same result
    cls = finetune_task(tiny_bert, load_task("sicke", raw, seed=0), cfg, [3], CPU)
    assert cls["metric"] == "macro_f1" and 0 <= cls["test"]["mean"] <= 100


def test_finetune_and_unsup_sts_on_a_causal_lm_encoder(tiny_llama, raw, tmp_path):
    """A causal LM encoder as train_contrastive saves it (no pad token in its config) is
    evaluated the same way: its task head reads the pair's closing <eos> by default, its
    own (weighted-mean) embedding of the pair with evaluate.finetune_head pooled."""
    encoder = tmp_path / "encoder"
    save_encoder(build_encoder(tiny_llama, "weighted_mean", None), encoder)
    cfg = part_config(
        FinetuneConfig, epochs=1, lr=1e-3, batch_size=8, max_seq_length=32, patience=1
    )
    out = finetune_task(encoder, load_task("stsb", raw, seed=0), cfg, seeds=[1], device=CPU)
    assert out["metric"] == "spearman" and math.isfinite(out["test"]["mean"])
    assert out["runs"][0]["head"] == "closing <eos>" and out["config"]["head"] == "last_token"
    cfg = {**CFG, "raw_dir": raw, "seeds": [1], "epochs": 1, "finetune_head": "pooled"}
    pooled = run_finetune_job("none", "stsb", encoder, cfg, RUN)
    assert pooled["config"]["head"] == "pooled"
    assert pooled["runs"][0]["head"] == "sentence embedding (weightedmean pooling)"
    res = run_job("none", "unsup_sts_en", encoder, {**CFG, "raw_dir": raw}, RUN)
    assert math.isfinite(res["score"])


def test_a_causal_lm_reads_a_pair_as_gpt_did(tiny_llama, tmp_path):
    """A causal LM's tokenizer joins a pair with nothing between; fine-tuning feeds it
    `s1 <eos> s2 <eos>` (cut longest-first, both <eos> kept), pads with a token other
    than <eos>, and the head's score is the one at the closing <eos>, padded or not."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from paracl.parts.encoder.embed import transformer_dir
    from paracl.parts.finetune.tuning import causal_pad, causal_pairs

    encoder = tmp_path / "encoder"
    save_encoder(build_encoder(tiny_llama, "mean", None), encoder)
    tok = AutoTokenizer.from_pretrained(transformer_dir(encoder))
    model = AutoModelForSequenceClassification.from_pretrained(
        transformer_dir(encoder), num_labels=1
    ).eval()
    assert tok.sep_token is None
    causal_pad(tok, model)
    eos, pad = tok.eos_token_id, tok.pad_token_id
    assert pad != eos and model.config.pad_token_id == pad
    s1, s2 = (
        ["a man is playing guitar .", "cat ."],
        ["a man plays .", "dogs running in the field ."],
    )
    enc = causal_pairs(tok, s1, s2, max_length=64)
    for row, a, b in zip(enc["input_ids"].tolist(), s1, s2, strict=True):
        first = tok(a)["input_ids"]
        real = [t for t in row if t != pad]
        assert real == [*first, eos, *tok(b, add_special_tokens=False)["input_ids"], eos]
    assert (enc["input_ids"] == pad).any()  # the shorter pair is padded
    with torch.no_grad():
        batch = model(**enc).logits[:, 0]
        alone = model(**causal_pairs(tok, s1[1:], s2[1:], 64)).logits[0, 0]
        hidden = model.model(**enc).last_hidden_state
    last = int(enc["attention_mask"][1].sum()) - 1
    assert enc["input_ids"][1, last] == eos
    assert torch.allclose(batch[1], model.score(hidden[1, last]), atol=1e-5)
    assert torch.allclose(batch[1], alone, atol=1e-5)
    cut = causal_pairs(tok, [" ".join(["word"] * 40)], ["short ."], max_length=12)["input_ids"][0]
    assert len(cut) == 12 and cut[-1] == eos and (cut == eos).sum() == 2


def test_a_causal_lms_pooled_head_reads_its_sentence_embedding_of_the_pair(tiny_llama, tmp_path):
    """evaluate.finetune_head pooled: the head is a linear layer on what the saved encoder
    outputs for `s1 <eos> s2 <eos>` (here its mean over the real tokens), whatever the
    batch's padding; last_token keeps transformers' head; anything else is refused."""
    from transformers import AutoTokenizer

    from paracl.core.errors import InputError
    from paracl.parts.encoder.embed import transformer_dir
    from paracl.parts.evaluation.tasks import get_task
    from paracl.parts.finetune.tuning import causal_pairs, task_model

    encoder = tmp_path / "encoder"
    save_encoder(build_encoder(tiny_llama, "mean", None), encoder)
    tok = AutoTokenizer.from_pretrained(transformer_dir(encoder))
    model, reads = task_model(encoder, tok, get_task("stsb"), "pooled")
    assert reads == "sentence embedding (mean pooling)" and tok.pad_token_id != tok.eos_token_id
    s1, s2 = ["a man is playing guitar .", "cat ."], ["a man plays .", "dogs running ."]
    enc = causal_pairs(tok, s1, s2, max_length=64)
    model.eval()
    with torch.no_grad():
        batch = model(**enc).logits[:, 0]
        alone = model(**causal_pairs(tok, s1[1:], s2[1:], 64)).logits[0, 0]
        hidden = model.base_model(**enc).last_hidden_state
    mask = enc["attention_mask"][1].bool()
    assert torch.allclose(batch[1], model.score(hidden[1][mask].mean(0))[0], atol=1e-5)
    assert torch.allclose(batch[1], alone, atol=1e-5)
    labels = torch.tensor([0.2, 0.9])
    loss = model(**enc, labels=labels).loss
    assert torch.isclose(loss, torch.nn.functional.mse_loss(batch, labels), atol=1e-6)
    sicke = get_task("sicke")
    classes, _ = task_model(encoder, tok, sicke, "pooled")
    assert classes.score.out_features == len(sicke.labels)
    _, reads = task_model(encoder, AutoTokenizer.from_pretrained(encoder), sicke, "last_token")
    assert reads == "closing <eos>"
    with pytest.raises(InputError, match="evaluate.finetune_head"):
        task_model(encoder, tok, sicke, "cls")


@pytest.mark.parametrize("task", ["stsb", "sicke"])
def test_finetune_mini_batches_give_the_whole_batchs_gradient(task, tiny_llama, raw, tmp_path):
    """evaluate.mini_batch_size: a batch run in length-sorted chunks (each padded to its
    own longest pair) accumulates the gradient of the whole batch's mean loss, for a
    regression and a classification head, and pads fewer tokens."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from paracl.core.device import grad_scaler
    from paracl.parts.encoder.embed import transformer_dir
    from paracl.parts.finetune.tuning import (
        TrainTokens,
        causal_pad,
        chunks,
        task_targets,
        token_counts,
        train_step,
    )

    encoder = tmp_path / "encoder"
    save_encoder(build_encoder(tiny_llama, "mean", None), encoder)
    data = load_task(task, raw, seed=0)
    labels = {"num_labels": 1} if task == "stsb" else {"num_labels": len(data.task.labels)}
    tok = AutoTokenizer.from_pretrained(transformer_dir(encoder))
    torch.manual_seed(0)
    model = AutoModelForSequenceClassification.from_pretrained(
        transformer_dir(encoder), **labels
    ).eval()  # no dropout: the two runs see the same function
    causal_pad(tok, model)
    cfg = part_config(FinetuneConfig, epochs=1, lr=1e-3, batch_size=8, max_seq_length=64)
    lengths, y = token_counts(tok, data, 64), task_targets(data.train, data, "train")
    tokens = TrainTokens(tok, data.train, y, 64)
    assert tokens.lengths == lengths
    batch = list(range(8))

    def grads(parts):
        model.zero_grad(set_to_none=True)
        scaler = grad_scaler(CPU, precision="fp32")
        loss = float(train_step(model, tokens, parts, cfg, CPU, scaler).sum())
        return loss, {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}

    whole_loss, whole = grads(chunks(batch, lengths, None))
    parts = chunks(batch, lengths, 3)
    assert [len(p) for p in parts] == [3, 3, 2] and sorted(sum(parts, [])) == batch
    assert [lengths[i] for i in sum(parts, [])] == sorted(lengths[i] for i in batch)
    split_loss, split = grads(parts)
    assert split_loss == pytest.approx(whole_loss, rel=1e-5) and split.keys() == whole.keys()
    for name, g in whole.items():
        assert torch.allclose(split[name], g, atol=1e-6, rtol=1e-4), name
    padded = sum(len(p) * max(lengths[i] for i in p) for p in parts)
    assert padded <= len(batch) * max(lengths[i] for i in batch)


def test_finetune_top_layers_trains_them_and_the_head_only(tiny_llama, raw, tmp_path):
    """evaluate.train_layers (the effect presets' CPU cut): the top N layers and the new
    task head change, every layer below keeps its weights, and the result says so."""
    from transformers import AutoModelForSequenceClassification

    from paracl.parts.encoder.embed import transformer_dir
    from paracl.parts.finetune.tuning import trainable

    encoder = tmp_path / "encoder"
    save_encoder(build_encoder(tiny_llama, "mean", None), encoder)
    model = AutoModelForSequenceClassification.from_pretrained(
        transformer_dir(encoder), num_labels=1
    )
    n_layers = len(model.model.layers)
    assert trainable(model, 1) == f"1 of {n_layers}"
    grads = {n for n, p in model.named_parameters() if p.requires_grad}
    assert any(n.startswith("score.") for n in grads)  # the head
    assert any(f"layers.{n_layers - 1}." in n for n in grads)
    assert not any("layers.0." in n or "embed_tokens" in n for n in grads)
    own = {"lr": 1e-2, "batch_size": 8, "max_seq_length": 32, "patience": 1, "train_layers": 1}
    cfg = part_config(FinetuneConfig, epochs=1, **own)
    out = finetune_task(encoder, load_task("stsb", raw, seed=0), cfg, seeds=[1], device=CPU)
    assert (
        out["runs"][0]["trained_layers"] == f"1 of {n_layers}"
        and out["config"]["train_layers"] == 1
    )


def test_finetune_batches_random_as_before_or_grouped_by_length(tiny_bert, raw):
    """evaluate.length_grouping: false keeps the seeded random order (the permutation the
    fine-tuning always drew); true batches pairs of similar token length, each pair once
    an epoch, with less padding, and the result's config says which."""
    from transformers import AutoTokenizer

    from paracl.core.batching import batch_order
    from paracl.parts.encoder.embed import transformer_dir
    from paracl.parts.finetune.tuning import token_counts

    gen, old = torch.Generator().manual_seed(5), torch.Generator().manual_seed(5)
    plain = batch_order(50, 8, gen)
    assert [i for b in plain for i in b] == torch.randperm(50, generator=old).tolist()
    data = load_task("stsb", raw, seed=0)
    lengths = token_counts(AutoTokenizer.from_pretrained(transformer_dir(tiny_bert)), data, 64)
    assert len(lengths) == len(data.train) and min(lengths) > 2
    grouped = batch_order(len(lengths), 4, torch.Generator().manual_seed(1), lengths)
    assert sorted(i for b in grouped for i in b) == list(range(len(lengths)))

    def padded(batches):
        return sum(len(b) * max(lengths[i] for i in b) for b in batches)

    assert padded(grouped) < padded(batch_order(len(lengths), 4, torch.Generator().manual_seed(1)))
    cfg = part_config(
        FinetuneConfig, epochs=1, lr=1e-3, batch_size=4, max_seq_length=64, length_grouping=True
    )
    out = finetune_task(tiny_bert, data, cfg, seeds=[1], device=CPU)
    assert out["config"]["length_grouping"] is True and math.isfinite(out["test"]["mean"])


def test_finetune_job_scores_a_seeded_sample_of_the_test_split(tiny_bert, raw):
    """evaluate.max_test: a seeded sample of the whole test split (recorded), not its
    first rows; null keeps the whole split."""
    cfg = {**CFG, "raw_dir": raw, "seeds": [1], "epochs": 1, "max_test": 10}
    res = run_finetune_job("none", "stsb", tiny_bert, cfg, RUN)
    assert res["sizes"]["test"] == 10 and res["samples"]["test"]["pairs"] == 10
    assert res["samples"]["test"]["of"] == 24 and res["samples"]["test"]["stratified_by"] == "genre"
    assert "capped to a seeded sample of 10" in res["provenance"]["test"]
    whole = run_finetune_job("none", "stsb", tiny_bert, {**cfg, "max_test": None}, RUN)
    assert whole["sizes"]["test"] == 24


def test_the_base_is_fine_tuned_with_the_baseline_seeds(tiny_bert, raw, tmp_path):
    """evaluate.baseline_seeds: a run that trained nothing (its training metrics say loss
    none) is fine-tuned with them, so its fine-tuned score has a spread; a trained run
    keeps evaluate.seeds (its training seeds give its spread)."""
    base, trained = tmp_path / "none.json", tmp_path / "ppdb_s1.json"
    base.write_text(json.dumps({"method": "none", "loss": "none"}))
    trained.write_text(json.dumps({"method": "ppdb", "loss": "MNRL(InfoNCE)"}))
    cfg = {**CFG, "raw_dir": raw, "seeds": [1], "baseline_seeds": [1, 2], "epochs": 1}
    res = run_finetune_job("none", "stsb", tiny_bert, cfg, RUN, train_metrics=base)
    assert [r["seed"] for r in res["runs"]] == [1, 2] and res["test"]["n"] == 2
    # each seed's dev score (the early-stopping epoch's, on the dev split) and their mean:
    # what the summary's dev average, and so PPDB's θ choice, is made of
    devs = [r["dev"] for r in res["runs"]]
    assert res["dev"]["n"] == 2 and res["dev_score"] == pytest.approx(sum(devs) / 2)
    assert finetune_seeds(cfg, trained) == [1]
    assert finetune_seeds({**cfg, "baseline_seeds": None}, base) == [1]
    assert finetune_seeds(cfg, None) == [1]  # no training metrics: nothing says it is the base


def test_stage_and_summary(tiny_bert, raw, tmp_path, monkeypatch):
    """stages/evaluate.py and stages/evaluate_finetune.py in a scratch repo, then the
    summary table over their outputs."""
    (tmp_path / "models/encoders").mkdir(parents=True)
    (tmp_path / "models/encoders/none").symlink_to(tiny_bert)
    params = (REPO / "params.yaml").read_text()
    params = params.replace("raw_dir: data/raw", f"raw_dir: {raw}")
    params = params.replace("max_train: 1000", "max_train: 16")
    for key, value in (("finetune_tasks", "[stsb]"), ("finetune_methods", "[none]"),
                       ("finetune_runs", "[none]")):  # fmt: skip
        params = params.replace(f"  {key}: []", f"  {key}: {value}")
    (tmp_path / "params.yaml").write_text(params)
    (tmp_path / "metrics/train").mkdir(parents=True)
    (tmp_path / "metrics/train/none.json").write_text('{"model": {"id": "tiny/bert"}}')
    monkeypatch.chdir(tmp_path)
    params = load_params()
    params["evaluate"]["finetune_tasks"] = ["stsb", "snli"]
    for task in params["evaluate"]["finetune_tasks"]:
        run_stage(f"evaluate_finetune@none-{task}", params)
    stsb = json.loads((tmp_path / "metrics/eval/none/stsb.json").read_text())
    assert stsb["official_split"] is True
    assert stsb["encoder"]["base_model"]["id"] == "tiny/bert"  # from the training metrics
    snli = json.loads((tmp_path / "metrics/eval/none/snli.json").read_text())
    assert snli["score"] is None and "not in the offline mirror" in snli["skipped"]
    argv = ["evaluate.py", "none", "nope", "models/encoders/none", "metrics/train/none.json", "x"]
    monkeypatch.setattr(sys, "argv", argv)
    with pytest.raises(ParamsError, match="'nope' is not one of this stage's jobs"):
        load_stage("evaluate").main(load_params())
    argv[2] = "unsup_sts_en"  # an embedding job in the fine-tuning stage: named, refused
    with pytest.raises(
        ParamsError,
        match=r"'unsup_sts_en' is not one of this stage's jobs \(it belongs in evaluate.tasks",
    ):
        load_stage("evaluate_finetune").main(load_params())

    run_stage("summary", load_params())  # the params file's tasks: some not run here
    table = squeezed((tmp_path / "metrics/summary.md").read_text())
    assert "| none |" in table and "STS-B (spearman)" in table and "- none: tiny/bert" in table

    results = load_results(tmp_path / "metrics/eval", ["none", "ppdb"], ["snli", "stsb"])
    summary = build_summary(results, ["snli", "stsb"])
    assert [c["task"] for c in summary["columns"]] == ["stsb", "snli"]  # Table 3 order
    assert summary["methods"]["none"]["avg"] is None  # SNLI missing → no average
    md = squeezed(to_markdown(summary))
    assert "| none | " in md and "n/a" in md and "not in the offline mirror" in md
    only = build_summary(results, ["stsb"])
    assert only["methods"]["none"]["avg"] == pytest.approx(stsb["score"])


SCORED_ON_SIX = ["STS12", "STS13", "STS14", "STS15", "STS16", "STSBenchmark"]


def test_a_row_trained_on_sick_is_scored_only_on_the_sets_its_data_was_checked_against(
    tiny_bert, raw, tmp_path
):
    """SICK-R is SICK's TEST split: nli_triplets checks the triplets against the six other
    sets, the training run records that check, and evaluation scores exactly those six
    (their average), says why SICK-R has no number, and refuses to score SICK-R."""
    from paracl.core.errors import ParamsError as Refused
    from paracl.core.io import read_parquet, write_json
    from paracl.parts.nli import sts_sentences
    from paracl.stages import nli_triplets
    from paracl.stages.train_contrastive.training.data import training_record

    cfg = {"source": "sick", "splits": ["TRAIN"], "exclude_sts": SCORED_ON_SIX,
           "match": "folded", "max_triplets": None}  # fmt: skip
    nli_triplets.build(cfg, raw, tmp_path / "triplets.parquet")
    record = training_record(tmp_path / "triplets.parquet")
    assert record == {"source": "sick", "exclude_sts": SCORED_ON_SIX}
    train_metrics = tmp_path / "train.json"
    write_json({"method": "sup", "training_data": record}, train_metrics)
    with pytest.raises(Refused, match="evaluate.exclude_sts.*SICKRelatedness"):
        run_job("sup", "unsup_sts_en", tiny_bert, {**CFG, "raw_dir": raw, "exclude_sts": []},
                RUN, train_metrics)  # fmt: skip
    cfg_eval = {**CFG, "raw_dir": raw, "exclude_sts": ["SICKRelatedness"]}
    res = run_job("sup", "unsup_sts_en", tiny_bert, cfg_eval, RUN, train_metrics)
    assert list(res["sets"]) == SCORED_ON_SIX
    assert res["score"] == pytest.approx(sum(v["spearman"] for v in res["sets"].values()) / 6)
    assert res["excluded_sets"]["SICKRelatedness"].startswith("trained on SICK")
    # never a pair whose sentence a scored set holds (compared as nli_triplets compares them)
    sets = sts_sets("en", raw)
    scored = sts_sentences({n: sets[n] for n in res["sets"]}, "folded")
    kept = read_parquet(tmp_path / "triplets.parquet")
    assert len(kept) and not any(nli_triplets.drop_leaks(kept, scored, "folded")[1].values())
    # the base (no training data) is scored on the same six, for every row alike
    base = run_job("none", "unsup_sts_en", tiny_bert, cfg_eval, RUN)
    assert list(base["sets"]) == SCORED_ON_SIX and "any row" in base["excluded_sets"][
        "SICKRelatedness"]  # fmt: skip
    md = to_markdown(build_summary({"none": {"unsup_sts_en": base}, "sup": {"unsup_sts_en": res}},
                                   ["unsup_sts_en"], "all"))  # fmt: skip
    assert "| sup " in md and "excluded: trained on SICK" in md
