"""`paracl report`: the tables and plots of README.md and docs/, rendered from committed JSON.

Why: a result typed into a README goes stale the day it is re-measured, and nobody
notices. Here every result table is rendered from a committed `results/<name>/summary.json`
(by the summary stage's own renderer, `paracl.stages.summary.to_markdown`) and
written between markers in the Markdown files:

    <!-- report:effect-en:table -->   ...generated, do not edit...   <!-- /report -->

`NAME` is a directory of results/ (a θ sweep's `exp-show-*.json` directory too);
`:PART` picks `table` (the main table and its legend), `sets` (per-set scores),
`claims` (the papers' claims), `curve` (a learning curve: results/<name>/learning_curve.csv,
as `paracl learning-curve` writes it, and its plot) or, by default, all of it. `tests/docs/test_docs.py` fails
when a block differs from what this renders, so a re-measured result cannot be shown
with old numbers. The configuration reference (docs/reference/params.md) is generated
the same way, from each stage's schema (paracl.schema), so it cannot drift either.

Plots go to docs/img/: each method's difference to `none` with its seeds and their
spread (`plot_summary`), the θ curve
(`paracl.theta_curve`) and the round-trip heatmaps where their data is in
results/default/heatmaps/ (`paracl.parts.tags.heatmap`). They are small, committed, and
redrawn by the same command.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import shutil
import subprocess
import sys
import types
from dataclasses import MISSING, Field, fields, is_dataclass
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

from paracl.core.errors import InputError
from paracl.core.io import atomic_path, read_json
from paracl.core.languages import DEFAULT, codes
from paracl.core.tables import markdown_table
from paracl.pipeline_diagram import project_diagram

MARKER = re.compile(
    r"<!-- report:(@?[A-Za-z0-9_.-]+)(?::([a-z0-9]+))? -->\n(.*?)<!-- /report -->\n", re.S
)
TAG = re.compile(r"<(?=[A-Za-z/!?])")  # where HTML would start a tag
PARTS = ("all", "table", "sets", "claims", "pi", "ebsim", "stilts", "table4")
EXTRA_PARTS = ("plot", "heatmaps", "curve")
CAPTIONED = ("all", "table", "ebsim", "stilts", "table4")  # a page may show one alone: its date
CURVE = "learning_curve.csv"  # `paracl learning-curve`'s table, committed beside a summary
PARAMS_PAGE = Path("docs/reference/params.md")
RESULTS_PAGE = Path("docs/results/index.md")  # the claims overview, and the results pages' index
DIAGRAM = Path("docs/img/pipeline.dot")  # drawn from dvc.yaml (paracl.pipeline_diagram)
IMG = Path("docs/img")
# The plots of docs/img/ are drawn at most this wide (6.4 in at 100 dpi: 640 px), so the
# docs' text column (~700 px at a 1280 px window) shows them unshrunk.
PLOT_WIDTH_IN, PLOT_DPI = 6.4, 100
# Row order of the tables (the JSON's keys are sorted; pi-en-ja's rows last); unknown
# methods follow, sorted.
METHOD_ORDER = ("none", "simcse_unsup", "simcse_wiki", "simcse_wiki_domain", "simcse_sup",
                "simcse_sup_rt", "nli_roundtrip_greedy", "nli_paraphraser_bleu0_5",
                "nli_paraphraser_bleu20", "nli_paraphraser_bleu40", "ppdb", "roundtrip",
                "roundtrip_greedy", "paraphraser", "paraphraser_bleu0_5", "paraphraser_bleu20",
                "paraphraser_bleu40", "jcse", "jcse_unadapted", "jcse_two_stage", "ams", "ebsim",
                "ebsim_no_aa", "infonce", "ams_pos", "ams_hn", "ams_full")  # fmt: skip

# Committed results measured before the method-fidelity fixes (issue 29), by the sha256 of
# their data: every row on SmolLM2 embedded its chat template (‡), jcse / jcse_two_stage
# also trained the paper's α read literally (§), roundtrip / paraphraser data the methods
# no longer use (¶). A re-measured file has
# another hash and loses its marks; tests/docs/test_docs.py fails while an entry here names a
# file that changed, so the entry is removed on purpose, not forgotten.
PRE_FIX = {
    "effect-en-2026-11-24": "00c00b9bf1ef0cd0882b6ff2a9f537d0ec39a5d3978a54d9058506d643cc7ec3",
    "effect-ja-2026-11-24": "ec8ea1ce819f0e347f25824cc6d2054dcefa29f6e556eaed0b35bcf16f68aba2",
    "effect-ja-ebsim-2026-11-25": "41e2df21542f2d59bc3bdee6f57dfc8a1844d466a349606e7b6201f7b6c22846",
    "effect-en-theta-2026-11-25": "bb8fc8bc6e360648bf6930b6ed760672a6f78590657b3011bbc65bdba70fb98f",
}
MARKS = {
    "‡": "every sentence was embedded inside SmolLM2's chat template (sentence-transformers' "
    "default for a tokenizer that has one; issue 29 item 1), in training and in scoring",
    "§": "JCSE's hard-negative weight was read from the paper's α, not the authors' code "
    "(stage one dropped each anchor's own negative from its denominator; issue 29 item 2)",
    "¶": "trained on data the method no longer uses: roundtrip on every split of tagged.parquet "
    "(now its train split), paraphraser on every generated tag pooled (now one encoder per "
    "tag, e.g. paraphraser_bleu20; issue 29 item 5)",
}
PRE_FIX_NOTE = (
    "**Measured before the method-fidelity fixes (issue 29), kept for comparison; the "
    "re-measured table has no such note (issue 33).** Every row was scored on the first "
    "100 pairs of each set (a prefix; evaluation now draws a stratified sample)."
)
# Bases whose tokenizer carries a chat template (the packaged gemma-3 GGUF has none).
TEMPLATE_BASES = ("HuggingFaceTB/SmolLM2",)


# -- reading results/ ------------------------------------------------------------------


def result_names(results: Path) -> list[str]:
    """Every results/<name>/ that holds a summary.json or a θ sweep's exp-show files."""
    if not results.is_dir():
        return []
    return sorted(d.name for d in results.iterdir() if d.is_dir() and _data_files(d))


def _data_files(directory: Path) -> list[Path]:
    summary = directory / "summary.json"
    return [summary] if summary.is_file() else sorted(directory.glob("exp-show-*.json"))


def data_sha256(directory: Path) -> str:
    """One hash over a result's data files (what PRE_FIX pins)."""
    digest = hashlib.sha256()
    for path in _data_files(directory):
        digest.update(path.read_bytes())
    return digest.hexdigest()


def pre_fix(results: Path, name: str) -> bool:
    """True where the committed data is the one measured before issue 29's fixes."""
    return bool(PRE_FIX.get(name)) and data_sha256(results / name) == PRE_FIX[name]


def _marks(name: str, row: dict, stale: bool) -> str:
    if not stale:
        return ""
    templated = any(m.startswith(TEMPLATE_BASES) for m in row.get("base_models", []))
    return (
        ("‡" if templated else "")
        + ("§" if name.startswith("jcse") else "")
        + ("¶" if name in ("roundtrip", "paraphraser") else "")
    )


