"""Extending, counted: docs/extending.md lists the files each kind of addition touches (a
method, a loss, a stage, a language), and each test here adds a toy one to a copy of the
project by writing exactly the files of that list, then shows that it works.

A copy is a fresh git repo whose files are staged before the toy is written, so `git diff`
and `git ls-files --others` in it list what the addition changed. The commands that
rewrite files (`paracl expand`, `paracl report`, `dot`) run before the count; what they
rewrite must be one of GENERATED, and everything else changed must be the docs' list,
file for file. The copy's
own code runs, in a subprocess (PYTHONPATH=copy/src). A list that names a file the toy does
not need, or misses one it needs, fails here; so does a list longer than its bound.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from stage_helpers import TOY_LANGUAGE, copy_project

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "extending.md"

SECTIONS = {"method": "A method", "loss": "A loss", "stage": "A stage", "language": "A language"}
BOUNDS = {"method": 1, "loss": 3, "stage": 5, "language": 3}  # files at most, each kind
TOY = {"<name>": "toy_margin", "<stage>": "toy_count", "<page>": "fetch", "<code>": "xx"}
# rewritten by a command, never by hand: `paracl report` (the reference, the diagram's
# source from dvc.yaml and presets) and `dot` (its SVG)
GENERATED = {"docs/reference/params.md", "docs/img/pipeline.dot", "docs/img/pipeline.svg"}
NUMBERS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7}

# -- the docs' lists --------------------------------------------------------------------


def listed(kind: str, text: str | None = None) -> list[str]:
    """The files docs/extending.md's section for `kind` lists: the numbered items after its
    "touches N files:" line, each opening with the file's path in backticks; N must be
    their number."""
    text = DOC.read_text(encoding="utf-8") if text is None else text
    heading = f"## {SECTIONS[kind]}\n"
    assert heading in text, f"docs/extending.md: no section {heading.strip()!r}"
    section = text.split(heading, 1)[1].split("\n## ", 1)[0]
    found = re.search(r"touches (\w+) files?:\n\n((?:\d+\. .*\n(?: {3}.*\n)*)+)", section)
    assert found, f"docs/extending.md, {SECTIONS[kind]}: no 'touches N files:' list"
    items = re.findall(r"^\d+\. (.*)$", found.group(2), re.M)
    paths = [re.match(r"`([^`\s]+)`", item) for item in items]
    assert all(paths), f"docs/extending.md, {SECTIONS[kind]}: an item opens with no `path`"
    count = NUMBERS.get(found.group(1), found.group(1))
    assert count == len(items), f"{SECTIONS[kind]}: says {found.group(1)}, lists {len(items)}"
    return [p.group(1) for p in paths]


def filled(kind: str) -> set[str]:
    """The docs' list for `kind` with the toy's names in the placeholders."""
    out = set()
    for path in listed(kind):
        for placeholder, name in TOY.items():
            path = path.replace(placeholder, name)
        assert "<" not in path, f"{path}: a placeholder with no toy name (TOY)"
        out.add(path)
    return out


@pytest.mark.parametrize("kind", sorted(SECTIONS))
def test_each_list_names_files_that_exist_or_its_toy_writes(kind):
    """Every listed file exists in the project, or is the new file the addition writes."""
    for path in listed(kind):
        if "<" not in path or "<page>" in path:  # an existing file, or a page of docs/stages
            where = path.replace("<page>", "*")
            assert list(REPO.glob(where)), f"docs/extending.md lists {path}, which is not there"


def test_a_list_whose_count_differs_from_its_items_is_refused():
    text = "## A method\n\nAdding a method touches two files:\n\n1. `params.yaml`: an entry.\n"
    with pytest.raises(AssertionError, match="says two, lists 1"):
        listed("method", text)
    assert listed("method", text.replace("two files", "one file")) == ["params.yaml"]


@pytest.mark.parametrize("kind", sorted(SECTIONS))
def test_each_list_is_within_its_bound(kind):
    assert len(listed(kind)) <= BOUNDS[kind], f"{kind}: {listed(kind)}"


# -- a copy of the project, and commands run in it ---------------------------------------


def fresh_copy(tmp_path: Path) -> Path:
    """A copy of the project with every file staged: `changed` then lists an edit."""
    project = copy_project(tmp_path / "project")
    git(project, "add", "-A")
    return project


def git(project: Path, *args: str) -> str:
    proc = subprocess.run(["git", *args], cwd=project, capture_output=True, text=True, check=True)
    return proc.stdout


def changed(project: Path) -> set[str]:
    """The files an addition changed, deleted or wrote since the copy was staged."""
    edited = git(project, "diff", "--name-only")  # the work tree against the index
    new = git(project, "ls-files", "--others", "--exclude-standard")
    return set(edited.splitlines()) | set(new.splitlines())


def run_in(project: Path, *argv: str, timeout: int = 120) -> subprocess.CompletedProcess:
    """`argv` in the copy, its own code first on the path (and its venv's python on PATH,
    for the commands dvc runs)."""
    env = os.environ | {"PYTHONPATH": str(project / "src"), "PYTHONUNBUFFERED": "1"}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    proc = subprocess.run(
        argv, cwd=project, env=env, capture_output=True, text=True, timeout=timeout
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc


# What each check in the copy starts with: `paracl report`'s configuration reference,
# rendered again from the copy's schema and params.yaml (results/ and its blocks are data
# no addition changes).
PRELUDE = """
import json
from pathlib import Path
from paracl import report

