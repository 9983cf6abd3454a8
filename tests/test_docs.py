"""The README and the documentation site: generated parts current, links whole, site builds.

Why: a result typed by hand goes stale when it is re-measured, and a broken link or a page
left out of the nav goes unnoticed. Every table of results/ and the configuration
reference are rendered by `paracl report`; these tests fail when the committed Markdown
differs from what the committed JSON and src/paracl/params.py render.
"""

from __future__ import annotations

import ast
import re
import shutil
from pathlib import Path

import pytest
from stage_helpers import squeezed

from paracl import report
from paracl.errors import InputError

ROOT = Path(__file__).resolve().parents[1]
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
    assert len(text.splitlines()) <= 260, "README.md: keep it near 250 lines; the rest is docs/"
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
        if not target.startswith(("http://", "https://", "mailto:")):
            assert (ROOT / target).exists(), f"README.md links to a missing {target}"


def _listed_modules(package: Path) -> set[str]:
    doc = ast.get_docstring(ast.parse((package / "__init__.py").read_text())) or ""
    return {m for m in re.findall(r"\b([a-z_][a-z0-9_]*)(?:\.py|/)?\b", doc)}


@pytest.mark.parametrize("package", ["training", "negatives", "roundtrip", "evaluation"])
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
