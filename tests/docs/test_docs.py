"""The README and the documentation site: generated parts current, links whole, site builds.

Why: a result typed by hand goes stale when it is re-measured, and a broken link or a page
left out of the nav goes unnoticed. Every table of results/ and the configuration
reference are rendered by `paracl report`; these tests fail when the committed Markdown
differs from what the committed JSON and src/paracl/core/params.py render.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
from pathlib import Path

import pytest
from stage_helpers import squeezed

from paracl import report
from paracl.core.errors import InputError
from paracl.core.io import read_json
from paracl.stages.summary import measure_title

ROOT = Path(__file__).resolve().parents[2]
OLD = "effect-en-2026-11-24"  # the effect-en table measured before issue 29's fixes


def test_generated_tables_and_reference_are_current():
    stale = report.outdated(ROOT)
    assert not stale, f"stale generated Markdown (run `paracl report`): {stale}"


def test_every_committed_result_is_shown():
    missing = set(report.result_names(ROOT / "results")) - report.marked_names(ROOT)
    assert not missing, f"results/ without a <!-- report:NAME --> block in docs: {missing}"


def test_pre_fix_marks_name_the_committed_files():
    """An entry of PRE_FIX whose file changed was re-measured: remove the entry on purpose."""
    for name, sha in report.PRE_FIX.items():
        if (ROOT / "results" / name).is_dir():
            assert report.data_sha256(ROOT / "results" / name) == sha, (
                f"results/{name} changed since it was marked as measured before issue 29's "
                "fixes: if it was re-measured with them, drop its entry in paracl.report.PRE_FIX"
            )


def _copy(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    shutil.copytree(ROOT / "results" / OLD, root / "results" / OLD)
    (root / "docs").mkdir()
    shutil.copy(ROOT / "params.yaml", root / "params.yaml")  # the params page's comments
    (root / "README.md").write_text(f"# x\n\n<!-- report:{OLD}:table -->\n<!-- /report -->\n")
    return root


def test_a_hand_edited_table_is_caught(tmp_path):
    root = _copy(tmp_path)
    page = root / "README.md"
    page.write_text(report.fill(root, page, page.read_text()))
    assert page not in report.outdated(root)
    page.write_text(page.read_text().replace("| 35.3 ", "| 36.3 ", 1))
    assert page in report.outdated(root)


def test_an_unknown_part_is_a_one_line_error(tmp_path):
    root = _copy(tmp_path)
    page = root / "README.md"
    page.write_text(f"a\n<!-- report:{OLD}:tabel -->\n<!-- /report -->\n")
    with pytest.raises(InputError, match=r"README.md:2: unknown report part 'tabel'"):
        report.fill(root, page, page.read_text())


def test_a_marker_the_pattern_skips_is_an_error_not_an_empty_block(tmp_path):
    """A part name with a capital, or no closing marker, used to render nothing, silently;
    a marker mentioned inside prose (`<!-- report:NAME -->`) is no marker."""
    root = _copy(tmp_path)
    page = root / "README.md"
    for bad in (f"<!-- report:{OLD}:Table -->\n<!-- /report -->\n", f"<!-- report:{OLD} -->\n"):
        with pytest.raises(InputError, match=r"README.md:3: a report marker that is not"):
            report.fill(root, page, f"a `<!-- report:x -->` in prose\n\n{bad}")


def test_pre_fix_rows_are_marked_and_others_not(tmp_path):
    root = _copy(tmp_path)
    text = squeezed(report.render_summary(root / "results", OLD, "table"))
    assert report.pre_fix(root / "results", OLD)
    assert "| jcse ‡§ (3 seeds)" in text and "| none ‡ |" in text and "§: JCSE" in text
    (root / "results" / OLD / "summary.json").write_text(
        (ROOT / "results" / OLD / "summary.json").read_text() + "\n"
    )  # another file: not the pre-fix measurement any more
    assert "‡" not in report.render_summary(root / "results", OLD, "table")


def test_readme_is_short_and_its_links_resolve():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 200, "README.md: 200 lines at most; the rest is docs/"
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
        if not target.startswith(("http://", "https://", "mailto:")):
            assert (ROOT / target).exists(), f"README.md links to a missing {target}"


def _listed_modules(package: Path) -> set[str]:
    doc = ast.get_docstring(ast.parse((package / "__init__.py").read_text())) or ""
    return {m for m in re.findall(r"\b([a-z_][a-z0-9_]*)(?:\.py|/)?\b", doc)}


PACKAGES = ["core", "core/distributed", "parts", "parts/corpus", "parts/encoder", "parts/evaluation",
            "parts/filler", "parts/finetune", "parts/losses", "parts/paraphraser", "parts/tags",
            "stages/fetch/sources",
            "stages/train_contrastive/training"]  # fmt: skip
# paracl.stages lists none: its modules are dvc.yaml's stages, one each, named as the stage
# (tests/pipeline/test_stage_deps.py), so that a new stage touches no list.


@pytest.mark.parametrize("package", PACKAGES)
def test_package_docstrings_list_the_modules_that_exist(package):
    directory = ROOT / "src" / "paracl" / package
    modules = {p.stem for p in directory.glob("*.py") if p.stem != "__init__"}
    modules |= {p.name for p in directory.iterdir() if (p / "__init__.py").is_file()}
    listed = _listed_modules(directory)
    assert modules <= listed, f"paracl.{package}'s docstring misses {sorted(modules - listed)}"
    doc = ast.get_docstring(ast.parse((directory / "__init__.py").read_text())) or ""
    for name in re.findall(r"\b([a-z_][a-z0-9_]*)\.py\b", doc):
        assert name in modules, f"paracl.{package}'s docstring names {name}.py, which is gone"


def test_snapshot_of_the_default_run_and_its_heatmaps(tmp_path):
    root = tmp_path / "repo"
    metrics = root / "metrics"
    (metrics / "roundtrip" / "heatmaps" / "generated").mkdir(parents=True)
    shutil.copy(ROOT / "results" / "effect-en" / "summary.json", metrics / "summary.json")
    (metrics / "summary.md").write_text("table\n")
    bins = "sim_bin,bleu_bin\n70-80,10-20\n90-100,0-10\n"
    (metrics / "roundtrip" / "heatmaps" / "candidates.csv").write_text(bins)
    (metrics / "roundtrip" / "heatmaps" / "generated" / "SIM95_BLEU20.csv").write_text(bins)
    report.snapshot_default(root)
    assert (root / "results" / "default" / "summary.json").read_bytes() == (
        metrics / "summary.json"
    ).read_bytes()
    assert report.result_names(root / "results") == ["default"]
    out = root / "docs" / "img" / "default-heatmaps.png"
    assert report.plot_heatmaps(root / "results" / "default" / "heatmaps", out)
    assert out.read_bytes()[:4] == b"\x89PNG"


def test_snapshot_without_a_run_is_a_one_line_error(tmp_path):
    with pytest.raises(InputError, match=r"metrics/summary.json: not found \(run `dvc repro`"):
        report.snapshot_default(tmp_path)


def test_a_claim_with_one_seed_on_a_side_is_not_testable():
    from paracl.stages.summary import verdict

    assert verdict({"n_seeds": [1, 3], "holds": False}) == "not testable (n = 1)"
    assert verdict({"n_seeds": [3, 3], "holds": False}) == "does not hold"
    assert verdict({"n_seeds": [3, 2], "holds": True}) == "holds"
    at_chance = {
        "n_seeds": [3, 3],
        "holds": True,
        "not_testable": "none at chance (35.6; chance 62.2)",
    }
    assert verdict(at_chance) == "not testable: none at chance (35.6; chance 62.2)"


def test_the_claims_overview_has_every_claim_of_the_current_results():
    table = squeezed(report.render_claims(ROOT))
    tested = {
        (c["claim"], c["method"], measure_title(c.get("measure")))
        for name in report.result_names(ROOT / "results")
        if (ROOT / "results" / name / "summary.json").is_file()
        and not report.pre_fix(ROOT / "results", name)
        for c in read_json(ROOT / "results" / name / "summary.json").get("claims", [])
        if "untested" not in c
    }
    assert tested, "no committed result tests a claim"
    for claim, _, measure in tested:  # each row names its claim's own measure
        lines = [x for x in table.splitlines() if x.startswith(f"| {claim.replace('<', '&lt;')} |")]
        assert any(f"| {measure} |" in x for x in lines), (claim, measure)
    for name in report.PRE_FIX:
        assert f"[{name}]" not in table, f"{name} is kept for comparison only"
    assert "| 3&nbsp;vs&nbsp;3 |" in table  # n on one line in a narrow column


def test_a_caption_names_when_where_and_how_a_result_was_measured(tmp_path):
    (tmp_path / "measured.json").write_text(
        '{"date": "2026-11-27", "machine": "AMD EPYC, 2 cores", '
        '"command": "paracl preset effect-en && dvc repro", "time": "4 h 2 min"}'
    )
    text = report.caption(tmp_path, "results/x/summary.json")
    assert text == (
        "<small>Measured 2026-11-27 on AMD EPYC, 2 cores by `paracl preset effect-en && dvc "
        "repro` in 4 h 2 min. Rendered by `paracl report` from `results/x/summary.json`.</small>"
    )


def test_every_result_says_when_where_and_how_it_was_measured():
    """The caption under a result's table is rendered from its measured.json, never typed."""
    for directory in sorted(p for p in (ROOT / "results").iterdir() if p.is_dir()):
        path = directory / report.MEASURED
        assert path.is_file(), f"{path.relative_to(ROOT)}: missing (date, machine, command)"
        info = read_json(path)
        for key in ("date", "machine", "command"):
            assert isinstance(info.get(key), str) and info[key], f"{path}: no '{key}'"