def regenerate():  # what `paracl report` rewrites from the sources
    for page, text in [(report.PARAMS_PAGE, report.params_reference(Path("params.yaml"))),
                       (report.DIAGRAM, report.project_diagram(Path(".")))]:
        if page.read_text(encoding="utf-8") != text:
            page.write_text(text, encoding="utf-8")
"""


def python_in(project: Path, body: str) -> dict:
    """Run PRELUDE + `body` in the copy; the JSON its last line prints."""
    proc = run_in(project, sys.executable, "-c", PRELUDE + body)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def assert_touches_the_listed_files(project: Path, kind: str) -> None:
    touched = changed(project)
    assert touched - GENERATED == filled(kind), (
        f"a new {kind} touched {sorted(touched - GENERATED)}; "
        f"docs/extending.md lists {sorted(filled(kind))}"
    )


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, f"{path}: {old!r} not found once"
    path.write_text(text.replace(old, new), encoding="utf-8")


# -- a method ---------------------------------------------------------------------------


def add_method(project: Path) -> None:
    """params.yaml: an entry under train_contrastive.methods, two seeds."""
    params = project / "params.yaml"
    text = params.read_text(encoding="utf-8")
    start = text.index("\ntrain_contrastive:\n")
    at = text.index("\n  methods:\n", start) + len("\n  methods:\n")
    entry = "    toy: {loss: infonce, input: data/ppdb/pairs.parquet, seeds: [1, 2]}\n"
    params.write_text(text[:at] + entry + text[at:], encoding="utf-8")


def test_a_new_method_is_one_file(tmp_path):
    """A method entry in params.yaml; `paracl expand` writes its runs, the whole file
    checks, and dvc trains it once per seed."""
    project = fresh_copy(tmp_path)
    add_method(project)
    facts = python_in(
        project,
        """
from paracl.presets import expand
from paracl.schema import load_params
expand()
regenerate()
runs = load_params()["train_contrastive"]["runs"]
print(json.dumps({k: v["method"] for k, v in runs.items()}))
""",
    )
    assert_touches_the_listed_files(project, "method")
    assert facts["toy_s1"] == facts["toy_s2"] == "toy"
    stages = run_in(project, sys.executable, "-m", "dvc", "stage", "list").stdout
    assert "train_contrastive@toy_s1" in stages and "train_contrastive@toy_s2" in stages


# -- a loss -----------------------------------------------------------------------------

TOY_LOSS = '''"""Toy margin: a hinge on the gap between each anchor's positive and its hardest
in-batch negative (a loss added by tests/pipeline/test_extending.py)."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from paracl.parts.losses.objective import BiEncoderObjective


class ToyMarginLoss(nn.Module):
    def __init__(self, margin: float):
        super().__init__()
        self.margin = margin

    def forward(self, anchors: torch.Tensor, positives: torch.Tensor) -> torch.Tensor:
        cos = nn.functional.cosine_similarity(anchors[:, None], positives[None], dim=-1)
        hardest = (cos - 2 * torch.eye(len(cos))).max(dim=1).values
        return torch.relu(self.margin - cos.diagonal() + hardest).mean()


@dataclass(frozen=True)
class Params:
    """The method entry's own keys."""

    margin: float = 0.5  # the gap a positive keeps over the hardest negative


