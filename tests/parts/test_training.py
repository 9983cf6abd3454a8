"""Training on a tiny BERT: loss goes down, save/load round trip, stage end-to-end, bad input."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from conftest import part_config
from stage_helpers import methods, rank_titled_corpus, run_stage

from paracl.core.errors import InputError
from paracl.core.freeze import freeze
from paracl.core.io import ArtifactError, read_parquet, write_parquet
from paracl.core.params import ParamsError
from paracl.core.schemas import CORPUS
from paracl.parts.encoder.build import build_encoder, save_encoder
from paracl.parts.encoder.forward import embed
from paracl.parts.losses import infonce, weighted_hard_negative
from paracl.schema import load_params
from paracl.stages.train_contrastive.training.data import load_examples
from paracl.stages.train_contrastive.training.trainer import TrainConfig, _embed_columns, train

REPO = Path(__file__).resolve().parents[2]
TAU = {"temperature": 0.05}  # the shared train_contrastive keys a loss reads
WORDS = "man woman cat dog plays runs guitar field kitchen city river sea sun onion".split()


def _sentences(n: int, seed: int = 0) -> list[str]:
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS, size=6)) + f" {i}" for i in range(n)]


def _pairs(n: int) -> pd.DataFrame:
    texts = _sentences(n)
    return pd.DataFrame(
        {
            "id": [str(i) for i in range(n)],
            "text": texts,
            "paraphrase": [t.replace("man", "person") + " ." for t in texts],
            "negative": [" ".join(reversed(t.split())) for t in texts],
        }
    )


@pytest.fixture(scope="module")
def st_tiny(tiny_bert):
    return lambda pooling="mean": build_encoder(tiny_bert, pooling, max_seq_length=16)


def test_training_lowers_loss(st_tiny):
    model = st_tiny()
    ex = load_examples_frame(_pairs(16))
    obj = infonce.objective(model, infonce.Params(), {"temperature": 0.05})

    def eval_loss() -> float:
        model.eval()
        with torch.no_grad():
            return obj.loss(_embed_columns(model, obj.columns(ex), model.device)).item()

    before = eval_loss()
    train(model, ex, obj, part_config(TrainConfig, lr=3e-3, epochs=4, batch_size=16, seed=0))
    assert eval_loss() < before - 0.1


def load_examples_frame(df: pd.DataFrame) -> pd.DataFrame:
    from paracl.stages.train_contrastive.training.data import to_examples

    return to_examples(df, "fixture")


def test_grad_cache_trainer_equals_full_batch(st_tiny):
    ex = load_examples_frame(_pairs(8))
    runs = []
    for mini in (None, 3):
        model = st_tiny()
        model[0].auto_model.config.hidden_dropout_prob = 0.0
        for mod in model.modules():
            if isinstance(mod, torch.nn.Dropout):
                mod.p = 0.0
        obj = weighted_hard_negative.objective(None, weighted_hard_negative.Params(0.0), TAU)
        res = train(
            model,
            ex,
            obj,
            part_config(TrainConfig, lr=1e-3, batch_size=8, mini_batch_size=mini, seed=0),
        )
        runs.append((res.losses[0], embed(model.eval(), ["a man plays"]).detach()))
    assert runs[0][0] == pytest.approx(runs[1][0], rel=1e-4)
    assert torch.allclose(runs[0][1], runs[1][1], atol=1e-4)


def test_frozen_embeddings_stay_fixed(tiny_bert):
    model = build_encoder(tiny_bert, "cls_mlp", max_seq_length=16)
    assert freeze(model[0].auto_model, None, True, "train_contrastive.train_layers") == "all"
    emb = model[0].auto_model.get_input_embeddings().weight
    before, layer = emb.detach().clone(), model[0].auto_model.encoder.layer[0]
    layer_before = layer.output.dense.weight.detach().clone()
    ex = load_examples_frame(_pairs(8))
    train(
        model,
        ex,
        infonce.objective(model, infonce.Params(), TAU),
        part_config(TrainConfig, lr=1e-3, batch_size=8),
    )
    assert torch.equal(emb, before)
    assert not torch.equal(layer.output.dense.weight, layer_before)


def test_save_load_round_trip(st_tiny, tmp_path):
    from sentence_transformers import SentenceTransformer
    from transformers import AutoModel

    for pooling in ("mean", "cls_mlp"):
        model = st_tiny(pooling).eval()
        out = tmp_path / pooling
        save_encoder(model, out)
        texts = ["a man plays a guitar", "the cat sat"]
        loaded = SentenceTransformer(str(out), device="cpu")
        ref = SentenceTransformer(modules=[m for m in model][:2], device="cpu")  # MLP dropped
        assert np.allclose(loaded.encode(texts), ref.encode(texts), atol=1e-6)
        hf = AutoModel.from_pretrained(out).eval()
        enc = loaded.tokenizer(texts, padding=True, return_tensors="pt")
        with torch.no_grad():
            states = hf(**enc).last_hidden_state
        if pooling == "mean":
            m = enc["attention_mask"][..., None].float()
            pooled = (states * m).sum(1) / m.sum(1)
        else:
            pooled = states[:, 0]
        assert np.allclose(pooled.numpy(), loaded.encode(texts), atol=1e-5)


def test_bad_inputs(tmp_path):
    with pytest.raises(ArtifactError, match="not found"):
        load_examples(tmp_path / "missing.parquet", None, 0)
    df = _pairs(4)
    df.loc[2, "paraphrase"] = "  "
    df.to_parquet(tmp_path / "empty_str.parquet")
    with pytest.raises(InputError, match="row 2 has an empty 'positive'"):
        load_examples(tmp_path / "empty_str.parquet", None, 0)
    _pairs(1).to_parquet(tmp_path / "one.parquet")
    with pytest.raises(InputError, match="1 training examples"):
        load_examples(tmp_path / "one.parquet", None, 0)
    _pairs(0).to_parquet(tmp_path / "zero.parquet")
    with pytest.raises(InputError, match="0 training examples"):
        load_examples(tmp_path / "zero.parquet", None, 0)


def test_nli_formats(tmp_path):
    tsv = tmp_path / "nli.tsv"
    tsv.write_text(
        "entailment\tA man plays.\tSomeone plays.\n"
        "contradiction\tA man plays.\tNobody plays.\n"
        "neutral\tA man plays.\tA man plays well.\n"
        "entailment\tA cat sits.\tAn animal sits.\n"
        "contradiction\tA cat sits.\tA cat runs.\n",
        encoding="utf-8",
    )
    ex = load_examples(tsv, None, 0)
    assert ex.to_dict("records") == [
        {"anchor": "A cat sits.", "positive": "An animal sits.", "negative": "A cat runs."},
        {"anchor": "A man plays.", "positive": "Someone plays.", "negative": "Nobody plays."},
    ]
    pd.DataFrame(
        {
            "premise": ["p", "p", "q", "q"],
            "hypothesis": ["e", "c", "e2", "c2"],
            "label": [0, 2, 0, 2],
        }
    ).to_parquet(tmp_path / "nli.parquet")
    assert load_examples(tmp_path / "nli.parquet", None, 0)["negative"].tolist() == ["c", "c2"]
    tsv.write_text("neutral\ta\tb\nneutral\tc\td\n", encoding="utf-8")
    with pytest.raises(InputError, match="no premise has both"):
        load_examples(tsv, None, 0)


# ---- the stage, end to end on fixtures --------------------------------------------------


def _corpus(n_docs: int = 6) -> pd.DataFrame:
    rows = []
    for d in range(n_docs):
        title = f"{WORDS[d]} {WORDS[d + 1]}"
        for i, text in enumerate(_sentences(4, seed=d)):
            text = f"the {WORDS[d]} {text}" if i == 0 else text
            rows.append((f"{d}-{i}", str(d), title, text, text.split(), len(text.split()), "en"))
    return pd.DataFrame(rows, columns=CORPUS.names)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory, tiny_bert):
    return _workdir(tmp_path_factory.mktemp("stage"), tiny_bert)


@pytest.fixture(scope="module")
def llama_workdir(tmp_path_factory, tiny_llama):
    """The same project on a causal LM base, SGPT's pooling and SimCSE's dropout 0.1."""
    root, params = _workdir(tmp_path_factory.mktemp("stage-llama"), tiny_llama)
    params["train_contrastive"].update(pooling="weighted_mean", dropout=0.1)
    return root, params


def _workdir(root: Path, base: Path) -> tuple[Path, dict]:
    (root / "data/ppdb").mkdir(parents=True)
    (root / "data/negatives").mkdir(parents=True)
    (root / "data/corpus").mkdir(parents=True)
    (root / "data/raw/stsbenchmark").mkdir(parents=True)
    pairs = _pairs(12)
    pairs.to_parquet(root / "data/ppdb/pairs.parquet")
    pairs[["id", "text", "negative"]].to_parquet(root / "data/negatives/negatives.parquet")
    write_parquet(_corpus(), root / "data/corpus/sentences.parquet", CORPUS)
    sts = [
        f"g\tf\ty\t{i}\t{(i * 7) % 6}.0\t{a}\t{b}"
        for i, (a, b) in enumerate(zip(_sentences(10, 1), _sentences(10, 2), strict=True))
    ]
    (root / "data/raw/stsbenchmark/sts-dev.csv").write_text("\n".join(sts) + "\n")
    (root / "nli.tsv").write_text(
        "".join(
            f"entailment\t{s}\t{s} too\ncontradiction\t{s}\tnot {s}\n" for s in _sentences(6, 3)
        )
    )
    params = load_params(REPO / "params.yaml")
    cfg = params["train_contrastive"]
    cfg.update(base_model=str(base), max_examples=None, batch_size=4, epochs=1)
    cfg["methods"] = methods(
        "none",
        "simcse_unsup",
        "ppdb",
        "jcse",
        "ams",
        "ebsim",
        "simcse_sup",
        "roundtrip",
        simcse_sup="nli.tsv",
        roundtrip="data/roundtrip/pairs.parquet",
    )
    params["device"] = "cpu"
    rank_titled_corpus(root, params)
    return root, params


def _run_stage(workdir, method, monkeypatch) -> dict:
    """train_contrastive@<method> as dvc.yaml runs it, in the work directory."""
    root, params = workdir
    monkeypatch.chdir(root)
    run_stage(f"train_contrastive@{method}", params)
    return json.loads((root / f"metrics/train/{method}.json").read_text())


@pytest.mark.parametrize(
    "method", ["none", "simcse_unsup", "ppdb", "jcse", "ams", "ebsim", "simcse_sup"]
)
def test_stage_methods(workdir, method, monkeypatch):
    from sentence_transformers import SentenceTransformer

    metrics = _run_stage(workdir, method, monkeypatch)
    root = workdir[0]
    assert metrics["method"] == method
    assert -100 <= metrics["dev_spearman"] <= 100
    model = SentenceTransformer(str(root / "models/encoders" / method), device="cpu")
    assert model.encode(["a man"]).shape == (1, 32)
    card = (root / "models/encoders" / method / "README.md").read_text()
    base = workdir[1]["train_contrastive"]["base_model"]
    assert f"# paracl encoder `{method}`" in card and f"`{base}`" in card
    assert f"{metrics['dev_spearman']} (" in card  # the training dev score, as recorded
    if method == "none":  # what evaluate.baseline_seeds reads (finetune_job.finetune_seeds)
        assert metrics["loss"] == "none"
    else:
        assert metrics["steps"] >= 1 and metrics["loss"] != "none"
        assert (root / f"metrics/train/{method}/plots/metrics/train/loss.tsv").exists()
        assert (root / f"metrics/train/{method}/curves.png").exists()
    if method == "ebsim":
        assert metrics["triples"]["token"] == 6


@pytest.mark.parametrize("method", ["none", "simcse_unsup", "ppdb", "jcse", "ams", "ebsim"])
def test_stage_methods_on_a_causal_lm(llama_workdir, method, monkeypatch):
    """A causal LM base (no pad token, no dropout, left padding) trains with every loss
    and saves an encoder that SentenceTransformer and AutoModel load, scoring as trained."""
    from sentence_transformers import SentenceTransformer
    from transformers import AutoConfig, AutoModel

    metrics = _run_stage(llama_workdir, method, monkeypatch)
    path = llama_workdir[0] / "models/encoders" / method
    model = SentenceTransformer(str(path), device="cpu")
    assert model[1].pooling_mode == "weightedmean"
    assert model.tokenizer.pad_token is not None
    assert model.encode(["a man"]).shape == (1, 32)
    assert AutoModel.from_pretrained(path).config.model_type == "llama"
    assert AutoConfig.from_pretrained(path).attention_dropout == 0.1  # as it was trained
    if method != "none":
        assert metrics["steps"] >= 1 and np.isfinite(metrics["dev_spearman"])


def test_a_methods_train_layers_trains_its_top_layers_alone(llama_workdir, monkeypatch):
    """train_layers on a method's entry: only the causal LM's top layer and final norm
    change, and the run's metrics and card say which layers trained."""
    from safetensors.torch import load_file

    root, params = llama_workdir
    params = copy.deepcopy(params)
    entries = params["train_contrastive"]["methods"]
    entries["simcse_top"] = entries["simcse_unsup"] | {"train_layers": 1}
    metrics = _run_stage((root, params), "simcse_top", monkeypatch)
    assert metrics["trained_layers"] == "1 of 2"
    out = root / "models/encoders/simcse_top"
    assert "layers trained 1 of 2" in (out / "README.md").read_text()
    base = Path(params["train_contrastive"]["base_model"], "model.safetensors")
    base = {k.removeprefix("model."): v for k, v in load_file(base).items()}
    saved = load_file(out / "model.safetensors")
    changed = {k for k, v in saved.items() if not torch.equal(v, base[k])}
    assert changed and all(k.startswith("layers.1.") or k == "norm.weight" for k in changed)