# Words per page (`len(text.split())` of the Markdown source, generated tables included):
# a guide is read, so it stays short; history goes to the changelog's pages.
# A page over PAGE_BUDGET is split (the results: one page per paper, docs/results/) or
# named here with its own budget.
BUDGETS: dict[str, int] = {}
PAGE_BUDGET = 3000
GENERATED_PAGES = {"docs/reference/params.md"}
# A page outside the changelog describes the tool as it is: no issue numbers, no commits.
HISTORY = re.compile(r"\bissues? \d+|\b(?=[0-9a-f]*\d)[0-9a-f]{7,40}\b")


def _guide_pages() -> list[Path]:
    docs = sorted((ROOT / "docs").rglob("*.md"))
    return [
        ROOT / "README.md",
        *(p for p in docs if "changelog" not in p.relative_to(ROOT).parts[1]),
    ]


def _prose(text: str) -> str:
    """The text a reader reads as prose: no generated block, code, link target or URL."""
    text = report.MARKER.sub("", text)
    text = re.sub(r"(?ms)^(```|~~~).*?^\1", "", text)  # fenced code
    text = re.sub(r"(?m)^(?: {4}|\t)(?!\s*[-*] ).*$", "", text)  # indented code
    text = re.sub(r"`[^`]*`", "", text)  # inline code, which may wrap
    return re.sub(r"\]\([^)]*\)|https?://\S+", "]", text)


