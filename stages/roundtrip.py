"""Stage roundtrip: corpus sentences → round-trip translation candidates (a shard directory).

    python stages/roundtrip.py CORPUS CANDIDATES METRICS [MODE]

Each sampled sentence is translated to the pivot language and back with every decoding
setting in each direction (paper §3.2: 2 × 2 = 4 candidates a sentence), shard by shard
(resumable; Ray actors on `executor: ray`, each loading both translators once); see
paracl.stages.roundtrip. MODE (sample | greedy) overrides `roundtrip.mode`: stage
roundtrip_baseline@greedy runs `greedy`, the paper's round-trip baseline (§4.4: the same
translators, greedy decoding), on the same seeded sample.
"""

import logging
import sys
import time

from paracl.core.device import seed_everything, select_device
from paracl.core.distributed.sharded import Engine
from paracl.core.key_figures import write_metrics
from paracl.core.params import ParamsError, RunSettings
from paracl.core.stage import args, run
from paracl.stages import roundtrip as translate

log = logging.getLogger("roundtrip")
# dvc.yaml's metrics (paracl.core.key_figures): candidates made
KEY_FIGURES = ("n_candidates",)


def main(params: dict) -> None:
    names = ("corpus", "candidates", "metrics") + (("mode",) if len(sys.argv) == 5 else ())
    paths = args(*names)
    mode = getattr(paths, "mode", params["roundtrip"]["mode"])
    if mode not in ("sample", "greedy"):
        raise ParamsError(f"stages/roundtrip.py: MODE must be sample or greedy, got {mode!r}")
    cfg, run_settings = {**params["roundtrip"], "mode": mode}, RunSettings.of(params)
    seed_everything(run_settings.seed)
    settings = translate.decoding_settings(cfg)
    device = select_device(run_settings.device)
    models = {
        "forward_model": translate.describe(cfg["forward_model"], 0, device),
        "backward_model": translate.describe(cfg["backward_model"], 1, device),
    }
    # the paper's models (§4.1); anything else is a deviation, named in every metrics file
    models["paper_model"] = (cfg["forward_model"], cfg["backward_model"]) == translate.PAPER_MODELS
    started = time.perf_counter()
    manifest, n_sentences = translate.round_trip_sharded(
        paths.corpus, paths.candidates, cfg, run_settings, Engine.from_params(params), models
    )
    seconds = time.perf_counter() - started
    stand_in = models["forward_model"]["stand_in"] or models["backward_model"]["stand_in"]
    write_metrics(
        {
            **models,
            "stand_in": stand_in,
            "mode": cfg["mode"],
            "settings": [s.name for s in settings],
            "n_sentences": n_sentences,
            "n_candidates": manifest["rows"],
            "candidates_per_sentence": len(settings) ** 2,
            "n_shards": len(manifest["shards"]),
            "device": device.type,
        },
        paths.metrics,
        KEY_FIGURES,
    )
    note = " (STAND-IN model: outputs are noise)" if stand_in else ""
    log.info(
        "%d sentences → %d candidates in %.1f s%s", n_sentences, manifest["rows"], seconds, note
    )


if __name__ == "__main__":
    run(main)