def ordered(summary: dict) -> dict:
    """The summary with its rows in METHOD_ORDER (the PI tables' too: a cross-encoder
    right after the method it fine-tunes, paper-en's labse_* rows by their method)."""
    from paracl.stages.summary import CROSS_ENCODER

    rank = {m: i for i, m in enumerate(METHOD_ORDER)}
    names = sorted(summary["methods"], key=lambda m: (rank.get(m, len(rank)), m))
    out = {**summary, "methods": {m: summary["methods"][m] for m in names}}
    if summary.get("pi_xling"):

        def pi_key(row: str) -> tuple:
            method = row.removeprefix("labse_").split(" + ")[0]  # "labse_none + cross-encoder"
            method = "none" if method == CROSS_ENCODER else method
            return (rank.get(method, len(rank)), row.endswith(CROSS_ENCODER), row)

        rows = summary["pi_xling"]["rows"]
        out["pi_xling"] = {
            **summary["pi_xling"],
            "rows": {r: rows[r] for r in sorted(rows, key=pi_key)},
        }
    return out


# -- rendering tables --------------------------------------------------------------------


def split_parts(markdown: str) -> dict[str, str]:
    """to_markdown's output cut into its parts (paragraphs are blank-line separated)."""
    paras = markdown.strip("\n").split("\n\n")
    parts = {"all": markdown.strip("\n"), "table": "\n\n".join(paras[:2]), "sets": "", "claims": "",
             "pi": "", "ebsim": "", "stilts": "", "table4": ""}  # fmt: skip

    def until(i: int, prefix: str) -> str:
        """Paragraphs i.. up to the first that starts with `prefix` (or the end)."""
        end = next((j for j in range(i, len(paras)) if paras[j].startswith(prefix)), len(paras))
        return "\n\n".join(paras[i:end])

    for i, para in enumerate(paras):
        if re.match(r"^[^|\n]* by set \(", para):
            parts["sets"] = "\n\n".join(paras[i : i + 2])
        elif para.startswith("Table I ("):  # the PI paper's tables, up to the claims
            parts["pi"] = until(i, "The papers' claims")
        elif para.startswith(("Table 2 (EBSIM", "Figure 2 (EBSIM")):  # title, table, caption
            parts["ebsim"] = "\n\n".join(p for p in (parts["ebsim"], *paras[i : i + 3]) if p)
        elif para.startswith(("Table 5 (round-trip", "Figure 4 (round-trip")):  # likewise
            parts["stilts"] = "\n\n".join(p for p in (parts["stilts"], *paras[i : i + 3]) if p)
        elif para.startswith("Table 4 (round-trip"):  # title, table, legend
            parts["table4"] = "\n\n".join(paras[i : i + 3])
        elif para.startswith("The papers' claims"):
            parts["claims"] = until(i, "Base model")
    return parts


def _legend(text: str, stale: bool) -> str:
    used = [f"{mark}: {why}." for mark, why in MARKS.items() if mark in text]
    return "\n\n" + " ".join([PRE_FIX_NOTE, *used]) if stale else ""


def escape_html(markdown: str) -> str:
    """A `<` that opens a tag, outside code spans, as `&lt;`: the summary's prose names
    paths such as `metrics/eval/<method>/<task>.json` in plain text, and a browser hides
    `<method>` as an unknown tag. Table rows are left as they are (markdown_table escaped
    their cells)."""

    def line(text: str) -> str:
        if text.startswith("|"):
            return text
        parts = text.split("`")
        return "`".join(p if i % 2 else TAG.sub("&lt;", p) for i, p in enumerate(parts))

    return "\n".join(line(x) for x in markdown.split("\n"))


def render_summary(results: Path, name: str, part: str) -> str:
    from paracl.stages.summary import to_markdown

    summary = ordered(read_json(results / name / "summary.json"))
    stale = pre_fix(results, name)
    marks = {method: _marks(method, row, stale) for method, row in summary["methods"].items()}
    text = split_parts(escape_html(to_markdown(summary, marks=marks)))[part]
    if not text:
        raise InputError(f"results/{name}/summary.json has no '{part}' part")
    return text + _legend(text, stale)


def render_curve(root: Path, page: Path, name: str) -> str:
    """A learning curve (`paracl learning-curve`'s CSV, committed beside the summary):
    the STS average per step count and method, with its plot."""
    from paracl import learning_curve as lc

    source = root / "results" / name / CURVE
    if not source.is_file():
        return f"*results/{name}/{CURVE} is not committed.*"
    base = read_json(root / "results" / name / "summary.json")["methods"].get("none", {})
    text = lc.table(lc.read_csv(source), base.get("avg"))
    return (f"{text}\n\nSTS avg (unsup.) ×100, mean ± sd over seeds.\n\n"
            f"{_image(root, page, name, '-curve')}\n\n"
            f"<small>Rendered by `paracl report` from `results/{name}/{CURVE}`.</small>")  # fmt: skip


def render_theta(results: Path, name: str) -> str:
    """The θ sweep's table (PPDB paper Figure 2): ppdb's score per θ over its seeds,
    and its difference to `none` with the summary's own test over seeds."""
    from paracl import theta_curve as tc
    from paracl.stages.summary import format_p

    data = [read_json(p) for p in _data_files(results / name)]
    if tc.points(data, "ppdb", "dev_avg"):  # a sweep with the fine-tuned tasks: the choice
        return render_theta_choice(data)
    rows = tc.curve(tc.points(data, "ppdb", "avg"))
    effects: dict[float, list] = {}
    for rec in tc.sweep_records(data):  # the records theta_curve's points come from
        theta = tc.params_of(rec).get("theta")
        ppdb = (tc.summary_of(rec).get("methods") or {}).get("ppdb") or {}
        if ppdb.get("vs_none") and theta is not None:
            effects.setdefault(float(theta), []).append(ppdb["vs_none"])
    table = []
    for r in rows:
        found = effects.get(r["theta"], [])
        diff = p = ""
        if len(found) == 1:  # an average of several experiments has no one test
            eff = found[0]
            diff = f"{'+' if eff['diff'] >= 0 else '−'}{abs(eff['diff']):.1f}"
            diff = f"**{diff}**" if eff.get("holds") else diff
            p = "" if eff.get("p") is None else format_p(eff["p"])
        value = f"{r['value']:.1f}" + ("" if r["std"] is None else f" ± {r['std']:.1f}")
        table.append([f"{r['theta']:g}", value, diff, p, r["n_experiments"]])
    header = ["θ", "ppdb, STS avg (mean ± sd over seeds)", "Δ vs none", "p (seeds)", "experiments"]
    text = (
        markdown_table(header, table)
        + "\n\nBold: p < 0.05 and every seed moves the same way (the summary's test over seeds)."
    )
    if pre_fix(results, name):
        text += f"\n\n{PRE_FIX_NOTE} Every row ‡: {MARKS['‡']}."
    return text


def render_theta_choice(data: list) -> str:
    """A (θ, |D|) sweep scored on the fine-tuned tasks: ppdb's dev and test average per
    point, the point chosen (the argmax of dev, as the PPDB paper's Figure 2) in bold."""
    from paracl import theta_curve as tc

    def cell(value: float | None, std: float | None) -> str:
        return "n/a" if value is None else f"{value:.1f}" + ("" if std is None else f" ± {std:.1f}")

    table = []
    for r in tc.choice_rows(tc.measured(data)):
        point = [f"{r['theta']:g}", str(r["size"] or "all")]
        table.append([*(f"**{p}**" if r["chosen"] else p for p in point),
                      cell(r["dev"], r["dev_std"]), cell(r["test"], r["test_std"]),
                      r["n_experiments"]])  # fmt: skip
    header = ["θ", "|D|", "ppdb, dev avg (mean ± sd over seeds)", "ppdb, test Avg.",
              "experiments"]  # fmt: skip
    return (markdown_table(header, table) + "\n\nBold: the (θ, |D|) chosen, the argmax of the "
            "dev fine-tuned average (the PPDB paper's Figure 2); test is reported, never "
            "chosen on.")  # fmt: skip


# -- plots ---------------------------------------------------------------------------------