def test_readme_and_pages_keep_their_word_budgets():
    for page in sorted((ROOT / "docs").rglob("*.md")):
        name = page.relative_to(ROOT).as_posix()
        if name in GENERATED_PAGES:
            continue
        words = len(page.read_text(encoding="utf-8").split())
        budget = BUDGETS.get(name, PAGE_BUDGET)
        assert words <= budget, f"{name}: {words} words, over its budget of {budget}"


def test_guide_pages_cite_no_issue_or_commit():
    for page in _guide_pages():
        for line in _prose(page.read_text(encoding="utf-8")).splitlines():
            found = HISTORY.search(line)
            assert not found, (
                f"{page.relative_to(ROOT)}: '{found.group()}' in prose: history goes to "
                "docs/changelog.md, a measurement's date and commit to results/<name>/measured.json"
            )


def test_history_check_catches_an_issue_and_a_commit_but_not_a_table_or_code():
    assert HISTORY.search(_prose("Fixed in issue 33, see 1288419.\n"))
    assert HISTORY.search(_prose("as (issues 29–31) said\n"))
    assert not HISTORY.search(_prose("run `git show 1288419:x`\n\n    git log 53fb29f\n"))
    block = "<!-- report:x -->\nissue 29\n<!-- /report -->\n"
    assert not HISTORY.search(_prose(block + "1,000,000 pairs on 2026-11-28 by AMD EPYC\n"))


