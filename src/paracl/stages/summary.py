"""The summary table: methods × tasks with an Avg. column, laid out like Table 3 of the
PPDB paper (rows = methods, columns = tasks grouped as Retrieval / Similarity / RTE /
Paraphrase), as JSON for `dvc metrics` and as Markdown for people.

Every cell names what it rests on: the mean over seeds with the seeds' standard
deviation beside it, a dagger where the split is not the official one (a seeded
re-split of what exists offline), and one line per method naming the base model that
ran. Missing or skipped jobs show as "n/a" with the reason in a note.

Seeds: a method trained with several seeds is several runs of train_contrastive.runs,
each naming its method (`run_groups`); they make one row whose cells are the mean
± standard deviation over those training seeds. Each row then also gets its difference
to `none` on Avg. and a two-sided one-sample t-test of the per-seed differences (is the
mean difference over seeds zero?). `none` trains nothing, so on cosine scores it has one
exact value, and pairing by seed reduces to comparing each seed's run with it. Fine-tuning
adds noise of its own: where `none` was fine-tuned with several seeds
(evaluate.baseline_seeds), its fine-tuned average is a sample too, one value per
fine-tuning seed, and the difference is tested with Welch's two-sample t-test instead. A
difference "holds" when p < 0.05 and every seed moves the same way.

The papers' claims: each paper says its method beats another on its own measure (CLAIMS:
cosine STS, the fine-tuned average or JCSE's domain sets; MEASURES). Where both methods are
rows, the summary compares them on that measure alone: the difference of their seed means
and Welch's two-sample t-test over their seeds (two methods' runs are independent, so there
is nothing to pair). A claim "holds" when p < 0.05 and the difference has the paper's sign;
with fewer than two seeds on a side it is "not testable". A claim compares two rows on one
base model (each paper's rows on its own): each claim names the base its rows ran on (the
runs' metrics; a continued encoder, jcse_two_stage, is on the base of the one it continues),
and a claim whose rows ran on two bases is refused, naming them.
"""

from __future__ import annotations

import itertools
import statistics
from pathlib import Path
from typing import Literal

import numpy as np

from paracl.core.io import ArtifactError, atomic_path, read_json, write_json
from paracl.core.params import OtherSection, RunWide, Section, param
from paracl.core.stage import args
from paracl.core.tables import header_cells, markdown_table
from paracl.parts.evaluation.ebsim_tables import (
    EBSIM_MEASURES,
    ebsim_markdown,
    ebsim_sections,
    table_tasks,
)
from paracl.parts.evaluation.pi_classes import PI_CLASSES, chance, class_scores, paper_mean
from paracl.parts.evaluation.tasks import EN, JA, PI_XLING, PI_XLING_SETS, job_info
from paracl.parts.runs import ENCODERS
from paracl.parts.stilts_tables import measure_titles, stilts_markdown, stilts_sections

# -- the stage's contract: what it reads of params.yaml (paracl.core.params) --


class Summary(Section):
    decimals: int = param(min=0, max=4)
    avg_over: Literal["finetune", "all"] = param(help="tasks in the Avg. column")


class Params(RunWide):
    """What stage summary reads of params.yaml: the run-wide keys and these."""

    evaluate: OtherSection  # its tasks (the evaluate stage checks it)
    summary: Summary
    train_contrastive: OtherSection  # its methods and runs (written by `paracl expand`)
    train_intermediate: OtherSection  # its arms: STILTs' rows (round-trip paper §6)


GROUP_ORDER = ("Retrieval", "Similarity", "RTE", "Paraphrase", "GLUE", "Unsupervised")
ALPHA = 0.05  # significance level of the t-test over seeds
TEST = "two-sided one-sample t-test over training seeds of (method − none) on Avg."
SPREAD_TEST = (
    "where none has several fine-tuning seeds (its fine-tuned average), Welch's two-sided "
    "two-sample t-test of the method's training seeds against none's fine-tuning seeds"
)
CLAIM_TEST = (
    "Welch's two-sided two-sample t-test over the two methods' seeds (training seeds; a "
    "one-run row fine-tuned with several seeds: its fine-tuning seeds)"
)
# Each column counts towards one measure, the mean of its columns: cosine STS (the 7 or
# 2 sets' average), cosine paraphrase identification, JCSE's domain sets, the fine-tuned
# tasks. A claim is judged on its paper's measure alone (an STS claim never averages in
# PI accuracy).
# The round-trip paper's SimCSE row: SimCSE's own recipe (its authors' code), beside the
# PPDB paper's `simcse_unsup` on the PPDB recipe; the paper presets name it, so that the
# claims compare the kind of positive, not two recipes. Where it is not a row
# (effect-en-roundtrip trains `simcse_unsup` on the paraphrase rows' recipe), the first
# alternative that is one stands in.
ROUNDTRIP_SIMCSE = ("simcse_unsup_rt", "simcse_unsup")
MEASURES = {
    "sts": "STS avg",
    "pi": "PI acc",
    "domain": "Domain avg",
    "finetune": "Fine-tuned avg",
    "pi_ce": "PI acc (cross-encoder)",
}
# a committed summary.json built before STS and PI were apart still renders (paracl report)
OLD_MEASURES = {"unsup": "Unsup. avg"}
KIND_MEASURE = {"unsup_sts": "sts", "pi": "pi", "pi_xling": "pi", "domain_sts": "domain",
                "retrieval": "domain"}  # fmt: skip
# (the paper's claim, the method it is about, the method it should beat, and on what: the
# paper's own measure; PPDB's Table 3 and EBSIM's matching are fine-tuned, the round-trip
# paper's Table 3 and JCSE's STS are cosine STS, JCSE's Table 6 its domain sets). Each
# pair shares every training setting but the one the claim is about
# (tests/pipeline/test_paper_presets.py::test_every_claim_compares_like_with_like).
CLAIMS = (
    ("PPDB Table 3: PPDB positives above unsupervised SimCSE", "ppdb", "simcse_unsup",
     "finetune"),
    ("PPDB Table 3: PPDB positives above supervised SimCSE", "ppdb", "simcse_sup", "finetune"),
    ("Round trip Table 3: SimCSE with <BLEU0_5> paraphrases above SimCSE",
     "paraphraser_bleu0_5", ROUNDTRIP_SIMCSE, "sts"),
    ("Round trip Table 3: SimCSE with <BLEU20> paraphrases above SimCSE",
     "paraphraser_bleu20", ROUNDTRIP_SIMCSE, "sts"),
    ("Round trip Table 3: SimCSE with <BLEU40> paraphrases above SimCSE",
     "paraphraser_bleu40", ROUNDTRIP_SIMCSE, "sts"),
    ("Round trip Table 3: SimCSE above SimCSE with a greedy round trip", ROUNDTRIP_SIMCSE,
     "roundtrip_greedy", "sts"),
    # the NLI half of the round-trip paper's Table 3 (§5.3): supervised SimCSE, and the same
    # with each triplet's paraphrase added (presets/effect-en-roundtrip-nli.yaml, paper-en)
    ("Round trip Table 3 (NLI): supervised SimCSE + <BLEU0_5> paraphrases above it",
     "nli_paraphraser_bleu0_5", "simcse_sup_rt", "sts"),
    ("Round trip Table 3 (NLI): supervised SimCSE + greedy round trip above it",
     "nli_roundtrip_greedy", "simcse_sup_rt", "sts"),
    ("JCSE: two-stage training above stage one alone", "jcse_two_stage", "jcse", "sts"),
    ("JCSE Table 6: in-domain then JSNLI above in-domain alone", "jcse_two_stage", "jcse",
     "domain"),
    ("EBSIM Table 5: both aspects (RA + AA) above RA alone", "ebsim", "ebsim_no_aa",
     "finetune"),
    # the domain presets (presets/jcse-*.yaml) name their methods so that these show there only
    ("JCSE §3.2: negatives of the domain-adapted filler above the unadapted one's", "jcse",
     "jcse_unadapted", "domain"),
    ("JCSE Table 6: in-domain JCSE above SimCSE on Wikipedia", "jcse", "simcse_wiki", "domain"),
    ("JCSE Table 6: SimCSE on Wikipedia + in-domain above Wikipedia alone",
     "simcse_wiki_domain", "simcse_wiki", "domain"),
)  # fmt: skip
# The round-trip paper's Table 4 (§5.5): NLI SimCSE with in-batch negatives only, sentence
# A (anchor) and/or B (positive) replaced by its paraphrase at <SIM95><BLEU..>: rows = tags,
# columns = variants (presets/effect-en-roundtrip-ab.yaml). Each column's method is
# `<prefix>_<tag>`; AB, the original, is one method for every row.
TABLE4_TAGS = (("bleu0_5", "<BLEU0_5>"), ("bleu20", "<BLEU20>"), ("bleu40", "<BLEU40>"))
TABLE4_AB = "nli_ab"
TABLE4_COLUMNS = (("A'B'", "nli_apbp"), ("A'B", "nli_apb"), ("AB'", "nli_abp"),
                  ("AB + A'B'", "nli_ab_apbp"), ("AB", TABLE4_AB))  # fmt: skip