def effect_panels(summary: dict) -> list[tuple[str, dict[str, list[float]]]]:
    """What the effect plot shows: per panel a label and each method's values, one per
    seed (a missing score dropped). One panel per measure the summary has (unsup.,
    fine-tuned: the table's column groups, each with its own Δ), else its Avg."""
    from paracl.stages.summary import MEASURES

    def values(runs: dict | None) -> list[float]:
        return [float(v) for v in (runs or {}).values() if v is not None]

    rows = summary["methods"]
    kinds = summary.get("measures") or []
    if not kinds:
        return [("Avg.", {m: values(r.get("runs")) for m, r in rows.items()})]
    panels = [(MEASURES.get(k, k), {m: values(((r.get("measures") or {}).get(k) or {}).get("runs"))
                                    for m, r in rows.items()}) for k in kinds]  # fmt: skip
    # a measure only none has (pi-en-ja's cross-encoder) has no Δ to draw
    return [(k, v) for k, v in panels if any(x for m, x in v.items() if m != "none")]


def plot_summary(summary: dict, path: Path, title: str, marks: dict[str, str]):
    """One panel per measure (effect_panels), one panel a row so that the PNG is no wider
    than the docs' text column (its 9-point text stays ≥ 9 px there), a row per method,
    first on top. Returns the (closed) Figure, for tests."""
    from paracl.core.plots import png_figure

    panels = effect_panels(summary)
    names = list(summary["methods"])[::-1]
    size = (PLOT_WIDTH_IN, (0.3 * len(names) + 1.1) * len(panels) + 0.4)
    figure = png_figure(path, dpi=PLOT_DPI, figsize=size, nrows=len(panels), squeeze=False)
    with figure as (fig, axes):
        labels = [f"{n} {marks.get(n, '')}".strip() for n in names]
        for ax, (label, values) in zip(axes[:, 0], panels, strict=True):
            _effect_axes(ax, names, values, label)
            ax.set_yticks(range(len(names)), labels, fontsize=9)
        what = "difference to none" if "none" in summary["methods"] else "score"
        # two lines, so that a long preset name fits the figure's width
        fig.suptitle(f"{title}: each method's {what}, ×100\n(seeds and their mean ± sd)",
                     fontsize=10)  # fmt: skip
    return fig


def _effect_axes(ax, names: list[str], values: dict[str, list[float]], label: str) -> None:
    """Each method's seeds as differences to `none`'s mean: every seed a dot, a bar from 0
    to their mean with ± their sd, 0 (= none) a black line and none's own spread (its
    fine-tuning seeds, where it has several) a grey band, so an effect inside the noise
    looks like one. Without a `none` row, the values themselves on an axis from zero."""
    import statistics

    base = values.get("none") or []
    centre = statistics.fmean(base) if base else 0.0
    ends = [0.0]
    for y, name in enumerate(names):
        runs = [v - centre for v in values.get(name) or []]
        if not runs:
            ax.text(0, y, "  no score", va="center", fontsize=8, color="grey")
            continue
        mean = statistics.fmean(runs)
        sd = statistics.stdev(runs) if len(runs) > 1 else 0.0
        colour = "#bbbbbb" if name == "none" else "#7aa6d6"
        ax.barh(y, mean, height=0.6, color=colour, xerr=sd or None, capsize=3)
        ax.scatter(runs, [y] * len(runs), color="#1f3b5c", s=14, zorder=3)
        ends += [*runs, mean - sd, mean + sd]
    spread = statistics.stdev(base) if len(base) > 1 else 0.0
    if spread:
        ax.axvspan(-spread, spread, color="grey", alpha=0.2, linewidth=0)
    ax.axvline(0, color="black", linewidth=0.8)
    pad = 0.08 * (max(ends) - min(ends)) or 1.0
    bars_from_zero = not base and min(ends) >= 0
    ax.set_xlim(0.0 if bars_from_zero else min(ends) - pad, max(ends) + pad)
    what = f"Δ {label} vs none" if base else f"{label} (axis from 0; no none row)"
    how = "dots: seeds; bar: mean ± sd" + ("; grey: none ± sd" if spread else "")
    ax.set_xlabel(f"{what} (×100)\n{how}", fontsize=9)
    ax.tick_params(axis="x", labelsize=9)
    ax.grid(axis="x", alpha=0.3)


def plot_heatmaps(directory: Path, path: Path):
    """The round-trip heatmaps (paper Figures 1 and 3) from the bin CSVs the tag and
    generate_paraphrases stages write (one row per pair: sim_bin, bleu_bin), one panel a
    row (two would shrink their cell numbers below 9 px in the docs' column), under a
    title that says the numbers are percentages. Returns the (closed) Figure, or None
    where there is no CSV."""
    import numpy as np
    import pandas as pd

    from paracl.core.plots import png_figure
    from paracl.parts.tags import heatmap

    files = sorted(directory.glob("*.csv")) + sorted(directory.glob("generated/*.csv"))
    if not files:
        return None
    panels = {}
    for f in files:
        rows = pd.read_csv(f, dtype=str)
        # a bin label "70-80" -> its midpoint 75, which falls in the same bin again
        sim, bleu = (
            np.array([float(b.split("-")[0]) + 5 for b in rows[c]]) for c in ("sim_bin", "bleu_bin")
        )
        title = "round trip (Fig. 1)" if f.parent == directory else heatmap.tags_of(f.stem)
        panels[title] = (sim, bleu)
    size = (4.6, 4.3 * len(panels) + 0.4)
    figure = png_figure(path, dpi=PLOT_DPI, tight=False, layout="constrained", figsize=size,
                        nrows=len(panels), squeeze=False)  # fmt: skip
    with figure as (fig, axes):  # constrained: room for the title above the first panel
        for ax, (title, (sim, bleu)) in zip(axes[:, 0], panels.items(), strict=True):
            heatmap._draw(ax, title, sim, bleu)  # the tag stage's own drawing of one panel
        fig.suptitle("% of each panel's pairs in a SIM × BLEU cell", fontsize=10)
    return fig


def draw_plots(root: Path) -> list[Path]:
    """Every plot of every committed result, into docs/img/; returns what was written."""
    from paracl import theta_curve as tc

    results, written = root / "results", []
    for name in result_names(results):
        out = root / IMG / f"{name}.png"
        if (results / name / "summary.json").is_file():
            stale = pre_fix(results, name)
            summary = ordered(read_json(results / name / "summary.json"))
            plot_summary(
                summary, out, name, {m: _marks(m, r, stale) for m, r in summary["methods"].items()}
            )
        else:
            data = [read_json(p) for p in _data_files(results / name)]
            if tc.points(data, "ppdb", "dev_avg"):  # chosen on dev, test beside it
                bases = (tc.baseline(data, "dev_avg"), tc.baseline(data, "avg"))
                rows = tc.choice_rows(tc.measured(data))
                tc.plot_choice(rows, out, "ppdb", "dev_avg", "avg", tc.planned(data), bases)
            else:  # test scores alone (a sweep before the dev choice): no point chosen
                rows = tc.curve(tc.points(data, "ppdb", "avg"))
                base = tc.baseline(data, "avg")  # the title and y axis name the measure, ×100
                tc.plot(rows, out, "ppdb", "STS avg ×100", tc.planned(data), base)
        written.append(out)
        heat = root / IMG / f"{name}-heatmaps.png"
        if plot_heatmaps(results / name / "heatmaps", heat):
            written.append(heat)
        curve = results / name / CURVE
        if curve.is_file():
            from paracl import learning_curve as lc

            base = read_json(results / name / "summary.json")["methods"].get("none", {})
            lc.plot(lc.read_csv(curve), root / IMG / f"{name}-curve.png", base.get("avg"))
            written.append(root / IMG / f"{name}-curve.png")
        few = root / IMG / f"{name}-fewshot.png"
        if plot_few_shot(results / name, few):
            written.append(few)
        figure4 = root / IMG / f"{name}-stilts.png"
        if plot_stilts(results / name, figure4):
            written.append(figure4)
    return written


