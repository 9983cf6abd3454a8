"""The configuration reference: types, ranges and help from the schema, values from
params.yaml (the one place a value is written)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from stage_helpers import squeezed

from paracl.core.languages import codes
from paracl.report import params_reference

ROOT = Path(__file__).resolve().parents[2]


def test_the_default_column_is_params_yamls_value(tmp_path):
    path = tmp_path / "params.yaml"
    text = (ROOT / "params.yaml").read_text(encoding="utf-8")
    path.write_text(text.replace("\ntheta: 0.3 ", "\ntheta: 0.45 ", 1), encoding="utf-8")
    page = squeezed(params_reference(path))
    assert "| `theta` | float | [0.0, 1.0] | `0.45` | keep paraphrase rules" in page
    # a per-language key: one value per language with a profile (en, ja, and any added)
    langs, values = ", ".join(codes()), yaml.safe_load(text)
    words = ", ".join(f"{k}: {v}" for k, v in values["ppdb_substitute"]["max_phrase_words"].items())
    assert words.startswith("en: 6, ja: 7")
    per_lang = f"int per language ({langs}) | [1, 20] | `{{{words}}}` |"
    assert f"| `ppdb_substitute.max_phrase_words` | {per_lang}" in page
    inputs = values["prepare_corpus"]["input"]
    formats = ", ".join(f"{k}: {v['format']}" for k, v in inputs.items())
    assert formats.startswith("en: text, ja: jaquad")
    sections = f"one of `text`, `wiki40b`, `jaquad`, `wiki_lines` |  | `{{{formats}}}` |"
    assert f"| `prepare_corpus.input.{{{','.join(codes())}}}.format` | {sections}" in page
    # an entry's key: required, or the value an entry that leaves it out gets
    assert "| `train_contrastive.methods.<name>.loss` | str |  | required |" in page
    assert "| `train_contrastive.methods.<name>.data` | str or null |  | `null` |" in page
    assert "| key | type | range | default | what it does |" in page


def undescribed(page: str) -> list[str]:
    """The keys of a reference page whose row has an empty last column ("what it does")."""
    rows = [r for r in squeezed(page).splitlines() if r.startswith("| `")]
    return [r.split(" | ")[0].strip("| ") for r in rows if r.rstrip().endswith("|  |")]


def test_every_key_has_a_description():
    page = params_reference(ROOT / "params.yaml")
    assert "| `gamma` |" in squeezed(page) and "| `mine_rule` |" in squeezed(page)
    assert not undescribed(page), f"keys with no description: {undescribed(page)}"
    missing = "| key | type | range | default | what it does |\n|---|---|---|---|---|\n"
    assert undescribed(missing + "| `x.y` | int | ≥ 1 | `2` |  |\n") == ["`x.y`"]


def test_each_losss_stated_range_is_the_one_its_params_check():
    """A bound the page states is accepted, and a value past it refused, by the loss's
    own Params (report.LOSS_RANGES against paracl.parts.losses)."""
    from paracl.parts.losses import LOSSES
    from paracl.report import LOSS_RANGES

    needs = {"threshold": {"mine_rule": "threshold"}}  # a threshold only with its rule
    for loss, ranges in LOSS_RANGES.items():
        params = LOSSES[loss].Params
        for key, bounds in ranges.items():
            for bound, step in zip(bounds, (-1e-3, 1e-3), strict=True):
                if bound is None:
                    continue
                params(**needs.get(key, {}), **{key: bound})
                past = bound + step if isinstance(bound, float) else bound + round(step * 1e3)
                with pytest.raises(ValueError):
                    params(**needs.get(key, {}), **{key: past})
    page = squeezed(params_reference(ROOT / "params.yaml"))
    assert "| `margin` | float | [0, π] | `0.5` |" in page
    assert "| `mine_k` | int | ≥ 0 | `1` |" in page
