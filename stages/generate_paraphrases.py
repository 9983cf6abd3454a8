"""Stage generate_paraphrases: corpus sentences × requested tags → data/paraphraser/generated.parquet.

Each output is scored like the tagger scores candidates (STS ×100, sentence BLEU ×100),
so the metrics and the heatmap (paper Figure 3) show whether the tags were obeyed.
"""

import json
import logging
import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd

from paracl import schemas
from paracl.device import seed_everything, select_device
from paracl.io import ArtifactError, read_parquet, write_json, write_parquet
from paracl.params import ParamsError
from paracl.roundtrip import heatmap, paraphraser, sts_scorer, tagging
from paracl.stage import run

log = logging.getLogger("generate_paraphrases")

CORPUS = Path("data/corpus/sentences.parquet")
MODEL = Path("models/paraphraser")
SCORER = Path("models/sts_scorer")
OUT = Path("data/paraphraser/generated.parquet")
METRICS = Path("metrics/roundtrip/generate.json")
HEATMAP_DIR = Path("metrics/roundtrip/heatmaps/generated")
HEATMAP_PNG = Path("metrics/roundtrip/generated_heatmap.png")
_TAG = re.compile(r"<[A-Z]+[0-9_]+>")


def parse_tags(value: str) -> tuple[str, str]:
    """'<SIM95><BLEU20>' → ('<SIM95>', '<BLEU20>'); anything else is a params error."""
    found = _TAG.findall(value)
    if (
        "".join(found) != value.replace(" ", "")
        or len(found) != 2
        or found[0] not in tagging.SIM_TAGS
        or found[1] not in tagging.BLEU_TAGS
    ):
        raise ParamsError(
            f"params.yaml: 'generate_paraphrases.tags' entry {value!r} must be one SIM tag "
            f"({', '.join(tagging.SIM_TAGS)}) followed by one BLEU tag ({', '.join(tagging.BLEU_TAGS)})"
        )
    return found[0], found[1]


def main(params: dict) -> None:
    cfg = params["generate_paraphrases"]
    lang, seed = params["lang"], params["seed"]
    requested = [parse_tags(t) for t in cfg["tags"]]
    if cfg["min_ratio"] > cfg["max_ratio"]:
        raise ParamsError("params.yaml: 'generate_paraphrases.min_ratio' exceeds 'max_ratio'")
    seed_everything(seed)
    info_path = MODEL / "paracl_paraphraser.json"
    if not info_path.exists():
        raise ArtifactError(f"{info_path}: not found (run train_paraphraser)")
    info = json.loads(info_path.read_text())
    device = select_device(params["device"])
    corpus = read_parquet(CORPUS, schemas.CORPUS, columns=["id", "text"]).sort_values(
        "id", kind="stable"
    )
    if cfg["max_sentences"] is not None and len(corpus) > cfg["max_sentences"]:
        corpus = corpus.sample(n=cfg["max_sentences"], random_state=seed).sort_values("id")
    corpus = corpus.reset_index(drop=True)

    rows = []
    if not info["trained"]:
        log.warning(
            "the paraphraser was not trained (%d training pairs): writing an empty %s",
            info["n_train"],
            OUT,
        )
    else:
        from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(str(MODEL))
        model = AutoModelForSeq2SeqLM.from_pretrained(str(MODEL)).to(device).eval()
        scorer = sts_scorer.load_scorer(SCORER, str(device))
        texts = corpus["text"].tolist()
        for sim_tag, bleu_tag in requested:
            outputs, counts = paraphraser.generate(
                model,
                tokenizer,
                texts,
                sim_tag + bleu_tag,
                num_beams=cfg["num_beams"],
                min_ratio=cfg["min_ratio"],
                max_ratio=cfg["max_ratio"],
                batch_size=cfg["batch_size"],
                max_length=cfg["max_length"],
                device=device,
            )
            n_in = [len(tokenizer(t, add_special_tokens=False)["input_ids"]) for t in texts]
            sim, bleu = tagging.score_pairs(
                texts, outputs, lambda pairs: sts_scorer.predict(scorer, pairs), lang
            )
            rows.append(
                pd.DataFrame(
                    {
                        "id": corpus["id"],
                        "text": texts,
                        "paraphrase": outputs,
                        "tags": sim_tag + bleu_tag,
                        "sim": sim,
                        "bleu": bleu,
                        "n_input_tokens": np.array(n_in, dtype=np.int32),
                        "n_output_tokens": np.array(counts, dtype=np.int32),
                    }
                )
            )
    frame = (
        pd.concat(rows, ignore_index=True)
        if rows
        else schemas.GENERATED_PARAPHRASES.empty_table().to_pandas()
    )
    write_parquet(
        frame, OUT, schemas.GENERATED_PARAPHRASES, metadata={"params": cfg, "paraphraser": info}
    )

    per_tag, panels = {}, {}
    if HEATMAP_DIR.exists():
        shutil.rmtree(HEATMAP_DIR)
    HEATMAP_DIR.mkdir(parents=True, exist_ok=True)
    for sim_tag, bleu_tag in requested:
        tags = sim_tag + bleu_tag
        part = frame[frame["tags"] == tags]
        mask = heatmap.long_enough(
            part["text"], part["paraphrase"], lang, params["tag"]["heatmap_min_words"]
        )
        sim, bleu = part["sim"].to_numpy()[mask], part["bleu"].to_numpy()[mask]
        name = tags.replace("><", "_").strip("<>")
        heatmap.write_csv(heatmap.plot_rows(sim, bleu), HEATMAP_DIR / f"{name}.csv")
        panels[tags] = (sim, bleu)
        per_tag[tags] = {
            "n": len(part),
            "sim_mean": float(part["sim"].mean()) if len(part) else None,
            "bleu_mean": float(part["bleu"].mean()) if len(part) else None,
            "hit_rate": float(
                np.mean(
                    [
                        tagging.sim_tag(s) == sim_tag and tagging.bleu_tag(b) == bleu_tag
                        for s, b in zip(part["sim"], part["bleu"], strict=True)
                    ]
                )
            )
            if len(part)
            else None,
            "length_ratio": paraphraser.ratio_summary(
                part["n_output_tokens"].tolist(), part["n_input_tokens"].tolist()
            ),
        }
    heatmap.write_png(panels, HEATMAP_PNG)
    write_json(
        {
            "paraphraser": info,
            "stand_in": bool(info["stand_in"]),
            "n_sentences": len(corpus) if info["trained"] else 0,
            "n_generated": len(frame),
            "per_tag": per_tag,
        },
        METRICS,
    )
    log.info("%d paraphrases for %d tag pairs", len(frame), len(requested))


if __name__ == "__main__":
    run(main)