def objective(model, params: Params, cfg: dict) -> BiEncoderObjective:
    loss = ToyMarginLoss(params.margin)
    return BiEncoderObjective(["anchor", "positive"], lambda reps: loss(*reps), "toy margin")
'''

TOY_LOSS_TEST = '''

def test_toy_margin_is_the_hinge_on_the_hardest_negative():
    """By hand: each row's positive .6, its hardest negative .8: relu(.5 - .6 + .8)."""
    from paracl.parts.losses.toy_margin import ToyMarginLoss

    assert ToyMarginLoss(0.5)(A, P).item() == pytest.approx(0.7, rel=1e-6)
'''


def add_loss(project: Path) -> None:
    """The module, its line in LOSSES (its import, its name in the docstring), its test."""
    losses = project / "src/paracl/parts/losses"
    (losses / "toy_margin.py").write_text(TOY_LOSS, encoding="utf-8")
    init = losses / "__init__.py"
    edit(init, '"""\n\nfrom types import ModuleType\n',
         '\n`toy_margin`: a toy.\n"""\n\nfrom types import ModuleType\n'
         "from paracl.parts.losses import toy_margin\n")  # fmt: skip
    edit(init, "\n}\n", '\n    "toy_margin": toy_margin,\n}\n')
    test = project / "tests/parts/test_losses.py"
    test.write_text(test.read_text(encoding="utf-8") + TOY_LOSS_TEST, encoding="utf-8")


def test_a_new_loss_is_its_module_its_line_and_its_test(tmp_path):
    """A method naming the toy loss checks (the whole file, and its entry's own keys by
    the loss's Params, as train_contrastive checks them; a misspelt loss and a key it
    does not take are refused), and its objective computes the value worked by hand."""
    project = fresh_copy(tmp_path)
    add_loss(project)
    facts = python_in(
        project,
        """
import torch
from paracl.core.errors import ParamsError
from paracl.core.params import read_params
from paracl.parts.losses import LOSSES
from paracl.stages.train_contrastive.training.methods import method_spec
from paracl.schema import check_all, with_runs
regenerate()
values = read_params("params.yaml")
entry = {"loss": "toy_margin", "input": "data/ppdb/pairs.parquet", "margin": 0.2}
values["train_contrastive"]["methods"]["toy"] = entry
checked = check_all(with_runs(values))  # the whole file, as `paracl preset` checks it
spec = method_spec("toy", entry)  # the entry's own keys, as train_contrastive reads them
refused = []
for bad in [entry | {"loss": "toy_margn"}, entry | {"gap": 1}]:  # both refused at load
    values["train_contrastive"]["methods"]["toy"] = bad
    try:
        check_all(with_runs(values))
    except ParamsError as err:
        refused.append(str(err))
a, p = torch.eye(2), torch.tensor([[0.6, 0.8], [0.8, 0.6]])
value = LOSSES["toy_margin"].objective(None, spec.params, {}).loss([a, p]).item()
print(json.dumps({"runs": list(checked["train_contrastive"]["runs"]), "refused": refused,
                  "margin": spec.params.margin, "value": value}))
""",
    )
    assert_touches_the_listed_files(project, "loss")
    assert "toy" in facts["runs"] and facts["margin"] == 0.2
    typo, unknown = facts["refused"]  # a name the loss registry lacks, a key its Params lacks
    assert "unknown name 'toy_margn'" in typo and "toy_margin" in typo
    assert "unknown key 'train_contrastive.methods.toy.gap'" in unknown
    assert facts["value"] == pytest.approx(0.4, rel=1e-6)  # relu(.2 - .6 + .8)


# -- a stage ----------------------------------------------------------------------------

TOY_STAGE = '''"""Stage toy_count: the words of `toy_count.text`, counted (a stage added by
tests/pipeline/test_extending.py)."""

from __future__ import annotations

from paracl.core.io import write_json
from paracl.core.params import RunWide, Section, param
from paracl.core.stage import args


class ToyCount(Section):
    """A toy stage's section."""

    text: str = param(help="the text whose words are counted")


class Params(RunWide):
    """What stage toy_count reads of params.yaml: the run-wide keys and these."""

    toy_count: ToyCount


def main(params: dict) -> None:
    """toy_count METRICS: the word count of `toy_count.text` into METRICS."""
    write_json({"words": len(params["toy_count"]["text"].split())}, args("metrics").metrics)
