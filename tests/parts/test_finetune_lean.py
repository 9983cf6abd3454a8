"""Evaluation fine-tuning's lean step (paracl.parts.finetune.tuning): the train split is
tokenized once (`TrainTokens`), the step reads nothing back to the host, and a seeded run
gives the numbers it gave before the step was made lean."""

from __future__ import annotations

import pandas as pd
import pytest
import torch
from conftest import part_config
from test_eval_e2e import make_raw
from transformers import AutoTokenizer

from paracl.parts.encoder.build import build_encoder, save_encoder
from paracl.parts.encoder.embed import transformer_dir
from paracl.parts.evaluation.tasks import load_task
from paracl.parts.finetune import tuning
from paracl.parts.finetune.tuning import (
    FinetuneConfig,
    TrainTokens,
    encode_rows,
    epoch_loss,
    finetune_task,
    make_fit,
    task_model,
    task_targets,
)

CPU = torch.device("cpu")
pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def raw(tmp_path_factory):
    return make_raw(tmp_path_factory.mktemp("raw"))


@pytest.fixture(scope="module")
def llama_encoder(tiny_llama, tmp_path_factory):
    out = tmp_path_factory.mktemp("enc") / "llama"
    save_encoder(build_encoder(tiny_llama, "mean", None), out)
    return out


CONFIGS = {
    "bert_stsb": ("stsb", part_config(FinetuneConfig, epochs=2, lr=1e-3, batch_size=8,
                                      max_seq_length=32, patience=3), [1]),
    "llama_sicke_grouped_chunks": ("sicke", part_config(FinetuneConfig, epochs=2, lr=1e-3,
                                   batch_size=8, max_seq_length=32, patience=3,
                                   length_grouping=True, mini_batch_size=3), [2]),
}  # fmt: skip


def _run(name: str, tiny_bert, llama_encoder, raw) -> dict:
    task, cfg, seeds = CONFIGS[name]
    encoder = tiny_bert if name == "bert_stsb" else llama_encoder
    run = finetune_task(encoder, load_task(task, raw, seed=0), cfg, seeds, CPU)["runs"][0]
    return {k: run[k] for k in ("train_loss", "dev", "test")}


@pytest.mark.parametrize("name", list(CONFIGS))
def test_a_seeded_run_gives_the_numbers_the_step_by_step_tokenizing_run_gives(
    name, tiny_bert, llama_encoder, raw, monkeypatch
):
    """The lean step against the step it replaced, in one process, so on one CPU's float
    kernels: before it, every step tokenized its batch (`encode_rows`), which is what the steps
    do with the token cache off. Same seed, same batches, so the same bits: losses, dev and
    test scores are compared for equality. (Numbers recorded on another CPU kind cannot be
    compared so: AVX2, AVX-512 and AMX kernels round differently, and a tiny model's Pearson
    moves in its 4th digit.)"""
    caches: list[TrainTokens] = []
    real_init = TrainTokens.__init__

    def recording_init(self, *args, **kwargs):
        real_init(self, *args, **kwargs)
        caches.append(self)

    with monkeypatch.context() as m:
        m.setattr(TrainTokens, "__init__", recording_init)
        lean = _run(name, tiny_bert, llama_encoder, raw)
    assert caches and all(c.enabled and c.checked for c in caches), "the cache turned off"
    with monkeypatch.context() as m:
        m.setattr(TrainTokens, "_collate", lambda self, idx: None)  # tokenize every step
        before = _run(name, tiny_bert, llama_encoder, raw)
    assert lean == before


def _pairs(single: bool = False) -> pd.DataFrame:
    words = "a man is playing guitar on the stage cat sat mat dogs running".split()
    s1 = [" ".join(words[: 2 + i % 9]) for i in range(12)]
    s2 = [None if single else " ".join(words[i % 5 :]) for i in range(12)]
    return pd.DataFrame({"sentence1": s1, "sentence2": s2})


