"""Stage paraphrase_pairs: chosen columns of a pair or triplet dataset, paraphrased.

The round-trip paper augments labelled pairs, not only raw sentences (§5.3: NLI anchor,
positive and negative, doubling the corpus; §5.5: sentence A and/or B; §6: MNLI for
STILTs). Any Parquet of sentence pairs or triplets is one job of `paraphrase_pairs.jobs`:
its `columns` paraphrased `by` the greedy round trip (the paper's baseline: roundtrip's
translators, paracl.parts.translate, with roundtrip's section) or the trained
paraphraser at a tag cell (`SIM95_BLEU20` asks for `<SIM95><BLEU20>`,
paracl.parts.paraphraser). DVC caches each
job's output, so a (dataset, columns, tag) is paraphrased once for every method that
trains on it.

Every distinct sentence of the chosen columns is paraphrased once, however many rows and
columns repeat it (SICK's premises recur across pairs; an anchor may be another row's
positive), then mapped back. The output holds the input's rows and columns, the chosen
columns replaced, plus `source_row` (the input row), `paraphrased_by` (what
paraphrased it) and each chosen column's input text as `original_<column>` (so a trainer
mixes original and paraphrased columns, the paper's A'B / AB', or adds the original rows,
without a second dep); a null or empty cell stays as it is. An input that records the STS
sets it was checked against (nli_triplets' `source`, `exclude_sts`) passes that record on. It is written atomically, once all
sentences are done, so a failed run leaves none. Greedy decoding and beam search draw
nothing at random and the round trip seeds each batch from its content: the same rows,
params and seed give the same bytes.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from paracl.core.errors import InputError, ParamsError
from paracl.core.io import read_json, read_metadata, read_parquet, write_parquet
from paracl.core.key_figures import write_metrics
from paracl.core.params import OtherSection, RunSettings, RunWide, Section, param
from paracl.core.stage import args
from paracl.parts import translate
from paracl.stages.roundtrip import Roundtrip

# -- the stage's contract: what it reads of params.yaml (paracl.core.params) --


class ParaphrasePairs(Section):
    """The round-trip paper's augmentation of labelled pairs (§5.3, §5.5, §6): one stage
    per job (paraphrase_pairs@NAME writes data/paraphrased/NAME.parquet). The round trip
    reads roundtrip's translators, a tag cell generate_paraphrases' decoding keys."""

    class Job(Section):
        input: str = param(help="a Parquet of sentence pairs or triplets (its DVC dep)")
        columns: list[str] = param(help="the text columns paraphrased, e.g. [anchor, positive]")
        by: str = param(help="roundtrip_greedy, or a tag cell SIMxx_BLEUyy (e.g. SIM95_BLEU0_5)")

    jobs: dict[str, Job] = param(help="job name -> its entry; {} = none")


class Params(RunWide):
    """What stage paraphrase_pairs reads of params.yaml: the run-wide keys and these."""

    generate_paraphrases: OtherSection  # its decoding keys, for a tag cell
    paraphrase_pairs: ParaphrasePairs
    roundtrip: Roundtrip  # its translator keys, checked as roundtrip checks them


log = logging.getLogger("paraphrase_pairs")

ROUNDTRIP = "roundtrip_greedy"  # `by` of the paper's round-trip baseline (§5.3, Table 3)
SOURCE_ROW, PARAPHRASED_BY = "source_row", "paraphrased_by"  # the provenance columns
ORIGINAL = "original_"  # prefix of each chosen column's input text
CARRIED = ("source", "exclude_sts")  # the input's STS-check record, passed on as it is
# dvc.yaml's metrics (paracl.core.key_figures): sentences paraphrased, rows written
KEY_FIGURES = ("n_sentences", "n_rows")
_CELL = re.compile(r"SIM(\d+)_BLEU(\d+(?:_\d+)?)")


@dataclass(frozen=True)
class Job:
    """One entry of paraphrase_pairs.jobs, checked: `tags` is None for the round trip."""

    name: str
    input: str
    columns: tuple[str, ...]
    by: str
    tags: str | None

    @classmethod
    def of(cls, name: str, entry: dict) -> Job:
        """The job `name` of the params; a bad `by` or column list names its key."""
        where = f"params.yaml: 'paraphrase_pairs.jobs.{name}"
        columns = tuple(entry["columns"])
        if not columns or len(set(columns)) != len(columns):
            raise ParamsError(f"{where}.columns' must list distinct columns, got {list(columns)}")
        return cls(name, entry["input"], columns, entry["by"], tags_of(entry["by"], f"{where}.by'"))


def tags_of(by: str, where: str) -> str | None:
    """None for `roundtrip_greedy`; the tag pair of a cell name (`SIM95_BLEU0_5` ->
    `<SIM95><BLEU0_5>`), checked as generate_paraphrases checks its tags."""
    from paracl.parts.tags.tagging import parse_tags

    if by == ROUNDTRIP:
        return None
    cell = _CELL.fullmatch(by)
    wanted = f"{ROUNDTRIP} or a tag cell SIMxx_BLEUyy (e.g. SIM95_BLEU0_5)"
    if cell is None:
        raise ParamsError(f"{where} must be {wanted}, got {by!r}")
    sim, bleu = parse_tags(f"<SIM{cell[1]}><BLEU{cell[2]}>", f"{where}: {by!r} asks for")
    return sim + bleu


def unique_sentences(frame: pd.DataFrame, columns: Sequence[str]) -> list[str]:
    """Every distinct non-empty text of `columns`, in first-seen order (row by row, the
    columns in the job's order): what is paraphrased, each once."""
    cells = frame[list(columns)].to_numpy().ravel()  # row-major
    return list(dict.fromkeys(t for t in cells if isinstance(t, str) and t))


def substitute(
    frame: pd.DataFrame, columns: Sequence[str], paraphrases: dict[str, str], by: str
) -> pd.DataFrame:
    """`frame` with each chosen cell replaced by its sentence's paraphrase (a null or empty
    cell kept) and the provenance columns added after the input's."""
    out = frame.copy()
    for column in columns:
        out[column] = [paraphrases.get(t, t) if isinstance(t, str) else t for t in frame[column]]
    out[SOURCE_ROW] = range(len(frame))
    out[PARAPHRASED_BY] = by
    for column in columns:
        out[ORIGINAL + column] = frame[column]
    return out


def output_schema(path: str | Path, columns: Sequence[str], where: str) -> pa.Schema:
    """The input's columns (metadata dropped) plus the provenance columns; a chosen column
    that is missing or not text, or a provenance name already taken, names the file.
    Call after read_parquet has checked the input (a file or a shard directory)."""
    path = Path(path)
    schema = pq.read_schema(min(path.glob("part-*.parquet")) if path.is_dir() else path)
    for column in columns:
        if column not in schema.names:
            raise ParamsError(f"{where}: {column!r} is not a column of {path} ({schema.names})")
        kind = schema.field(column).type
        if not (pa.types.is_string(kind) or pa.types.is_large_string(kind)):
            raise InputError(f"{path}: column {column!r} holds {kind}, not text")
    originals = [ORIGINAL + c for c in columns]
    taken = [n for n in (SOURCE_ROW, PARAPHRASED_BY, *originals) if n in schema.names]
    if taken:
        raise InputError(f"{path}: already has a {taken[0]!r} column (this stage's output?)")
    added = [pa.field(SOURCE_ROW, pa.int64()), pa.field(PARAPHRASED_BY, pa.string())]
    added += [pa.field(name, pa.string()) for name in originals]
    return pa.schema([*(f.remove_metadata() for f in schema), *added])


def round_trip_greedy(texts: list[str], cfg: dict, run: RunSettings) -> tuple[list[str], dict]:
    """Each text translated to the pivot and back, greedily, by roundtrip's translators
    (paracl.parts.translate; `cfg`: the roundtrip section, its sampling keys not read);
    (paraphrases, models)."""
    from paracl.core.device import select_device
    from paracl.core.distributed.sharded import Shard

    greedy = translate.Sampling()
    decode = {k: cfg[k] for k in ("batch_size", "max_new_tokens", "length_ratio")}
    job = translate.RoundTripJob(
        cfg["forward_model"], cfg["backward_model"], cfg["src_lang_code"], cfg["pivot_lang_code"],
        run.lang, cfg["pivot"][run.lang], run.device, (greedy,), run.seed,
        {**decode, "num_beams": 1}, run.precision,
    )  # fmt: skip
    device = select_device(run.device)
    models = {
        "forward_model": translate.describe(cfg["forward_model"], 0, device),
        "backward_model": translate.describe(cfg["backward_model"], 1, device),
    }
    if not texts:
        return [], models
    ids = [f"{i:09d}" for i in range(len(texts))]  # sorts as the texts' order
    rows = job.process(job.setup(), Shard(0, pd.DataFrame({"id": ids, "text": texts})))
    back = dict(zip(rows["id"], rows["paraphrase"], strict=True))
    return [back[i] for i in ids], models


def paraphrase_tagged(
    texts: list[str], model_dir: str | Path, tags: str, cfg: dict, run: RunSettings
) -> tuple[list[str], dict]:
    """Each text paraphrased by the trained paraphraser under `tags`, with
    generate_paraphrases' beams, length window and batching (`cfg`: that section), as it
    generates; (paraphrases, the paraphraser's INFO_FILE). An untrained one is an error."""
    import torch

    from paracl.core.device import select_device
    from paracl.core.models import check_model_dir
    from paracl.parts import paraphraser

    info = read_json(check_model_dir(model_dir) / paraphraser.INFO_FILE)
    if not info["trained"]:
        raise InputError(
            f"{Path(model_dir) / paraphraser.INFO_FILE}: the paraphraser was not trained "
            f"({info.get('n_train', 0)} training pairs): it cannot paraphrase at {tags}"
        )
    gen = paraphraser.decoding(cfg)  # checked before any model is loaded
    if not texts:
        return [], info
    if cfg["threads"]:
        torch.set_num_threads(cfg["threads"])
    device = select_device(run.device)
    model, tokenizer = paraphraser.load(model_dir, device)
    outputs, _ = paraphraser.generate(
        model, tokenizer, texts, tags, device=device, precision=run.precision, **gen
    )
    return outputs, info


def paraphrase(
    job: Job, texts: list[str], model_dir: str | Path, params: dict, run: RunSettings
) -> tuple[list[str], dict]:
    """The job's paraphrases of `texts` and, for the metrics, what made them: the models,
    whether any is a stand-in, and whether they are the paper's (a stage never pretends)."""
    if job.tags is None:
        cfg = params["roundtrip"]
        out, models = round_trip_greedy(texts, cfg, run)
        paper = (cfg["forward_model"], cfg["backward_model"]) == translate.PAPER_MODELS
        stand_in = any(m["stand_in"] for m in models.values())
        return out, {**models, "stand_in": stand_in, "paper_model": paper, "decoding": "greedy"}
    out, info = paraphrase_tagged(texts, model_dir, job.tags, params["generate_paraphrases"], run)
    return out, {
        "paraphraser": info,
        "stand_in": bool(info.get("stand_in")),
        "paper_model": bool(info.get("paper_model", False)),
        "tags": job.tags,
    }


def filled_cells(frame: pd.DataFrame, columns: Sequence[str]) -> int:
    """Non-empty text cells of `columns`: what paraphrasing each cell would have cost."""
    return sum(isinstance(t, str) and bool(t) for c in columns for t in frame[c])


def bleu_to_source(mapping: dict[str, str], tags: str | None, lang: str) -> dict:
    """Sentence BLEU of each paraphrase to its source, as the tag stage scores it (the
    paper's surface similarity): its mean and, for a tag cell, the share whose own BLEU
    tag is the requested one: whether the tag controlled the surface, which the STS
    scores alone do not show."""
    from paracl.parts.tags import tagging

    bleu = [tagging.sentence_bleu(out, src, lang) for src, out in mapping.items() if out]
    record = {"n": len(bleu), "mean": sum(bleu) / len(bleu) if bleu else None}
    if tags is not None:
        want = tagging.parse_tags(tags)[1]
        hits = [tagging.bleu_tag(b) == want for b in bleu]
        record["requested_tag_share"] = sum(hits) / len(hits) if hits else None
    return record


def main(params: dict) -> None:
    """paraphrase_pairs@JOB: the job's input, its columns paraphrased, into OUT; METRICS
    beside. PARAPHRASER is the trained paraphraser's directory (read for a tag cell only).
    The round trip is roundtrip's translators (paracl.parts.translate), with roundtrip's
    section (paracl.stages.roundtrip declares and checks it)."""
    from paracl.core.device import seed_everything

    paths = args("job", "paraphraser", "out", "metrics")
    jobs = params["paraphrase_pairs"]["jobs"]
    if paths.job not in jobs:
        known = ", ".join(jobs) or "none"
        raise ParamsError(f"params.yaml: 'paraphrase_pairs.jobs' has no {paths.job!r} ({known})")
    job, run = Job.of(paths.job, jobs[paths.job]), RunSettings.of(params)
    frame = read_parquet(job.input)
    where = f"params.yaml: 'paraphrase_pairs.jobs.{job.name}.columns'"
    schema = output_schema(job.input, job.columns, where)
    seed_everything(run.seed)
    texts = unique_sentences(frame, job.columns)
    outputs, made_by = paraphrase(job, texts, paths.paraphraser, params, run)
    mapping = dict(zip(texts, outputs, strict=True))
    record = {
        "job": job.name,
        "input": job.input,
        "columns": list(job.columns),
        "by": job.by,
        **made_by,
        "n_rows": len(frame),
        "n_cells": filled_cells(frame, job.columns),
        "n_sentences": len(texts),
        "n_unchanged": sum(a == b for a, b in mapping.items()),
        "n_empty": sum(not b for b in outputs),
        "bleu_to_source": bleu_to_source(mapping, job.tags, params["lang"]),
        **{k: v for k, v in read_metadata(job.input).items() if k in CARRIED},
    }
    out = substitute(frame, job.columns, mapping, job.tags or ROUNDTRIP)
    write_parquet(out, paths.out, schema, metadata=record)
    write_metrics(record, paths.metrics, KEY_FIGURES)
    log.info("%d rows: %d distinct sentences paraphrased by %s", len(frame), len(texts), job.by)