@pytest.mark.parametrize("method", ["jcse", "ebsim"])
def test_stage_is_deterministic(workdir, method, monkeypatch):
    root = workdir[0]
    first = _run_stage(workdir, method, monkeypatch)
    weights = (root / f"models/encoders/{method}/model.safetensors").read_bytes()
    assert _run_stage(workdir, method, monkeypatch) == first
    assert (root / f"models/encoders/{method}/model.safetensors").read_bytes() == weights


def test_stage_missing_input_names_artifact(workdir, monkeypatch):
    with pytest.raises(ArtifactError, match="data/roundtrip/pairs.parquet"):
        _run_stage(workdir, "roundtrip", monkeypatch)


def test_ebsim_masks_title_words_up_to_half(st_tiny):
    from paracl.stages.ebsim_retrieve import masked_words

    model = st_tiny()
    title = ["guitar", "field", "kitchen"]
    words = ["guitar", "field", "kitchen", "man", "plays"]
    masked = masked_words(model, title, words, eta=0.999, max_mask=0.5)
    # identical words have similarity 1 >= eta; the cap keeps int(0.5 * 5) = 2 masked
    assert masked is not None and masked.count(None) == 2
    assert masked[3:] == ["man", "plays"]
    assert masked_words(model, ["zzz"], ["man", "plays"], eta=0.999, max_mask=0.5) is None