# its claims: A'B', A'B and AB' above AB for each tag; AB + A'B' ≈ A'B' (the gain is the
# paraphrases' diversity, not the doubled size): equivalent within EQUIVALENCE_MARGIN
# points of STS avg by Welch's two one-sided tests (TOST). The paper's gaps: A'B' − AB
# +0.54 to +0.68, (AB + A'B') − A'B' −0.03 to +0.07; 1 point is about the seed sd of a
# 32-step CPU run (docs/results/methods.md), so a smaller margin could not be shown with 3 seeds.
EQUIVALENCE_MARGIN = 1.0
TABLE4_CLAIMS = tuple(
    (f"Round trip Table 4: {column} with {title} above AB (in-batch negatives only)",
     f"{prefix}_{tag}", TABLE4_AB, "sts")
    for tag, title in TABLE4_TAGS for column, prefix in TABLE4_COLUMNS[:3]
) + tuple(
    (f"Round trip Table 4: AB + A'B' with {title} ≈ A'B' (size is not the gain)",
     f"nli_ab_apbp_{tag}", f"nli_apbp_{tag}", "sts")
    for tag, title in TABLE4_TAGS
)  # fmt: skip
EQUIVALENT = {claim for claim, *_ in TABLE4_CLAIMS if "≈" in claim}
# A control the paper does not run (effect-en-roundtrip-ab): AB for 2 epochs, as many steps
# as AB + A'B' and the last weights kept (a 1-epoch run keeps its last too), so the doubled
# row's gain over it is the paraphrases' diversity, not its twice as many steps.
TABLE4_TWICE = "nli_ab_twice"
TWICE_CLAIMS = tuple(
    (f"Round trip §5.5 (control): AB + A'B' with {title} above AB for as many steps",
     f"nli_ab_apbp_{tag}", TABLE4_TWICE, "sts")
    for tag, title in TABLE4_TAGS
)  # fmt: skip
CLAIMS += TABLE4_CLAIMS + TWICE_CLAIMS
# The training settings (params METHOD_SETTINGS) a claim is about, besides what makes each
# method itself (its loss, input and the loss's own params): the two methods of any other
# claim share every setting (tests/pipeline/test_paper_presets.py). Supervised SimCSE embeds through
# its MLP (its recipe's embedding); JCSE's stages run as their scripts run them.
VARIES = {
    **{claim: ("epochs", "selection") for claim, *_ in TWICE_CLAIMS},
    "PPDB Table 3: PPDB positives above supervised SimCSE": ("pooling",),
    "JCSE: two-stage training above stage one alone": ("epochs",),
    "JCSE Table 6: in-domain then JSNLI above in-domain alone": ("epochs",),
}
# The cross-lingual PI paper's claims (presets/pi-en-ja.yaml), each on a PI accuracy of its
# own (PI_MEASURES, from the pi_xling / paws_xling jobs: pi_xling_summary): (claim, method,
# other, measure). Against `none` (one deterministic run) the test is the one-sample t-test
# of the method's seeds against its value; between methods Welch's; "within 10 %" tests
# the bi-encoder's seeds against 0.9 × the cross-encoder's fine-tuning seeds. A claim whose
# reference (the other row) is not above chance by more than its seed spread is not
# testable (_at_chance): beating a row that a constant answer beats says nothing.
CROSS_ENCODER = "cross-encoder"  # the row of `none` fine-tuned on paws_xling's pairs
PI_MEASURES = {
    "pi_mean": "PI mean acc",
    "pi_ja": "PI acc ja (zero-shot)",
    "pi_cross": "PI acc en–ja / ja–en",
    "pi_within": "PI mean acc vs 0.9 × cross-encoder",
}
PI_CLAIMS = (
    ("Cross-lingual PI: the full method (AMS, hard negatives, mining) above the base",
     "ams_full", "none", "pi_mean"),
    ("Cross-lingual PI §III-D: mega-batch mining above no mining", "ams_full", "ams_hn",
     "pi_mean"),
    ("Cross-lingual PI §III-A: PAWS hard negatives above in-batch negatives only", "ams_hn",
     "ams_pos", "pi_mean"),
    ("Cross-lingual PI §IV-C: the bi-encoder within 10 % relative of the cross-encoder",
     "ams_full", CROSS_ENCODER, "pi_within"),
    ("Cross-lingual PI: zero-shot Japanese above the base", "ams_full", "none", "pi_ja"),
    ("Cross-lingual PI Table II: cross-lingual pairs above the base", "ams_full", "none",
     "pi_cross"),
)  # fmt: skip
PI_SETS = PI_XLING_SETS  # Table II's set columns: en, ja, en_ja, ja_en
# each PI measure of one run, from its sets' accuracies and pairs (chance: label shares)
PI_PICK = {
    "pi_mean": paper_mean,
    "pi_within": paper_mean,
    "pi_ja": lambda sets, pairs: sets.get(JA),
    "pi_cross": lambda sets, pairs: class_scores(sets, pairs).get("inter_para"),
}
PI_PREFIXES = ("", "labse_")  # pi-en-ja's rows, and the paper presets' (on LaBSE)
AT_CHANCE = (
    "the reference at chance (its mean not above the better constant answer's score, accept "
    "every pair or none, by more than its seed sd)"
)
REFUSED = "refused: the two rows ran on different base models (a claim compares one base's rows)"
NOT_RUN = "not run for this method (evaluate.finetune_methods)"
NO_FILE = "not run (no metrics file)"


def measure_title(measure: str | None) -> str:
    """A claim's or column's measure as the tables name it (any measure a summary.json may
    hold: today's, a PI claim's, an older file's); `Avg.` for none."""
    titles = {**OLD_MEASURES, **MEASURES, **PI_MEASURES, **EBSIM_MEASURES, **measure_titles()}
    return titles.get(measure, "Avg.")


def measure_of(task: str) -> str:
    """The measure a column counts towards (MEASURES). The cross-lingual PI paper's
    cross-encoder (a fine-tuned PAWS task, PI_XLING) has its own: it is not one of the
    PPDB paper's Table 3 tasks, whose fine-tuned average a claim is judged on."""
    if task in PI_XLING.values():
        return "pi_ce"
    return KIND_MEASURE.get(job_info(task)["kind"], "finetune")


def load_results(
    metrics_dir: str | Path, runs: list[str], tasks: list[str], only: dict | None = None
) -> dict:
    """{run: {task: result dict or None}} from metrics/eval/<run>/<task>.json. `only`:
    {task: the runs it is run for} (evaluate.finetune_tasks: evaluate.finetune_runs); any
    other run's cell says so instead of reading a file (a stale one may lie there)."""
    out: dict = {}
    for r in runs:
        out[r] = {}
        for t in tasks:
            if only and t in only and r not in only[t]:
                out[r][t] = {"skipped": NOT_RUN, "score": None, "not_run": True}
                continue
            path = Path(metrics_dir) / r / f"{t}.json"
            out[r][t] = read_json(path) if path.exists() else None
    return out


def run_groups(runs: dict[str, dict]) -> dict[str, list[str]]:
    """{method: [its runs]} in params order, from train_contrastive.runs (each run names its
    method), e.g. {"ppdb": ["ppdb_s1", "ppdb_s2", "ppdb_s3"]}: one row per method."""
    rows: dict[str, list[str]] = {}
    for name, run in runs.items():
        rows.setdefault(run["method"], []).append(name)
    return rows