def plot_stilts(directory: Path, path: Path) -> bool:
    """The round-trip paper's Figure 4 (its summary's `stilts`), where the result has tag cells."""
    from paracl.parts import stilts_tables

    summary = directory / "summary.json"
    table = read_json(summary).get("stilts") if summary.is_file() else None
    if table and table.get("cells"):
        stilts_tables.plot_figure4(table, path)
    return bool(table and table.get("cells"))


def plot_few_shot(directory: Path, path: Path) -> bool:
    """EBSIM's Figure 2 (its summary's `ebsim_few_shot`), where the result has one."""
    from paracl.parts.evaluation import ebsim_tables

    summary = directory / "summary.json"
    curve = read_json(summary).get("ebsim_few_shot") if summary.is_file() else None
    if curve:
        ebsim_tables.plot_few_shot(curve, path)
    return bool(curve)


# -- the marked blocks of README.md and docs/ ---------------------------------------------


def pages(root: Path) -> list[Path]:
    """The Markdown files that may hold report blocks (the params page is all generated)."""
    docs = sorted(p for p in (root / "docs").rglob("*.md") if p != root / PARAMS_PAGE)
    return [root / "README.md", *docs]


def _image(root: Path, page: Path, name: str, suffix: str = "") -> str:
    rel = os.path.relpath(root / IMG / f"{name}{suffix}.png", page.parent)
    return f"![{name}{suffix}]({Path(rel).as_posix()})"


def render_sources() -> str:
    """The data registry per source: files, bytes, licence, where the checksums came from."""
    from paracl.stages.fetch.sources.registry import load_registry

    by_source: dict[str, list] = {}
    for entry in load_registry():
        by_source.setdefault(entry.source, []).append(entry)
    table = []
    for source, files in sorted(by_source.items()):
        sizes = [f.bytes for f in files]
        known = [n for n in sizes if n is not None]
        size = " + ".join(
            ([f"{sum(known):,}"] if known else []) + (["unknown"] if None in sizes else [])
        )
        unverified = sum(not f.verified for f in files)
        origin = "; ".join(sorted({f.checksum_from for f in files if f.checksum_from}))
        origin += f" ({unverified} without a published checksum)" if unverified else ""
        licences = "; ".join(sorted({f.license for f in files}))
        table.append([f"`{source}`", len(files), size, licences, origin])
    return (
        markdown_table(["source", "files", "bytes", "licence", "checksum from"], table)
        + "\n\n<small>Rendered by `paracl report` from `src/paracl/stages/fetch/sources/sources.tsv`.</small>"
    )


def render_tasks() -> str:
    """The evaluation task registry: metric, group, the paper's split sizes, hyperparameters
    (a task on a second paper's recipe, tasks.STILTS, beside it)."""
    from paracl.parts.evaluation.tasks import STILTS, TASKS

    table = []
    for name, t in {**TASKS, **STILTS}.items():
        sizes = getattr(t, "paper_sizes", None)
        sizes = " / ".join(f"{n:,}" for n in sizes) if sizes else "–"
        table.append([f"`{name}` ({t.title})", t.lang, t.metric, t.group, sizes,
                      t.hp_source])  # fmt: skip
    header = ["task", "lang", "metric", "group", "paper's train / dev / test",
              "epochs, lr, batch from"]  # fmt: skip
    return (
        markdown_table(header, table)
        + "\n\n<small>Rendered by `paracl report` from `src/paracl/parts/evaluation/tasks.py`.</small>"
    )


def _claim_rows(root: Path) -> dict[tuple, list[str]]:
    """{(claim, measure, Δ, p, n, verdict): the presets that measured it} of every committed
    result (tables kept only for comparison, PRE_FIX, left out; a claim two presets share
    with the same numbers is one row naming both)."""
    from paracl.stages.summary import format_p, judged_claims, measure_title, verdict

    rows: dict[tuple, list[str]] = {}
    for name in result_names(root / "results"):
        path = root / "results" / name / "summary.json"
        if not path.is_file() or pre_fix(root / "results", name):
            continue
        for c in judged_claims(read_json(path)):  # a claim on two bases reads refused
            if "untested" in c:
                continue
            p = "n/a" if c["p"] is None else format_p(c["p"])
            diff = ("+" if c["diff"] >= 0 else "−") + f"{abs(c['diff']):.1f}"
            n = "&nbsp;vs&nbsp;".join(str(k) for k in c["n_seeds"])  # no-break: one line
            cells = (c["claim"], measure_title(c.get("measure")), diff, p, n, verdict(c))
            rows.setdefault(cells, []).append(name)
    return rows


CLAIMS_LEGEND = (
    "Δ: the claim's method minus the method it should beat, ×100; p: Welch's t-test over "
    "their seeds; n: seeds on each side; holds: p < 0.05 and Δ > 0; not testable: fewer "
    "than 2 seeds on a side, or the method to beat at chance (its mean not above the better "
    "constant answer, accept every pair or none, by more than its seed sd); refused: rows on "
    "two bases."
)


def result_pages(root: Path) -> dict[str, Path]:
    """{result name: the page that shows it}, for the claims tables' links, from one read of
    the pages: of the pages holding a result's marker, the one whose heading carries its
    `{#name}` anchor (a results page, not the README's or a guide's copy), else the first."""
    anchored: dict[str, Path] = {}
    first: dict[str, Path] = {}
    for page in pages(root):
        text = page.read_text(encoding="utf-8") if page.is_file() else ""
        for name in {m.group(1) for m in MARKER.finditer(text)}:
            first.setdefault(name, page)
            if f"{{#{name}}}" in text:
                anchored.setdefault(name, page)
    return first | anchored


def result_page(root: Path, name: str) -> Path | None:
    """The page that shows result `name`; None if no page does."""
    return result_pages(root).get(name)


def _result_links(shown: dict[str, Path], page: Path, names: list[str]) -> str:
    """Each name linked to its result's page, relative to `page`; a name no page shows, plain."""
    links = []
    for name in names:
        where = shown.get(name)
        rel = "" if where in (None, page) else Path(os.path.relpath(where, page.parent)).as_posix()
        links.append(name if where is None else f"[{name}]({rel}#{name})")
    return ", ".join(links)


def render_claims(root: Path, page: Path | None = None) -> str:
    """Every paper claim a committed result tested, one row each: the results page's
    opening table (`page`: the page it is rendered on, by default RESULTS_PAGE)."""
    page, shown = page or root / RESULTS_PAGE, result_pages(root)
    table = [[cells[0], _result_links(shown, page, names), *cells[1:]]
             for cells, names in _claim_rows(root).items()]  # fmt: skip
    header = ["Claim", "Preset", "Measure", "Δ", "p", "n", "Verdict"]
    return (
        markdown_table(header, table)
        + f"\n\n{CLAIMS_LEGEND}\n\n<small>Rendered by `paracl report` from `results/*/summary.json`.</small>"
    )


BLEU_TAG = re.compile(r"<BLEU[0-9_]+>")  # the README merges a claim's BLEU-tag rows


def _one_or_each(verdicts: list[str]) -> str:
    """One verdict where a merged row's tags agree, else each, in tag order."""
    return verdicts[0] if len(set(verdicts)) == 1 else " / ".join(verdicts)


