"""Check the CUDA paths of every training loop and measure them at the papers' sizes, in
one call on a fresh GPU machine (no weights, no data: every model is built from its config
with random weights, every text is made up):

    PYTHONPATH=src python bench/gpu_check.py --out gpu_check.json   # sized for < 5 min on an H100

Part 1 (correctness): one short training run of each loop (contrastive bi-encoder on a
masked and a causal LM, supervised fine-tuning, the decoder-only and the seq2seq
paraphraser) on tiny random models, in bf16 and in fp16 (GradScaler). A loop passes
when its losses are finite and its weights moved.

Part 2 (scale): contrastive training (InfoNCE, paracl's trainer) on models of the
papers' shapes (BERT-base, SmolLM2-135M, gemma-3-270m) at batch 64 and 512 x 32 tokens,
in bf16, fp16 and fp32. Each configuration first trains `--warmup` steps (CUDA context,
cuBLAS heuristics, the allocator's pools: reported apart as `warmup_s`), then `--steps`
timed ones: seconds a step, tokens a second, peak memory, and the share of the device's
dense bf16 peak that the step's arithmetic reaches (6 x weights x tokens plus attention;
PEAK_BF16_TFLOPS holds the peaks by device name). Then one evaluation fine-tuning step
(BERT-base shape, paracl.parts.finetune.tuning's `Fit.step`) and one batched generation
(SmolLM2 shape, the paraphraser's beam search), each after a warm-up.

`--quick` runs part 2 and the rest on CPU with tiny shapes in seconds (the test suite
runs it, so the script cannot rot); `--device cpu` runs the full shapes on CPU.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import pandas as pd
import torch

from paracl.core.configs import from_section
from paracl.parts.encoder.build import build_encoder
from paracl.parts.losses import infonce
from paracl.schema import load_params
from paracl.stages.train_contrastive.training.trainer import TrainConfig, train
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


PARAMS = load_params(Path(__file__).resolve().parents[1] / "params.yaml")


def train_config(batch: int, precision: str) -> TrainConfig:
    """params.yaml's train_contrastive keys, with this check's lr, epochs, batch and precision."""
    own = {"lr": 5e-5, "epochs": 1, "batch_size": batch, "precision": precision}
    return from_section(TrainConfig, {**PARAMS["train_contrastive"], **own}, seed=0, mega_batch=1)


def finetune_config(**own):
    """params.yaml's evaluate keys (max_seq_length 128 ...), with this check's one epoch, the
    whole batch in one forward, and its own lr, batch and precision."""
    from paracl.parts.finetune.tuning import FinetuneConfig

    whole = {"epochs": 1, "mini_batch_size": None}
    return from_section(FinetuneConfig, {**PARAMS["evaluate"], **whole, **own})


def snapshot(model) -> dict:
    return {n: p.detach().float().cpu().clone() for n, p in model.named_parameters()}


def contrastive(model_dir: Path, precision: str, batch: int, steps: int, words: int = 12):
    """Train `steps` InfoNCE steps; returns (losses, weight change, s/step, peak GiB)."""
    model = build_encoder(model_dir, "mean", 32, dropout=0.1).to(DEVICE)
    text = sentences(batch * steps, words, 0)
    examples = pd.DataFrame({"anchor": text, "positive": text, "negative": [None] * len(text)})
    objective = infonce.objective(model, infonce.Params(), {"temperature": 0.05})
    config = train_config(batch, precision)
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

    from paracl.parts.finetune.tuning import TrainTokens, make_fit

    tok = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForSequenceClassification.from_pretrained(model_dir, num_labels=2).to(DEVICE)
    a, b = sentences(32, 8, 1), sentences(32, 8, 2)
    targets = torch.tensor([i % 2 for i in range(32)])
    cfg = finetune_config(lr=1e-4, batch_size=8, precision=precision)
    tokens = TrainTokens(tok, pd.DataFrame({"sentence1": a, "sentence2": b}), targets, 128)
    fit = make_fit(model, tokens, cfg, DEVICE, steps=4)
    before = snapshot(model)
    losses = [fit.step(list(range(start, start + 8))) for start in range(0, 32, 8)]
    scale = fit.scaler.get_scale() if fit.scaler.is_enabled() else None
    return {"losses": [float(x.sum()) for x in losses], "moved": moved(before, model),
            "scale": scale}  # fmt: skip


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


# dense (no sparsity) bf16 tensor-core peaks, TFLOP/s, from NVIDIA's datasheets; the first
# name found in torch.cuda.get_device_name() wins (so "H100 PCIe" before "H100")
PEAK_BF16_TFLOPS = {"H200": 989.4, "H100 PCIe": 756.5, "H100 NVL": 835.5, "H100": 989.4,
                    "A100": 312.0}  # fmt: skip
SEQ = 32  # tokens a sentence in part 2 (every made-up sentence is longer: all are cut)


def peak_flops(device_name: str) -> float | None:
    """The device's dense bf16 peak in FLOP/s, or None where the table has none (CPU)."""
    return next((t * 1e12 for n, t in PEAK_BF16_TFLOPS.items() if n in device_name), None)