def ordered_tasks(tasks: list[str]) -> list[str]:
    """Tasks in Table 3's group order (stable within a group)."""
    rank = {g: i for i, g in enumerate(GROUP_ORDER)}
    return sorted(tasks, key=lambda t: rank.get(job_info(t)["group"], len(rank)))


def _mean(values: list) -> float | None:
    return float(np.mean(values)) if values and all(v is not None for v in values) else None


def _entry_row(per_task: dict, tasks: list[str], use: list[str]) -> dict:
    """One trained encoder's cells, Avg. and base model."""
    cells, models = {}, set()
    for t in tasks:
        r = per_task.get(t)
        if r is None:
            cells[t] = {"score": None, "note": NO_FILE}
            continue
        if r.get("not_run"):
            cells[t] = {"score": None, "note": r["skipped"], "not_run": True}
            continue
        base = (r.get("encoder") or {}).get("base_model") or {}
        models.add(base.get("id", "unknown"))
        cells[t] = {
            "score": r.get("score"),
            "std": r.get("score_std"),
            "dev": r.get("dev_score"),
            "n_seeds": (r.get("test") or {}).get("n") if r.get("kind") == "finetune" else None,
            "official_split": r.get("official_split"),
        }
        if r.get("kind") == "finetune" and len(r.get("runs") or []) > 1:  # fine-tuning seeds
            cells[t]["seed_scores"] = [run["test"][r["metric"]] for run in r["runs"]]
        if r.get("skipped"):  # the reason a cell is empty; split notes stay per task
            cells[t]["note"] = r["skipped"]
        if r.get("kind") == "unsup_sts" and r.get("sets"):  # each set's Spearman (breakdown)
            cells[t]["sets"] = {name: v.get("spearman") for name, v in r["sets"].items()}
            if r.get("excluded_sets"):  # not scored, and why (evaluate.exclude_sts)
                cells[t]["excluded"] = dict(r["excluded_sets"])
        if r.get("breakdown"):  # a job's own sub-scores (QAbot: MRR, MAP, P@1, P@5)
            cells[t]["sets"] = dict(r["breakdown"])
        if t in (*PI_XLING, *PI_XLING.values()) and r.get("score") is not None:
            cells[t] |= _pi_cell_score(t, r)
    finetuned = [t for t in use if job_info(t)["kind"] == "finetune"]
    by_measure = {m: [cells[t]["score"] for t in tasks if measure_of(t) == m] for m in MEASURES}
    return {
        "tasks": cells,
        "avg": _mean([cells[t]["score"] for t in use]) if use else None,
        "dev_avg": _mean([cells[t].get("dev") for t in finetuned]) if finetuned else None,
        "base_models": sorted(models),
        "measures": {m: _mean(v) for m, v in by_measure.items() if v},
    }


def _pi_cell_score(task: str, r: dict) -> dict:
    """A cross-lingual PI job's cell as Table I's mean (pi_classes.paper_mean), not the
    job's own score (the bi-encoder's mean over four sets, the cross-encoder's English
    accuracy): one figure, one value on every table. The cross-encoder's is the mean and
    sd over its fine-tuning seeds."""
    runs = {"run": _pi_bi(r)} if task in PI_XLING else (_pi_cross(r) or {})
    means = [v and v["mean"] for v in map(_with_classes, runs.values())]
    if not means or any(m is None for m in means):
        return {"score": None, "note": "a set of Table II missing"}
    if task in PI_XLING:
        return {"score": means[0]}
    sd = statistics.stdev(means) if len(means) > 1 else None
    return {"score": float(np.mean(means)), "std": sd, "seed_scores": means}


def _seed_row(entries: dict[str, dict], tasks: list[str]) -> dict:
    """Several seeds' rows as one: mean ± sd over the seeds, cell by cell."""
    first = next(iter(entries.values()))
    if len(entries) == 1:
        return {**first, "runs": {name: e["avg"] for name, e in entries.items()}}
    cells = {}
    for t in tasks:
        per_seed = [e["tasks"][t] for e in entries.values()]
        scores = [c["score"] for c in per_seed]
        if any(s is None for s in scores):
            missing = next(c for c in per_seed if c["score"] is None)
            cells[t] = {k: v for k, v in missing.items() if k in ("score", "note", "not_run")}
            cells[t].setdefault("note", "not run")
            absent = [n for n, c in zip(entries, per_seed, strict=True) if c.get("note") == NO_FILE]
            if absent and any(s is not None for s in scores):  # a preset part-way through
                cells[t]["note"] = (f"{len(scores) - len(absent)} of {len(scores)} seeds "
                                    f"scored; not yet: {', '.join(absent)}")  # fmt: skip
            continue
        cells[t] = {
            "score": float(np.mean(scores)),
            "std": statistics.stdev(scores),
            "dev": _mean([c.get("dev") for c in per_seed]),
            "n_seeds": len(scores),
            "official_split": first["tasks"][t].get("official_split"),
        }
        if first["tasks"][t].get("excluded"):
            cells[t]["excluded"] = first["tasks"][t]["excluded"]
        if all(c.get("sets") for c in per_seed):
            by_set = {n: [c["sets"].get(n) for c in per_seed] for n in per_seed[0]["sets"]}
            cells[t]["sets"] = {n: _mean(v) for n, v in by_set.items()}
            cells[t]["sets_std"] = {n: statistics.stdev(v) for n, v in by_set.items()
                                    if _mean(v) is not None}  # fmt: skip
    avgs, devs = [e["avg"] for e in entries.values()], [e["dev_avg"] for e in entries.values()]
    return {
        "tasks": cells,
        "avg": _mean(avgs),
        "avg_std": statistics.stdev(avgs) if _mean(avgs) is not None else None,
        "dev_avg": _mean(devs),
        "dev_avg_std": statistics.stdev(devs) if _mean(devs) is not None else None,  # θ's choice
        "base_models": sorted({m for e in entries.values() for m in e["base_models"]}),
        "runs": {name: e["avg"] for name, e in entries.items()},
    }


def effect_vs(runs: dict[str, float | None], baseline: dict[str, float | None]) -> dict | None:
    """Avg. difference of a method's seeds to the baseline's mean, with the t-test: one
    sample of differences against one baseline value, Welch's test against a baseline
    that is a sample itself (none's fine-tuning seeds)."""
    base = _mean(list(baseline.values()))
    if base is None or _mean(list(runs.values())) is None:
        return None
    diffs = [v - base for v in runs.values()]
    out = {"diff": float(np.mean(diffs)), "n_seeds": len(diffs), "p": None, "holds": False}
    if len(baseline) > 1:
        out["n_baseline"] = len(baseline)
    if len(diffs) > 1:
        out["diff_std"] = statistics.stdev(diffs)
        if len(baseline) > 1:
            out["p"] = compare(runs, baseline)["p"]
        elif out["diff_std"] > 0:
            from scipy import stats  # loaded only where a t-test runs (2+ seeds)

            out["p"] = float(stats.ttest_1samp(diffs, 0.0).pvalue)
        same_sign = all(d > 0 for d in diffs) or all(d < 0 for d in diffs)
        out["holds"] = bool(out["p"] is not None and out["p"] < ALPHA and same_sign)
    return out


def compare(runs: dict[str, float | None], other: dict[str, float | None]) -> dict | None:
    """Avg. of a method's seeds minus another's, with Welch's t-test (None: a score missing)."""
    a, b = list(runs.values()), list(other.values())
    if _mean(a) is None or _mean(b) is None:
        return None
    out = {"diff": _mean(a) - _mean(b), "n_seeds": [len(a), len(b)], "p": None, "holds": False}
    if len(a) > 1 and len(b) > 1 and (statistics.stdev(a) > 0 or statistics.stdev(b) > 0):
        from scipy import stats  # loaded only where a t-test runs (2+ seeds)

        out["p"] = float(stats.ttest_ind(a, b, equal_var=False).pvalue)
        out["holds"] = bool(out["p"] < ALPHA and out["diff"] > 0)
    return out


