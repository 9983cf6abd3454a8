"""The paracl command line."""

from pathlib import Path

from paracl.cli import main

REPO = Path(__file__).resolve().parents[1]


def test_where_lists_artifacts_of_dvc_yaml(capsys):
    assert main(["where", "--dvc-yaml", str(REPO / "dvc.yaml")]) == 0
    out = capsys.readouterr().out
    assert "fetch" in out and "data/raw" in out
    assert "prepare_corpus" in out and "data/corpus/sentences.parquet" in out


def test_score_gives_a_cosine(capsys, tiny_bert):
    assert main(["score", str(tiny_bert), "a man is playing .", "a man is playing ."]) == 0
    assert abs(float(capsys.readouterr().out) - 1.0) < 1e-4