def shape_config(arch: str, tok):
    """The config of a paper's model shape (its published sizes), sized to `tok`'s pad id."""
    from transformers import BertConfig, Gemma3TextConfig, LlamaConfig

    if arch == "bert-base":
        return BertConfig(pad_token_id=tok.pad_token_id)  # BERT-base's defaults
    if arch == "smollm2-135m":
        return LlamaConfig(vocab_size=49152, hidden_size=576, intermediate_size=1536,
                           num_hidden_layers=30, num_attention_heads=9, num_key_value_heads=3,
                           tie_word_embeddings=True, max_position_embeddings=2048)  # fmt: skip
    return Gemma3TextConfig(vocab_size=262144, hidden_size=640, intermediate_size=2048,
                            num_hidden_layers=18, num_attention_heads=4, num_key_value_heads=1,
                            head_dim=256, sliding_window=512,
                            max_position_embeddings=32768)  # fmt: skip


def build_shape(arch: str, root: Path) -> Path:
    """A randomly initialised model of `arch` saved with a tiny tokenizer (a step's cost
    depends on the sequence length, not on the vocabulary the text came from); causal
    shapes are saved with their LM head, so that one folder also serves generation.
    `tiny-bert` / `tiny-llama`: the test suite's tiny models (--quick)."""
    from transformers import AutoModel, AutoModelForCausalLM

    if arch.startswith("tiny-"):
        return build_tiny_model(arch.removeprefix("tiny-"), root / arch)
    tok = build_tokenizer({"bert-base": "bert"}.get(arch, "llama"))
    config = shape_config(arch, tok)
    torch.manual_seed(0)
    cls = AutoModelForCausalLM if arch == "smollm2-135m" else AutoModel
    path = root / arch
    cls.from_config(config).save_pretrained(path)
    tok.save_pretrained(path)
    return path


def step_flops(model, tokens: int) -> float:
    """Training FLOPs of `tokens` tokens: 6 x the matmul weights (not the embedding
    lookups) + attention's QK and AV (12 x layers x seq x attention width), per token."""
    auto = model[0].auto_model
    weights = sum(p.numel() for n, p in auto.named_parameters() if "embed" not in n)
    cfg = auto.config
    width = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
    attention = 12 * cfg.num_hidden_layers * SEQ * width * cfg.num_attention_heads
    return (6 * weights + attention) * tokens


def _sync() -> None:
    if DEVICE.type == "cuda":
        torch.cuda.synchronize()