def render_verdicts(root: Path, page: Path | None = None) -> str:
    """The README's opening table (`page`, by default README.md): each claim tested over
    seeds (n ≥ 2 a side), with its verdict; the measures, p-values and readings are on the
    results pages."""
    page, shown = page or root / "README.md", result_pages(root)
    merged: dict[tuple[str, str], list[tuple[str, str]]] = {}  # one row for a claim's tags
    for cells, names in _claim_rows(root).items():
        if "n/a" not in cells[3]:
            claim = BLEU_TAG.sub("<BLEU…>", cells[0])
            merged.setdefault((claim, _result_links(shown, page, names)), []).append(
                (cells[0], cells[2], cells[5])
            )
    table = [[rows[0][0] if len(rows) == 1 else claim, links, " / ".join(r[1] for r in rows),
              _one_or_each([r[2] for r in rows])]
             for (claim, links), rows in merged.items()]  # fmt: skip
    legend = (
        "Δ: the claim's method minus the method it should beat, ×100 (seeds' mean; "
        "`<BLEU…>`: one value per BLEU tag, 0_5 / 20 / 40); not "
        "testable: the method to beat is at chance, so beating it says nothing."
    )
    return (
        markdown_table(["Claim", "Preset", "Δ", "Verdict"], table)
        + f"\n\n{legend}\n\n<small>Rendered by `paracl report` from `results/*/summary.json`; "
        "each preset's date, machine and command are under its table on its results page.</small>"
    )


CROSS_CPU = Path("results/cross-cpu")


def render_cross_cpu(root: Path) -> str:
    """The default run on two CPU kinds (bench/compare_runs.py's JSON): how many outputs are
    the same bytes, and each method's scores on both machines."""
    directory = root / CROSS_CPU
    data = read_json(directory / "comparison.json")
    a, b = data["machines"]
    tasks = list(dict.fromkeys(t for row in data["scores"] for t in row["tasks"]))

    def pair(old: float, new: float) -> str:
        diff = new - old
        moved = f" ({'+' if diff >= 0 else '−'}{abs(diff):.1f})" if round(diff, 1) else ""
        return f"{old:.1f} → {new:.1f}{moved}"

    table = [[r["method"], pair(*r["avg"]), *(pair(*r["tasks"][t]) for t in tasks)]
             for r in data["scores"]]  # fmt: skip
    said = (
        f"{data['outputs_same']} of {data['outputs_compared']} outputs are the same bytes on "
        f"both machines; the first stage whose outputs differ is `{data['first_stage_different']}`, "
        f"and outputs of {', '.join(f'`{s}`' for s in data['stages_different'])} differ. "
        f"Scores ×100, first {a}, then {b}:"
    )
    where = f"{CROSS_CPU.as_posix()}/comparison.json"
    return f"{said}\n\n{markdown_table(['Method', 'Avg.', *tasks], table)}\n\n{caption(directory, where)}"


STAGE_TIMES = Path("results/default")  # stage_times*.json: one file a CPU kind


def _minutes(seconds: float) -> str:
    return (
        f"{int(seconds // 60)} min {round(seconds % 60):d} s"
        if seconds >= 60
        else f"{seconds:.0f} s"
    )


def _cpu_label(machine: str) -> str:
    """'Intel(R) Xeon(R) Processor, 2 cores, bf16 kernels: amx' -> 'Intel Xeon (AMX)'."""
    name, *rest = machine.split(", ")
    name = name.replace("(R)", "").replace(" Processor", "").strip()
    kernels = [r.split(": ", 1)[1] for r in rest if r.startswith("bf16 kernels: ")]
    return f"{name} ({kernels[0].upper()})" if kernels and kernels[0] != "none" else name


def _stage_rows(data: dict) -> dict[str, tuple[str, float]]:
    """{stage (several runs of one stage as one, with its count): (what it did, seconds)}."""
    runs: dict[str, list[dict]] = {}
    for stage in data["stages"]:
        runs.setdefault(stage["stage"].split("@")[0], []).append(stage)
    rows = {}
    for name, done in runs.items():
        seconds = sum(r["seconds"] for r in done)
        label = f"{name} × {len(done)}" if len(done) > 1 else name
        said = done[0]["summary"] if len(done) == 1 else f"~{seconds / len(done):.0f} s a run"
        rows[label] = (said, seconds)
    return rows


def render_stage_times(root: Path) -> str:
    """What the default `dvc repro` costs, stage by stage, a column per CPU kind measured
    (bench/time_repro.py's JSON files); what each stage did is the first file's."""
    # the committed default run's own file first: its summaries fill "What it did"
    files = sorted(
        (root / STAGE_TIMES).glob("stage_times*.json"),
        key=lambda f: (f.name != "stage_times.json", f.name),
    )
    if not files:
        return f"*{STAGE_TIMES.as_posix()}/stage_times.json is not committed yet: `python bench/time_repro.py`.*"
    runs = [read_json(f) for f in files]
    labels = [_cpu_label(d["machine"]) for d in runs]
    rows = [_stage_rows(d) for d in runs]
    table = [
        [f"`{stage}`", said, *(_minutes(r[stage][1]) if stage in r else "" for r in rows)]
        for stage, (said, _) in rows[0].items()
    ]
    total = "; ".join(
        f"**{_minutes(d['total_s'])}** on {lab}" for d, lab in zip(runs, labels, strict=True)
    )
    captions = " ".join(
        f"{lab}: measured {d['date']} on {d['machine']} by `{d['command']}` (bench/time_repro.py"
        f"{'; ' + d['note'] if d.get('note') else ''}), rendered from `{f.relative_to(root).as_posix()}`."
        for d, lab, f in zip(runs, labels, files, strict=True)
    )
    header = ["Stage", "What it did", *(f"Wall ({lab})" for lab in labels)]
    return (f"In all: {total}.\n\n{markdown_table(header, table)}\n\n"
            f"<small>{captions} Rendered by `paracl report`.</small>")  # fmt: skip


TIMINGS = Path("results/default")  # timings-<kind>.json: one a CPU kind (bench/time_commands.py)
README_COMMANDS = ("make setup", "dvc repro", "make test")


def render_time_table(root: Path) -> str:
    """The README's commands, a column per CPU kind measured: what a newcomer plans by."""
    files = sorted((root / TIMINGS).glob("timings-*.json"))
    if not files:
        return (
            f"*{TIMINGS.as_posix()} holds no timings-*.json yet: `python bench/time_commands.py`.*"
        )
    runs = [read_json(f) for f in files]
    labels = [_cpu_label(d["machine"]) for d in runs]
    table = [
        [f"`{command}`", *(_minutes(d["commands"][command]["seconds"])
                           if command in d["commands"] else "not measured" for d in runs)]
        for command in README_COMMANDS
    ]  # fmt: skip
    captions = " ".join(
        f"{lab} ({d['machine']}): "
        + "; ".join(
            f"`{c}` {r['date']}{' at ' + r['commit'] if 'commit' in r else ''} by {r['how']}"
            for c, r in d["commands"].items()
        )
        + f" (`{f.relative_to(root).as_posix()}`)."
        for d, lab, f in zip(runs, labels, files, strict=True)
    )
    header = ["Command", *(f"2 cores of {lab}" for lab in labels)]
    return f"{markdown_table(header, table)}\n\n<small>{captions}</small>"


LLAMA_KERNELS = Path("results/llama-kernels")


