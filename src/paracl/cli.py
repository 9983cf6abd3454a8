"""`paracl` command line: the things people do outside DVC.

paracl where                       # every artifact of dvc.yaml and whether it exists
paracl models                      # packaged offline models this machine has
paracl score MODEL "s1" "s2"       # cosine similarity of a pair under an encoder
paracl paraphrase "sentence" --tags "<SIM95><BLEU20>" [--model models/paraphraser]
paracl preset NAME [--dry-run]     # apply presets/NAME.yaml to params.yaml (validated)
paracl expand [--dry-run]          # rewrite train_contrastive.runs (methods x seeds)
paracl theta-curve                 # θ sweep (dvc exp show) -> metrics/theta_curve.csv/.png
paracl learning-curve              # STS avg vs training steps -> metrics/learning_curve.csv/.png
paracl report [--check]            # README/docs tables and plots from results/*/ (rendered)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import yaml


def _artifacts(dvc_yaml: Path) -> list[tuple[str, str, str]]:
    """(stage, kind, path) for every out/metric/plot in dvc.yaml, foreach stages unexpanded."""
    stages = yaml.safe_load(dvc_yaml.read_text()).get("stages", {})
    rows = []
    for name, stage in stages.items():
        body = stage.get("do", stage)
        for kind in ("outs", "metrics", "plots"):
            for entry in body.get(kind, []) or []:
                path = next(iter(entry)) if isinstance(entry, dict) else entry
                rows.append((name, kind, str(path)))
    return rows


def cmd_where(args: argparse.Namespace) -> int:
    for stage, kind, path in _artifacts(Path(args.dvc_yaml)):
        templated = "${" in path
        state = "template" if templated else ("present" if Path(path).exists() else "missing")
        print(f"{stage:24s} {kind:8s} {state:9s} {path}")
    return 0


def cmd_models(args: argparse.Namespace) -> int:
    from paracl.models import main as models_main

    return models_main(["--check"])


def cmd_score(args: argparse.Namespace) -> int:
    from sentence_transformers import SentenceTransformer

    from paracl.models import resolve_model

    path = resolve_model(args.model).path
    encoder = SentenceTransformer(str(path), device="cpu")
    a, b = encoder.encode([args.sentence1, args.sentence2], normalize_embeddings=True)
    print(f"{float(a @ b):.4f}")
    return 0


def cmd_paraphrase(args: argparse.Namespace) -> int:
    import torch
    from transformers import AutoTokenizer

    from paracl.device import seed_everything, select_device
    from paracl.params import ParamsError
    from paracl.roundtrip import paraphraser, tagging

    try:
        tags = tagging.parse_tags(args.tags, source="--tags")
    except ParamsError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    model_dir = Path(args.model)
    if not (model_dir / "config.json").exists():
        print(f"error: {model_dir}: no paraphraser here (run train_paraphraser)", file=sys.stderr)
        return 1
    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
    unknown = [t for t in tags if t not in tokenizer.get_vocab()]
    if unknown:
        print(f"error: {model_dir}: tokenizer has no tag token {unknown[0]}", file=sys.stderr)
        return 1
    seed_everything(0)
    device = select_device(args.device)
    model, _ = paraphraser.load(model_dir, device)  # BART or a decoder-only LM
    with torch.inference_mode():
        outputs, _ = paraphraser.generate(
            model,
            tokenizer,
            args.sentences,
            "".join(tags),
            num_beams=args.num_beams,
            min_ratio=args.min_ratio,
            max_ratio=args.max_ratio,
            device=device,
        )
    for out in outputs:
        print(out)
    return 0


def cmd_preset(args: argparse.Namespace) -> int:
    from paracl.presets import run_cli

    return run_cli(args)


def cmd_expand(args: argparse.Namespace) -> int:
    from paracl.presets import run_expand_cli

    return run_expand_cli(args)


def cmd_theta_curve(args: argparse.Namespace) -> int:
    from paracl.evaluation import theta_curve as tc
    from paracl.io import read_json

    try:  # read_json's errors (missing, not JSON) are ValueErrors naming the file
        data = [read_json(path) for path in args.input] if args.input else tc.exp_show_json()
        rows = tc.theta_curve(data, args.out_dir, args.method, args.metric)
    except (RuntimeError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    for r in rows:
        spread = "" if r["std"] is None else f" ± {r['std']:.2f}"
        print(f"theta={r['theta']:g}  {args.metric}={r['value']:.2f}{spread}  "
              f"(n={r['n_experiments']})")  # fmt: skip
    print(f"wrote {args.out_dir}/theta_curve.csv and {args.out_dir}/theta_curve.png")
    return 0


def cmd_learning_curve(args: argparse.Namespace) -> int:
    from paracl.evaluation.learning_curve import learning_curve

    try:  # a missing or malformed file is a ValueError/OSError naming it
        rows = learning_curve(args.summary, args.train_dir, args.out_dir, args.merge)
    except (OSError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    for r in rows:
        spread = "" if r["std"] is None else f" ± {r['std']:.2f}"
        print(f"{r['family']:<24} {r['steps']:>4} steps  avg={r['value']:.2f}{spread}")
    print(f"wrote {args.out_dir}/learning_curve.csv and {args.out_dir}/learning_curve.png")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from paracl.errors import UserError
    from paracl.report import main as report_main

    try:
        return report_main(Path(args.root), args.check, args.snapshot_default, not args.no_plots)
    except UserError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="paracl", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    where = sub.add_parser("where", help="list the pipeline's artifacts and whether they exist")
    where.add_argument("--dvc-yaml", default="dvc.yaml")
    where.set_defaults(func=cmd_where)
    sub.add_parser("models", help="list packaged offline models").set_defaults(func=cmd_models)
    score = sub.add_parser("score", help="cosine similarity of two sentences under an encoder")
    score.add_argument("model", help="encoder directory (e.g. models/encoders/ppdb) or hub id")
    score.add_argument("sentence1")
    score.add_argument("sentence2")
    score.set_defaults(func=cmd_score)
    para = sub.add_parser("paraphrase", help="paraphrase sentences under <SIM><BLEU> tags")
    para.add_argument("sentences", nargs="+")
    para.add_argument("--tags", required=True, help='e.g. "<SIM95><BLEU20>"')
    para.add_argument("--model", default="models/paraphraser", help="trained paraphraser dir")
    para.add_argument("--num-beams", type=int, default=20)
    para.add_argument("--min-ratio", type=float, default=0.75)
    para.add_argument("--max-ratio", type=float, default=1.5)
    para.add_argument("--device", default="cpu", choices=("auto", "cpu", "cuda", "mps"))
    para.set_defaults(func=cmd_paraphrase)
    preset = sub.add_parser("preset", help="apply presets/NAME.yaml to params.yaml")
    from paracl.presets import add_arguments

    add_arguments(preset)
    preset.set_defaults(func=cmd_preset)
    expand = sub.add_parser("expand", help="rewrite train_contrastive.runs from its methods")
    expand.add_argument("--params", default="params.yaml")
    expand.add_argument("--dry-run", action="store_true", help="print the change only")
    expand.set_defaults(func=cmd_expand)
    theta = sub.add_parser("theta-curve", help="dev average vs theta over DVC experiments")
    theta.add_argument(
        "--input",
        action="append",
        help="saved `dvc exp show --json` output (default: run it); repeat to join sweeps "
        "run in different checkouts or sessions",
    )
    theta.add_argument("--method", default="ppdb")
    theta.add_argument(
        "--metric", default="dev_avg", help="dev_avg (fine-tuned dev) or avg (effect presets)"
    )
    theta.add_argument("--out-dir", default="metrics")
    theta.set_defaults(func=cmd_theta_curve)
    curve = sub.add_parser("learning-curve", help="STS avg vs training steps (one summary)")
    curve.add_argument("--summary", default="metrics/summary.json")
    curve.add_argument("--train-dir", default="metrics/train", help="<run>.json: its steps")
    curve.add_argument("--out-dir", default="metrics")
    curve.add_argument(
        "--merge", nargs="*", default=[], help="committed learning_curve.csv files to draw too"
    )
    curve.set_defaults(func=cmd_learning_curve)
    report = sub.add_parser("report", help="render README/docs result tables, plots, params page")
    report.add_argument("--check", action="store_true", help="only compare; exit 1 if stale")
    report.add_argument(
        "--snapshot-default",
        action="store_true",
        help="first copy metrics/summary.* and the heatmap data into results/default/",
    )
    report.add_argument("--no-plots", action="store_true", help="tables only")
    report.add_argument("--root", default=".", help="the repository (default: here)")
    report.set_defaults(func=cmd_report)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