def timed_train(model, precision: str, batch: int, steps: int, seed: int) -> tuple[float, int]:
    """Seconds of one train() call of `steps` InfoNCE steps (setup and tokenizing its texts
    once included, as a user's epoch pays them), and the steps it ran."""
    text = sentences(batch * steps, 40, seed)
    examples = pd.DataFrame({"anchor": text, "positive": text, "negative": [None] * len(text)})
    objective = infonce.objective(model, infonce.Params(), {"temperature": 0.05})
    config = train_config(batch, precision)
    _sync()
    t0 = time.perf_counter()
    result = train(model, examples, objective, config, None, None, objective.parameters())
    _sync()
    return time.perf_counter() - t0, result.steps


def scale_row(model, precision: str, batch: int, steps: int, warmup: int, peak) -> dict:
    """Warm-up steps (reported apart), then timed steps of `model` at `batch`."""
    warm_s, warm_steps = timed_train(model, precision, batch, warmup, seed=1)
    if DEVICE.type == "cuda":
        torch.cuda.reset_peak_memory_stats()
    before = snapshot(model)
    seconds, done = timed_train(model, precision, batch, steps, seed=2)
    per_step, tokens = seconds / done, 2 * batch * SEQ  # anchor + positive rows
    flops = step_flops(model, tokens) / per_step
    return {
        "warmup_s": round(warm_s, 4),
        "warmup_steps": warm_steps,
        "s_per_step": round(per_step, 4),
        "steps": done,
        "tokens_per_s": round(tokens / per_step, 1),
        "tflops": float(f"{flops / 1e12:.3g}"),
        "share_of_bf16_peak": round(flops / peak, 4) if peak else None,
        "peak_gib": round(torch.cuda.max_memory_allocated() / 2**30, 2)
        if DEVICE.type == "cuda" else None,
        "moved": moved(before, model),
    }  # fmt: skip


def part2(dirs: dict[str, Path], batches, precisions, steps: int, warmup: int, peak) -> dict:
    out: dict = {}
    for arch, path in dirs.items():
        model = build_encoder(path, "mean", SEQ, dropout=0.1).to(DEVICE)
        for batch in batches:
            for precision in precisions:
                key = f"{arch}/batch{batch}/{precision}"
                out[key] = _run(lambda m=model, b=batch, p=precision: scale_row(
                    m, p, b, steps, warmup, peak))  # fmt: skip
                print(key, out[key], flush=True)
        model = None  # freed before the next shape loads
        if DEVICE.type == "cuda":
            torch.cuda.empty_cache()
    return out


def finetune_timing(path: Path, precision: str, batch: int, steps: int) -> dict:
    """Evaluation fine-tuning steps (paracl.parts.finetune.tuning's `Fit.step`: pairs
    classified, clipped AdamW step) after one warm-up step: seconds a step and pairs a
    second."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from paracl.parts.finetune.tuning import TrainTokens, make_fit

    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModelForSequenceClassification.from_pretrained(path, num_labels=2).to(DEVICE)
    n = batch * (steps + 1)
    pairs = pd.DataFrame({"sentence1": sentences(n, 20, 5), "sentence2": sentences(n, 20, 6)})
    targets = torch.tensor([i % 2 for i in range(n)])
    cfg = finetune_config(lr=2e-5, batch_size=batch, precision=precision)
    fit = make_fit(model, TrainTokens(tok, pairs, targets, 128), cfg, DEVICE, steps + 1)
    model.train()
    times = []
    for k in range(steps + 1):
        _sync()
        t0 = time.perf_counter()
        fit.step(list(range(k * batch, (k + 1) * batch)))
        _sync()
        times.append(time.perf_counter() - t0)
    per_step = sum(times[1:]) / steps
    return {"warmup_s": round(times[0], 4), "s_per_step": round(per_step, 4), "steps": steps,
            "batch": batch, "pairs_per_s": round(batch / per_step, 1)}  # fmt: skip


def generation_timing(path: Path, precision: str, batch: int, beams: int) -> dict:
    """One batched beam-search generation of the paraphraser (after one warm-up call on a
    few texts): seconds and generated tokens a second."""
    from paracl.parts import paraphraser as para

    model, tok = para.load(path, DEVICE)
    window = {k: PARAMS["generate_paraphrases"][k] for k in ("min_ratio", "max_ratio")}
    kwargs = {"num_beams": beams, "batch_size": batch, "max_length": 64, "device": DEVICE,
              "precision": precision, **window}  # fmt: skip
    t0 = time.perf_counter()
    para.generate(model, tok, sentences(2, 12, 7), "", **kwargs)
    _sync()
    warm = time.perf_counter() - t0
    t0 = time.perf_counter()
    _, counts = para.generate(model, tok, sentences(batch, 12, 8), "", **kwargs)
    _sync()
    seconds = time.perf_counter() - t0
    return {"warmup_s": round(warm, 4), "seconds": round(seconds, 4), "batch": batch,
            "beams": beams, "generated_tokens": int(sum(counts)),
            "tokens_per_s": round(sum(counts) / seconds, 1)}  # fmt: skip


def plan(quick: bool) -> dict:
    """What to run: the papers' shapes on the GPU, or tiny ones in seconds (--quick)."""
    if quick:
        return {"shapes": ("tiny-bert", "tiny-llama"), "batches": (4,),
                "precisions": ("fp32", "bf16"), "finetune": ("tiny-bert", 4),
                "generation": ("tiny-llama", 4, 2)}  # fmt: skip
    return {"shapes": ("bert-base", "smollm2-135m", "gemma-3-270m"), "batches": (64, 512),
            "precisions": ("bf16", "fp16", "fp32"), "finetune": ("bert-base", 32),
            "generation": ("smollm2-135m", 64, 4)}  # fmt: skip