def render_llama_kernels(root: Path) -> str:
    """The round trip on two llama.cpp builds taking turns (bench/bench_llama_kernels.py's
    JSON): which CPU module each loads, its seconds, and how many candidates differ."""
    directory = root / LLAMA_KERNELS
    if not (directory / "bench.json").is_file():
        return f"*{LLAMA_KERNELS.as_posix()}/bench.json is not committed yet.*"
    data = read_json(directory / "bench.json")
    builds = data["builds"]
    first = next(iter(builds.values()))
    table = [[f"`{name}`", f"`{b['module']}`", ", ".join(f"{x:.1f}" for x in b["seconds"]),
              f"{b['median_s']:.1f}", f"{first['median_s'] / b['median_s']:.2f}×",
              f"{b['differ_from_first_build']} of {b['candidates']}"]
             for name, b in builds.items()]  # fmt: skip
    header = ["Build", "CPU module loaded", "Seconds a run", "Median", "Speed",
              "Candidates unlike the first build's"]  # fmt: skip
    legend = (f"{data['n_sentences']} sentences en → de → en on gemma-3-270m, the default grid, "
              f"{data['threads']} threads; the builds take turns, each run a process of its own.")  # fmt: skip
    where = f"{LLAMA_KERNELS.as_posix()}/bench.json"
    return f"{markdown_table(header, table)}\n\n{legend}\n\n{caption(directory, where)}"


PRECISION = Path("results/precision-en")


def _mean_sd(side: dict) -> str:
    sd = f" ± {side['sd']:.1f}" if side["sd"] is not None else ""
    return f"{side['mean']:.1f}{sd} (n = {side['n']})"


def _signed(x: float | None) -> str:
    return "" if x is None else ("+" if x >= 0 else "−") + f"{abs(x):.1f}"


def render_precision(root: Path) -> str:
    """One preset's methods trained and scored in fp32 and in bf16 (bench/compare_precision.py's
    JSON): whether bf16 moves a score by more than its spread over seeds."""
    from paracl.stages.summary import format_p

    directory = root / PRECISION
    if not (directory / "comparison.json").is_file():
        return f"*{PRECISION.as_posix()}/comparison.json is not committed yet.*"
    data = read_json(directory / "comparison.json")
    a, b = data["names"]
    table = []
    for r in data["rows"]:
        spread = max(r[s]["sd"] or 0.0 for s in ("a", "b"))
        within = "yes" if abs(r["diff"]) <= spread else ("n/a (n = 1)" if not spread else "no")
        p = "n/a" if r["p"] is None else format_p(r["p"])
        table.append([r["method"], _mean_sd(r["a"]), _mean_sd(r["b"]), _signed(r["diff"]), p,
                      _signed(r["a"].get("vs_none")), _signed(r["b"].get("vs_none")), within])  # fmt: skip
    header = ["Method", a, b, f"{b} − {a}", "p", f"Δ vs none ({a})", f"Δ vs none ({b})",
              "Within the seed SD"]  # fmt: skip
    where = f"{PRECISION.as_posix()}/comparison.json"
    legend = (f"`{data['task']}` score ×100, mean ± SD over training seeds; p: Welch's t-test "
              f"between the precisions.")  # fmt: skip
    return f"{markdown_table(header, table)}\n\n{legend}\n\n{caption(directory, where)}"


BENCH_FINETUNE = Path("results/bench-finetune")
FINETUNE_RUNNERS = {"paracl": "paracl", "bare": "bare loop, tokenized once",
                    "trainer": "transformers `Trainer`"}  # fmt: skip


def render_bench_finetune(root: Path) -> str:
    """Evaluation fine-tuning's step on a tiny model (bench/bench_finetune.py --tiny's JSON):
    pairs a second of paracl, the bare loop and transformers' Trainer, and paracl's ratios."""
    directory = root / BENCH_FINETUNE
    data = read_json(directory / "tiny.json")
    rows = [[label, f"{data[f'{r}_pairs_per_s']:,.0f}", f"{data[f'{r}_step_s'] * 1000:.1f}"]
            for r, label in FINETUNE_RUNNERS.items() if f"{r}_pairs_per_s" in data]  # fmt: skip
    gap = data["max_loss_gap_bare_vs_paracl"]
    cpu = data.get("paracl_vs_bare_cpu")
    by_cpu = f" (by CPU time {cpu:.2f}× and {data['paracl_vs_trainer_cpu']:.2f}×)" if cpu else ""
    said = (
        f"paracl runs at **{data['paracl_vs_bare']:.2f}×** the bare loop and "
        f"**{data['paracl_vs_trainer']:.2f}×** the `Trainer`{by_cpu}; its losses equal the bare "
        f"loop's {'bit for bit' if gap == 0 else f'to {gap:.1g}'}, step by step. "
        f"Model: {data['model']}; {data['task']} ({data['max_train']} pairs), "
        f"batch {data['batch_size']}, "
        f"{data['threads']} thread(s), median of {data['repeats']} alternating runs:"
    )
    table = markdown_table(["runner", "pairs/s", "ms/step"], rows)
    where = f"{BENCH_FINETUNE.as_posix()}/tiny.json"
    return f"{said}\n\n{table}\n\n{caption(directory, where)}"


GENERATED = {"@sources": render_sources, "@tasks": render_tasks, "@claims": render_claims,
             "@verdicts": render_verdicts,
             "@cross-cpu": render_cross_cpu, "@stage-times": render_stage_times,
             "@time-table": render_time_table,
             "@precision": render_precision, "@bench-finetune": render_bench_finetune,
             "@llama-kernels": render_llama_kernels}  # fmt: skip
ROOTED = (
    "@claims",
    "@verdicts",
    "@cross-cpu",
    "@stage-times",
    "@time-table",
    "@precision",
    "@bench-finetune",
    "@llama-kernels",
)  # read results/
PAGED = ("@claims", "@verdicts")  # also link to other pages: told the page they are on


def render_block(root: Path, page: Path, name: str, part: str) -> str:
    """What belongs between one pair of markers."""
    if name.startswith("@"):
        if name not in GENERATED:
            raise InputError(
                f"{page}: unknown report block '{name}' (known: {', '.join(GENERATED)})"
            )
        if name in PAGED:
            return GENERATED[name](root, page)
        return GENERATED[name](root) if name in ROOTED else GENERATED[name]()
    results = root / "results"
    source = f"results/{name}/"
    if name not in result_names(results):
        how = (
            "`dvc repro`, then `paracl report --snapshot-default`"
            if name == "default"
            else (
                f"`paracl preset {name} && dvc repro`, then copy `metrics/summary.*` into `{source}`"
            )
        )
        return f"*{source} is not committed yet: {how}.*"  # fmt: skip
    if part == "heatmaps":
        if not (results / name / "heatmaps").is_dir():
            return f"*{source}heatmaps/ is not committed.*"
        return f"{_image(root, page, name, '-heatmaps')}"
    if part == "curve":
        return render_curve(root, page, name)
    theta = not (results / name / "summary.json").is_file()
    if part == "plot":
        return _image(root, page, name)
    text = render_theta(results, name) if theta else render_summary(results, name, part)
    where = f"{source}exp-show-*.json" if theta else f"{source}summary.json"
    image = f"\n\n{_image(root, page, name)}" if part in ("all", "table") else ""
    if part == "ebsim" and (root / IMG / f"{name}-fewshot.png").is_file():  # EBSIM's Figure 2
        image = f"\n\n{_image(root, page, name, '-fewshot')}"
    if part == "stilts" and (root / IMG / f"{name}-stilts.png").is_file():  # round trip's Fig. 4
        image = f"\n\n{_image(root, page, name, '-stilts')}"
    small = (
        caption(results / name, where)  # the table says when, where and how; its parts point back
        if part in CAPTIONED
        else f"<small>Rendered by `paracl report` from `{where}`.</small>"
    )
    return f"{text}{image}\n\n{small}"


MEASURED = "measured.json"  # results/<name>/measured.json: when, where, how a result was made