'''

TOY_SCRIPT = '''"""Stage toy_count: counts the words of a param.

    python stages/toy_count.py METRICS
"""

from paracl.core.stage import run
from paracl.stages.toy_count import Params, main

if __name__ == "__main__":
    run(main, Params)
'''

TOY_ENTRY = """
  toy_count:
    cmd: python stages/toy_count.py metrics/toy_count.json
    deps:
      - stages/toy_count.py
      - src/paracl/stages/toy_count.py
      - src/paracl/core
    params: [toy_count]
    metrics:
      - metrics/toy_count.json: {cache: false}
"""


def add_stage(project: Path) -> None:
    """Its module and script, its section, its dvc.yaml entry and its docs."""
    (project / "src/paracl/stages/toy_count.py").write_text(TOY_STAGE, encoding="utf-8")
    (project / "stages/toy_count.py").write_text(TOY_SCRIPT, encoding="utf-8")
    params = project / "params.yaml"
    section = "\ntoy_count:\n  text: one two three  # the text whose words are counted\n"
    params.write_text(params.read_text(encoding="utf-8") + section, encoding="utf-8")
    dvc_yaml = project / "dvc.yaml"
    dvc_yaml.write_text(dvc_yaml.read_text(encoding="utf-8") + TOY_ENTRY, encoding="utf-8")
    page = project / "docs/stages/fetch.md"
    page.write_text(
        page.read_text(encoding="utf-8")
        + "\n## toy_count\n\nCounts the words of `toy_count.text`.\n",
        encoding="utf-8",
    )


def drawn(project: Path) -> set[str]:
    """The stage names the diagram shows: its SVG's labels, as test_docs_render reads
    them, where `dot` redraws it; else every name its source holds."""
    if shutil.which("dot"):
        svg = project / "docs/img/pipeline.svg"
        run_in(project, "dot", "-Tsvg", "docs/img/pipeline.dot", "-o", str(svg))
        return set(re.findall(r"<text[^>]*>([^<@]+)", svg.read_text(encoding="utf-8")))
    return set(re.findall(r"\w+", (project / "docs/img/pipeline.dot").read_text("utf-8")))


def test_a_new_stage_is_the_files_the_docs_list(tmp_path):
    """The whole params file checks with the toy stage's section, dvc lists it and runs
    it (`dvc repro toy_count`: its script, its module's main on its checked section), and
    the diagram draws it."""
    project = fresh_copy(tmp_path)
    add_stage(project)
    facts = python_in(
        project,
        """
from paracl.schema import STAGES, load_params
regenerate()
print(json.dumps({"section": load_params()["toy_count"], "stages": list(STAGES)}))
""",
    )
    shown = drawn(project)
    assert_touches_the_listed_files(project, "stage")
    assert facts["section"] == {"text": "one two three"} and "toy_count" in facts["stages"]
    pipeline = yaml.safe_load((project / "dvc.yaml").read_text(encoding="utf-8"))["stages"]
    assert set(pipeline) <= shown, f"not drawn: {set(pipeline) - shown}"
    assert "toy_count" in run_in(project, sys.executable, "-m", "dvc", "stage", "list").stdout
    run_in(project, sys.executable, "-m", "dvc", "repro", "--single-item", "toy_count")
    metrics = json.loads((project / "metrics/toy_count.json").read_text(encoding="utf-8"))
    assert metrics == {"words": 3}


# -- a language -------------------------------------------------------------------------

TOY_FIELDS = TOY_LANGUAGE | {
    "examples": ("Die Kirche wurde im 12. Jahrhundert erbaut und 1890 restauriert.",),
    "sts_dev": "data/raw/stsbenchmark/sts-dev.csv",
    "unsup_sts_sets": "sts12-16",
    "pi_sets": ("paws",),
}
TOY_PROFILE = f'''"""Toy German: German text under a code no code path knows (a language added by
tests/pipeline/test_extending.py)."""

from paracl.core.languages import Profile, register