def test_stage_times_group_a_stage_of_many_runs_into_one_row_a_column_per_cpu(tmp_path):
    folder = tmp_path / report.STAGE_TIMES
    folder.mkdir(parents=True)
    stages = [
        {"stage": "roundtrip", "start_s": 0.0, "seconds": 543.4, "summary": "430 sentences"},
        {"stage": "evaluate@none-pi_en", "start_s": 543.4, "seconds": 9.0, "summary": ""},
        {"stage": "evaluate@ppdb-pi_en", "start_s": 552.4, "seconds": 11.0, "summary": ""},
    ]
    (folder / "stage_times.json").write_text(json.dumps({
        "date": "2026-12-05", "machine": "Intel(R) Xeon(R) Processor, 2 cores, bf16 kernels: amx",
        "command": "dvc repro", "total_s": 563.4, "stages": stages}))  # fmt: skip
    slower = [{**s, "seconds": 2 * s["seconds"], "summary": "other"} for s in stages]
    (folder / "stage_times-epyc.json").write_text(json.dumps({
        "date": "2026-12-07", "machine": "AMD EPYC, 2 cores", "command": "dvc repro",
        "total_s": 1126.8, "stages": slower}))  # fmt: skip
    text = report.render_stage_times(tmp_path)
    assert "**9 min 23 s** on Intel Xeon (AMX); **18 min 47 s** on AMD EPYC." in text
    rows = [squeezed(r) for r in text.splitlines() if r.startswith("| `")]
    assert rows == ["| `roundtrip` | 430 sentences | 9 min 3 s | 18 min 7 s |",
                    "| `evaluate × 2` | ~10 s a run | 20 s | 40 s |"]  # fmt: skip
    assert "Wall (Intel Xeon (AMX)) | Wall (AMD EPYC)" in squeezed(text)
    assert "measured 2026-12-05 on Intel(R) Xeon(R) Processor, 2 cores" in text
    assert "measured 2026-12-07 on AMD EPYC, 2 cores" in text


def test_the_verdicts_list_each_claim_tested_over_seeds_once(tmp_path):
    claim = {"claim": "JCSE: two-stage above stage one", "measure": None, "diff": 4.94,
             "p": 0.015, "n_seeds": [3, 3], "holds": True}  # fmt: skip
    untestable = {**claim, "claim": "one run a side", "p": None, "n_seeds": [1, 1]}
    for name in ("effect-ja", "effect-ja-finetune"):  # the same numbers: one row, two links
        (tmp_path / "results" / name).mkdir(parents=True)
        summary = {"claims": [claim, untestable]}
        (tmp_path / "results" / name / "summary.json").write_text(json.dumps(summary))
    page = tmp_path / "docs" / "results" / "methods.md"  # no page shows effect-ja-finetune
    page.parent.mkdir(parents=True)
    page.write_text("## effect-ja {#effect-ja}\n\n<!-- report:effect-ja -->\n<!-- /report -->\n")
    rows = [r for r in squeezed(report.render_verdicts(tmp_path)).splitlines() if "JCSE" in r]
    assert rows == [
        "| JCSE: two-stage above stage one | [effect-ja](docs/results/methods.md#effect-ja), "
        "effect-ja-finetune | +4.9 | holds |"
    ]
    assert "one run a side" not in report.render_verdicts(tmp_path)


def test_the_verdicts_merge_a_claims_bleu_tag_rows_into_one(tmp_path):
    """The README stays short: a claim made once per BLEU tag is one row, its Δ and verdicts
    in tag order (one verdict where all agree); a claim of one tag keeps its own name."""

    def claim(tag: str, diff: float, holds: bool, text: str = "A'B with {} above AB") -> dict:
        return {"claim": text.format(tag), "measure": "sts", "diff": diff, "p": 0.03,
                "n_seeds": [3, 3], "holds": holds}  # fmt: skip

    claims = [claim("<BLEU0_5>", 1.4, True), claim("<BLEU20>", 1.7, True),
              claim("<BLEU40>", 1.0, False), claim("<BLEU0_5>", 2.7, True, "NLI + {} above it")]  # fmt: skip
    (tmp_path / "results" / "ab").mkdir(parents=True)
    (tmp_path / "results" / "ab" / "summary.json").write_text(json.dumps({"claims": claims}))
    rows = squeezed(report.render_verdicts(tmp_path)).splitlines()
    assert (
        "| A'B with &lt;BLEU…> above AB | ab | +1.4 / +1.7 / +1.0 | holds / holds / does not hold |"
        in rows
    )
    assert "| NLI + &lt;BLEU0_5> above it | ab | +2.7 | holds |" in rows


