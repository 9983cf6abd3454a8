"""`paracl` command line: the things people do outside DVC.

paracl where                       # every artifact of dvc.yaml and whether it exists
paracl models                      # packaged offline models this machine has
paracl score MODEL "s1" "s2"       # cosine similarity of a pair under an encoder
paracl paraphrase "sentence" --tags "<SIM95><BLEU20>" [--model models/paraphraser]
paracl preset NAME [--dry-run]     # apply presets/NAME.yaml to params.yaml (validated)
paracl preset --list               # every preset: its purpose and expected time
paracl expand [--dry-run]          # rewrite train_contrastive.runs (methods x seeds)
paracl theta-curve                 # θ, |D| chosen on dev (dvc exp show) -> metrics/theta_*
paracl learning-curve              # STS avg vs training steps -> metrics/learning_curve.csv/.png
paracl report [--check]            # README/docs tables and plots from results/*/ (rendered)
paracl --version                   # the installed package's version

Bad input (a missing file, an invalid preset, an unknown model) ends in one `error:` line
on stderr naming the culprit and exit status 1; a usage error is argparse's (status 2).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path

import yaml

from paracl import __version__
from paracl.core.errors import InputError, UserError
from paracl.core.stage import one_line

SIGPIPE_EXIT = 141  # 128 + SIGPIPE: what a shell reports for `cat` cut off by `head`


def _artifacts(dvc_yaml: Path) -> list[tuple[str, str, str]]:
    """(stage, kind, path) for every out/metric/plot in dvc.yaml, foreach stages unexpanded."""
    from paracl.core.params import _yaml_problem  # `FILE:LINE:COL: not valid YAML: ...`

    try:
        stages = yaml.safe_load(dvc_yaml.read_text(encoding="utf-8")).get("stages", {})
    except yaml.YAMLError as err:
        raise InputError(_yaml_problem(dvc_yaml, err)) from None
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
    from paracl.core.models import main as models_main

    return models_main(["--check"])


def built_by(path: str, dvc_yaml: Path = Path("dvc.yaml")) -> str | None:
    """The stage of dvc.yaml that writes `path` (`train_contrastive@ppdb` for
    models/encoders/ppdb, a foreach stage's out matched against its template), or None.
    Why: an encoder asked for before `dvc repro` is not a hub id to download."""
    if not dvc_yaml.is_file():
        return None
    for stage, _, out in _artifacts(dvc_yaml):
        parts = re.split(r"\$\{([^}]*)\}", out.rstrip("/"))
        pattern = "".join(re.escape(p) if i % 2 == 0 else "([^/]+)" for i, p in enumerate(parts))
        found = re.fullmatch(pattern, path.rstrip("/"))
        if found:
            named = len(parts) == 3 and parts[1] in ("key", "item")  # stage@<that value>
            return f"{stage}@{found.group(1)}" if named else stage
    return None


def cmd_score(args: argparse.Namespace) -> int:
    from paracl.core.models import resolve_model

    stage = None if Path(args.model).exists() else built_by(args.model)
    if stage:
        raise InputError(f"{args.model}: not built yet: `dvc repro {stage}` trains it")
    path = resolve_model(args.model).path  # before the slow import: a bad id fails at once
    from sentence_transformers import SentenceTransformer

    encoder = SentenceTransformer(str(path), device="cpu")
    a, b = encoder.encode([args.sentence1, args.sentence2], normalize_embeddings=True)
    print(f"{float(a @ b):.4f}")
    return 0


def _decoding(args: argparse.Namespace, keys: tuple[str, ...]) -> dict:
    """The paraphraser's decoding keys: each flag given, else generate_paraphrases' value in
    the project's params.yaml (the one place they are written)."""
    given = {k: getattr(args, k, None) for k in keys}
    if all(v is not None for v in given.values()):
        return given
    if not Path(args.params).is_file():
        flags = ", ".join(f"--{k.replace('_', '-')}" for k, v in given.items() if v is None)
        raise InputError(f"{args.params}: not found; run in a paracl project or pass {flags}")
    from paracl.schema import load_params

    section = load_params(args.params)["generate_paraphrases"]
    return {k: section[k] if v is None else v for k, v in given.items()}


def cmd_paraphrase(args: argparse.Namespace) -> int:
    from paracl.parts.tags import tagging

    tags = tagging.parse_tags(args.tags, source="--tags")
    model_dir = Path(args.model)
    if not (model_dir / "config.json").exists():
        raise InputError(f"{model_dir}: no paraphraser here (run train_paraphraser)")
    import torch  # the slow imports after the cheap checks
    from transformers import AutoTokenizer

    from paracl.core.device import seed_everything, select_device
    from paracl.parts import paraphraser

    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
    unknown = [t for t in tags if t not in tokenizer.get_vocab()]
    if unknown:
        raise InputError(f"{model_dir}: tokenizer has no tag token {unknown[0]}")
    decoding = _decoding(args, paraphraser.DECODING)
    seed_everything(0)
    device = select_device(args.device)
    model, _ = paraphraser.load(model_dir, device)  # BART or a decoder-only LM
    with torch.inference_mode():
        outputs, _ = paraphraser.generate(
            model, tokenizer, args.sentences, "".join(tags), device=device, **decoding
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
    from paracl import theta_curve as tc
    from paracl.core.io import read_json

    data = [read_json(path) for path in args.input] if args.input else tc.exp_show_json()
    rows, chosen = tc.theta_curve(data, args.out_dir, args.method, args.metric, args.test_metric)

    def shown(value: float | None, std: float | None) -> str:
        return "n/a" if value is None else f"{value:.2f}" + ("" if std is None else f" ± {std:.2f}")

    for r in rows:
        mark = "  <- chosen on dev" if r["chosen"] else ""
        print(f"theta={r['theta']:g}  |D|={r['size'] or 'all'}  "
              f"{args.metric}={shown(r['dev'], r['dev_std'])}  "
              f"{args.test_metric}={shown(r['test'], r['test_std'])}  "
              f"(n={r['n_experiments']}){mark}")  # fmt: skip
    for gap in chosen["not_measured"]:
        print(f"note: theta={gap['theta']:g} |D|={gap['size'] or 'all'} is not measured")
    print(f"wrote {args.out_dir}/theta_curve.csv, theta_curve.png and {tc.CHOICE}")
    return 0


def cmd_learning_curve(args: argparse.Namespace) -> int:
    from paracl.learning_curve import learning_curve

    rows = learning_curve(args.summary, args.train_dir, args.out_dir, args.merge)
    for r in rows:
        spread = "" if r["std"] is None else f" ± {r['std']:.2f}"
        print(f"{r['family']:<24} {r['steps']:>4} steps  avg={r['value']:.2f}{spread}")
    print(f"wrote {args.out_dir}/learning_curve.csv and {args.out_dir}/learning_curve.png")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from paracl.report import main as report_main

    return report_main(Path(args.root), args.check, args.snapshot_default, not args.no_plots)


# -- the parser: one description per command, every option with its help and default ------


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """argparse's `(default: X)` after each option's help, except where the default is
    None: there the help says what happens without it."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.default is None:
            return action.help
        return super()._get_help_string(action)


def _command(
    sub: argparse._SubParsersAction,
    name: str,
    summary: str,
    func: Callable[[argparse.Namespace], int],
    description: str = "",
    user_errors: tuple[type[Exception], ...] = (),
) -> argparse.ArgumentParser:
    """A subcommand; `user_errors` are the exceptions besides UserError that mean bad input
    to it (e.g. the ValueError of a malformed file it was given): one line, exit status 1."""
    parser = sub.add_parser(
        name,
        help=summary,
        description=f"{summary[0].upper()}{summary[1:]}. {description}".strip(),
        formatter_class=_HelpFormatter,
    )
    parser.set_defaults(func=func, user_errors=user_errors)
    return parser


def _add_inspection(sub: argparse._SubParsersAction) -> None:
    """where, models, score, paraphrase: look at the pipeline and its models."""
    where = _command(sub, "where", "list the pipeline's artifacts and whether they exist",
                     cmd_where, "Foreach stages are listed once, their paths as templates.")  # fmt: skip
    where.add_argument("--dvc-yaml", default="dvc.yaml", help="the pipeline file to read")
    _command(sub, "models", "list the packaged offline models and whether this machine has them",
             cmd_models, "Exit status 1 when one is missing.")  # fmt: skip
    score = _command(sub, "score", "cosine similarity of two sentences under an encoder",
                     cmd_score, "Prints one number, on the CPU.")  # fmt: skip
    score.add_argument("model", help="encoder directory (e.g. models/encoders/ppdb) or model id")
    score.add_argument("sentence1", help="the first sentence")
    score.add_argument("sentence2", help="the second sentence")
    para = _command(sub, "paraphrase", "paraphrase sentences under <SIM><BLEU> tags",
                    cmd_paraphrase, "One output line per sentence, in order.")  # fmt: skip
    para.add_argument("sentences", nargs="+", help="the sentences to paraphrase")
    para.add_argument(
        "--tags", required=True, help="one SIM then one BLEU tag, e.g. '<SIM95><BLEU20>'"
    )
    para.add_argument("--model", default="models/paraphraser", help="trained paraphraser dir")
    for key, kind, what in (
        ("num_beams", int, "beam search width"),
        ("min_ratio", float, "min output/input length"),
        ("max_ratio", float, "max output/input length"),
        ("batch_size", int, "sentences a batch"),
        ("max_length", int, "prompt tokens at most"),
    ):  # paraphraser.DECODING, each defaulting to the project's params.yaml (_decoding)
        flag = f"--{key.replace('_', '-')}"
        para.add_argument(
            flag, type=kind, help=f"{what} (default: generate_paraphrases.{key} in --params)"
        )
    para.add_argument("--params", default="params.yaml", help="the project's params file")
    para.add_argument(
        "--device", default="cpu", choices=("auto", "cpu", "cuda", "mps"), help="where to run"
    )


def _add_params(sub: argparse._SubParsersAction) -> None:
    """preset, expand: rewrite params.yaml (validated, atomically)."""
    from paracl.presets import add_arguments

    preset = _command(sub, "preset", "apply presets/NAME.yaml to params.yaml, or list them",
                      cmd_preset, "The result is validated, re-read and written atomically; "
                      "an invalid one leaves params.yaml as it was.")  # fmt: skip
    add_arguments(preset)
    expand = _command(sub, "expand", "rewrite train_contrastive.runs from its methods and seeds",
                      cmd_expand, "Run it after editing train_contrastive.methods or seeds "
                      "by hand: every stage refuses a stale list.")  # fmt: skip
    expand.add_argument("--params", default="params.yaml", help="the params file to rewrite")
    expand.add_argument("--dry-run", action="store_true", help="print the change only")


def _add_results(sub: argparse._SubParsersAction) -> None:
    """theta-curve, learning-curve, report: tables and plots from measured results."""
    theta = _command(sub, "theta-curve", "choose PPDB's theta and |D| on the dev average",
                     cmd_theta_curve, "The argmax of the dev metric over the sweep's (theta, "
                     "|D|), as the PPDB paper's Figure 2; writes OUT_DIR/theta_curve.csv, .png "
                     "and theta_choice.json.", user_errors=(RuntimeError, ValueError))  # fmt: skip
    theta.add_argument(
        "--input",
        action="append",
        help="saved `dvc exp show --json` output; repeat to join sweeps run in different "
        "checkouts or sessions; none: run `dvc exp show`",
    )
    theta.add_argument("--method", default="ppdb", help="the method whose score is drawn")
    theta.add_argument(
        "--metric",
        default="dev_avg",
        help="the dev score theta and |D| are chosen on (dev_avg: the fine-tuned tasks' dev "
        "average); a test score is refused",
    )
    theta.add_argument(
        "--test-metric", default="avg", help="the test score drawn beside it, never chosen on"
    )
    theta.add_argument("--out-dir", default="metrics", help="where the CSV, PNG and JSON go")
    curve = _command(sub, "learning-curve", "STS avg vs training steps (one summary)",
                     cmd_learning_curve, "Writes OUT_DIR/learning_curve.csv and .png.",
                     user_errors=(ValueError,))  # fmt: skip
    curve.add_argument("--summary", default="metrics/summary.json", help="the summary to read")
    curve.add_argument("--train-dir", default="metrics/train", help="<run>.json: its steps")
    curve.add_argument("--out-dir", default="metrics", help="where the CSV and PNG go")
    curve.add_argument(
        "--merge", nargs="*", default=[], help="committed learning_curve.csv files to draw too"
    )
    report = _command(sub, "report", "render README/docs result tables, plots, params page",
                      cmd_report, "From the committed results/*/ and each stage's schema.")  # fmt: skip
    report.add_argument("--check", action="store_true", help="only compare; exit 1 if stale")
    report.add_argument(
        "--snapshot-default",
        action="store_true",
        help="first copy metrics/summary.* and the heatmap data into results/default/",
    )
    report.add_argument("--no-plots", action="store_true", help="tables only")
    report.add_argument("--root", default=".", help="the repository")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="paracl",
        description=__doc__.split("\n")[0],
        epilog="Exit status: 0 done, 1 bad input (one `error:` line on stderr naming it), "
        "2 a usage error; `paracl COMMAND --help` for a command's options.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add_inspection(sub)
    _add_params(sub)
    _add_results(sub)
    return parser


# -- running a command: bad input is one line on stderr, a closed pipe is silent -----------


def _user_message(err: Exception, user_errors: tuple[type[Exception], ...]) -> str | None:
    """The one-line message when `err` means bad input, else None (a bug: its traceback
    stays). A file the user named that cannot be opened is bad input too."""
    if isinstance(err, (UserError, *user_errors)):
        return one_line(err)
    if isinstance(err, OSError) and err.filename is not None:
        return f"{err.filename}: {err.strerror or err}"
    return None


def _pipe_closed() -> int:
    """stdout's reader is gone (`paracl where | head -1`): stop quietly, as `cat` does.
    stdout goes to /dev/null so that Python's flush at exit does not complain either."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return SIGPIPE_EXIT


def main(argv: list[str] | None = None) -> int:
    """Parse, run the command; exit 1 with one `error:` line on bad input. argparse's own
    usage errors keep its convention: usage, an error line, exit status 2."""
    args = build_parser().parse_args(argv)
    try:
        status = args.func(args)
        sys.stdout.flush()  # a closed pipe shows here, not in Python's exit
    except BrokenPipeError:
        return _pipe_closed()
    except Exception as err:
        message = _user_message(err, args.user_errors)
        if message is None:
            raise
        print(f"error: {message}", file=sys.stderr)
        return 1
    return status


if __name__ == "__main__":
    sys.exit(main())
