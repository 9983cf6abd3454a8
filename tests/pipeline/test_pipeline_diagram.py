"""The pipeline diagram is drawn from dvc.yaml: an arrow where one stage's output is
another's dependency, solid in the default run, dashed where only a preset or a foreach
template draws it."""

from paracl.pipeline_diagram import diagram

PIPELINE = {
    "stages": {
        "fetch": {"cmd": "f", "outs": ["data/raw"]},
        "corpus": {"cmd": "c", "deps": ["data/raw/wiki"], "outs": ["data/corpus/s.parquet"]},
        "extra": {
            "foreach": "${extra}",
            "do": {"cmd": "e", "deps": ["data/corpus/s.parquet"], "outs": ["data/x/${item}"]},
        },
        "train": {
            "foreach": "${methods}",
            "do": {"cmd": "t", "deps": ["${item}"], "outs": ["models/${key}"]},
        },
    }
}


def test_arrows_follow_outputs_into_deps_solid_by_default_dashed_by_preset():
    default = {"extra": [], "methods": {"plain": "data/corpus/s.parquet"}}
    preset = {"extra": ["a"], "methods": {"plain": "data/corpus/s.parquet", "x": "data/x/a"}}
    dot = diagram(PIPELINE, default, [preset])
    assert "  fetch -> corpus;" in dot  # a dep inside an output folder
    assert "  corpus -> train;" in dot
    assert "  extra -> train [style=dashed];" in dot  # only the preset trains on it
    assert "  corpus -> extra [style=dashed];" in dot
    assert 'train [label="train@…"]' in dot and "fetch -> train" not in dot


def test_a_template_no_params_fill_still_draws_its_literal_deps():
    dot = diagram(PIPELINE, {"extra": [], "methods": {}}, [])
    assert "  corpus -> extra [style=dashed];" in dot
    assert "-> train" not in dot  # its only dep is ${item}: nothing to draw yet
