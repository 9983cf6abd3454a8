"""What the stage tests share: a copy of the project as git tracks it, a stage script
loaded as a module, a crashed run followed by its resume, and dvc.yaml's stages expanded
as dvc expands them."""

from __future__ import annotations

import contextlib
import importlib.util
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

from paracl import pipeline_diagram

REPO = Path(__file__).resolve().parents[1]


# Where the code lives; no stage writes here (test_train_contrastive checks dvc.yaml's outputs).
CODE_DIRS = ("src", "stages", "tests")


def project_files(source: Path = REPO) -> list[str]:
    """What a copy of the project holds: the files git tracks (committed or `git add`ed),
    and new files under CODE_DIRS that git does not ignore (a module not yet added)."""

    def ls(*args: str) -> list[str]:
        out = subprocess.run(
            ["git", "ls-files", "-z", *args], cwd=source, capture_output=True, text=True, check=True
        ).stdout
        return [rel for rel in out.split("\0") if rel]

    return sorted({*ls(), *ls("-o", "--exclude-standard", "--", *CODE_DIRS)})


def copy_project(dest: Path, source: Path = REPO) -> Path:
    """project_files(source), as they are in its work tree, copied to `dest` as a fresh git
    repo: what a clone with the uncommitted edits holds, and never what a run left there
    (`dvc repro` writes metrics and plots that no .gitignore hides), so no test depends on
    the work tree's generated outputs."""
    for rel in project_files(source):
        if (source / rel).is_file():  # tracked but deleted in the work tree: not copied
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source / rel, dest / rel)
    subprocess.run(["git", "init", "-q"], cwd=dest, check=True)
    return dest


def load_stage(name: str) -> ModuleType:
    """The module that stages/<name>.py runs, paracl.stages.<name>: its main, its Params
    (what it reads of params.yaml) and its key figures."""
    return importlib.import_module(f"paracl.stages.{name}")


def run_main(name: str, params: dict, *args: str) -> None:
    """stages/<name>.py's main(params) in this process, with the command-line arguments
    `python stages/<name>.py args…` would give it."""
    argv = sys.argv
    sys.argv = [f"stages/{name}.py", *args]
    try:
        load_stage(name).main(params)
    finally:
        sys.argv = argv


def stage_argv(stage: str, params: dict) -> list[str]:
    """`python stages/x.py args…` of dvc.yaml stage `stage` (`tag`, `train_contrastive@ppdb`)
    with `params`, as dvc would run it; sections `params` lacks (a test's own params
    may hold only its stage's) come from params.yaml, as the other stages need them."""
    import yaml

    from paracl.schema import with_runs

    pipeline = yaml.safe_load((REPO / "dvc.yaml").read_text(encoding="utf-8"))
    defaults = yaml.safe_load((REPO / "params.yaml").read_text(encoding="utf-8"))
    # runs follow the test's methods, as `paracl expand` would write them
    cmd = expand_stages(pipeline, with_runs(defaults | params))[stage]["cmd"].split()
    assert cmd[0] == "python" and cmd[1].startswith("stages/"), cmd
    return cmd[1:]


def run_stage(stage: str, params: dict) -> None:
    """dvc.yaml stage `stage` in this process (cwd: the project), its paths from dvc.yaml."""
    script, *args = stage_argv(stage, params)
    run_main(Path(script).stem, params, *args)


def rank_titled_corpus(root: Path, params: dict) -> None:
    """Stage ebsim_retrieve@sentences on root's data/corpus/sentences.parquet: the ranking
    (data/ebsim/sentences.parquet) that PAPER_METHODS' ebsim entries train on."""
    params["ebsim_retrieve"]["corpora"] = {"sentences": "data/corpus/sentences.parquet"}
    with contextlib.chdir(root):
        run_stage("ebsim_retrieve@sentences", params)


def crash_then_resume(
    owner: type,
    fn_name: str,
    run: Callable[[], object],
    crash_at: int,
    out: str | Path | None = None,
) -> list[int]:
    """run() with a stage's ShardJob class `owner` failing in `fn_name` ("process") at
    shard `crash_at` (and, if given, nothing published at `out`), then run() again;
    return the shard indices the second run computed. The real method is put back."""
    real = getattr(owner, fn_name)
    calls: list[int] = []

    def crashing(job, state, shard):
        if shard.index == crash_at:
            raise RuntimeError("killed")
        return real(job, state, shard)

    def counting(job, state, shard):
        calls.append(shard.index)
        return real(job, state, shard)

    try:
        setattr(owner, fn_name, crashing)
        with pytest.raises(RuntimeError, match="killed"):
            run()
        if out is not None:
            assert not Path(out).exists()  # nothing half-published
        setattr(owner, fn_name, counting)
        run()
    finally:
        setattr(owner, fn_name, real)
    return calls