PROFILE = Profile(**{TOY_FIELDS!r})
register(PROFILE)
'''

TOY_PRESET = """# purpose: a toy language, Toy German (tests/pipeline/test_extending.py)
# time: estimated 1 min on 2 CPU cores
lang: xx

evaluate:
  tasks: [unsup_sts_xx, pi_xx]  # its profile's jobs
"""

# params.yaml's per-language entries for xx, written as `paracl preset` merges a preset (the
# sections it touches re-dumped, every other line kept): each mapping keyed by exactly the
# other languages gets xx's entry, English's value (its corpus: a text file on disk).
ADD_LANGUAGE_ENTRIES = """
from paracl.core.languages import codes
from paracl.core.params import read_params
from paracl.presets import apply_preset

def entries(node):
    if not isinstance(node, dict):
        return None
    if set(node) == set(codes()) - {"xx"}:
        return {"xx": node["en"]}
    found = {k: e for k, v in node.items() if (e := entries(v))}
    return found or None

preset = entries(read_params("params.yaml"))
preset["prepare_corpus"]["input"]["xx"] = {"source": "data/own/corpus/xx.txt", "format": "text"}
apply_preset(preset)
"""


def add_language(project: Path) -> None:
    """Its profile and preset; its params.yaml entries are written in the check's process
    (ADD_LANGUAGE_ENTRIES), which needs the profile registered."""
    (project / "src/paracl/core/languages/xx.py").write_text(TOY_PROFILE, encoding="utf-8")
    (project / "presets/xx.yaml").write_text(TOY_PRESET, encoding="utf-8")


def test_a_new_language_is_its_profile_its_params_and_its_preset(tmp_path):
    """The profile is found (no list names it); params.yaml with its entries checks as it
    is, and under its preset as `lang: xx`, its evaluation jobs accepted; the text rules
    read its profile."""
    project = fresh_copy(tmp_path)
    add_language(project)
    facts = python_in(
        project,
        ADD_LANGUAGE_ENTRIES
        + """
from paracl.core.languages import profile
from paracl.parts.tags.text import word_count
from paracl.presets import load_preset, merge_preset
from paracl.schema import check_all, load_params
regenerate()
base = load_params()
checked = check_all(merge_preset(read_params("params.yaml"), load_preset("xx")))
print(json.dumps({"codes": codes(), "lang": checked["lang"], "base": base["lang"],
                  "tasks": checked["evaluate"]["tasks"], "name": profile("xx").name,
                  "words": word_count("Der alte Lehrer besuchte gestern das Museum.", "xx")}))
""",
    )
    assert_touches_the_listed_files(project, "language")
    assert "xx" in facts["codes"] and facts["name"] == "Toy German"
    assert facts["base"] == "en" and facts["lang"] == "xx"
    assert facts["tasks"] == ["unsup_sts_xx", "pi_xx"] and facts["words"] == 7


# -- the project's own checks, with each addition ------------------------------------------

# What a new one of each kind must leave passing, beyond the checks above: the generated
# reference, the package docstrings, the layers, and the kind's own tests.
COMMON = ["tests/docs/test_docs.py::test_generated_tables_and_reference_are_current",
          "tests/docs/test_docs.py::test_package_docstrings_list_the_modules_that_exist",
          "tests/docs/test_params_reference.py", "tests/core/test_layers.py"]  # fmt: skip
CHECKS = {
    "method": ["tests/pipeline/test_presets.py", "-k", "not architecture_runs"],
    "loss": ["tests/parts/test_losses.py", "tests/parts/test_eval_config.py"],
    "stage": [
        "tests/pipeline/test_stage_deps.py",
        "tests/docs/test_paths.py",
        "tests/pipeline/test_pipeline_dvc.py::test_every_stage_script_and_package_dep_exists",
        "-k",
        "not schema_edit and not shared_module",
    ],
    "language": [
        "tests/lang",
        "tests/pipeline/test_presets.py",
        "tests/pipeline/test_japanese_pipeline.py::test_train_contrastive_depends_on_the_dev_set_of_every_lang",
        "-k",
        "not architecture_runs",
    ],
}
ADDERS = {"method": add_method, "loss": add_loss, "stage": add_stage, "language": add_language}
REWRITE = {"method": "from paracl.presets import expand\nexpand()\n",
           "language": ADD_LANGUAGE_ENTRIES}  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(SECTIONS))
def test_the_projects_checks_pass_with_each_addition(kind, tmp_path):
    """The copy's own tests of what a new `kind` touches (a minute each)."""
    project = fresh_copy(tmp_path)
    ADDERS[kind](project)
    python_in(project, REWRITE.get(kind, "") + "regenerate()\nprint('{}')\n")
    if kind == "stage":
        drawn(project)
    run_in(project, sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
           *COMMON, *CHECKS[kind], timeout=600)  # fmt: skip
