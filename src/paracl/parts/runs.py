"""The runs of train_contrastive's methods: one per method and training seed.

Why a module of its own: `paracl expand` writes them into params.yaml
(train_contrastive.runs), because dvc.yaml's foreach cannot compute a product, a name or
the encoder of the same seed; train_contrastive and evaluate_finetune refuse a stale list,
and the CLI, the presets and the summary read them. Plain dicts, no torch.
"""

from __future__ import annotations

from paracl.core.errors import ParamsError

ENCODERS = "models/encoders/"  # dvc.yaml: train_contrastive@<run> writes ENCODERS + <run>
EXPAND = "paracl expand"  # the command that rewrites train_contrastive.runs


def _method_seeds(name: str, entry: dict, shared: list[int] | None) -> list[int | None]:
    """A method's training seeds: its own `seeds`, else train_contrastive.seeds, else
    [None] (one run with the top-level seed). `none` trains nothing: one run."""
    where = f"train_contrastive.methods.{name}"
    if "seed" in entry:
        raise ParamsError(f"'{where}.seed' was replaced by seeds: [{entry['seed']}]")
    own = entry.get("seeds")
    if entry.get("loss") == "none":
        if own is not None:
            raise ParamsError(f"'{where}.seeds': loss none trains nothing (every seed is alike)")
        return [None]
    seeds = own if own is not None else shared
    if seeds is not None and (not seeds or len(set(seeds)) != len(seeds)):
        key = f"{where}.seeds" if own is not None else "train_contrastive.seeds"
        raise ParamsError(f"'{key}' must list distinct seeds, got {seeds}")
    return [None] if seeds is None else list(seeds)


def _run_name(method: str, seed: int | None, seeds: list) -> str:
    """A method with one seed keeps its name (models/encoders/ppdb); several: ppdb_s1, …"""
    return method if len(seeds) == 1 else f"{method}_s{seed}"


def expand_runs(tc: dict) -> dict[str, dict]:
    """train_contrastive.runs as `paracl expand` writes it: one run per method and seed,
    {run name: {method, seed, input}}. `input` is the run's DVC dep: the method's input,
    or, for a method that continues from another's encoder (`data` set, input
    models/encoders/<method>), that method's run of the same seed.

    Why written into params.yaml: dvc.yaml's foreach cannot compute a product, a name or
    the encoder of the same seed, so DVC reads the runs and every stage checks them."""
    methods = tc["methods"]
    seeds = {name: _method_seeds(name, entry, tc.get("seeds")) for name, entry in methods.items()}
    runs: dict[str, dict] = {}
    for name, entry in methods.items():
        parent = str(entry["input"]).rstrip("/").removeprefix(ENCODERS)
        continued = entry.get("data") is not None and parent in seeds
        for seed in seeds[name]:
            run = _run_name(name, seed, seeds[name])
            if run in runs:
                raise ParamsError(
                    f"train_contrastive.methods: {name}'s run {run!r} is another method's "
                    "run name too: rename one"
                )
            path = entry["input"]
            if continued:
                if seed not in seeds[parent]:
                    which = "the top-level seed" if seed is None else f"seed {seed}"
                    raise ParamsError(
                        f"'train_contrastive.methods.{name}': its run with {which} continues "
                        f"from {parent}'s, which {parent} does not train (seeds: "
                        f"{'the top-level seed' if seeds[parent] == [None] else seeds[parent]})"
                    )
                path = ENCODERS + _run_name(parent, seed, seeds[parent])
            runs[run] = {"method": name, "seed": seed, "input": path}
    return runs
