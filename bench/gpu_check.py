"""Check the CUDA paths of every training loop, and measure step time and memory at the
papers' batch sizes. Run on a GPU machine:

    PYTHONPATH=src python bench/gpu_check.py --out gpu_check.json

Part 1 (correctness): one short training run of each loop (contrastive bi-encoder on a
masked and a causal LM, supervised fine-tuning, the decoder-only and the seq2seq
paraphraser) on tiny random models, in bf16 and in fp16 (GradScaler). A loop passes
when its losses are finite and its weights moved.

Part 2 (scale): contrastive training steps (InfoNCE, the trainer paracl runs) on
randomly initialised models of the papers' sizes (BERT-base, SmolLM2-135M, gemma-3-270m
shapes; no weights are needed to time a step) at batch 64 and 512 x 32 tokens, in bf16,
fp16 and fp32: seconds per step and peak GPU memory.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import torch

from paracl.parts.encoder.build import build_encoder
from paracl.parts.losses import infonce
from paracl.parts.training.trainer import TrainConfig, train
from paracl.testing.tiny_models import build_tiny_model, build_tokenizer

DEVICE = torch.device("cuda")  # --device cpu: a dry run of part 1 here
WORDS = "the a cat dog sat on mat river bank money runs fast slow red blue green".split()


def sentences(n: int, words: int, seed: int) -> list[str]:
    g = torch.Generator().manual_seed(seed)
    idx = torch.randint(len(WORDS), (n, words), generator=g).tolist()
    return [" ".join(WORDS[i] for i in row) + " ." for row in idx]


def moved(before: dict, model) -> float:
    after = {n: p.detach().float().cpu() for n, p in model.named_parameters()}
    return float(sum((after[n] - before[n]).norm() for n in before))


def snapshot(model) -> dict:
    return {n: p.detach().float().cpu().clone() for n, p in model.named_parameters()}


def contrastive(model_dir: Path, precision: str, batch: int, steps: int, words: int = 12):
    """Train `steps` InfoNCE steps; returns (losses, weight change, s/step, peak GiB)."""
    model = build_encoder(model_dir, "mean", 32, dropout=0.1).to(DEVICE)
    text = sentences(batch * steps, words, 0)
    examples = pd.DataFrame({"anchor": text, "positive": text, "negative": [None] * len(text)})
    objective = infonce.objective(model, infonce.Params(), {"temperature": 0.05})
    config = TrainConfig(lr=5e-5, epochs=1, batch_size=batch, seed=0, precision=precision)
    before = snapshot(model)
    cuda = DEVICE.type == "cuda"
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    t0 = time.perf_counter()
    result = train(model, examples, objective, config, None, None, objective.parameters())
    if cuda:
        torch.cuda.synchronize()
    seconds = (time.perf_counter() - t0) / max(result.steps, 1)
    peak = torch.cuda.max_memory_allocated() / 2**30 if cuda else None
    return result.losses, moved(before, model), seconds, peak


def finetune(model_dir: Path, precision: str) -> dict:
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from paracl.core.device import adamw, grad_scaler, optimizer_step
    from paracl.parts.finetune.tuning import FinetuneConfig, train_step

    tok = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForSequenceClassification.from_pretrained(model_dir, num_labels=2).to(DEVICE)
    a, b = sentences(32, 8, 1), sentences(32, 8, 2)
    data = SimpleNamespace(train=pd.DataFrame({"sentence1": a, "sentence2": b}))
    targets = torch.tensor([i % 2 for i in range(32)])
    cfg = FinetuneConfig(epochs=1, lr=1e-4, batch_size=8, precision=precision)
    optimizer = adamw(list(model.parameters()), lr=1e-4)
    scaler = grad_scaler(DEVICE, precision=precision)
    before, losses = snapshot(model), []
    for start in range(0, 32, 8):
        idx = list(range(start, start + 8))
        losses.append(train_step(model, tok, data, idx, targets, cfg, DEVICE, scaler))
        optimizer_step(optimizer, scaler, list(model.parameters()), max_norm=1.0)
        optimizer.zero_grad(set_to_none=True)
    return {"losses": losses, "moved": moved(before, model), "scale": scaler.get_scale()
            if scaler.is_enabled() else None}  # fmt: skip


def paraphraser(model_dir: Path, precision: str) -> dict:
    from paracl.parts import paraphraser as para

    model, tok = para.load(model_dir, DEVICE)
    para.add_tag_tokens(tok, model)
    src, tgt = sentences(32, 8, 3), sentences(32, 8, 4)
    df = pd.DataFrame({"source": src, "target": tgt, "sim_tag": "<SIM95>", "bleu_tag": "<BLEU20>",
                       "tags": "<SIM95><BLEU20>", "text": src, "paraphrase": tgt})  # fmt: skip
    before = snapshot(model)
    history = para.train(model, tok, df, df.iloc[:0], lr=1e-3, batch_size=8, max_epochs=1,
                         patience=1, max_length=32, seed=0, device=DEVICE,
                         precision=precision)  # fmt: skip
    return {"history": history, "moved": moved(before, model)}


def part1(root: Path) -> dict:
    out: dict = {}
    dirs = {a: build_tiny_model(a, root / a) for a in ("bert", "llama", "gemma3_text")}
    from paracl.testing.standins import build_tiny_model as build_seq2seq

    dirs["bart"] = build_seq2seq("bart", root / "bart")
    for precision in ("bf16", "fp16"):
        for arch in ("bert", "llama", "gemma3_text"):
            out[f"contrastive/{arch}/{precision}"] = _run(
                lambda a=arch, p=precision: dict(
                    zip(("losses", "moved", "s_per_step", "peak_gib"),
                        contrastive(dirs[a], p, 16, 3), strict=True)))  # fmt: skip
        out[f"finetune/bert/{precision}"] = _run(lambda p=precision: finetune(dirs["bert"], p))
        for arch in ("llama", "bart"):
            out[f"paraphraser/{arch}/{precision}"] = _run(
                lambda a=arch, p=precision: paraphraser(dirs[a], p)
            )
    return out


def _run(fn) -> dict:
    try:
        return {"ok": True, **fn()}
    except Exception as err:  # noqa: BLE001 - a report of every loop, whatever fails
        return {"ok": False, "error": f"{type(err).__name__}: {err}"[:500]}


def full_size(arch: str, root: Path) -> Path:
    """A randomly initialised model of a paper's size, with a tiny tokenizer (the step's
    cost depends on the sequence length, not on the vocabulary the text came from)."""
    from transformers import AutoModel, BertConfig, Gemma3TextConfig, LlamaConfig

    tok = build_tokenizer({"bert-base": "bert"}.get(arch, "llama"))
    if arch == "bert-base":
        config = BertConfig(pad_token_id=tok.pad_token_id)  # BERT-base's defaults
    elif arch == "smollm2-135m":
        config = LlamaConfig(vocab_size=49152, hidden_size=576, intermediate_size=1536,
                             num_hidden_layers=30, num_attention_heads=9, num_key_value_heads=3,
                             tie_word_embeddings=True, max_position_embeddings=2048)  # fmt: skip
    else:  # gemma-3-270m
        config = Gemma3TextConfig(vocab_size=262144, hidden_size=640, intermediate_size=2048,
                                  num_hidden_layers=18, num_attention_heads=4,
                                  num_key_value_heads=1, head_dim=256, sliding_window=512,
                                  max_position_embeddings=32768)  # fmt: skip
    torch.manual_seed(0)
    path = root / arch
    AutoModel.from_config(config).save_pretrained(path)
    tok.save_pretrained(path)
    return path


def part2(root: Path, steps: int) -> dict:
    out: dict = {}
    for arch in ("bert-base", "smollm2-135m", "gemma-3-270m"):
        path = full_size(arch, root)
        for batch in (64, 512):
            for precision in ("bf16", "fp16", "fp32"):
                key = f"{arch}/batch{batch}/{precision}"
                out[key] = _run(lambda m=path, b=batch, p=precision: dict(
                    zip(("losses", "moved", "s_per_step", "peak_gib"),
                        contrastive(m, p, b, steps, words=40), strict=True)))  # fmt: skip
                out[key].pop("losses", None)
                print(key, out[key], flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="gpu_check.json")
    parser.add_argument("--steps", type=int, default=6, help="steps per timing in part 2")
    parser.add_argument("--part", choices=["1", "2", "both"], default="both")
    parser.add_argument("--device", default="cuda")
    args = parser.parse_args()
    global DEVICE
    DEVICE = torch.device(args.device)
    cuda = DEVICE.type == "cuda"
    report = {"device": torch.cuda.get_device_name(0) if cuda else "cpu", "torch": torch.__version__,
              "bf16_native": cuda and torch.cuda.is_bf16_supported(including_emulation=False)}  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        if args.part in ("1", "both"):
            report["part1"] = part1(Path(tmp) / "tiny")
            for k, v in report["part1"].items():
                print(k, "ok" if v["ok"] else v["error"], flush=True)
        if args.part in ("2", "both"):
            report["part2"] = part2(Path(tmp) / "full", args.steps)
    Path(args.out).write_text(json.dumps(report, indent=1, default=str), encoding="utf-8")


if __name__ == "__main__":
    main()
