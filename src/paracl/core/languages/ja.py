"""Japanese: JCSE's language (ja_sentence_segmenter, MeCab + IPAdic, GiNZA, JGLUE)."""

from paracl.core.languages import Profile, register

PROFILE = Profile(
    code="ja",
    name="Japanese",
    examples=(
        "その教会は12世紀に建てられ、1890年に修復された。",
        "彼女はウィーン大学で物理学を学んだ。",
        "そのアルバムは1998年に小さなレーベルから発売された。",
    ),
    splitter="ja_sentence_segmenter",
    tokenizer="mecab",
    moses=None,
    langdetect="ja",
    spaced=False,  # no spaces between words: a word count is characters / 2
    keep_punct=",.、。",  # Japanese text uses 、 and 。 for commas and periods
    bleu_tokenize="ja-mecab",  # MeCab (IPAdic) segments the words first
    noun_chunks="ja_ginza",
    sts_scorer_data={  # JGLUE's JSTS (its dev split is `valid`)
        "train": "jsts-v1.3/train-v1.3.json",
        "dev": "jsts-v1.3/valid-v1.3.json",
        "test": "jsts-v1.3/test-v1.3.json",
    },
    sts_scorer_note="trained on JSTS: the paper's scorer is English (STS-B)",
    sts_dev="data/raw/jglue/jsts-v1.3/train-v1.3.json",  # valid is the jsts task's test set
    unsup_sts="unsup_sts_ja",
    unsup_sts_sets="jcse",  # in Table 3's order (JCSE)
    pi="pi_ja",
    pi_sets=("pawsx_ja",),
)
register(PROFILE)