def test_ebsim_triples_pick_each_documents_sentence_nearest_its_title(st_tiny):
    """The batched encode gives the ranking a per-document encode would (Eq. 2's
    relevant_1); a run draws relevant_x with its seed and writes its mask token."""
    from paracl.parts.losses.ebsim_triplet import triples
    from paracl.stages.ebsim_retrieve import rank_documents

    model = st_tiny()
    docs = {1: ("guitar", ["a man plays a guitar", "the field is green", "soup in a kitchen"]),
            2: ("kitchen", ["a woman cooks", "a kitchen with a stove"]),
            3: ("lonely", ["only one sentence"])}  # fmt: skip
    corpus = pd.DataFrame(
        [(d, t, s) for d, (t, texts) in docs.items() for s in texts],
        columns=["doc_id", "title", "text"],
    )
    ranking = rank_documents(corpus, model, eta=0.999, max_mask=0.5)
    assert ranking["title"].tolist() == ["guitar", "kitchen"]  # doc 3 has one sentence
    drawn = triples(ranking, seed=0, mask="<M>")
    tokens = drawn[drawn["kind"] == "token"]
    for title, texts in (docs[1], docs[2]):
        emb = model.encode([title] + texts, normalize_embeddings=True)
        nearest = texts[int(np.argmax(emb[1:] @ emb[0]))]
        row = tokens[tokens["anchor"] == title].iloc[0]
        assert row["positive"] == nearest
        assert row["negative"] in texts and row["negative"] != nearest
    structure = drawn[drawn["kind"] == "structure"]  # "kitchen" is a word of its relevant_1
    assert len(structure) >= 1 and structure["negative"].str.contains("<M>").all()
    negatives = {s: set(triples(ranking, seed=s, mask="<M>")["negative"]) for s in range(8)}
    assert len({frozenset(n) for n in negatives.values()}) > 1  # the seed draws relevant_x
    pd.testing.assert_frame_equal(triples(ranking, seed=0, mask="<M>"), drawn)
    assert len(triples(ranking, seed=0, mask="<M>", max_docs=1)["anchor"].unique()) == 1
    with pytest.raises(InputError, match="titled"):
        rank_documents(corpus.assign(title=""), model, eta=0.8, max_mask=0.5)