def equivalent(
    runs: dict[str, float | None],
    other: dict[str, float | None],
    margin: float = EQUIVALENCE_MARGIN,
) -> dict | None:
    """Two rows the same within ±`margin`: Welch's two one-sided tests (TOST), p the larger
    of the two; holds where p < ALPHA (None: a score missing)."""
    a, b = list(runs.values()), list(other.values())
    if _mean(a) is None or _mean(b) is None:
        return None
    out = {"diff": _mean(a) - _mean(b), "n_seeds": [len(a), len(b)], "p": None, "holds": False,
           "margin": margin}  # fmt: skip
    if len(a) > 1 and len(b) > 1 and (statistics.stdev(a) > 0 or statistics.stdev(b) > 0):
        from scipy import stats  # loaded only where a t-test runs (2+ seeds)

        above = stats.ttest_ind(np.add(a, margin), b, equal_var=False, alternative="greater")
        from scipy import stats  # loaded only where a t-test runs (2+ seeds)

        below = stats.ttest_ind(np.subtract(a, margin), b, equal_var=False, alternative="less")
        out["p"] = float(max(above.pvalue, below.pvalue))
        out["holds"] = bool(out["p"] < ALPHA)
    return out


def _measure_sample(entries: dict[str, dict], tasks: list[str], on: str) -> dict:
    """A row's values of one measure: one per training seed; a row of one run fine-tuned
    with several seeds (none with evaluate.baseline_seeds, a paper preset's method): one
    per fine-tuning seed, the average over the fine-tuned columns of that seed's scores."""
    if on == "finetune" and len(entries) == 1:
        [(name, entry)] = entries.items()
        per_seed = [entry["tasks"][t].get("seed_scores") for t in tasks if measure_of(t) == on]
        if per_seed and all(per_seed) and len({len(s) for s in per_seed}) == 1:
            by_seed = zip(*per_seed, strict=True)
            return {f"{name}/ft{i + 1}": _mean(list(v)) for i, v in enumerate(by_seed)}
    return {n: e["measures"].get(on) for n, e in entries.items()}


def measure(runs: dict[str, float | None]) -> dict:
    """One measure of a row: its runs' values, their mean and sd (None: a value missing)."""
    values = list(runs.values())
    mean = _mean(values)
    std = statistics.stdev(values) if mean is not None and len(values) > 1 else None
    return {"avg": mean, "avg_std": std, "runs": dict(runs)}


def claims(rows: dict[str, dict]) -> list[dict]:
    """The CLAIMS whose two methods are both rows, each compared on its paper's measure;
    one the run cannot test (no such column, or a row without it) says why."""
    out = []
    for claim, *pair, on in CLAIMS:
        method, other = (_present(m, rows) for m in pair)
        if method is None or other is None:
            continue
        head = {"claim": claim, "method": method, "other": other, "measure": on}
        a, b = (rows[m].get("measures", {}).get(on) for m in (method, other))
        test = equivalent if claim in EQUIVALENT else compare
        result = test(a["runs"], b["runs"]) if a and b else None
        if result is None:
            out.append({**head, "untested": _untested(on, {method: a, other: b})})
        else:
            out.append({**head, **result})
    return out


def _present(method: str | tuple[str, ...], rows: dict) -> str | None:
    """The claim's method as a row: the name, or the first of its alternatives that is one."""
    names = (method,) if isinstance(method, str) else method
    return next((n for n in names if n in rows), None)


def _untested(on: str, values: dict[str, dict | None]) -> str:
    """Why a claim has no test: a method without the measure's column, or seeds unscored."""
    if not all(values.values()):
        return f"no {_COLUMNS[on]} for both methods"
    waiting = [m for m, v in values.items() if any(x is None for x in v["runs"].values())]
    return f"not every seed scored yet: {', '.join(waiting)}"


def row_bases(rows: dict[str, dict], groups: dict[str, list[str]]) -> dict[str, list[str]]:
    """Each row's base model(s), from what its runs' metrics say ran (`base_models`). An
    encoder that continues another method's run (jcse_two_stage from models/encoders/
    jcse_s1) is on that row's base; `unknown` (nothing recorded) is left out."""
    row_of = {run: row for row, runs in groups.items() for run in runs}

    def bases(row: str, seen: frozenset) -> set[str]:
        out = set()
        for base in rows[row].get("base_models") or []:
            parent = row_of.get(base.rstrip("/").removeprefix(ENCODERS))
            if base.startswith(ENCODERS) and parent in rows and parent not in seen:
                out |= bases(parent, seen | {parent})
            elif base != "unknown":
                out.add(base)
        return out

    return {row: sorted(bases(row, frozenset({row}))) for row in rows}


def _claim_row(name: str) -> str:
    """The row a claim's side is: a cross-encoder row is its method's (`none`'s for
    CROSS_ENCODER alone, `labse_none`'s for 'labse_none + cross-encoder')."""
    if name == CROSS_ENCODER:
        return "none"
    return name.removesuffix(f" + {CROSS_ENCODER}")


def on_one_base(claim: dict, bases: dict[str, list[str]]) -> dict:
    """The claim with the base its two rows ran on (`base`), or refused (`refused`, naming
    each row's base, and not holding) where they ran on more than one: a claim never
    compares rows on two bases."""
    rows = [_claim_row(claim.get(k) or "") for k in ("method", "other")]
    sides = {row: bases.get(row, []) for row in rows}
    found = sorted(set().union(*sides.values()))
    if len(found) <= 1:
        return {**claim, "base": found[0] if found else None}
    each = "; ".join(f"{row} on {', '.join(b) or 'unknown'}" for row, b in sides.items())
    return {**claim, "base": None, "holds": False, "refused": f"rows on two bases ({each})"}


def judged_claims(summary: dict) -> list[dict]:
    """A summary's claims, each with its base or refused (on_one_base); a summary.json
    written before claims named their base is judged here from its rows' base models."""
    found = summary.get("claims") or []
    rows = summary.get("methods") or {}
    if not rows or all("base" in c for c in found):  # nothing to judge them by, or judged
        return found
    bases = row_bases(rows, {name: list(row.get("runs") or [name]) for name, row in rows.items()})
    return [c if "base" in c else on_one_base(c, bases) for c in found]


def build_summary(
    results: dict,
    tasks: list[str],
    avg_over: str = "finetune",
    groups: dict[str, list[str]] | None = None,
    apart: tuple[str, ...] = (),
) -> dict:
    """The summary as JSON-able data: per row (a method over its seeds) per task
    score/std/official, Avg., and the difference to `none`. `apart`: tasks run for some
    methods only (evaluate.finetune_task_methods), columns in no average."""
    apart = tuple(t for t in tasks if t in apart)
    tasks = ordered_tasks(table_tasks([t for t in tasks if t not in apart]))  # Figure 2 apart
    use = [t for t in tasks if avg_over == "all" or measure_of(t) == "finetune"]
    entries = {name: _entry_row(per_task, tasks, use) for name, per_task in results.items()}
    check_scored_sets(entries, tasks)
    groups = groups or {name: [name] for name in results}
    kinds = [m for m in MEASURES if any(measure_of(t) == m for t in tasks)]
    rows = {}
    for row, names in groups.items():
        present = {n: entries[n] for n in names if n in entries}
        if present:
            rows[row] = _seed_row(present, tasks)
            rows[row]["measures"] = {m: measure(_measure_sample(present, tasks, m)) for m in kinds}
    if "none" in rows:
        # one kind of column: Avg. is that measure, so none's sample is the measure's
        base = rows["none"]["measures"][kinds[0]]["runs"] if kinds == ["finetune"] else None
        for name, row in rows.items():
            if name != "none":
                row["vs_none"] = effect_vs(row["runs"], base or rows["none"]["runs"])
                for m, value in row["measures"].items():
                    value["vs_none"] = effect_vs(value["runs"], rows["none"]["measures"][m]["runs"])
    out = {
        "columns": [{"task": t, **job_info(t)} for t in tasks],
        "measures": kinds,
        "avg_over": avg_over,
        "test": TEST,
        "methods": rows,
        "claims": claims(rows),
        "claim_test": CLAIM_TEST,
    }
    out["columns"] += apart_columns(rows, results, groups, apart)
    pi = pi_xling_summary(results, groups)
    if pi:  # the cross-lingual PI paper's tables and claims (presets/pi-en-ja.yaml)
        out["pi_xling"] = pi
        out["claims"] += pi_claims(pi)
    out |= ebsim_sections(results, groups, out["claims"])  # EBSIM's Table 2 and Figure 2
    out |= stilts_sections(results, groups, out["claims"])  # round trip §6: Table 5, Fig. 4
    bases = row_bases(rows, groups)
    out["claims"] = [on_one_base(c, bases) for c in out["claims"]]
    return out