def caption(directory: Path, where: str) -> str:
    """The small print under a result: the date, machine, command and time of its
    measurement (results/<name>/measured.json), and the file the table is rendered from."""
    info = read_json(directory / MEASURED) if (directory / MEASURED).is_file() else {}
    said = [f"Measured {info['date']}" if info.get("date") else ""]
    said += [f"on {info['machine']}" if info.get("machine") else ""]
    said += [f"by `{info['command']}`" if info.get("command") else ""]
    said += [f"in {info['time']}" if info.get("time") else ""]
    made = " ".join(s for s in said if s)
    return (
        f"<small>{made + '. ' if made else ''}Rendered by `paracl report` from `{where}`.</small>"
    )


def fill(root: Path, page: Path, text: str) -> str:
    """`text` with every marked block re-rendered."""

    def one(match: re.Match) -> str:
        name, part = match.group(1), match.group(2) or "all"
        if part not in (*PARTS, *EXTRA_PARTS):
            line = text.count("\n", 0, match.start()) + 1
            raise InputError(f"{page}:{line}: unknown report part '{part}' "
                             f"(known: {', '.join((*PARTS, *EXTRA_PARTS))})")  # fmt: skip
        head = f"<!-- report:{name}{':' + part if match.group(2) else ''} -->\n"
        return f"{head}{render_block(root, page, name, part)}\n<!-- /report -->\n"

    opened = [m.start() for m in re.finditer(r"^<!-- report:", text, re.M)]  # prose: inline
    if missed := sorted(set(opened) - {m.start() for m in MARKER.finditer(text)}):
        line = text.count("\n", 0, missed[0]) + 1  # a marker the pattern skips renders nothing
        raise InputError(f"{page}:{line}: a report marker that is not "
                         "'<!-- report:NAME[:PART] -->' closed by '<!-- /report -->'")  # fmt: skip
    return MARKER.sub(one, text)


def marked_names(root: Path) -> set[str]:
    """The result names some page shows."""
    return {m.group(1) for page in pages(root) if page.is_file()
            for m in MARKER.finditer(page.read_text(encoding="utf-8"))}  # fmt: skip


# -- the configuration reference, from each stage's schema (paracl.schema) --------------------


def _yaml(value: Any) -> str:
    """A value as params.yaml writes it (a list or a mapping in flow style), in code."""
    import yaml

    if isinstance(value, (list, tuple, dict)):
        flow = yaml.safe_dump(
            list(value) if isinstance(value, tuple) else value,
            default_flow_style=True, width=10**6, allow_unicode=True, sort_keys=False,
        )  # fmt: skip
        return f"`{flow.strip()}`"
    if value is None:
        return "`null`"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    return f"`{value}`"


def _type_words(tp: Any) -> str:
    """A field's type in words (Markdown-table safe: no bare pipes)."""
    if get_origin(tp) in (Union, types.UnionType):
        inner = [t for t in get_args(tp) if t is not type(None)]
        return f"{_type_words(inner[0])} or null"
    if get_origin(tp) is Literal:
        return "one of " + ", ".join(f"`{c}`" for c in get_args(tp))
    if get_origin(tp) in (list, tuple):
        return f"list of {_type_words(get_args(tp)[0])}"
    if get_origin(tp) is dict:
        keys, item = get_args(tp)
        per = (
            ("per language (" + ", ".join(get_args(keys)) + ")")
            if get_origin(keys) is Literal
            else "per name"
        )
        return f"{_type_words(item)} {per}"
    return getattr(tp, "__name__", str(tp))


def _range(meta: dict) -> str:
    lo, hi = meta.get("min"), meta.get("max")
    if lo is not None and hi is not None:
        return f"[{lo}, {hi}]"
    return f"≥ {lo}" if lo is not None else (f"≤ {hi}" if hi is not None else "")


def _help(key: str, meta: dict, notes: dict[str, str]) -> str:
    """The schema's help, else the key's comment in params.yaml (a per-language key's
    comment read from its first language's entry, `en`)."""
    first = key.replace("{" + ",".join(codes()) + "}", DEFAULT)
    return meta.get("help") or notes.get(key) or notes.get(first, "")


def _rows(
    keys: list[Field], prefix: str, notes: dict[str, str], values: dict | None
) -> list[list[str]]:
    """One table row per key (a section's fields), nested sections flattened into dotted keys.
    `values`: the section in params.yaml, whose values the default column shows; None for
    the entries of a name-keyed mapping, which show *required* or the value an entry
    leaving the key out gets."""
    out = []
    for f in keys:
        key, tp, meta = f"{prefix}{f.name}", f.type, dict(f.metadata)
        given = values.get(f.name) if values is not None else None
        if get_origin(tp) is dict and is_dataclass(get_args(tp)[1]):
            names, entry = get_args(tp)
            per_lang = get_origin(names) is Literal
            sub = "{" + ",".join(get_args(names)) + "}" if per_lang else "<name>"
            if meta.get("help"):
                out.append([f"`{key}`", "mapping", "", "required", meta["help"]])
            by_lang = None  # per language: each field's row shows {lang: its value}
            if per_lang and isinstance(given, dict):
                by_lang = {e.name: {lang: v.get(e.name) for lang, v in given.items()}
                           for e in fields(entry)}  # fmt: skip
            out += _rows(fields(entry), f"{key}.{sub}.", notes, by_lang)
            continue
        if is_dataclass(tp):
            out += _rows(fields(tp), f"{key}.", notes, given if given is not None else {})
            continue
        if values is not None and f.name in values:
            default = _yaml(given)
        else:
            default = "required" if f.default is MISSING else _yaml(f.default)
        out.append([f"`{key}`", _type_words(tp), _range(meta), default,
                    _help(key, meta, notes)])  # fmt: skip
    return out


HEAD = ["key", "type", "range", "default", "what it does"]


# The ranges each loss's `Params.__post_init__` enforces, as (min, max) with None for
# open; tests/docs/test_params_reference.py checks each bound against that check, so the
# page cannot state a range the code does not hold.
LOSS_RANGES: dict[str, dict[str, tuple[float | None, float | None]]] = {
    "ams": {"margin": (0, math.pi), "mega_batch": (1, None), "mine_k": (0, None),
            "threshold": (-1, 1)},
    "ebsim": {"beta": (0, None)},
}  # fmt: skip
# Where a key's comment in its loss's source is only the paper's symbol, what it does.
LOSS_HELP = {
    "ams": {
        "scale": "s, the factor every cosine logit is multiplied by (must be > 0; paper 0.5)",
        "gamma": "g, the weight of the hard negatives' sum h in the denominator (≥ 0; paper 1)",
        "mine_rule": "Algorithm 2's rule: `closest` (the `mine_k` closest of the mega-batch) "
        "or `threshold` (each with cosine ≥ `threshold`, at most `mine_k`)",
    },
    "ebsim": {
        "aspects": "the aspects trained, a subset of `[ra, aa]` (relation, alignment); "
        "`[ra]` is Table 5's -AA ablation",
    },
}


def field_notes(cls: type) -> dict[str, str]:
    """Each dataclass field's comment in the class's source, the losses' `Params` being
    documented so: the comment after the field on its line, else the comment lines just
    above it."""
    import inspect

    names, notes, above = {f.name for f in fields(cls)}, {}, []
    for line in inspect.getsource(cls).splitlines()[1:]:
        code, _, comment = line.partition("#")
        if code.strip().startswith("def "):
            break
        field = re.match(r"\s+(\w+)\s*:", code)
        if field and field.group(1) in names:
            notes[field.group(1)] = comment.strip() or " ".join(above)
        above = above + [comment.strip()] if comment and not code.strip() else []
    return notes