def test_ebsim_retrieves_with_the_fixed_base_not_the_encoder_in_training(
    workdir, tiny_bert, monkeypatch
):
    """EBSIM §4.1: a fixed encoder with mean pooling ranks each document's sentences, once
    (stage ebsim_retrieve), before any run: the positive is the sentence plain mean pooling
    of the base (transformers alone) ranks first, whatever pooling the encoder trains with
    (cls_mlp: a random MLP). A `retriever` that does not exist is named."""
    from transformers import AutoModel, AutoTokenizer

    from paracl.core.models import ModelNotFoundError

    root, params = workdir
    ranking = read_parquet(root / "data/ebsim/sentences.parquet")
    metrics = json.loads((root / "metrics/ebsim_retrieve_sentences.json").read_text())
    assert metrics["documents"] == len(ranking) > 0 and metrics["retriever"] == str(tiny_bert)
    tok, hf = AutoTokenizer.from_pretrained(tiny_bert), AutoModel.from_pretrained(tiny_bert)
    for title, doc in _corpus().groupby("title", sort=False):
        enc = tok([title] + doc["text"].tolist(), padding=True, return_tensors="pt")
        with torch.no_grad():
            states = hf(**enc).last_hidden_state
        mask = enc["attention_mask"][..., None].float()
        pooled = torch.nn.functional.normalize((states * mask).sum(1) / mask.sum(1), dim=-1)
        nearest = doc["text"].iloc[int(torch.argmax(pooled[1:] @ pooled[0]))]
        assert ranking.loc[ranking["title"] == title, "ranked"].iloc[0][0] == nearest
    params = copy.deepcopy(params)
    params["ebsim_retrieve"]["retriever"] = str(root / "no-such-retriever")
    monkeypatch.chdir(root)
    with pytest.raises(ModelNotFoundError, match="no-such-retriever"):
        run_stage("ebsim_retrieve@sentences", params)