def _pi_bi(r: dict | None) -> dict | None:
    """One bi-encoder run's PI values (a pi_xling job), None where not scored. A job
    without `threshold_on` (an older one) chose its threshold on held-out English pairs
    alone and recorded no ROC AUC."""
    if not r or r.get("score") is None or not r.get("breakdown"):
        return None
    further = r.get("eval_sets") or {}
    pairs = {EN: r.get("test_pairs"), **{k: v.get("pairs") for k, v in further.items()}}
    auc = {EN: r.get("auc"), **{k: v.get("auc") for k, v in further.items()}}
    auc |= {k: v.get("auc") for k, v in (r.get("classes") or {}).items()}
    return {"sets": dict(r["breakdown"]), "pairs": pairs, "auc": auc,
            "shares": _label_shares(r), "alignment": r.get("alignment"),
            "uniformity": r.get("uniformity"),
            "english_threshold": "threshold_on" not in r}  # fmt: skip


def _label_shares(r: dict) -> dict[str, float]:
    """Each scored set's positive share ×100, from the sample records of either job's
    layout (pi_xling: samples.test and eval_sets.*.sample; paws_xling: samples.*)."""
    samples = r.get("samples") or {}
    records = {k: v for k, v in samples.items() if k not in ("threshold", "train", "dev")}
    records[EN] = records.pop("test", None)
    records |= {k: v["sample"] for k, v in (r.get("eval_sets") or {}).items() if "sample" in v}
    return {k: 100 * v["strata"].get("1", {}).get("pairs", 0) / v["pairs"]
            for k, v in records.items() if v and v.get("pairs")}  # fmt: skip


def _pi_cross(r: dict | None) -> dict | None:
    """A paws_xling fine-tuning job's values per fine-tuning seed (the cross-encoder)."""
    if not r or r.get("score") is None:
        return None
    samples = r.get("samples") or {}
    pairs = {EN if k == "test" else k: v["pairs"] for k, v in samples.items() if v}
    out = {}
    for run in r["runs"]:
        sets = {EN: run["test"]["accuracy"],
                **{k: v["accuracy"] for k, v in run.get("eval_sets", {}).items()}}  # fmt: skip
        out[f"ft{run['seed']}"] = {"sets": sets, "pairs": pairs, "auc": {}}
    return out


def _with_classes(run: dict | None) -> dict | None:
    """A run's values with Table I's mean and Table II's classes (pi_classes' helpers)."""
    if run is None:
        return None
    classes = class_scores(run["sets"], run["pairs"])
    return {**run, "mean": paper_mean(run["sets"], run["pairs"]), "classes": classes}


def _pi_row(runs: dict[str, dict | None], kind: str, parameters: int | None) -> dict:
    """Mean ± sd over a row's runs of each PI value, and the runs' own values."""
    runs = {n: _with_classes(v) for n, v in runs.items()}

    def stat(get) -> dict | None:
        values = [get(v) for v in runs.values()]
        if not values or any(x is None for x in values):
            return None
        return {"mean": float(np.mean(values)), "n": len(values),
                "std": statistics.stdev(values) if len(values) > 1 else None}  # fmt: skip

    first = next(iter(runs.values())) or {}
    return {
        "type": kind,
        "parameters": parameters,
        "runs": runs,
        "mean": stat(lambda v: v and v["mean"]),
        "sets": {k: stat(lambda v, k=k: v and v["sets"].get(k)) for k in first.get("sets", {})},
        "classes": {k: stat(lambda v, k=k: v and v["classes"].get(k)) for k in PI_CLASSES},
        "auc": {k: stat(lambda v, k=k: v and v["auc"].get(k)) for k in (*PI_SETS, *PI_CLASSES)},
        "alignment": stat(lambda v: v and v.get("alignment")) if kind == "Bi-encoder" else None,
        "uniformity": stat(lambda v: v and v.get("uniformity")) if kind == "Bi-encoder" else None,
    }


def pi_xling_summary(results: dict, groups: dict[str, list[str]]) -> dict | None:
    """The cross-lingual PI paper's tables from the jobs' JSON: one bi-encoder row per
    method (its pi_xling jobs, one per training seed) and a cross-encoder row per method
    fine-tuned on paws_xling (its fine-tuning seeds; `none`'s is CROSS_ENCODER), with each
    PI measure's chance on the scored pairs. None where no run has a pi_xling job."""
    job = next((j for j in PI_XLING if any((per or {}).get(j) for per in results.values())), None)
    if job is None:
        return None
    rows, base, first = {}, None, None
    for method, names in groups.items():
        jobs = {n: results[n].get(job) for n in names if n in results}
        if not jobs:
            continue
        params = next((j.get("parameters") for j in jobs.values() if j), None)
        base = base or next(((j.get("encoder") or {}).get("base_model", {}).get("id")
                             for j in jobs.values() if j), None)  # fmt: skip
        runs = {n: _pi_bi(j) for n, j in jobs.items()}
        first = first or next((v for v in runs.values() if v), None)
        rows[method] = _pi_row(runs, "Bi-encoder", params)
        tuned = [_pi_cross(results[n].get(PI_XLING[job])) for n in names if n in results]
        if len(tuned) == 1 and tuned[0]:
            name = CROSS_ENCODER if method == "none" else f"{method} + {CROSS_ENCODER}"
            rows[name] = _pi_row(tuned[0], "Cross-encoder", params)
    shares, pairs = (first or {}).get("shares", {}), (first or {}).get("pairs")
    levels = {
        on: chance(shares, lambda v, pick=pick: pick(v, pairs)) for on, pick in PI_PICK.items()
    }
    old = any(v["english_threshold"] for r in rows.values() for v in r["runs"].values()
              if v and "english_threshold" in v)  # fmt: skip
    return {"rows": rows, "base_model": base, "sets": list(PI_SETS), "job": job,
            "chance": levels, "english_threshold": old}  # fmt: skip


def _pi_sample(row: dict, on: str) -> dict[str, float | None]:
    """A PI row's values of one PI_MEASURES measure, one per run."""
    return {n: (PI_PICK[on](v["sets"], v["pairs"]) if v else None) for n, v in row["runs"].items()}


def _at_chance(name: str, runs: dict[str, float | None], level: float | None) -> str | None:
    """Why a claim against row `name` is not testable: its mean is not above chance (the
    better constant answer, pi_classes.chance) by more than its seed spread (sd; none's
    one value: by anything). Below chance counts too: a constant answer beats it, so
    the threshold carries no ranking. None where the reference is above chance."""
    values = [v for v in runs.values() if v is not None]
    if level is None or not values:
        return None
    mean = float(np.mean(values))
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    if mean - level > sd:
        return None
    spread = f" ± {sd:.1f}" if len(values) > 1 else ""
    return f"{name} at chance ({mean:.1f}{spread}; chance {level:.1f})"


def _prefixed(method: str, prefix: str) -> str:
    """A PI_CLAIMS row name under a preset's prefix (paper-en: labse_ams_full, and the
    cross-encoder of labse_none)."""
    if method != CROSS_ENCODER:
        return prefix + method
    return CROSS_ENCODER if not prefix else f"{prefix}none + {CROSS_ENCODER}"


def pi_claims(pi: dict) -> list[dict]:
    """PI_CLAIMS whose two rows exist, in the shape `claims` gives (verdict() reads them);
    one against a reference at chance says so (`not_testable`)."""
    rows, out = pi["rows"], []
    for (claim, method, other, on), prefix in itertools.product(PI_CLAIMS, PI_PREFIXES):
        method, other = prefix + method, _prefixed(other, prefix)
        if method not in rows or other not in rows:
            continue
        a, reference = _pi_sample(rows[method], on), _pi_sample(rows[other], on)
        head = {"claim": claim, "method": method, "other": other, "measure": on}
        b = reference
        if on == "pi_within":
            b = {n: None if v is None else 0.9 * v for n, v in b.items()}
        if len(b) == 1 and other == prefix + "none":  # one deterministic value: one-sample
            effect = effect_vs(a, b)
            result = effect and {
                "diff": effect["diff"],
                "n_seeds": [effect["n_seeds"]],
                "p": effect["p"],
                "holds": effect["holds"],
                "test": "one-sample t-test against the base's one value",
            }
        else:
            result = compare(a, b)
        if result is None:
            out.append({**head, "untested": "not every seed scored yet"})
            continue
        why = _at_chance(other, reference, pi.get("chance", {}).get(on))
        out.append({**head, **result, **({"not_testable": why} if why else {})})
    return out


