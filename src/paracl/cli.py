"""`paracl` command line: the things people do outside DVC.

paracl where                       # every artifact of dvc.yaml and whether it exists
paracl models                      # packaged offline models this machine has
paracl score MODEL "s1" "s2"       # cosine similarity of a pair under an encoder
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
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