def test_an_ebsim_entry_refuses_the_retrieval_keys_it_once_took():
    from paracl.stages.train_contrastive.training.methods import method_spec

    entry = {"loss": "ebsim", "input": "data/ebsim/sentences.parquet", "eta": 0.8}
    with pytest.raises(ParamsError, match=r"methods\.ebsim\.eta' was replaced by ebsim_retrieve"):
        method_spec("ebsim", entry)


def test_ebsim_on_a_corpus_says_its_input_is_the_ranking(workdir, monkeypatch):
    """An input that is a corpus (an entry from before stage ebsim_retrieve) is refused
    with the file and what to do."""
    root, params = workdir
    params = copy.deepcopy(params)
    params["train_contrastive"]["methods"]["ebsim"]["input"] = "data/corpus/sentences.parquet"
    with pytest.raises(InputError, match=r"sentences.parquet.*ebsim_retrieve.corpora"):
        _run_stage((root, params), "ebsim", monkeypatch)


def test_ebsim_on_a_causal_lm_scores_pairs_by_their_content(tiny_llama, tiny_bert):
    """On a causal LM (left padding), RA reads each pair's last token, so a pair with
    another second sentence scores differently and both aspects move the encoder (on the
    first token every pair scored alike and the ebsim / -AA runs came out identical)."""
    from paracl.parts.losses.ebsim_triplet import EbsimObjective, is_causal_lm

    assert not is_causal_lm(build_encoder(tiny_bert, "mean", 32))
    torch.manual_seed(0)
    model = build_encoder(tiny_llama, "mean", 32, dropout=0.0)
    assert is_causal_lm(model)
    objective = EbsimObjective(model, ("ra", "aa"), beta=1.0, max_len=64)
    titles = ["guitar", "kitchen"]
    pos = objective._pair_scores(model, titles, ["a man plays a guitar", "a stove"])
    neg = objective._pair_scores(model, titles, ["the field is green and wide", "rain"])
    for aspect in ("ra", "aa"):
        assert not torch.allclose(pos[aspect], neg[aspect]), aspect
    objective.loss_fn(pos, neg).backward()
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    assert grads and sum(float(g.abs().sum()) for g in grads) > 0