# --- dvc.yaml with foreach/matrix expanded, as dvc names and resolves its stages --------

lookup, expand_stages = pipeline_diagram.lookup, pipeline_diagram.expand_stages


def dep_paths(entries: list | None) -> list[str]:
    """The paths of a stage's deps/outs list (entries may be `{path: options}`)."""
    return [str(next(iter(e)) if isinstance(e, dict) else e) for e in entries or []]


# --- train_contrastive.methods entries, as params.yaml and the paper presets write them --

PAPER_METHODS: dict[str, dict] = {
    "none": {"loss": "none", "input": "data/raw/stsbenchmark/sts-dev.csv"},
    "simcse_unsup": {"loss": "infonce", "input": "data/corpus/sentences.parquet"},
    "simcse_sup": {"loss": "infonce", "input": "data/raw/jsnli/dev.tsv", "hard_negatives": True},
    "ppdb": {"loss": "infonce", "input": "data/ppdb/pairs.parquet"},
    "roundtrip": {"loss": "infonce", "input": "data/roundtrip/tagged.parquet"},
    "roundtrip_greedy": {"loss": "infonce", "input": "data/roundtrip/greedy.parquet"},
    "paraphraser": {"loss": "infonce", "input": "data/paraphraser/generated.parquet"},
    **{
        f"paraphraser_bleu{b.lower()}": {
            "loss": "infonce",
            "input": "data/paraphraser/generated.parquet",
            "tags": f"<SIM95><BLEU{b}>",
        }
        for b in ("0_5", "20", "40")
    },
    "jcse": {
        "loss": "jcse",
        "input": "data/negatives/negatives.parquet",
        "hard_negative_weight": 0.0,
    },
    "jcse_two_stage": {
        "loss": "jcse",
        "input": "models/encoders/jcse",
        "data": "data/raw/jsnli/dev.tsv",
        "hard_negative_weight": 1.0,
    },
    "ams": {"loss": "ams", "input": "data/ppdb/pairs.parquet", "mega_batch": 20, "mine_k": 1},
    "ebsim": {"loss": "ebsim", "input": "data/ebsim/sentences.parquet"},
    "ebsim_no_aa": {"loss": "ebsim", "input": "data/ebsim/sentences.parquet", "aspects": ["ra"]},
}


def methods(*names: str, **inputs: str) -> dict[str, dict]:
    """Entries for `names` (the papers' methods), with `name=path` replacing an input."""
    entries = {n: dict(PAPER_METHODS[n]) for n in names}
    for name, path in inputs.items():
        entries[name]["input"] = path
    return entries


def squeezed(markdown: str) -> str:
    """A Markdown text with every table row's padding removed ("| a | b |"), so a test can
    look for a row without knowing the column widths tabulate chose."""
    rows = (
        "| " + " | ".join(c.strip() for c in line.strip()[1:-1].split(" | ")) + " |"
        if line.startswith("|")
        else line
        for line in markdown.splitlines()
    )
    return "\n".join(rows)


# --- a SICK file (paracl.parts.evaluation.readers.read_sick reads it), as the mirror has it

SICK_HEADER = "\t".join(
    ["pair_ID", "sentence_A", "sentence_B", "entailment_label", "relatedness_score"]
    + ["entailment_AB", "entailment_BA", "sentence_A_original", "sentence_B_original"]
    + ["sentence_A_dataset", "sentence_B_dataset", "SemEval_set"]
)


def write_sick(path: Path, rows: list[tuple]) -> Path:
    """SICK.txt with `rows` (id, A, B, label, split) as the mirror's: a header, CRLF line
    ends, no final newline."""
    lines = [SICK_HEADER] + [
        "\t".join([str(i), a, b, label, "4.0", "x", "x", a, b, "FLICKR", "FLICKR", split])
        for i, a, b, label, split in rows
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes("\r\n".join(lines).encode())
    return path


# --- a toy language: German text under a code no code path knows ----------------------

# Its profile's language-dependent fields (paracl.core.languages.Profile), shared by
# tests/lang/test_toy_language.py (registered in the process) and
# tests/pipeline/test_extending.py (written as a profile file into a project copy).
TOY_LANGUAGE = {
    "code": "xx",
    "name": "Toy German",
    "splitter": "moses",
    "tokenizer": "moses",
    "moses": "de",
    "langdetect": "de",
    "spaced": True,
    "keep_punct": ",.",
    "bleu_tokenize": "intl",
    "noun_chunks": "none",
    "sts_scorer_data": {},
    "sts_scorer_note": "toy language",
    "unsup_sts": "unsup_sts_xx",
    "pi": "pi_xx",
}
