"""The configuration reference: types, ranges and help from the schema, values from
params.yaml (the one place a value is written)."""

from __future__ import annotations

from pathlib import Path

from stage_helpers import squeezed

from paracl.report import params_reference

ROOT = Path(__file__).resolve().parents[2]


def test_the_default_column_is_params_yamls_value(tmp_path):
    path = tmp_path / "params.yaml"
    text = (ROOT / "params.yaml").read_text(encoding="utf-8")
    path.write_text(text.replace("\ntheta: 0.3 ", "\ntheta: 0.45 ", 1), encoding="utf-8")
    page = squeezed(params_reference(path))
    assert "| `theta` | float | [0.0, 1.0] | `0.45` | keep paraphrase rules" in page
    per_lang = "int per language (en, ja) | [1, 20] | `{en: 6, ja: 7}` |"
    assert f"| `ppdb_substitute.max_phrase_words` | {per_lang}" in page
    sections = "one of `text`, `wiki40b`, `jaquad` |  | `{en: text, ja: jaquad}` |"  # each entry's
    assert f"| `prepare_corpus.input.{{en,ja}}.format` | {sections}" in page
    # an entry's key: required, or the value an entry that leaves it out gets
    assert "| `train_contrastive.methods.<name>.loss` | str |  | required |" in page
    assert "| `train_contrastive.methods.<name>.data` | str or null |  | `null` |" in page
    assert "| key | type | range | default | what it does |" in page