def _loss_sections() -> list[str]:
    """The method entries' own keys: the shared keys a method may set for itself, then one
    table per loss of LOSSES, each key with its range and the comment it has in the
    loss's `Params`."""
    from paracl.parts.losses import LOSSES
    from paracl.stages.train_contrastive.training.methods import METHOD_SETTINGS as own

    out = ["## Method entries: each loss's own keys", "",
           "An entry of `train_contrastive.methods` takes the keys above"
           + (", may set " + ", ".join(f"`{k}`" for k in own)
              + " for itself (over the shared key of the same name)" if own else "")
           + ", and takes its loss's own keys, checked by the loss's `Params` "
           "(`src/paracl/parts/losses/`):", ""]  # fmt: skip
    for loss, module in LOSSES.items():
        doc = " ".join((module.__doc__ or "").strip().split("\n\n")[0].split())
        out += [f"### `loss: {loss}`", "", doc, ""]
        keys, types_ = fields(module.Params), get_type_hints(module.Params)
        if not keys:
            out += ["No keys of its own.", ""]
            continue
        notes = {**field_notes(module.Params), **LOSS_HELP.get(loss, {})}
        ranges = LOSS_RANGES.get(loss, {})
        rows = [[f"`{f.name}`", _type_words(types_[f.name]), _loss_range(ranges.get(f.name)),
                 _yaml(f.default), notes.get(f.name, "")] for f in keys]  # fmt: skip
        out += [markdown_table(HEAD, rows), ""]
    return out


def _loss_range(bounds: tuple[float | None, float | None] | None) -> str:
    def shown(bound: float | None) -> str | None:
        return None if bound is None else ("π" if bound == math.pi else f"{bound:g}")

    lo, hi = bounds or (None, None)
    return _range({"min": shown(lo), "max": shown(hi)})


def params_reference(params_yaml: Path = Path("params.yaml")) -> str:
    """docs/reference/params.md: every key of params.yaml with its type, range and help,
    from the dataclasses that validate it (each stage's, paracl.schema), its value from params.yaml
    (the one place values are written), the help completed from params.yaml's comments
    (paracl.core.yaml_comments)."""
    import yaml

    from paracl.core.yaml_comments import key_comments
    from paracl.schema import schema_fields

    notes = key_comments(params_yaml)
    values = yaml.safe_load(params_yaml.read_text(encoding="utf-8"))
    order = {key: i for i, key in enumerate(values)}  # as params.yaml lists them
    ordered = sorted(schema_fields(), key=lambda f: order.get(f.name, len(order)))
    top = [f for f in ordered if not is_dataclass(f.type)]
    sections = [f for f in ordered if is_dataclass(f.type)]
    out = ["# Configuration reference", "",
           "<!-- generated by `paracl report` from each stage's schema: do not edit -->", "",
           "Every key of `params.yaml`, as its stage declares and checks it: a section's "
           "schema is in its stage's module, `src/paracl/stages/<stage>.py` (the run-wide "
           "keys in `src/paracl/core/params.py`). A stage refuses a params file with a "
           "missing or unknown key, a wrong type or a value out of range among the keys it "
           "reads, naming the key; `paracl preset` and `paracl expand` check the whole file. "
           "The default is the key's value in params.yaml (the default run): params.yaml "
           "holds every value, the schema the types, ranges and help. A key of an entry "
           "(`<name>`) shows *required*, or the value an entry that leaves it out gets. The "
           "last column is the key's `help=` in the schema, else its comment in params.yaml. "
           "Presets ([Presets](../presets.md)) change some values.", "",
           "## Top level", "", markdown_table(HEAD, _rows(top, "", notes, values))]  # fmt: skip
    for f in sections:
        doc = (f.type.__doc__ or "").strip()
        out += ["", f"## `{f.name}`", ""]
        if doc and not doc.startswith(f.type.__name__ + "("):
            out += [escape_html(" ".join(doc.split())), ""]  # `<name>` in a docstring
        rows = _rows(fields(f.type), f"{f.name}.", notes, values.get(f.name, {}))
        out.append(markdown_table(HEAD, rows))
    out += ["", *_loss_sections()]
    return "\n".join(out).rstrip("\n") + "\n"


# -- the command ---------------------------------------------------------------------------


def snapshot_default(root: Path) -> None:
    """Copy the default run's summary and heatmap data from metrics/ into results/default/,
    where they are kept as the committed result (metrics/ is the work tree's latest run)."""
    metrics, out = root / "metrics", root / "results" / "default"
    if not (metrics / "summary.json").is_file():
        raise InputError(f"{metrics / 'summary.json'}: not found (run `dvc repro` first)")
    out.mkdir(parents=True, exist_ok=True)
    for name in ("summary.json", "summary.md"):
        with atomic_path(out / name) as tmp:
            shutil.copyfile(metrics / name, tmp)
    heat = metrics / "roundtrip" / "heatmaps"
    if heat.is_dir():
        shutil.rmtree(out / "heatmaps", ignore_errors=True)
        shutil.copytree(heat, out / "heatmaps")


def expected(root: Path) -> dict[Path, str]:
    """Every generated file (or file with generated blocks) and its rendered text."""
    out = {root / PARAMS_PAGE: params_reference(root / "params.yaml")}
    if (root / "dvc.yaml").is_file():  # the pipeline diagram, drawn from it
        out[root / DIAGRAM] = project_diagram(root)
    for page in pages(root):
        if page.is_file():
            out[page] = fill(root, page, page.read_text(encoding="utf-8"))
    return out


def outdated(root: Path) -> list[Path]:
    """The files whose generated parts differ from what the committed data renders."""
    return [p for p, text in expected(root).items()
            if not p.is_file() or p.read_text(encoding="utf-8") != text]  # fmt: skip


def main(root: Path, check: bool = False, snapshot: bool = False, plots: bool = True) -> int:
    """`paracl report`: render (or with check, compare); 1 when something is stale."""
    if check:  # what it compares: every report block of the pages, the params page, the diagram
        counts = [len(MARKER.findall(p.read_text(encoding="utf-8"))) for p in pages(root)
                  if p.is_file()]  # fmt: skip
        stale = outdated(root)
        if stale:
            names = ", ".join(str(p) for p in stale)
            print(f"error: stale, run `paracl report`: {names}", file=sys.stderr)
            return 1
        drawn = [PARAMS_PAGE, *([DIAGRAM] if (root / "dvc.yaml").is_file() else [])]
        print(f"checked {sum(counts)} report blocks in {sum(c > 0 for c in counts)} pages "
              f"and {', '.join(map(str, drawn))}: all current (the PNGs in {IMG} are not "
              "compared)")  # fmt: skip
        return 0
    if snapshot:
        snapshot_default(root)
    for path, text in expected(root).items():
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            with atomic_path(path) as tmp:
                tmp.write_text(text, encoding="utf-8")
            print(f"wrote {path}")
    if plots:
        for path in draw_plots(root):
            print(f"drew {path}")
        draw_diagram(root)
    return 0


def draw_diagram(root: Path) -> None:
    """docs/img/pipeline.svg from its .dot, with graphviz's `dot` where it is installed."""
    dot, svg = root / DIAGRAM, (root / DIAGRAM).with_suffix(".svg")
    if not dot.is_file() or svg.is_file() and svg.stat().st_mtime >= dot.stat().st_mtime:
        return
    if shutil.which("dot") is None:
        print(f"note: {svg} not redrawn: graphviz's `dot` is not installed", file=sys.stderr)
        return
    with atomic_path(svg) as tmp:
        subprocess.run(["dot", "-Tsvg", str(dot), "-o", str(tmp)], check=True)
    print(f"drew {svg}")