def scores(summary: dict) -> dict:
    """Each method's row of the table as the few numbers dvc.yaml declares as the summary's
    metrics (metrics/scores.json; summary.json, with every set, seed and note, is a plain
    output): Avg. and the dev average (± sd over seeds), each column's score and the
    difference to none, with its p and whether it holds where seeds test it. A value the
    run has not got is left out, not written as null: `dvc exp show` gets no empty column."""
    out = {}
    for name, row in summary["methods"].items():
        values = {key: row.get(key) for key in ("avg", "avg_std", "dev_avg", "dev_avg_std")}
        values |= {task: cell.get("score") for task, cell in row["tasks"].items()}
        effect = row.get("vs_none") or {}
        tested = ("diff", "p", "holds") if effect.get("p") is not None else ("diff",)
        values["vs_none"] = {key: effect[key] for key in tested if effect.get(key) is not None}
        out[name] = {key: value for key, value in values.items() if value not in (None, {})}
    return out


def format_p(p: float) -> str:
    """A p-value to three places; below 0.001 as "<0.001", since "0.000" reads as zero."""
    return "<0.001" if p < 0.0005 else f"{p:.3f}"


def _signed(value: float, fmt: str) -> str:
    return ("+" if value >= 0 else "−") + fmt.format(abs(value))


def _avg_blocks(summary: dict) -> list[tuple[str, str | None]]:
    """The average columns after the tasks: (title, measure) each. One `Avg.` (avg_over)
    where the table has no fine-tuned column or nothing else; with fine-tuned (or
    cross-encoder) and other columns, one average per measure (STS, PI, domain, fine-tuned:
    a method without the fine-tuned column still has the others; a cross-encoder's accuracy
    is never averaged with a bi-encoder's)."""
    kinds = summary.get("measures") or []
    if len(kinds) > 1 and {"finetune", "pi_ce"} & set(kinds):  # fine-tuned beside cosine
        return [({**OLD_MEASURES, **MEASURES}[m], m) for m in kinds]
    return [("Avg.", None)]


def _avg_cells(row: dict, on: str | None, fmt: str, with_effect: bool, seeded: bool) -> list:
    """A row's average (± sd over seeds) and, beside `none`, its Δ and p cells."""
    value = row if on is None else row["measures"][on]
    text = fmt.format(value["avg"]) if value.get("avg") is not None else "n/a"
    if value.get("avg_std") is not None:
        text += " ± " + fmt.format(value["avg_std"])
    if not with_effect:
        return [text]
    return [text, *_effect_cells(value.get("vs_none"), fmt, seeded)]


def _task_cell(cell: dict, fmt: str) -> str:
    text = fmt.format(cell["score"])
    if cell.get("n_seeds") and cell["n_seeds"] > 1:
        text += " ± " + fmt.format(cell["std"])
    return text + (" †" if cell["official_split"] is False else "")


def to_markdown(summary: dict, decimals: int = 1, marks: dict[str, str] | None = None) -> str:
    """Table-3-style Markdown: a header row (each task under its group), one row per
    method, then (with a `none` row) the difference to it and the test over seeds. `marks`
    puts a note mark after a method's name (the report's pre-fix marks)."""
    cols, rows = summary["columns"], summary["methods"]
    fmt = f"{{:.{decimals}f}}"
    seeded = any(len(r.get("runs", {})) > 1 for r in rows.values())
    with_effect = "none" in rows
    effect = (["Δ vs none", "p (seeds)"] if seeded else ["Δ vs none"]) if with_effect else []
    blocks = _avg_blocks(summary)
    if len(blocks) == 1:  # the one Avg. keeps its long-standing header
        effect = [e.replace("Δ vs", "Δ Avg. vs") for e in effect]
    titles = [f"{c['title']} ({c['metric']})" for c in cols]
    header = ["Method", *header_cells(titles, [c["group"] for c in cols])]
    for title, _ in blocks:
        header += [title, *effect]
    body, notes, daggers, not_run = [], [], False, False
    for method, row in rows.items():
        n_runs = len(row.get("runs", {}))
        name = f"{method} {(marks or {}).get(method, '')}".strip()
        cells = [f"{name} ({n_runs} seeds)" if n_runs > 1 else name]
        for c in cols:
            cell = row["tasks"][c["task"]]
            if cell["score"] is None:
                not_run |= bool(cell.get("not_run"))
                cells.append("—" if cell.get("not_run") else "n/a")
                if not cell.get("not_run"):
                    notes.append(f"- {method} / {c['task']}: {cell['note']}")
                continue
            daggers |= cell["official_split"] is False
            cells.append(_task_cell(cell, fmt))
        for _, on in blocks:
            cells += _avg_cells(row, on, fmt, with_effect, seeded)
        body.append(cells)
    lines = [markdown_table(header, body), "", _legend_line(summary, blocks)]
    if seeded and effect:
        lines.append(f"p: {summary['test']}; **bold** where p < {ALPHA} and every seed "
                     "moves the same way (the difference holds across seeds).")  # fmt: skip
        if _baseline_has_spread(rows):
            lines.append(f"p beside none's fine-tuned average: {SPREAD_TEST}.")
    if summary.get("pi_xling"):
        lines.append("The cross-lingual PI columns (bi-encoder and cross-encoder): Table I's "
                     "mean accuracy, the mean of Table II's three classes (below).")  # fmt: skip
    if not_run:
        lines.append(f"— {NOT_RUN}.")
    if daggers:
        lines.append("† not the official split: a seeded re-split of what exists offline "
                     "(see split_note in metrics/eval/<method>/<task>.json).")  # fmt: skip
    lines += ebsim_markdown(summary, fmt)  # EBSIM's Table 2 and Figure 2, where present
    lines += _breakdowns(summary, fmt) + table4_markdown(summary, fmt)
    lines += stilts_markdown(summary, fmt)  # the round-trip paper's Table 5 and Figure 4
    lines += pi_xling_markdown(summary, fmt) + _claims(summary, fmt)
    lines += ["", "Base model that ran, per method:", ""]
    traced = row_bases(rows, {m: list(r.get("runs") or [m]) for m, r in rows.items()})
    for m, r in rows.items():  # a continued run (jcse_two_stage): its root base, and where from
        root, ran = ", ".join(traced.get(m) or []) or "unknown", ", ".join(r["base_models"])
        lines.append(f"- {m}: {root}" + (f" (continued from {ran})" if ran and ran != root else ""))
    if notes:
        lines += ["", "Missing cells:", "", *notes]
    return "\n".join(lines) + "\n"


def _baseline_has_spread(rows: dict) -> bool:
    none = rows.get("none", {}).get("measures", {}).get("finetune")
    return bool(none and len(none["runs"]) > 1)


def _legend_line(summary: dict, blocks: list) -> str:
    head = "Scores ×100; mean over seeds ± standard deviation where n > 1."
    head += _one_group(summary)
    if len(blocks) > 1:
        named = "; ".join(f"{title}: the mean of its {_COLUMNS[m]}" for title, m in blocks)
        return f"{head} {named}; Δ and p of each against none."
    over = "fine-tuned tasks" if summary["avg_over"] == "finetune" else "all columns"
    return f"{head} Avg. over {over}."


def _one_group(summary: dict) -> str:
    """ " Every task column: <group>." where the header cells do not name one (one group)."""
    groups = {c["group"] for c in summary["columns"]}
    return f" Every task column: {groups.pop()}." if len(groups) == 1 else ""


_COLUMNS = {
    "sts": "cosine STS columns",
    "pi": "cosine PI columns",
    "domain": "domain columns",
    "finetune": "fine-tuned columns",
    "pi_ce": "cross-encoder PI columns",
    "unsup": "columns without fine-tuning",  # OLD_MEASURES
}

