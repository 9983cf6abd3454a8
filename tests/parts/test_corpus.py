"""Unit tests of the corpus pieces: sentence splitting, tokenising, langdetect, readers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from paracl.core.stage import InputError
from paracl.parts.corpus import langid, segment, tokenize
from paracl.parts.corpus.readers import ReadStats, read_documents

# --- sentence splitting -------------------------------------------------------------


def test_english_split_follows_moses_rules():
    text = (
        "Mr. Smith went to Washington yesterday. He met Dr. Brown there! "
        "See No. 5 for details. Was it late? Yes."
    )
    assert segment.split_sentences(text, "en") == [
        "Mr. Smith went to Washington yesterday.",
        "He met Dr. Brown there!",
        "See No. 5 for details.",
        "Was it late?",
        "Yes.",
    ]


def test_english_split_keeps_lowercase_continuation_and_splits_lines():
    # "e.g. the" does not start a sentence (lower case); a newline always ends one.
    text = "Some fruits, e.g. apples, are red. Others are not\nA new line starts here."
    assert segment.split_sentences(text, "en") == [
        "Some fruits, e.g. apples, are red.",
        "Others are not",
        "A new line starts here.",
    ]


def test_japanese_split_keeps_brackets_and_joins_tail_no():
    text = "彼は「はい。そうです。」と言った。本当ですか？はい！\n東京の\n大学に行った。"
    assert segment.split_sentences(text, "ja") == [
        "彼は「はい。そうです。」と言った。",
        "本当ですか？",
        "はい！",
        "東京の大学に行った。",
    ]


def test_japanese_split_drops_blank_lines():
    assert segment.split_sentences("一文目。\n\n二文目。", "ja") == ["一文目。", "二文目。"]


# --- tokenising ---------------------------------------------------------------------


def test_moses_tokens_are_unescaped():
    assert tokenize.tokenize("Tom & Jerry don't like 3.5 km, do they?", "en") == [
        "Tom",
        "&",
        "Jerry",
        "don",
        "'t",
        "like",
        "3.5",
        "km",
        ",",
        "do",
        "they",
        "?",
    ]


def test_mecab_ipadic_tokens():
    assert tokenize.tokenize("東大寺の仏像を見た。", "ja") == [
        "東大寺",
        "の",
        "仏像",
        "を",
        "見",
        "た",
        "。",
    ]
    assert "IPAdic" in tokenize.describe("ja")["dictionary"]


# --- langdetect ---------------------------------------------------------------------


def test_langdetect_is_seeded_and_order_independent():
    langid.set_seed(7)
    sentences = [
        "The committee approved the new budget for the public library on Monday.",
        "これは日本語の文です。",
        "Der Ausschuss hat den neuen Haushalt genehmigt.",
    ]
    first = [langid.language_prob(s, "en") for s in sentences]
    again = [langid.language_prob(s, "en") for s in reversed(sentences)][::-1]
    assert first == again
    assert first[0] >= 0.99
    assert first[1] == 0.0
    assert first[2] < 0.5
    assert langid.language_prob("12345 !!!", "en") == 0.0  # no features: not an error


# --- readers ------------------------------------------------------------------------


def _read(path: Path, fmt: str) -> tuple[list, ReadStats]:
    stats = ReadStats()
    return list(read_documents(path, fmt, stats)), stats


def test_text_reader_skips_undecodable_and_truncated_lines(tmp_path):
    f = tmp_path / "wiki.txt"
    f.write_bytes(b"First line.\r\n\n\xff\xfe broken bytes\nThird line.\nCut off mid-wo")
    docs, stats = _read(f, "text")
    assert [(d.doc_id, d.title, d.paragraphs) for d in docs] == [
        ("wiki:1", "", ["First line."]),
        ("wiki:4", "", ["Third line."]),
    ]
    assert stats.undecodable_lines == 1 and stats.undecodable_examples == [f"{f}:3"]
    assert stats.truncated_final_lines == 1 and stats.truncated_examples == [f"{f}:5"]
    assert (stats.files, stats.documents, stats.paragraphs) == (1, 2, 2)


WIKI40B = """
_START_ARTICLE_
Tokyo
_START_SECTION_
History
_START_PARAGRAPH_
Tokyo was formerly named Edo._NEWLINE_It became the capital in 1868.
_START_SECTION_
Geography
_START_PARAGRAPH_
The city lies on Tokyo Bay.
_START_ARTICLE_
Osaka
_START_PARAGRAPH_
Osaka is a city in Japan.
"""


def test_wiki40b_reader_titles_paragraphs_and_ids(tmp_path):
    f = tmp_path / "wiki40b.txt"
    f.write_text(WIKI40B, encoding="utf-8")
    docs, stats = _read(f, "wiki40b")
    assert [(d.doc_id, d.title, d.paragraphs) for d in docs] == [
        (
            "wiki40b:0",
            "Tokyo",
            [
                "Tokyo was formerly named Edo.",
                "It became the capital in 1868.",
                "The city lies on Tokyo Bay.",
            ],
        ),
        ("wiki40b:1", "Osaka", ["Osaka is a city in Japan."]),
    ]
    assert stats.paragraphs == 4


def _jaquad(path: Path, titles_contexts: list[tuple[str, list[str]]]) -> None:
    data = [
        {"title": t, "paragraphs": [{"context": c, "qas": []} for c in cs]}
        for t, cs in titles_contexts
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"version": "JaQuAD-version-0.1.0", "data": data}), "utf-8")


def test_jaquad_reader_walks_directory_in_order(tmp_path):
    _jaquad(tmp_path / "train" / "b.json", [("奈良", ["奈良は古都である。\n\n大仏がある。"])])
    _jaquad(tmp_path / "dev" / "a.json", [("京都", ["京都は寺が多い。"]), ("大阪", ["大阪。"])])
    (tmp_path / "README.md").write_text("not json")
    docs, stats = _read(tmp_path, "jaquad")
    assert [(d.doc_id, d.title, d.paragraphs) for d in docs] == [
        ("dev/a:0", "京都", ["京都は寺が多い。"]),
        ("dev/a:1", "大阪", ["大阪。"]),
        ("train/b:0", "奈良", ["奈良は古都である。\n\n大仏がある。"]),
    ]
    assert stats.files == 2


# --- bad input ----------------------------------------------------------------------


def _error(path: Path, fmt: str) -> str:
    with pytest.raises(InputError) as err:
        _read(path, fmt)
    return str(err.value)


def test_missing_and_empty_inputs(tmp_path):
    assert "not found" in _error(tmp_path / "nope.txt", "text")
    (tmp_path / "empty.txt").write_bytes(b"")
    assert f"{tmp_path / 'empty.txt'}: corpus input is empty" in _error(
        tmp_path / "empty.txt", "text"
    )
    (tmp_path / "d").mkdir()
    assert "no *.json files" in _error(tmp_path / "d", "jaquad")
    (tmp_path / "blank.txt").write_bytes(b"\n \n")
    assert "no text could be read" in _error(tmp_path / "blank.txt", "text")
    (tmp_path / "undecodable.txt").write_bytes(b"\xff\xfe\n\x80\x81\n")
    assert "undecodable.txt: binary data, not a 'text' corpus file (2 of 2 lines" in _error(
        tmp_path / "undecodable.txt", "text"
    )
    (tmp_path / "binary.txt").write_bytes(b"\xff\xfe\x00\n\x80\x81\n")  # a NUL: not text
    assert "binary.txt: binary data, not a 'text' corpus file" in _error(
        tmp_path / "binary.txt", "text"
    )


def test_wrong_formats_name_file_and_line(tmp_path):
    plain = tmp_path / "plain.txt"
    plain.write_text("Just a sentence.\nAnother one.\n")
    msg = _error(plain, "wiki40b")
    assert msg.startswith(f"{plain}:1: not Wiki-40B text format")

    w40 = tmp_path / "w40.txt"
    w40.write_text(WIKI40B)
    assert _error(w40, "text").startswith(f"{w40}:2: '_START_ARTICLE_' marker")

    broken = tmp_path / "broken.txt"
    broken.write_text("_START_ARTICLE_\nTitle\n_START_PARAGRAPH_\n_START_SECTION_\n")
    assert _error(broken, "wiki40b").startswith(f"{broken}:4:")

    notjson = tmp_path / "x.json"
    notjson.write_text('{"data": [\n{"title": "a",\n oops}]}')
    assert _error(notjson, "jaquad").startswith(f"{notjson}:3: not valid JSON")

    other = tmp_path / "other.json"
    other.write_text(json.dumps({"rows": [1, 2]}))
    assert "no top-level 'data' list" in _error(other, "jaquad")
    other.write_text(json.dumps({"data": [{"title": "t", "paragraphs": [{"text": "x"}]}]}))
    assert "data[0].paragraphs[0]: no 'context' string" in _error(other, "jaquad")
    assert "this is JSON, not text" in _error(other, "text")

    badbytes = tmp_path / "bad.json"
    badbytes.write_bytes(b'{"data": []\n,\xff}')
    assert _error(badbytes, "jaquad").startswith(f"{badbytes}:2: undecodable bytes")


# --- a few bad lines do not sink a corpus; a binary file is refused ----------------------


def _crawl(bad_every: int, lines: int = 40) -> bytes:
    """A text corpus in which every `bad_every`-th line is undecodable or has control
    characters (alternately), the rest valid sentences."""
    out = []
    for i in range(1, lines + 1):
        if i % bad_every:
            out.append(f"Sentence number {i} is a perfectly ordinary line.\n".encode())
        elif (i // bad_every) % 2:
            out.append(b"caf\xe9 latin-1 bytes in a utf-8 crawl\n")
        else:
            out.append(b"a line with a \x00 NUL and a \x1b[0m terminal escape\n")
    return b"".join(out)


def test_a_handful_of_bad_lines_are_skipped_and_counted(tmp_path):
    f = tmp_path / "crawl.txt"
    f.write_bytes(_crawl(bad_every=10))  # lines 10, 20, 30, 40: 2 undecodable, 2 control
    docs, stats = _read(f, "text")
    assert len(docs) == 36 and docs[0].paragraphs == [
        "Sentence number 1 is a perfectly ordinary line."
    ]
    assert (stats.undecodable_lines, stats.control_char_lines, stats.lines) == (2, 2, 40)
    assert stats.undecodable_examples == [f"{f}:10", f"{f}:30"]
    assert stats.control_char_examples == [f"{f}:20", f"{f}:40"]
    metrics = stats.as_dict()
    assert metrics["control_char_lines"] == 2 and metrics["undecodable_lines"] == 2


def test_a_file_is_refused_only_when_it_really_is_binary(tmp_path):
    mostly_bad = tmp_path / "mostly_bad.txt"
    mostly_bad.write_bytes(_crawl(bad_every=1))
    assert "mostly_bad.txt: binary data, not a 'text' corpus file (40 of 40 lines" in _error(
        mostly_bad, "text"
    )
    gz = tmp_path / "corpus.txt"
    gz.write_bytes(b"\x1f\x8b\x08\x00" + b"Looks like text after the header.\n" * 3)
    assert f"{gz}: binary data (gzip), not a 'text' corpus file" in _error(gz, "text")
    # good start, binary tail past the first 64 KiB: refused at the end, nothing kept
    late = tmp_path / "late.txt"
    late.write_bytes(b"A fine first sentence here.\n" * 2400 + b"\x80\x81\x82 junk\n" * 5000)
    assert "late.txt: binary data, not a 'text' corpus file (5000 of 7400 lines" in _error(
        late, "text"
    )


# --- Wiki-40B as Hugging Face publishes it (google/wiki40b Parquet) ----------------------

WIKI40B_ROWS = [  # the format of the published Parquet: text in the marker format
    (
        "Q25304",
        "\n_START_ARTICLE_\nHum Award for Most Impactful Character\n_START_SECTION_\n"
        "Winners and nominees\n_START_PARAGRAPH_\nIn the list below, winners are listed "
        "first in the colored row, followed by the other nominees._NEWLINE_The award was "
        "first given in 2013.\n",
        "12371070233836627483",
    ),
    (
        "Q7777",
        "\n_START_ARTICLE_\nSmall Town\n_START_PARAGRAPH_\nSmall Town is a village.\n"
        "_START_SECTION_\nHistory\n_START_PARAGRAPH_\nIt was founded in 1820._NEWLINE_"
        "A school opened in 1901.\n",
        "3053158137451939385",
    ),
]


def _wiki40b_parquet(path: Path, rows=WIKI40B_ROWS) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path.parent.mkdir(parents=True, exist_ok=True)
    ids, texts, versions = zip(*rows, strict=True)
    table = pa.table({"wikidata_id": ids, "text": texts, "version_id": versions})
    pq.write_table(table, path)
    return path


def test_wiki40b_parquet_reader_gives_titled_articles(tmp_path):
    _wiki40b_parquet(tmp_path / "en" / "train-00000-of-00019.parquet")
    (tmp_path / "en" / "README.md").write_text("not data")
    docs, stats = _read(tmp_path / "en", "wiki40b")
    assert [(d.doc_id, d.title, d.paragraphs) for d in docs] == [
        (
            "train-00000-of-00019:Q25304",
            "Hum Award for Most Impactful Character",
            [
                "In the list below, winners are listed first in the colored row, followed by "
                "the other nominees.",
                "The award was first given in 2013.",
            ],
        ),
        (
            "train-00000-of-00019:Q7777",
            "Small Town",
            ["Small Town is a village.", "It was founded in 1820.", "A school opened in 1901."],
        ),
    ]
    assert (stats.files, stats.documents, stats.paragraphs, stats.lines) == (1, 2, 5, 2)


def test_wiki40b_parquet_errors_name_file_and_row(tmp_path):
    two = _wiki40b_parquet(
        tmp_path / "two.parquet",
        [("Q1", "_START_ARTICLE_\nA\n_START_PARAGRAPH_\nx.\n_START_ARTICLE_\nB\n", "1")],
    )
    assert _error(two, "wiki40b") == f"{two}: row 0: 2 articles in one row, expected 1"
    assert f"{two}: binary data (Parquet), not a 'text' corpus file" in _error(two, "text")
    import pyarrow as pa
    import pyarrow.parquet as pq

    other = tmp_path / "other.parquet"
    pq.write_table(pa.table({"sentence": ["x"]}), other)
    assert "not Wiki-40B Parquet: no 'text' column" in _error(other, "wiki40b")


WIKI_LINES = """\
a line before any title
Raymar Jose
Raymar A. Jose is a Filipino basketball player.
He was drafted in 2017.
Nile (ship)
Several vessels have been named Nile.
season
The 2020 season is the club's 47th.
She is Hispanic
"""


def test_wiki_lines_reader_finds_titles_by_their_lead_sentence(tmp_path):
    """A title is a short unpunctuated capitalised line whose words the next line holds
    (its parenthesised qualifier aside); lowercase or unmatched lines are sentences."""
    f = tmp_path / "wiki1m.txt"
    f.write_text(WIKI_LINES, encoding="utf-8")
    docs, stats = _read(f, "wiki_lines")
    assert [(d.doc_id, d.title, d.paragraphs) for d in docs] == [
        ("wiki1m:0", "Raymar Jose",
         ["Raymar A. Jose is a Filipino basketball player.", "He was drafted in 2017."]),
        ("wiki1m:1", "Nile (ship)",
         ["Several vessels have been named Nile.", "season",
          "The 2020 season is the club's 47th.", "She is Hispanic"]),
    ]  # fmt: skip
    assert (stats.documents, stats.paragraphs) == (2, 6)


def test_wiki_lines_title_rule():
    from paracl.parts.corpus.readers import is_title

    assert is_title("Hoboken Public Library", "The Hoboken Public Library is a library.")
    assert not is_title("Hoboken Public Library", "It is the free library of the city.")
    assert not is_title("Report 1851.", "Report 1851 was printed.")  # ends a sentence
    assert not is_title("says", "Jennie Kermode says")  # not capitalised
    assert not is_title(" ".join(["Word"] * 13), " ".join(["Word"] * 13))  # too long
