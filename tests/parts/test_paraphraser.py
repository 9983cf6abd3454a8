"""Tag-controlled paraphraser: tag tokens, early stopping, length window, the decoder-only
format (labels masked on the prompt), determinism, and the stages tag → train_paraphraser
→ generate_paraphrases on tiny models (empty and non-empty sets, BART and causal LM); one
slow test fine-tunes the real packaged SmolLM2 for a few steps."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest
import torch
from conftest import params_at
from stage_helpers import run_stage
from test_roundtrip import TEXTS, own_params, write_corpus
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

from paracl.core import schemas
from paracl.core.io import read_parquet, write_parquet
from paracl.parts import paraphraser
from paracl.parts.paraphraser import causal as paraphraser_causal
from paracl.parts.tags import tagging

# tiny models on shared cores: one torch thread (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("one_thread")

LOW, HIGH = 0.75, 1.5  # the output length window generate is given (tokens, x the input's)
# params.yaml's decoding keys (generate_paraphrases) with this file's length window
WINDOW = {**{k: params_at("generate_paraphrases")[k] for k in paraphraser.DECODING},
          "min_ratio": LOW, "max_ratio": HIGH}  # fmt: skip


@pytest.fixture
def bart(tiny_bart):
    tok = AutoTokenizer.from_pretrained(tiny_bart)
    model = AutoModelForSeq2SeqLM.from_pretrained(tiny_bart).eval()
    paraphraser.add_tag_tokens(tok, model)
    return tok, model


def tagged_frame(n_train: int = 6, n_dev: int = 2, n_test: int = 2) -> pd.DataFrame:
    rows = []
    for split, n in (("train", n_train), ("dev", n_dev), ("test", n_test)):
        for i in range(n):
            text = TEXTS[i % len(TEXTS)]
            rows.append(
                {
                    "id": f"{split}-{i}",
                    "candidate": 0,
                    "text": text,
                    "paraphrase": text.replace("the", "a"),
                    "sim": 96.0,
                    "bleu": 30.0,
                    "sim_tag": "<SIM95>",
                    "bleu_tag": "<BLEU30>",
                    "split": split,
                }
            )
    df = pd.DataFrame(rows)
    df["candidate"] = df["candidate"].astype("int32")
    return df


def test_tag_tokens_are_single_special_tokens(tiny_bart):
    tok = AutoTokenizer.from_pretrained(tiny_bart)
    model = AutoModelForSeq2SeqLM.from_pretrained(tiny_bart)
    before = len(tok)
    assert paraphraser.add_tag_tokens(tok, model) == 14
    assert len(tok) == before + 14
    assert model.get_input_embeddings().weight.shape[0] >= len(tok)
    ids = tok(paraphraser.tagged_input("<SIM95><BLEU0_5>", "the cat"), add_special_tokens=False)[
        "input_ids"
    ]
    assert ids[:2] == tok.convert_tokens_to_ids(["<SIM95>", "<BLEU0_5>"])
    assert paraphraser.add_tag_tokens(tok, model) == 0  # idempotent


@pytest.mark.parametrize("n,expected", [(0, (0, 0)), (4, (3, 6)), (10, (8, 15)), (3, (3, 4))])
def test_length_window(n, expected):
    assert paraphraser.length_window(n, LOW, HIGH) == expected


def test_generation_respects_length_window(bart):
    tok, model = bart
    texts = TEXTS[:4]
    out, counts = paraphraser.generate(
        model, tok, texts, "<SIM95><BLEU20>", **{**WINDOW, "num_beams": 4, "batch_size": 3}
    )
    for text, n_out in zip(texts, counts, strict=True):
        n_in = len(tok(text, add_special_tokens=False)["input_ids"])
        assert math.ceil(LOW * n_in) <= n_out <= math.floor(HIGH * n_in)
    assert all(tag not in o for o in out for tag in tagging.ALL_TAGS)


def test_generation_is_deterministic(bart):
    tok, model = bart
    a = paraphraser.generate(model, tok, TEXTS[:2], "<SIM70><BLEU40>", **{**WINDOW, "num_beams": 3})
    b = paraphraser.generate(model, tok, TEXTS[:2], "<SIM70><BLEU40>", **{**WINDOW, "num_beams": 3})
    assert a == b


def test_early_stopping_after_patience_epochs_without_gain(bart):
    tok, model = bart
    df = tagged_frame()
    kwargs = dict(batch_size=4, max_length=64, seed=0, device=torch.device("cpu"))
    # lr 0: the dev loss never improves after epoch 1 → stop at epoch 1 + patience
    history = paraphraser.train(
        model,
        tok,
        df[df.split == "train"],
        df[df.split == "dev"],
        lr=0.0,
        max_epochs=10,
        patience=2,
        **kwargs,
    )
    assert [h["epoch"] for h in history] == [1, 2, 3]
    # a real learning rate lowers the training loss on this tiny set
    history = paraphraser.train(
        model,
        tok,
        df[df.split == "train"],
        df[df.split == "dev"],
        lr=1e-2,
        max_epochs=4,
        patience=5,
        **kwargs,
    )
    assert history[-1]["train_loss"] < history[0]["train_loss"]


def _scorer(tiny_bert, path: Path) -> None:
    from sentence_transformers.cross_encoder import CrossEncoder

    torch.manual_seed(0)
    CrossEncoder(str(tiny_bert), num_labels=1, max_length=64).save_pretrained(str(path))


def _params(base: str | Path = "tiny-random:bart", **overrides) -> dict:
    params = own_params()
    params["device"] = "cpu"
    params["train_paraphraser"].update(
        {
            "base_model": {"en": str(base), "ja": str(base)},
            "max_epochs": 2,
            "batch_size": 4,
            "max_length": 64,
            "min_train_pairs": 1,
            "lr": 1e-3,
        }
    )
    params["generate_paraphrases"].update({"num_beams": 3, "max_sentences": 3, "batch_size": 2})
    for section, values in overrides.items():
        params[section].update(values)
    return params


def test_pipeline_on_empty_set(tmp_path, monkeypatch, tiny_bert):
    monkeypatch.chdir(tmp_path)
    write_corpus(Path("data/corpus/sentences.parquet"), TEXTS)
    _scorer(tiny_bert, Path("models/sts_scorer"))
    cands = pd.DataFrame(
        {
            "id": ["a", "a", "b"],
            "candidate": [0, 1, 0],
            "text": ["the cat sat .", "the cat sat .", "x y"],
            "pivot": ["", "", ""],
            "paraphrase": ["zq wv !", "", "p q"],
            "forward": "k20_T3",
            "backward": "k20_T3",
        }
    )
    cands["candidate"] = cands["candidate"].astype("int32")
    write_parquet(cands, "data/roundtrip/candidates.parquet", schemas.ROUNDTRIP_CANDIDATES)
    params = _params()
    run_stage("tag", params)
    metrics = json.loads(Path("metrics/roundtrip/tag.json").read_text())
    assert metrics["n_candidates"] == 3 and metrics["n_empty"] == 1 and metrics["n_scored"] == 2
    assert metrics["n_high_quality"] == 0 and metrics["n_empty_cells"] == 48
    assert len(read_parquet("data/roundtrip/tagged.parquet", schemas.ROUNDTRIP_TAGGED)) == 0
    assert Path("metrics/roundtrip/candidates_heatmap.png").stat().st_size > 0

    run_stage("train_paraphraser", params)
    info = json.loads(Path("models/paraphraser/paracl_paraphraser.json").read_text())
    assert info["trained"] is False and info["stand_in"] is True
    run_stage("generate_paraphrases", params)
    out = read_parquet("data/paraphraser/generated.parquet", schemas.GENERATED_PARAPHRASES)
    assert len(out) == 0
    assert json.loads(Path("metrics/roundtrip/generate.json").read_text())["n_generated"] == 0


@pytest.mark.parametrize("arch", ["bart", "gpt2"])
def test_pipeline_trains_and_generates_with_requested_tags(
    tmp_path, monkeypatch, tiny_bert, arch, request
):
    """The stand-in BART (encoder-decoder) and a tiny GPT-2 (decoder-only) directory."""
    base = "tiny-random:bart" if arch == "bart" else request.getfixturevalue("tiny_gpt2")
    monkeypatch.chdir(tmp_path)
    write_corpus(Path("data/corpus/sentences.parquet"), TEXTS)
    _scorer(tiny_bert, Path("models/sts_scorer"))
    write_parquet(tagged_frame(), "data/roundtrip/tagged.parquet", schemas.ROUNDTRIP_TAGGED)
    params = _params(base)
    run_stage("train_paraphraser", params)
    metrics = json.loads(Path("metrics/roundtrip/paraphraser.json").read_text())
    assert metrics["trained"] and metrics["epochs_run"] == 2 and metrics["test_loss"] is not None
    assert metrics["paper_model"] is False and metrics["dev_loss_before"] is not None
    kind = "encoder-decoder" if arch == "bart" else "decoder-only"
    assert metrics["architecture"] == kind
    run_stage("generate_paraphrases", params)
    out = read_parquet("data/paraphraser/generated.parquet", schemas.GENERATED_PARAPHRASES)
    assert len(out) == 3 * 3
    assert set(out["tags"]) == set(params["generate_paraphrases"]["tags"])
    for n_in, n_out in zip(out["n_input_tokens"], out["n_output_tokens"], strict=True):
        assert math.ceil(0.75 * n_in) <= n_out <= math.floor(1.5 * n_in)
    assert len(list(Path("metrics/roundtrip/heatmaps/generated").glob("*.csv"))) == 3 + 1
    base = read_parquet("data/paraphraser/baseline.parquet", schemas.GENERATED_PARAPHRASES)
    assert len(base) == 3 and set(base["tags"]) == {""}
    gen = json.loads(Path("metrics/roundtrip/generate.json").read_text())
    assert gen["n_baseline"] == 3 and gen["paper_model"] is False
    for numbers in gen["per_tag"].values():
        assert {"hit_rate", "near_rate"} <= set(numbers) and numbers["baseline"]["n"] == 3
    out_dir = Path("data/paraphraser/generated.parquet")  # a shard directory
    first = {p.name: p.read_bytes() for p in out_dir.iterdir()}
    run_stage("generate_paraphrases", params)
    assert {p.name: p.read_bytes() for p in out_dir.iterdir()} == first


def test_generate_rejects_bad_tags(tmp_path, monkeypatch):
    from paracl.core.params import ParamsError

    monkeypatch.chdir(tmp_path)
    with pytest.raises(ParamsError, match="SIM tag"):
        run_stage(
            "generate_paraphrases", _params(generate_paraphrases={"tags": ["<BLEU20><SIM95>"]})
        )
    with pytest.raises(ParamsError, match="min_ratio' exceeds"):
        run_stage("generate_paraphrases", _params(generate_paraphrases={"min_ratio": 2.0}))


# -- the decoder-only paraphraser ----------------------------------------------------------


@pytest.fixture
def gpt2(tiny_gpt2):
    model, tok = paraphraser.load(tiny_gpt2)
    paraphraser.add_tag_tokens(tok, model)
    return tok, model


def test_causal_format_masks_the_prompt(gpt2):
    tok, _ = gpt2
    ids, labels = paraphraser_causal.encode_pair(
        tok, "<SIM95><BLEU20>", "the cat sat .", "a cat sat .", max_length=64
    )
    sep = ids.index(tok.convert_tokens_to_ids(paraphraser_causal.SEP))
    assert ids[:2] == tok.convert_tokens_to_ids(["<SIM95>", "<BLEU20>"])
    assert labels[: sep + 1] == [-100] * (sep + 1)  # tags, source and <sep>: no loss
    assert labels[sep + 1 :] == ids[sep + 1 :] and ids[-1] == tok.eos_token_id
    assert tok.decode(ids[sep + 1 : -1]).strip() == "a cat sat ."
    # a long pair: the prompt keeps at most half, the target is cut (no eos then)
    long = " ".join(["the cat sat on the mat"] * 10)
    ids, labels = paraphraser_causal.encode_pair(tok, "<SIM95><BLEU20>", long, long, 32)
    assert (
        len(ids) == len(labels) == 32 and labels.count(-100) == 16 and ids[-1] != tok.eos_token_id
    )


def test_causal_new_tokens_are_distinct_and_special(gpt2):
    tok, model = gpt2
    weight = model.get_input_embeddings().weight
    rows = tok.convert_tokens_to_ids(["<SIM95>", "<SIM70>", "<BLEU20>", paraphraser_causal.SEP])
    assert len(set(rows)) == 4 and not torch.equal(weight[rows[0]], weight[rows[1]])
    assert paraphraser.add_tag_tokens(tok, model) == 0  # idempotent


def test_causal_generation_is_deterministic_and_in_window(gpt2):
    tok, model = gpt2
    kwargs = {**WINDOW, "num_beams": 3, "batch_size": 3}
    a = paraphraser.generate(model, tok, TEXTS[:4], "<SIM95><BLEU20>", **kwargs)
    assert a == paraphraser.generate(model, tok, TEXTS[:4], "<SIM95><BLEU20>", **kwargs)
    for text, out, n_out in zip(TEXTS[:4], *a, strict=True):
        n_in = len(tok(text, add_special_tokens=False)["input_ids"])
        assert math.ceil(LOW * n_in) <= n_out <= math.floor(HIGH * n_in)
        assert "\n" not in out and not any(t in out for t in tagging.ALL_TAGS)
    untagged, _ = paraphraser.generate(model, tok, TEXTS[:4], "", **kwargs)
    assert len(untagged) == 4


def test_causal_freezing_trains_the_top_layers_and_new_rows(gpt2):
    from paracl.core.freeze import freeze
    from paracl.parts.paraphraser.new_tokens import NewTokens

    tok, model = gpt2
    assert freeze(model, 1, True, "train_paraphraser.train_layers") == "1 of 2"
    trainable = {n for n, p in model.named_parameters() if p.requires_grad}
    assert trainable and all(".h.1." in n or "ln_f" in n for n in trainable)
    before = model.get_input_embeddings().weight.detach().clone()
    new = NewTokens(model, tok.convert_tokens_to_ids(list(tagging.ALL_TAGS)))
    history = paraphraser.train(
        model,
        tok,
        tagged_frame(),
        tagged_frame().iloc[:0],
        lr=1e-2,
        batch_size=4,
        max_epochs=2,
        patience=2,
        max_length=64,
        seed=0,
        device=torch.device("cpu"),
    )
    assert len(history) == 2
    new.merge()
    after = model.get_input_embeddings().weight
    changed = (after != before).any(dim=1).nonzero().flatten().tolist()
    assert set(changed) <= set(tok.convert_tokens_to_ids(list(tagging.ALL_TAGS)))
    assert tok.convert_tokens_to_ids("<SIM95>") in changed  # a tag of the training pairs
    assert all("new_token" not in n for n, _ in model.named_parameters())


def test_too_few_pairs_save_an_untrained_paraphraser(tmp_path, monkeypatch, tiny_bert, tiny_gpt2):
    monkeypatch.chdir(tmp_path)
    write_corpus(Path("data/corpus/sentences.parquet"), TEXTS)
    _scorer(tiny_bert, Path("models/sts_scorer"))
    write_parquet(tagged_frame(), "data/roundtrip/tagged.parquet", schemas.ROUNDTRIP_TAGGED)
    params = _params(tiny_gpt2, train_paraphraser={"min_train_pairs": 7})  # 6 train pairs
    run_stage("train_paraphraser", params)
    info = json.loads(Path("models/paraphraser", paraphraser.INFO_FILE).read_text())
    assert info["trained"] is False and info["n_train"] == 6
    run_stage("generate_paraphrases", params)
    for name in ("generated", "baseline"):
        path = f"data/paraphraser/{name}.parquet"
        assert len(read_parquet(path, schemas.GENERATED_PARAPHRASES)) == 0


def test_same_params_and_seed_give_the_same_bytes(tmp_path, monkeypatch, tiny_bert, tiny_gpt2):
    monkeypatch.chdir(tmp_path)
    write_corpus(Path("data/corpus/sentences.parquet"), TEXTS)
    _scorer(tiny_bert, Path("models/sts_scorer"))
    write_parquet(tagged_frame(), "data/roundtrip/tagged.parquet", schemas.ROUNDTRIP_TAGGED)
    params = _params(tiny_gpt2, train_paraphraser={"train_layers": 1, "freeze_embeddings": True})
    runs = []
    for _ in range(2):
        run_stage("train_paraphraser", params)
        run_stage("generate_paraphrases", params)
        files = sorted(Path("data/paraphraser").rglob("*.parquet"))
        files += [Path("models/paraphraser/model.safetensors")]
        runs.append({str(p): p.read_bytes() for p in files if p.is_file()})
    assert runs[0] == runs[1] and len(runs[0]) >= 3


@pytest.mark.slow
def test_real_smollm2_learns_to_paraphrase(tmp_path):
    """A few steps on the packaged SmolLM2-135M (real weights): the output is English text,
    not empty, and not the input copied."""
    from paracl.core.models import resolve_model

    try:
        resolve_model("HuggingFaceTB/SmolLM2-135M-Instruct")
    except Exception as err:  # noqa: BLE001 - no packaged copy on this machine
        pytest.skip(str(err))
    pairs = [
        ("A man is playing a guitar.", "A guitar is being played by a man."),
        ("The cat sat on the mat.", "A cat was sitting on the rug."),
        ("Two dogs are running in a field.", "A pair of dogs run through a meadow."),
        ("She bought a new car yesterday.", "Yesterday she purchased a new automobile."),
        ("The river flows into the sea.", "The stream runs into the ocean."),
        ("He studied physics at Oxford.", "At Oxford he was a physics student."),
    ]
    rows = [
        {
            "id": f"{split}-{i}",
            "candidate": 0,
            "text": text,
            "paraphrase": para,
            "sim": 92.0,
            "bleu": 4.0,
            "sim_tag": "<SIM90>",
            "bleu_tag": "<BLEU0_5>",
            "split": split,
        }
        for i, (text, para) in enumerate(pairs)
        for split in (["train"] if i < 5 else ["dev"])
    ]
    frame = pd.DataFrame(rows).astype({"candidate": "int32"})
    params = _params("HuggingFaceTB/SmolLM2-135M-Instruct")["train_paraphraser"]
    params.update(max_epochs=8, patience=8, lr=1e-3, train_layers=4, freeze_embeddings=True)
    trained = paraphraser.fine_tune(frame, params, 0, torch.device("cpu"))
    assert trained.info["trained"] and trained.info["base_model"]["stand_in"] is False
    assert trained.history[-1]["dev_loss"] < trained.dev_loss_before
    trained.save(tmp_path)
    model, tok = paraphraser.load(tmp_path)
    texts = ["A woman is slicing an onion in the kitchen.", "The city council approved the budget."]
    outs, _ = paraphraser.generate(
        model, tok, texts, "<SIM90><BLEU0_5>", **{**WINDOW, "num_beams": 2}
    )
    for text, out in zip(texts, outs, strict=True):
        assert out and out != text and sum(c.isascii() and c.isalpha() for c in out) > 10