SET_ORDER = ("STS12", "STS13", "STS14", "STS15", "STS16", "STSBenchmark", "SICKRelatedness")


def _breakdowns(summary: dict, fmt: str) -> list[str]:
    """One more table per unsupervised STS column: each set's Spearman (± sd over seeds),
    as SimCSE's Table 5 lays them out, so a reader sees where an average moved (the PI
    paper's sets are in its Table II instead)."""
    lines = []
    for col in summary["columns"]:
        if summary.get("pi_xling") and col["task"] in (*PI_XLING, *PI_XLING.values()):
            continue  # Table II has its sets
        rows = {m: r["tasks"][col["task"]] for m, r in summary["methods"].items()}
        with_sets = [c["sets"] for c in rows.values() if c.get("sets")]
        if not with_sets:
            continue
        left_out = next((c["excluded"] for c in rows.values() if c.get("excluded")), {})
        names = list(dict.fromkeys([*with_sets[0], *left_out]))  # the job's order for ties
        names.sort(key=lambda n: (SET_ORDER + (n,)).index(n))
        by = "metric (×100)" if col["kind"] == "retrieval" else f"set ({col['metric']} ×100)"
        table = []
        for method, cell in rows.items():
            if not cell.get("sets"):
                continue
            sds, out = cell.get("sets_std") or {}, cell.get("excluded") or {}
            table.append([method, *(excluded_cell(out[n]) if n in out else
                ("n/a" if cell["sets"].get(n) is None else fmt.format(cell["sets"][n]))
                + (f" ± {fmt.format(sds[n])}" if n in sds else "") for n in names)])  # fmt: skip
        lines += ["", f"{col['title']} by {by}:", "", markdown_table(["Method", *names], table)]
    return lines


def table4_markdown(summary: dict, fmt: str) -> list[str]:
    """The round-trip paper's Table 4, its layout: rows = BLEU tags, columns = A'B', A'B,
    AB', AB + A'B', AB; each cell the STS avg (± sd over seeds) of its method's row, n/a
    where that row is not in this run. Nothing where the run has no Table 4 row."""
    rows = summary["methods"]
    wanted = {f"{p}_{t}" for t, _ in TABLE4_TAGS for _, p in TABLE4_COLUMNS[:-1]} | {TABLE4_AB}
    if not wanted & set(rows):
        return []

    def cell(method: str) -> str:
        value = (rows.get(method) or {}).get("measures", {}).get("sts") or {}
        if value.get("avg") is None:
            return "n/a"
        sd = value.get("avg_std")
        return fmt.format(value["avg"]) + (f" ± {fmt.format(sd)}" if sd is not None else "")

    columns = TABLE4_COLUMNS + ((("AB, 2 epochs (control)", TABLE4_TWICE),)
                                if TABLE4_TWICE in rows else ())  # fmt: skip
    untagged = (TABLE4_AB, TABLE4_TWICE)
    body = [[f"SimCSE + {title}", *(cell(p if p in untagged else f"{p}_{tag}")
                                    for _, p in columns)]
            for tag, title in TABLE4_TAGS]  # fmt: skip
    head = ["<SIM95> with", *(c for c, _ in columns)]
    control = (" AB, 2 epochs: not the paper's; as many steps as AB + A'B', its last weights."
               if TABLE4_TWICE in rows else "")  # fmt: skip
    return ["", "Table 4 (round-trip paper's layout): STS avg, in-batch negatives only:", "",
            markdown_table(head, body), "",
            "A / B: the anchor / positive as in the data, A' / B': its paraphrase at the "
            "row's tags; AB + A'B': both, the corpus doubled. AB has no tag (one row, shown "
            f"in each).{control}"]  # fmt: skip


def excluded_cell(reason: str) -> str:
    """A set left out of a row's score, as its cell says it: never a number."""
    return "excluded: " + (reason.split(":")[0] if reason.startswith("trained on") else "every row")


def check_scored_sets(entries: dict[str, dict], tasks: list[str]) -> None:
    """Every run's cosine STS average is over the same sets: a column mixing runs scored
    on 7 sets with runs scored on 6 (trained on SICK) would compare unlike averages."""
    for t in tasks:
        scored = {n: tuple(sorted(e["tasks"][t]["sets"])) for n, e in entries.items()
                  if job_info(t)["kind"] == "unsup_sts" and e["tasks"][t].get("sets")}  # fmt: skip
        if len(set(scored.values())) > 1:
            (a, sa), (b, sb) = (
                next(iter(scored.items())),
                next((n, v) for n, v in scored.items() if v != next(iter(scored.values()))),
            )
            raise ArtifactError(
                f"{t}: runs scored on different STS sets ({a}: {', '.join(sa)}; {b}: "
                f"{', '.join(sb)}): their averages are not comparable; score every run with "
                "the same evaluate.exclude_sts"
            )


def _claims(summary: dict, fmt: str) -> list[str]:
    """The papers' claims that this run can check, one line each, on each paper's measure;
    those it cannot (a fine-tuned claim without a fine-tuned column) listed after."""
    found = judged_claims(summary)
    tested = [c for c in found if "untested" not in c]
    if not found:
        return []
    lines = ["", "The papers' claims, each on its paper's measure (On) and base model:", ""]
    if tested:  # no table header without a row
        table = []
        for c in tested:
            on = measure_title(c.get("measure"))
            diff = f"{c['method']} − {c['other']}: {_signed(c['diff'], fmt)}"
            p = "n/a" if c["p"] is None else format_p(c["p"])
            base = c.get("base") or ("two" if c.get("refused") else "n/a")
            table.append([c["claim"], on, base, diff, p, verdict(c)])
        lines.append(markdown_table(["Claim", "On", "Base", "Δ", "p", "Verdict"], table))
        lines += ["", f"p: {summary.get('claim_test', CLAIM_TEST)}; holds: p < {ALPHA} and Δ > 0; "
                  f"not testable: fewer than 2 seeds on a side, or {AT_CHANCE}; {REFUSED}."]  # fmt: skip
        if any("margin" in c for c in tested):
            lines.append(f"≈: Welch's two one-sided tests (TOST) within ±{EQUIVALENCE_MARGIN:g} "
                         f"(×100); holds: p < {ALPHA}, the difference inside the margin.")  # fmt: skip
    untested = [f"- {c['claim']} ({c['untested']})." for c in found if "untested" in c]
    return lines + (["", "Not tested here:", "", *untested] if untested else [])


PAPER_TABLE_I = "LaBSE bi-encoder 79.3; cross-encoders 85.0–87.2 (mBERT, Coupled, Decoupled)"
PAPER_TABLE_II = "LaBSE: inter-para 77.4, inter-same 82.2, intra 78.3"
ENGLISH_THRESHOLD = (
    "**Measured the old way: re-measure.** These jobs chose one threshold on held-out "
    "English pairs alone and applied it to every set (it rejects every cross-lingual pair: "
    "inter-para is the negative share, inter-same 0), and recorded no ROC AUC. The means "
    "above are recomputed from their per-set accuracies; the threshold cannot be. Re-measure "
    "with `paracl preset pi-en-ja` and its three parts (the preset's header)."
)


def _pi_cell(stat: dict | None, fmt: str) -> str:
    """mean ± sd (n) of a PI value; n/a where a run is missing."""
    if stat is None:
        return "n/a"
    text = fmt.format(stat["mean"])
    return text + (f" ± {fmt.format(stat['std'])}" if stat.get("std") is not None else "")


def _params(n: int | None) -> str:
    return "n/a" if n is None else (f"{n / 1e9:.1f}B" if n >= 1e9 else f"{n / 1e6:.0f}M")


def _threshold_words(pi: dict) -> str:
    """How the bi-encoders' threshold was chosen, for the tables' captions."""
    if pi.get("english_threshold"):
        return "the cosine threshold that maximises accuracy on held-out English pairs alone"
    return ("the one cosine threshold that maximises accuracy on held-out pairs drawn like "
            "the scored ones (held-out English pairs and the other half of PAWS-X dev)")  # fmt: skip


