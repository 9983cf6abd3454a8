"""Stage fetch: raw datasets → data/raw/ (from the mirror or canonical URLs).

python stages/fetch.py <raw dir> <metrics.json>
"""

from paracl.core.io import write_json
from paracl.core.stage import args, run
from paracl.stages.fetch import fetch, resolve_mirror


def main(params: dict) -> None:
    paths = args("raw", "metrics")
    cfg = params["fetch"]
    mirror = resolve_mirror(cfg["mirror"])
    metrics = fetch(cfg["sources"], paths.raw, mirror, cfg.get("allow_unverified") or [])
    write_json(metrics, paths.metrics)


if __name__ == "__main__":
    run(main)