@pytest.mark.parametrize("kind", ["bert", "bert_single", "llama"])
def test_cached_batches_are_the_tensors_tokenizing_the_batch_gives(
    kind, tiny_bert, llama_encoder, raw
):
    path = llama_encoder if kind == "llama" else tiny_bert
    tok = AutoTokenizer.from_pretrained(transformer_dir(path))
    if kind == "llama":  # a causal LM: `s1 <eos> s2 <eos>`, padded on the right
        task_model(path, tok, load_task("stsb", raw, seed=0).task, "last_token")
    df, y = _pairs(kind == "bert_single"), torch.arange(12.0)
    tokens = TrainTokens(tok, df, y, 64)
    for idx in ([0, 5, 9], [11, 2], [7], list(range(12))):
        got, want = tokens.batch(idx, CPU), dict(encode_rows(tok, df, idx, 64))
        assert got.keys() == {*want, "labels"} and torch.equal(got.pop("labels"), y[idx])
        assert all(torch.equal(got[k], v) and got[k].dtype == v.dtype for k, v in want.items())
    assert tokens.enabled and tokens.checked
    assert tokens.lengths == encode_rows(tok, df, range(12), 64)["attention_mask"].sum(1).tolist()


def test_a_cache_that_differs_from_the_tokenizer_turns_itself_off(tiny_bert, monkeypatch):
    tok = AutoTokenizer.from_pretrained(tiny_bert)
    df = _pairs()
    tokens = TrainTokens(tok, df, torch.zeros(12), 32)
    real = tuning.pad_rows

    def shifted(*args):  # a collation that is off by one token id
        out = real(*args)
        return {**out, "input_ids": out["input_ids"] + 1}

    monkeypatch.setattr(tuning, "pad_rows", shifted)
    got = tokens.batch([1, 2], CPU)
    assert not tokens.enabled
    assert torch.equal(got["input_ids"], encode_rows(tok, df, [1, 2], 32)["input_ids"])


def test_a_step_reads_nothing_back_to_the_host(tiny_bert, monkeypatch):
    """No `.item()`, `float()` or `.tolist()` inside the step: it would wait for the device
    every step. The losses are read once, by `epoch_loss`. (transformers' own SDPA mask
    check reads one bool inside the model's forward, as in every loop; not tested here.)"""
    from transformers import AutoModelForSequenceClassification

    tok = AutoTokenizer.from_pretrained(tiny_bert)
    model = AutoModelForSequenceClassification.from_pretrained(tiny_bert, num_labels=1)
    cfg = part_config(
        FinetuneConfig, epochs=1, lr=1e-3, batch_size=4, max_seq_length=32, mini_batch_size=2
    )
    fit = make_fit(model, TrainTokens(tok, _pairs(), torch.rand(12), 32), cfg, CPU, 3)
    fit.step([0, 1, 2, 3])  # warm: the first batch is checked against the tokenizer

    def sync(*_):
        raise AssertionError("a host read inside the step")

    with monkeypatch.context() as m:
        for name in ("item", "tolist", "__float__"):
            m.setattr(torch.Tensor, name, sync)
        losses = [fit.step([4, 5, 6, 7]), fit.step([8, 9, 10])]
    assert [len(x) for x in losses] == [2, 2]  # each chunk's weighted loss, on the device
    assert epoch_loss(losses, [[4, 5, 6, 7], [8, 9, 10]], 7) == pytest.approx(
        (4 * float(losses[0].sum()) + 3 * float(losses[1].sum())) / 7
    )


def test_the_epoch_loss_adds_up_as_the_step_by_step_reads_did():
    """Each step's chunks summed in double precision, weighted by the batch's rows, in step
    order: the bits a loss read back per chunk and added on the host gave."""
    steps = [torch.tensor([0.1, 0.2, 0.3]), torch.tensor([0.7])]
    batches = [[0, 1, 2, 3, 4], [5, 6]]
    running = 0.0
    for chunk_losses, idx in zip(steps, batches, strict=True):
        total = 0.0
        for value in chunk_losses:
            total += float(value)
        running += total * len(idx)
    assert epoch_loss(steps, batches, 7) == running / 7
    assert epoch_loss([], [], 1) == 0.0


def test_training_targets_are_the_labels_each_row_gets(tiny_bert, raw):
    data = load_task("stsb", raw, seed=0)
    tok = AutoTokenizer.from_pretrained(tiny_bert)
    y = task_targets(data.train, data, "train")
    tokens = TrainTokens(tok, data.train, y, 32)
    assert torch.equal(tokens.batch([3, 1], CPU)["labels"], y[[3, 1]])