def test_the_claims_tables_link_each_preset_to_the_page_that_shows_it(tmp_path):
    """Relative to the page the table is on, to the page whose heading carries the result's
    anchor (not the README's or a guide's copy of its table)."""
    claim = {"claim": "JCSE: two-stage above stage one", "measure": None, "diff": 4.94,
             "p": 0.015, "n_seeds": [3, 3], "holds": True}  # fmt: skip
    (tmp_path / "results" / "jcse-edu").mkdir(parents=True)
    (tmp_path / "results" / "jcse-edu" / "summary.json").write_text(json.dumps({"claims": [claim]}))
    block = "<!-- report:jcse-edu:table -->\n<!-- /report -->\n"
    (tmp_path / "docs" / "results").mkdir(parents=True)
    (tmp_path / "README.md").write_text(block)
    (tmp_path / "docs" / "guide.md").write_text(block)
    (tmp_path / "docs" / "results" / "jcse.md").write_text(f"## jcse-edu {{#jcse-edu}}\n\n{block}")
    index = tmp_path / "docs" / "results" / "index.md"
    assert report.result_page(tmp_path, "jcse-edu") == tmp_path / "docs" / "results" / "jcse.md"
    assert report.result_page(tmp_path, "effect-en") is None
    assert "| [jcse-edu](jcse.md#jcse-edu) |" in squeezed(report.render_claims(tmp_path, index))
    guide = squeezed(report.render_claims(tmp_path, tmp_path / "docs" / "guide.md"))
    assert "| [jcse-edu](results/jcse.md#jcse-edu) |" in guide
    on_its_page = report.render_claims(tmp_path, tmp_path / "docs" / "results" / "jcse.md")
    assert "| [jcse-edu](#jcse-edu) |" in squeezed(on_its_page)
    readme = squeezed(report.render_verdicts(tmp_path))
    assert "| [jcse-edu](docs/results/jcse.md#jcse-edu) |" in readme


def test_a_claim_against_a_reference_at_chance_reads_not_testable_in_every_claims_table(tmp_path):
    """The results page's overview and the README's verdicts both say why (the summary's
    own claims table: tests/parts/test_pi_xling.py)."""
    why = "cross-encoder at chance (51.5 ± 12.7; chance 62.2)"
    claim = {"claim": "Cross-lingual PI §IV-C: within 10 %", "measure": "pi_within", "diff": -8.8,
             "p": 0.316, "n_seeds": [3, 3], "holds": False, "not_testable": why}  # fmt: skip
    (tmp_path / "results" / "pi-en-ja").mkdir(parents=True)
    (tmp_path / "results" / "pi-en-ja" / "summary.json").write_text(json.dumps({"claims": [claim]}))
    for text in (report.render_claims(tmp_path), report.render_verdicts(tmp_path)):
        [row] = [r for r in squeezed(text).splitlines() if "within 10 %" in r]
        assert row.endswith(f"| not testable: {why} |") and "does not hold" not in row
        assert "at chance" in text.split("\n\n")[1]  # the legend says what it means


def test_the_time_table_has_a_column_per_cpu_kind_and_says_what_is_not_measured(tmp_path):
    folder = tmp_path / report.TIMINGS
    folder.mkdir(parents=True)
    run = {"date": "2026-12-07", "commit": "abc1234", "how": "bench/time_commands.py"}
    (folder / "timings-amd-epyc.json").write_text(json.dumps({
        "machine": "AMD EPYC, 2 cores, bf16 kernels: avx512_bf16",
        "commands": {"make setup": {**run, "seconds": 395.0},
                     "dvc repro": {**run, "seconds": 1200.0}}}))  # fmt: skip
    (folder / "timings-intel-xeon.json").write_text(json.dumps({
        "machine": "Intel(R) Xeon(R) Processor, 2 cores, bf16 kernels: amx",
        "commands": {"make test": {"date": "2026-12-05", "how": "make test", "seconds": 316}}}))  # fmt: skip
    text = squeezed(report.render_time_table(tmp_path))
    assert "| Command | 2 cores of AMD EPYC (AVX512_BF16) | 2 cores of Intel Xeon (AMX) |" in text
    assert "| `make setup` | 6 min 35 s | not measured |" in text
    assert "| `make test` | not measured | 5 min 16 s |" in text
    assert "`make setup` 2026-12-07 at abc1234 by bench/time_commands.py" in text
    assert "`make test` 2026-12-05 by make test" in text