def run_scale(report: dict, root: Path, args) -> None:
    """Part 2, the fine-tuning step and the generation, into `report`."""
    todo = plan(args.quick)
    peak = peak_flops(report["device"])
    dirs = {arch: build_shape(arch, root) for arch in todo["shapes"]}
    report["part2"] = part2(dirs, todo["batches"], todo["precisions"], args.steps,
                            args.warmup, peak)  # fmt: skip
    ft_arch, ft_batch = todo["finetune"]
    gen_arch, gen_batch, beams = todo["generation"]
    report["finetune_step"], report["generation"] = {}, {}
    for precision in todo["precisions"]:
        report["finetune_step"][f"{ft_arch}/{precision}"] = _run(
            lambda p=precision: finetune_timing(dirs[ft_arch], p, ft_batch, args.steps)
        )
        report["generation"][f"{gen_arch}/{precision}"] = _run(
            lambda p=precision: generation_timing(dirs[gen_arch], p, gen_batch, beams))  # fmt: skip
    for section in ("finetune_step", "generation"):
        for key, row in report[section].items():
            print(section, key, row, flush=True)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="gpu_check.json")
    parser.add_argument("--steps", type=int, default=5, help="timed steps per configuration")
    parser.add_argument("--warmup", type=int, default=2, help="untimed steps before them")
    parser.add_argument("--part", choices=["1", "2", "both"], default="both")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--quick", action="store_true", help="tiny shapes on CPU, in seconds")
    args = parser.parse_args(argv)
    global DEVICE
    DEVICE = torch.device("cpu" if args.quick else args.device)
    cuda = DEVICE.type == "cuda"
    report = {"device": torch.cuda.get_device_name(0) if cuda else "cpu", "torch": torch.__version__,
              "bf16_native": cuda and torch.cuda.is_bf16_supported(including_emulation=False),
              "quick": args.quick, "steps": args.steps, "warmup_steps": args.warmup}  # fmt: skip
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        if args.part in ("1", "both") and not args.quick:
            report["part1"] = part1(Path(tmp) / "tiny")
            for k, v in report["part1"].items():
                print(k, "ok" if v["ok"] else v["error"], flush=True)
        if args.part in ("2", "both"):
            run_scale(report, Path(tmp) / "shapes", args)
    report["total_s"] = round(time.perf_counter() - start, 1)
    Path(args.out).write_text(json.dumps(report, indent=1, default=str), encoding="utf-8")
    return report


if __name__ == "__main__":
    main()