def test_length_grouping_batches_are_a_seeded_partition_of_similar_lengths():
    from paracl.core.batching import GROUP_WINDOW
    from paracl.stages.train_contrastive.training.trainer import epoch_batches

    rng = np.random.default_rng(0)
    lengths = rng.integers(4, 33, size=1000).tolist()
    grouped = epoch_batches(1000, 8, seed=3, epoch=0, lengths=lengths)
    assert grouped == epoch_batches(1000, 8, seed=3, epoch=0, lengths=lengths)  # seeded
    assert grouped != epoch_batches(1000, 8, seed=3, epoch=1, lengths=lengths)
    assert sorted(i for b in grouped for i in b) == list(range(1000))  # every example once
    plain = epoch_batches(1000, 8, seed=3, epoch=0)
    padded = {  # tokens a batch pads to, summed: the work the grouping saves
        name: sum(len(b) * max(lengths[i] for i in b) for b in batches)
        for name, batches in (("grouped", grouped), ("plain", plain))
    }
    assert padded["grouped"] < 0.8 * padded["plain"]
    # the batch order is shuffled, not longest first: a window's batches are spread out
    first_window = {i for b in grouped[:GROUP_WINDOW] for i in b}
    assert max(lengths[i] for i in first_window) - min(lengths[i] for i in first_window) > 20


def test_length_grouping_trains_on_the_same_examples(st_tiny):
    from paracl.stages.train_contrastive.training.trainer import token_lengths

    model = st_tiny()
    ex = load_examples_frame(_pairs(16))
    lengths = token_lengths(model, ex)
    assert len(lengths) == 16 and all(2 < n <= model.max_seq_length for n in lengths)
    obj = infonce.objective(model, infonce.Params(), TAU)
    res = train(
        model,
        ex,
        obj,
        part_config(TrainConfig, lr=1e-3, batch_size=4, seed=0, length_grouping=True),
    )
    assert res.examples_seen == 16 and res.steps == 4
