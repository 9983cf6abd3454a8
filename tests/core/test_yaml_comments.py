"""params.yaml's comments, read by key for the configuration reference."""

from __future__ import annotations

from pathlib import Path

from paracl.core.yaml_comments import key_comments


def test_inline_and_continued_comments_by_dotted_key(tmp_path):
    path = tmp_path / "params.yaml"
    path.write_text(
        "seed: 42       # seed for everything\n"
        "# a section's heading comment belongs to no key\n"
        "corrupt:\n"
        "  max_sentences: 120    # anchors; null = all\n"
        "                        # ~1 s per anchor\n"
        "  on_missing: drop\n"
        "  dictionary:\n"
        "    en: {format: tsv, path: 'a#b'}  # the English file\n"
        "  url: http://x/#frag\n"
        "top: [1, 2]  # after a flow list\n",
        encoding="utf-8",
    )
    assert key_comments(path) == {
        "seed": "seed for everything",
        "corrupt.max_sentences": "anchors; null = all ~1 s per anchor",
        "corrupt.dictionary.en": "the English file",
        "top": "after a flow list",
    }


def test_the_real_params_yaml_has_a_comment_on_most_keys():
    notes = key_comments(Path(__file__).parents[2] / "params.yaml")
    assert notes["theta"].startswith("keep paraphrase rules")
    assert "fp16" in notes["precision"] and "underflow" in notes["precision"]  # 2 lines
