"""The docs' plots say what their numbers say: an effect plot's axis holds zero (none)
and every seed, a curve joins only neighbouring measured points, a heatmap's title keeps
its tags. Checked on the matplotlib objects the plotting functions return."""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest
from matplotlib.collections import PathCollection

from paracl import learning_curve as lc
from paracl import report
from paracl import theta_curve as tc
from paracl.core.plots import measured_runs
from paracl.parts.tags import heatmap

ROOT = Path(__file__).resolve().parents[2]
SUMMARIES = sorted(p.parent.name for p in (ROOT / "results").glob("*/summary.json"))


def _solid_lines(fig) -> list[tuple]:
    """The x data of every solid line (a curve's segments; error bars and the dashed
    baseline are not solid Line2Ds)."""
    return [tuple(line.get_xdata()) for ax in fig.axes for line in ax.lines
            if line.get_linestyle() == "-"]  # fmt: skip


@pytest.mark.parametrize("name", SUMMARIES)
def test_an_effect_plot_holds_zero_and_every_seed_as_a_difference_to_none(name, tmp_path):
    summary = report.ordered(report.read_json(ROOT / "results" / name / "summary.json"))
    fig = report.plot_summary(summary, tmp_path / "p.png", name, {})
    panels = report.effect_panels(summary)
    assert len(fig.axes) == len(panels)
    for ax, (_, values) in zip(fig.axes, panels, strict=True):
        lo, hi = ax.get_xlim()
        assert lo <= 0 <= hi, f"{name}: the axis {lo:.1f}..{hi:.1f} leaves out 0 (= none)"
        centre = statistics.fmean(values["none"])
        scatters = [c for c in ax.collections if isinstance(c, PathCollection)]
        dots = [x for c in scatters for x, _ in c.get_offsets()]
        want = [v - centre for m in list(values)[::-1] for v in values[m]]
        assert dots == pytest.approx(want)  # each seed, as its difference to none's mean
        assert all(lo <= x <= hi for x in dots)


def test_the_baseline_spread_is_drawn_and_a_table_without_none_starts_at_zero(tmp_path):
    summary = report.read_json(ROOT / "results" / "effect-en-finetune" / "summary.json")
    fig = report.plot_summary(summary, tmp_path / "p.png", "x", {})
    finetune = fig.axes[[label for label, _ in report.effect_panels(summary)].index(
        "Fine-tuned avg")]  # fmt: skip
    band = [p for p in finetune.patches if p.get_alpha() == 0.2]  # axvspan: none ± its sd
    sd = statistics.stdev(summary["methods"]["none"]["measures"]["finetune"]["runs"].values())
    assert len(band) == 1 and band[0].get_width() == pytest.approx(2 * sd)
    rows = {"a": {"runs": {"a_s1": 40.0, "a_s2": 44.0}}, "b": {"runs": {"b": 50.0}}}
    fig = report.plot_summary({"methods": rows}, tmp_path / "q.png", "x", {})
    lo, hi = fig.axes[0].get_xlim()
    assert lo == 0 and hi > 50  # no none: the values on an axis from zero


def test_measured_runs_split_where_a_step_was_not_measured():
    assert measured_runs([8, 64], [8, 32, 64]) == [[0], [1]]
    assert measured_runs([8, 32], [8, 32, 64]) == [[0, 1]]
    assert measured_runs([0.1, 0.3, 0.5], [0.1, 0.2, 0.3, 0.5]) == [[0], [1, 2]]


def test_a_learning_curve_joins_only_neighbouring_measured_steps(tmp_path):
    rows = [{"family": "a", "steps": n, "value": v, "std": 0.1} for n, v in [(8, 40), (64, 41)]]
    rows += [{"family": "b", "steps": n, "value": 40.0, "std": None} for n in (8, 32, 64)]
    fig = lc.plot(rows, tmp_path / "c.png", 39.0)
    assert _solid_lines(fig) == [(8, 32, 64)]  # a: 32 unmeasured, so no 8 → 64 line
    markers = [line for line in fig.axes[0].lines if line.get_marker() == "o"]
    assert sorted(x for m in markers for x in m.get_xdata()) == [8, 8, 32, 64, 64]


