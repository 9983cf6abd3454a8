"""Stage fetch: raw datasets → data/raw/ (from the mirror or canonical URLs)."""

from paracl.fetch import fetch, resolve_mirror
from paracl.io import write_json
from paracl.stage import run


def main(params: dict) -> None:
    cfg = params["fetch"]
    metrics = fetch(cfg["sources"], "data/raw", resolve_mirror(cfg["mirror"]))
    write_json(metrics, "metrics/fetch.json")


if __name__ == "__main__":
    run(main)