def test_time_repro_times_each_stage_until_the_next_one_starts(tmp_path, monkeypatch):
    time_repro = _bench("time_repro")
    fake = tmp_path / "dvc"  # prints what `dvc repro` prints, with a pause inside a stage
    fake.write_text(
        "#!/bin/sh\necho \"Running stage 'fetch':\"\nsleep 0.3\n"
        "echo \"Running stage 'roundtrip':\"\necho '06:26:38 roundtrip: 4 sentences'\n"
        "echo '06:26:39 other: not the stage'\n"
    )
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    stages, total = time_repro.timed_repro([])
    assert [s["stage"] for s in stages] == ["fetch", "roundtrip"]
    assert stages[0]["seconds"] >= 0.3 and stages[1]["summary"] == "4 sentences"
    assert abs(sum(s["seconds"] for s in stages) - total) < 0.2
    out = tmp_path / "times.json"
    monkeypatch.setattr("sys.argv", ["time_repro.py", "--out", str(out)])
    time_repro.main()
    assert [s["stage"] for s in json.loads(out.read_text())["stages"]] == ["fetch", "roundtrip"]


def _bench(name: str):
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, ROOT / "bench" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_precision_comparison_says_whether_bf16_moves_a_score_beyond_the_seed_spread(tmp_path):
    runs = {"fp32": {"none": 70.0, "simcse_unsup_s1": 72.0, "simcse_unsup_s2": 74.0},
            "bf16": {"none": 70.5, "simcse_unsup_s1": 72.5, "simcse_unsup_s2": 74.1}}  # fmt: skip
    for precision, scores in runs.items():
        for run, score in scores.items():
            (tmp_path / precision / run).mkdir(parents=True)
            (tmp_path / precision / run / "sts.json").write_text(json.dumps({"score": score}))
    (tmp_path / "fp32" / "ppdb").mkdir()  # a committed run of another preset: left out
    (tmp_path / "fp32" / "ppdb" / "sts.json").write_text(json.dumps({"score": 10.0}))
    for precision in runs:  # the default run's unseeded simcse_unsup: not one of its seeds
        (tmp_path / precision / "simcse_unsup").mkdir()
        (tmp_path / precision / "simcse_unsup" / "sts.json").write_text('{"score": 80.0}')
    bench = _bench("compare_precision")
    methods = ["none", "simcse_unsup"]
    rows = bench.compare(*(bench.scores(tmp_path / p, "sts", methods)[0] for p in ("fp32", "bf16")))
    assert [r["method"] for r in rows] == ["none", "simcse_unsup"]
    simcse = rows[1]
    assert simcse["a"]["mean"] == 73.0 and simcse["b"]["n"] == 2
    assert abs(simcse["diff"] - 0.3) < 1e-9 and simcse["p"] is not None
    assert abs(simcse["a"]["vs_none"] - 3.0) < 1e-9 and abs(simcse["b"]["vs_none"] - 2.8) < 1e-9
    out = tmp_path / report.PRECISION
    out.mkdir(parents=True)
    (out / "comparison.json").write_text(json.dumps({"task": "sts", "names": ["fp32", "bf16"],
                                                     "ran_in": [{}, {}], "rows": rows}))  # fmt: skip
    lines = [squeezed(r) for r in report.render_precision(tmp_path).splitlines()]
    assert "| none | 70.0 (n = 1) | 70.5 (n = 1) | +0.5 | n/a |  |  | n/a (n = 1) |" in lines
    simcse_row = next(r for r in lines if r.startswith("| simcse_unsup"))
    assert simcse_row.startswith(
        "| simcse_unsup | 73.0 ± 1.4 (n = 2) | 73.3 ± 1.1 (n = 2) | +0.3 |"
    )
    assert simcse_row.endswith("| +3.0 | +2.8 | yes |")
