"""Stage summary: metrics/eval/*/*.json → metrics/summary.json + metrics/summary.md."""

from pathlib import Path

from paracl.evaluation.summary import build_summary, load_results, to_markdown
from paracl.io import ArtifactError, atomic_path, write_json
from paracl.stage import run

EVAL = Path("metrics/eval")


def main(params: dict) -> None:
    ev, cfg = params["evaluate"], params["summary"]
    if not EVAL.is_dir():  # one missing job is an n/a cell; no job at all is an error
        raise ArtifactError(f"{EVAL}: not found (did the evaluate stage run?)")
    results = load_results(EVAL, ev["methods"], ev["tasks"])
    summary = build_summary(results, ev["tasks"], cfg["avg_over"])
    write_json(summary, "metrics/summary.json")
    with atomic_path("metrics/summary.md") as tmp:
        tmp.write_text(to_markdown(summary, cfg["decimals"]), encoding="utf-8")


if __name__ == "__main__":
    run(main)