def _record(rev: str, theta: float, avg: float | None) -> dict:
    methods = {"ppdb": {"avg": avg, "avg_std": 0.5}, "none": {"avg": 43.0}}
    data = {"rev": rev, "params": {"params.yaml": {"data": {"theta": theta}}},
            "metrics": {"metrics/summary.json": {"data": {"methods": methods}}}}  # fmt: skip
    return {"rev": rev, "name": rev, "data": data, "experiments": None}


def test_a_theta_curve_skips_an_unmeasured_theta_and_shows_none(tmp_path):
    sweep = [_record("a", 0.1, 48.0), _record("b", 0.2, None), _record("c", 0.3, 49.0),
             _record("d", 0.4, 47.5)]  # fmt: skip
    assert tc.planned(sweep) == [0.1, 0.2, 0.3, 0.4] and tc.baseline(sweep, "avg") == 43.0
    rows = tc.curve(tc.points(sweep, "ppdb", "avg"))
    fig = tc.plot(rows, tmp_path / "t.png", "ppdb", "avg", tc.planned(sweep), 43.0)
    assert _solid_lines(fig) == [(0.3, 0.4)]  # θ 0.2 ran without a score: no 0.1 → 0.3 line
    assert [tuple(line.get_ydata()) for line in fig.axes[0].lines
            if line.get_linestyle() == "--"] == [(43.0, 43.0)]  # fmt: skip


def test_the_theta_choice_plot_circles_the_dev_argmax_on_dev_and_test(tmp_path):
    """Two panels (dev chooses, test is reported), a curve per |D|; the circle sits on the
    dev argmax in both, never on the test maximum; a test-only curve circles nothing."""
    pts = [{"name": f"{t}-{d}", "theta": t, "size": d, "dev": dev, "dev_std": 0.4,
            "test": test, "test_std": None}
           for t, d, dev, test in [(0.1, 512, 60.0, 55.0), (0.3, 512, 61.0, 50.0),
                                   (0.1, 1024, 59.0, 51.0), (0.3, 1024, 60.5, 52.0)]]  # fmt: skip
    rows = tc.choice_rows(pts)
    fig = tc.plot_choice(rows, tmp_path / "c.png", "ppdb", "dev_avg", "avg", [0.1, 0.3])
    dev_ax, test_ax = fig.axes
    circled = [[tuple(c.get_offsets()[0]) for c in ax.collections if isinstance(c, PathCollection)
                and c.get_sizes()[0] == 120] for ax in (dev_ax, test_ax)]  # fmt: skip
    assert circled == [[(0.3, 61.0)], [(0.3, 50.0)]]  # (0.3, 512): dev's best, test's worst
    assert len(_solid_lines(fig)) == 4  # each panel: one line per |D|
    assert "dev" in dev_ax.get_title() and "never chosen on" in test_ax.get_title()
    plain = tc.plot(tc.curve([{**p, "value": p["test"]} for p in pts]), tmp_path / "p.png",
                    "ppdb", "avg", [0.1, 0.3])  # fmt: skip
    assert not [c for c in plain.axes[0].collections if isinstance(c, PathCollection)
                and c.get_sizes()[0] == 120]  # fmt: skip


def test_heatmaps_keep_their_tags_and_fit_two_to_a_row(tmp_path):
    assert heatmap.tags_of("SIM95_BLEU0_5") == "<SIM95><BLEU0_5>"
    assert heatmap.tags_of("untagged") == "untagged"
    source = tmp_path / "heatmaps"
    (source / "generated").mkdir(parents=True)
    bins = "sim_bin,bleu_bin\n90-100,0-10\n"
    (source / "candidates.csv").write_text(bins)
    for name in ("SIM95_BLEU0_5", "SIM95_BLEU20", "untagged"):
        (source / "generated" / f"{name}.csv").write_text(bins)
    fig = report.plot_heatmaps(source, tmp_path / "h.png")
    titles = [ax.get_title() for ax in fig.axes if ax.axison]
    assert titles == ["round trip (Fig. 1) (n=1)", "<SIM95><BLEU0_5> (n=1)",
                      "<SIM95><BLEU20> (n=1)", "untagged (n=1)"]  # fmt: skip
    assert max(ax.get_subplotspec().colspan.stop for ax in fig.axes) <= 2