def pi_table_one(pi: dict, fmt: str) -> list[str]:
    """Table I's layout: model, parameters, mean accuracy, model type (paper §IV-C)."""
    body = [[f"{name} ({len(r['runs'])} seeds)" if len(r["runs"]) > 1 else name,
             _params(r["parameters"]), _pi_cell(r["mean"], fmt), r["type"]]
            for name, r in pi["rows"].items()]  # fmt: skip
    level = (pi.get("chance") or {}).get("pi_mean")
    at = f" Chance (accept every pair or none, the better): {fmt.format(level)}." if level else ""
    lines = ["", f"Table I (cross-lingual PI paper's layout), base {pi['base_model']}:", "",
             markdown_table(["Model", "Params", "Mean accuracy", "Model type"], body), "",
             "Mean accuracy: the mean of Table II's three classes (inter-para, inter-same, "
             "intra; ×100), as the paper's 79.3 = (77.4 + 82.2 + 78.3) / 3, at "
             f"{_threshold_words(pi)} (bi-encoders); a cross-encoder's own prediction.{at} "
             f"The paper's (PAWS-X test): {PAPER_TABLE_I}."]  # fmt: skip
    return lines + (["", ENGLISH_THRESHOLD] if pi.get("english_threshold") else [])


def pi_table_two(pi: dict, fmt: str) -> list[str]:
    """Table II's layout: each class's accuracy, then each set's, each with its ROC AUC
    where the job recorded one."""
    with_auc = any(s for r in pi["rows"].values() for s in r.get("auc", {}).values())

    def cell(r: dict, group: str, key: str) -> str:
        text = _pi_cell((r.get(group) or {}).get(key), fmt)
        return f"{text} / {_pi_cell(r['auc'].get(key), fmt)}" if with_auc else text

    head = ["Model", "Inter-para (en–ja, ja–en)", "Inter-same (translation)",
            "Intra (en, ja)", EN, f"{JA} (zero-shot)", "en–ja", "ja–en"]  # fmt: skip
    body = [[name, *(cell(r, "classes", k) for k in PI_CLASSES),
             *(cell(r, "sets", k) for k in PI_SETS)] for name, r in pi["rows"].items()]  # fmt: skip
    auc = ("Each cell: accuracy / ROC AUC (×100; AUC needs no threshold; n/a for inter-same, "
           "whose pairs are all paraphrases, and for the cross-encoder, whose job records no "
           "scores). ") if with_auc else "ROC AUC: not recorded by these jobs (re-measure). "  # fmt: skip
    return ["", "Table II (its layout): accuracy across languages and within one:", "",
            markdown_table(head, body), "",
            "Inter-para: English sentence 1 with the Japanese sentence 2 of the same PAWS-X dev "
            "pair and the reverse (the 9 pairs whose en and ja labels differ left out); "
            "inter-same: each sentence with its translation (all paraphrases: the share "
            "accepted); intra: en test, ja dev; each class pools its sets' pairs. "
            f"{auc}The paper's: {PAPER_TABLE_II}."]  # fmt: skip


def pi_align_uniform(pi: dict, fmt: str) -> list[str]:
    """Alignment and uniformity per bi-encoder row (§IV-B; SimCSE's definitions)."""
    body = [[name, _pi_cell(r["alignment"], "{:.3f}"), _pi_cell(r["uniformity"], "{:.3f}")]
            for name, r in pi["rows"].items() if r["type"] == "Bi-encoder"]  # fmt: skip
    return ["", "Embedding space (§IV-B), on English PAWS-Wiki test:", "",
            markdown_table(["Model", "Alignment (lower is better)",
                            "Uniformity (lower is better)"], body), "",
            "Alignment: mean squared distance of paraphrase pairs' normalised embeddings; "
            "uniformity: log mean exp(−2 × squared distance) over all test sentences. The "
            "paper reports no numbers for them."]  # fmt: skip


def pi_xling_markdown(summary: dict, fmt: str) -> list[str]:
    """The cross-lingual PI paper's tables, where the run has them (pi_xling_summary)."""
    pi = summary.get("pi_xling")
    if not pi:
        return []
    return pi_table_one(pi, fmt) + pi_table_two(pi, fmt) + pi_align_uniform(pi, fmt)


def verdict(claim: dict) -> str:
    """A tested claim's verdict: one whose rows ran on two bases is refused (`refused`, the
    reason); fewer than two seeds on either side cannot be tested (its p is undefined),
    nor can a claim against a reference at chance (`not_testable`, the reason); none of
    these is the same as a claim that does not hold."""
    if claim.get("refused"):
        return f"refused: {claim['refused']}"
    if claim.get("not_testable"):
        return f"not testable: {claim['not_testable']}"
    n = min(claim.get("n_seeds") or [0])
    if n < 2:
        return f"not testable (n = {n})"
    return "holds" if claim["holds"] else "does not hold"


def _effect_cells(effect: dict | None, fmt: str, seeded: bool) -> list[str]:
    """The Δ (± sd over seeds) and p cells of one row ('' for none itself)."""
    if effect is None:
        return [""] * (2 if seeded else 1)
    diff = _signed(effect["diff"], fmt)
    if effect.get("diff_std") is not None:
        diff += " ± " + fmt.format(effect["diff_std"])
    if effect["holds"]:
        diff = f"**{diff}**"
    if not seeded:
        return [diff]
    p = (
        "n/a (1 seed)"
        if effect["n_seeds"] < 2
        else (format_p(effect["p"]) if effect["p"] is not None else "n/a (no spread)")
    )
    return [diff, p]


def apart_columns(rows: dict, results: dict, groups: dict, apart: tuple[str, ...]) -> list[dict]:
    """The columns of tasks run for some methods only (evaluate.finetune_task_methods;
    paper-en's QQP for EBSIM's rows): each row's cell added, in no average or measure,
    which a row without the task would not have (the PPDB rows' Table 3 average stays)."""
    for row, names in groups.items():
        present = {n: _entry_row(results[n], list(apart), []) for n in names if n in results}
        if present and row in rows:
            rows[row]["tasks"] |= _seed_row(present, list(apart))["tasks"]
    return [{"task": t, **job_info(t)} for t in ordered_tasks(list(apart))]


def finetune_only(ev: dict, runs: dict, stilts: dict | None = None) -> dict[str, set[str]]:
    """{task: the runs fine-tuned on it}: evaluate.finetune_runs, less, for a task of
    evaluate.finetune_task_methods, the runs of the other methods, and, off
    train_intermediate.tasks, STILTs' rows (its start run and arms; an arm follows that
    list alone), as evaluate_finetune decides (its `skipped`)."""
    restricted = ev["finetune_task_methods"]
    stilts = stilts or {"tasks": None, "start": None, "arms": {}}
    rows = {stilts["start"], *stilts["arms"]}

    def runs_it(run: str, task: str) -> bool:
        if stilts["tasks"] is not None and run in rows and task not in stilts["tasks"]:
            return False
        return (
            run in stilts["arms"]
            or task not in restricted
            or runs[run]["method"] in restricted[task]
        )

    return {t: {r for r in ev["finetune_runs"] if runs_it(r, t)} for t in ev["finetune_tasks"]}


def main(params: dict) -> None:
    paths = args("eval_dir", "json", "markdown", "scores")
    trained = params["train_contrastive"]["runs"]  # train_contrastive refuses a stale list
    # STILTs' arms (train_intermediate) are fine-tuned runs of their own, one row each
    runs = {**trained, **{arm: {"method": arm} for arm in params["train_intermediate"]["arms"]}}
    ev, cfg = params["evaluate"], params["summary"]
    tasks = ev["tasks"] + ev["finetune_tasks"]
    if not Path(paths.eval_dir).is_dir():  # one missing job is an n/a cell; none is an error
        raise ArtifactError(f"{paths.eval_dir}: not found (did the evaluate stage run?)")
    only = finetune_only(ev, runs, params["train_intermediate"])
    only |= {t: set(trained) for t in ev["tasks"]}  # an arm has no embedding job
    results = load_results(Path(paths.eval_dir), list(runs), tasks, only)
    apart = tuple(ev["finetune_task_methods"])  # run for some methods: in no average
    summary = build_summary(results, tasks, cfg["avg_over"], run_groups(runs), apart)
    write_json(summary, paths.json)
    write_json(scores(summary), paths.scores)
    with atomic_path(paths.markdown) as tmp:
        tmp.write_text(to_markdown(summary, cfg["decimals"]), encoding="utf-8")
