"""Paraphrase candidates by phrase substitution (PPDB paper §3.2, Figure 1).

Matching is indexed: the rules are a dict from a normalised source phrase to its
rules, and each sentence is scanned once for its n-grams of up to `max_words` tokens
(6 for English, 7 for Japanese in the paper), so the cost is O(tokens x max_words)
dict look-ups per sentence whatever the dictionary size.

Normalisation follows how the dictionaries are made: PPDB is lower-cased and Moses-
tokenised, so an English n-gram key is its lower-cased tokens joined by spaces.
Japanese dictionaries are MeCab-tokenised (EhiMerPPDB) or not tokenised at all
(Sudachi), and MeCab dictionaries disagree on boundaries, so a Japanese key is the
n-gram's tokens concatenated without spaces and the dictionary phrase has its spaces
removed: a phrase matches any run of whole corpus tokens that spells it.

Each candidate applies one rule (Figure 1); `max_substitutions` > 1 also makes
candidates that combine non-overlapping rules. Candidates identical to the input are
dropped, and at most `max_candidates` are kept per sentence (highest rule probability
first, then position), so the choice is deterministic. A candidate is the original
text with the matched character span replaced (`_splice`), so the rest of the sentence
keeps its exact spelling and spacing; English spacing around the new phrase comes from
sacremoses' MosesDetokenizer, Japanese is joined without spaces.

`substitute_corpus` is the ppdb_substitute stage's work: the θ filter (Figure 2), then
`SubstituteJob` over the corpus in resumable shards of `shard_size` sentences
(paracl.core.distributed.sharded, on `workers` processes or Ray actors), and the metrics
that say what was kept, matched and why nothing was. The kept rules reach every worker
with the job, whose setup builds the rule index once per worker; the driver holds the
rule table and index and one corpus shard per task in flight.
"""

from __future__ import annotations

import itertools
import logging
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

import pandas as pd

from paracl.core import schemas
from paracl.core.distributed.sharded import (
    CountedShards,
    Engine,
    Shard,
    map_shards,
    parquet_shards,
)
from paracl.core.errors import InputError
from paracl.core.io import fingerprint, input_checksum, iter_parts, write_parquet
from paracl.core.key_figures import write_metrics
from paracl.core.languages import profile
from paracl.core.params import Lang, RunWide, Section, param
from paracl.core.stage import args
from paracl.stages.ppdb_substitute.ppdb_rules import DictionaryError, read_dictionary

# -- the stage's contract: what it reads of params.yaml (paracl.core.params) --


class PpdbSubstitute(Section):
    class Dictionary(Section):
        # format: see paracl.stages.ppdb_substitute.ppdb_rules (ppdb2/ehimer = the paper's files)
        format: Literal["ppdb2", "ehimer", "tsv", "ppdb-sample", "sudachi"] = param(
            help="the dictionary's line format and where p(d|s) comes from (ppdb2, ehimer: "
            "the papers' files; tsv: source, target, prob; ppdb-sample, sudachi: stand-ins)"
        )
        path: str = param(help="the dictionary file (a DVC dep)")

    dictionary: dict[Lang, Dictionary]
    max_phrase_words: dict[Lang, int] = param(min=1, max=20)
    max_substitutions: int = param(min=1, max=4, help="rules combined per candidate")
    max_candidates: int = param(min=1, help="candidates kept per sentence")
    shard_size: int = param(min=1, help="corpus sentences per shard")


class Params(RunWide):
    """What stage ppdb_substitute reads of params.yaml: the run-wide keys and these."""

    theta: float = param(
        min=0.0,
        max=1.0,
        help="keep paraphrase rules with p(d|s) >= theta; the default (0.3) is not yet the "
        "one chosen on the dev fine-tuned average (presets/effect-en-theta, PPDB Figure 2)",
    )
    ppdb_substitute: PpdbSubstitute


log = logging.getLogger(__name__)

# Moses escapes these when tokenising with escape=True; PPDB has them unescaped.
_MOSES_UNESCAPE = {
    "&amp;": "&",
    "&#124;": "|",
    "&lt;": "<",
    "&gt;": ">",
    "&apos;": "'",
    "&quot;": '"',
    "&#91;": "[",
    "&#93;": "]",
}


@dataclass(frozen=True)
class Rule:
    source: str
    target: str
    prob: float


@dataclass(frozen=True)
class Candidate:
    text: str
    rules: tuple[Rule, ...]


def phrase_key(tokens: Iterable[str], lang: str) -> str:
    """The matching key of a token sequence (see the module docstring)."""
    if not profile(lang).spaced:
        return "".join(tokens)
    return " ".join(t.lower() for t in tokens)


class RuleIndex:
    """source-phrase key -> rules, built once from a rule table."""

    def __init__(self, rules: pd.DataFrame, lang: str, max_words: int):
        self.lang = lang
        self.max_words = max_words
        self.index: dict[str, list[Rule]] = defaultdict(list)
        self.too_long = 0
        for src, tgt, prob in zip(rules["source"], rules["target"], rules["prob"], strict=True):
            words = src.split()
            if profile(lang).spaced and len(words) > max_words:
                self.too_long += 1
                continue
            key = phrase_key(words, lang)
            if key == phrase_key(tgt.split(), lang):
                continue  # a rule that changes nothing after normalisation
            self.index[key].append(Rule(src, tgt, float(prob)))
        for rules_ in self.index.values():
            rules_.sort(key=lambda r: (-r.prob, r.target))
        self.index = dict(self.index)

    def __len__(self) -> int:
        return sum(len(v) for v in self.index.values())

    def matches(self, tokens: list[str]) -> list[tuple[int, int, Rule]]:
        """All (start, end, rule) whose source spells tokens[start:end]."""
        spaced = profile(self.lang).spaced
        norm = [_unescape(t) for t in tokens] if spaced else tokens
        if spaced:
            norm = [t.lower() for t in norm]
        found = []
        sep = " " if spaced else ""
        for i in range(len(norm)):
            key = ""
            for j in range(i, min(len(norm), i + self.max_words)):
                key = norm[j] if j == i else key + sep + norm[j]
                for rule in self.index.get(key, ()):
                    found.append((i, j + 1, rule))
        return found


def _unescape(token: str) -> str:
    if "&" not in token:
        return token
    for esc, ch in _MOSES_UNESCAPE.items():
        token = token.replace(esc, ch)
    return token


@lru_cache(maxsize=4)
def _moses(lang: str):
    from sacremoses import MosesDetokenizer

    return MosesDetokenizer(lang=lang)


def detokenize(tokens: list[str], lang: str) -> str:
    """Moses detokeniser for English (and other space-separated languages); Japanese
    text is written without spaces between tokens."""
    if not profile(lang).spaced:
        return "".join(tokens)
    return _moses(profile(lang).moses).detokenize([_unescape(t) for t in tokens])


def _target_tokens(rule: Rule, original: list[str], lang: str) -> list[str]:
    """The rule's target as tokens, keeping a capital at the start of the span.

    PPDB is lower-cased: replacing "The film" by "this movie" at the start of a
    sentence should give "This movie".
    """
    if not profile(lang).spaced:
        return ["".join(rule.target.split())]
    words = rule.target.split()
    first = original[0]
    if first[:1].isupper() and not rule.source[:1].isupper() and words[0][:1].islower():
        words[0] = words[0][:1].upper() + words[0][1:]
    return words


def align(tokens: list[str], text: str) -> list[tuple[int, int]] | None:
    """Character span of each token in `text`, or None when a token is not found.

    Moses (escape=False) and MeCab keep the characters of the text, so the tokens can
    be found left to right; this lets a candidate keep the original text outside the
    replaced phrase byte for byte (spacing, quotes, full-width spaces).
    """
    spans = []
    pos = 0
    for tok in tokens:
        start = text.find(tok, pos)
        if start < 0:
            return None
        pos = start + len(tok)
        spans.append((start, pos))
    return spans


def _splice(
    tokens: list[str],
    text: str,
    spans: list[tuple[int, int]],
    combo: tuple[tuple[int, int, Rule], ...],
    lang: str,
) -> str:
    """`text` with each matched span replaced by its rule's target.

    English: one substitution is detokenised together with one token of context on each
    side (Moses decides the spacing around the new phrase: "and" -> "," gives "x, y"),
    unless the original text around it is not what Moses would write; combinations
    replace exactly the spans. Japanese: the target replaces the span, no spaces.
    """
    out = text
    context = profile(lang).spaced and len(combo) == 1
    for start, end, rule in sorted(combo, key=lambda m: -m[0]):
        new = _target_tokens(rule, tokens[start:end], lang)
        a, b = (max(0, start - 1), min(len(tokens), end + 1)) if context else (start, end)
        lo, hi = spans[a][0], spans[b - 1][1]
        piece = None
        if context and detokenize(tokens[a:b], lang) == text[lo:hi]:
            piece = detokenize(tokens[a:start] + new + tokens[end:b], lang)
        if piece is None:
            piece = detokenize(new, lang)
            lo, hi = spans[start][0], spans[end - 1][1]
        out = out[:lo] + piece + out[hi:]
    return out


def _apply(tokens: list[str], combo: tuple[tuple[int, int, Rule], ...], lang: str) -> list[str]:
    out: list[str] = []
    pos = 0
    for start, end, rule in sorted(combo, key=lambda m: m[0]):
        out += tokens[pos:start] + _target_tokens(rule, tokens[start:end], lang)
        pos = end
    return out + tokens[pos:]


def _overlaps(combo: tuple[tuple[int, int, Rule], ...]) -> bool:
    spans = sorted((s, e) for s, e, _ in combo)
    return any(a[1] > b[0] for a, b in itertools.pairwise(spans))


def candidates(
    tokens: list[str],
    text: str,
    index: RuleIndex,
    max_candidates: int,
    max_substitutions: int = 1,
) -> list[Candidate]:
    """Paraphrase candidates of one sentence, best rules first, without duplicates.

    The candidate is the original text with the phrase replaced where the tokens can be
    aligned to the text; otherwise the substituted tokens are detokenised whole.
    """
    found = index.matches(tokens)
    if not found:
        return []
    found.sort(key=lambda m: (-m[2].prob, m[0], m[1], m[2].target))
    lang = index.lang
    spans = align(tokens, text)
    original = {text.strip(), detokenize(tokens, lang)}
    seen: set[str] = set()
    out: list[Candidate] = []
    for k in range(1, max_substitutions + 1):
        for combo in itertools.combinations(found, k):
            if k > 1 and _overlaps(combo):
                continue
            if spans is not None:
                cand = _splice(tokens, text, spans, combo, lang).strip()
            else:
                cand = detokenize(_apply(tokens, combo, lang), lang)
            if cand in original or cand in seen:
                continue
            seen.add(cand)
            ordered = sorted(combo, key=lambda m: m[0])
            out.append(Candidate(cand, tuple(r for _, _, r in ordered)))
            if len(out) >= max_candidates:
                return out
    return out


def candidate_rows(
    sentences: pd.DataFrame,
    index: RuleIndex,
    max_candidates: int,
    max_substitutions: int = 1,
) -> Iterator[dict]:
    """One row per candidate for a frame with id, text, tokens (schemas.CORPUS)."""
    for sid, text, tokens in zip(
        sentences["id"], sentences["text"], sentences["tokens"], strict=True
    ):
        cands = candidates(list(tokens), text, index, max_candidates, max_substitutions)
        for cand in cands:
            yield {
                "id": sid,
                "text": text,
                "candidate": cand.text,
                "rule_sources": [r.source for r in cand.rules],
                "rule_targets": [r.target for r in cand.rules],
                "rule_probs": [r.prob for r in cand.rules],
                "n_candidates": len(cands),
            }


# ---------------------------------------------------------------- sharded stage worker

CANDIDATE_COLUMNS = [
    "id",
    "text",
    "candidate",
    "rule_sources",
    "rule_targets",
    "rule_probs",
    "n_candidates",
]


@dataclass(frozen=True)
class SubstituteJob:
    """The stage's shard worker (paracl.core.distributed.executor.ShardJob): the rule
    index built once per worker from the kept rules, then the candidates of each shard."""

    rules: pd.DataFrame  # the kept rules' source, target, prob
    lang: str
    max_words: int
    max_candidates: int
    max_substitutions: int

    def setup(self) -> RuleIndex:
        return RuleIndex(self.rules, self.lang, self.max_words)

    def process(self, index: RuleIndex, shard: Shard) -> pd.DataFrame:
        """The candidates of one shard of corpus sentences (schemas.PPDB_CANDIDATES
        columns); depends only on the rows and the rules."""
        rows = candidate_rows(shard.rows, index, self.max_candidates, self.max_substitutions)
        return pd.DataFrame(list(rows), columns=CANDIDATE_COLUMNS)


# ---------------------------------------------------------------- the stage's driver


def keep_rules(rules: pd.DataFrame, theta: float) -> pd.DataFrame:
    """The rules with p(d|s) >= theta, in table order (θ trades the number of
    paraphrases for their precision: PPDB paper Figure 2)."""
    return rules[rules["prob"] >= theta].reset_index(drop=True)


def matched_sentences(path: str) -> int:
    """Sentences with at least one candidate in a candidates artifact: a sentence's rows
    are consecutive within one shard, so count id changes while streaming the id column."""
    matched, prev = 0, None
    for part, batch in iter_parts(path, 65536, columns=["id"]):
        if batch.empty:
            continue
        ids = batch["id"]
        new = ids != ids.shift()
        new.iloc[0] = prev != (part, ids.iloc[0])  # a sentence may go on across batches
        matched += int(new.sum())
        prev = (part, ids.iloc[-1])
    return matched


@dataclass(frozen=True)
class Substitution:
    """What ppdb_substitute writes besides the candidates: the kept rules, their
    metadata (with the metrics, which rank_fluency reports) and the metrics."""

    rules: pd.DataFrame
    metadata: dict
    metrics: dict


def substitute_corpus(
    corpus: str, out: str, cfg: dict, lang: str, theta: float, engine: Engine
) -> Substitution:
    """Write the candidates of every sentence of `corpus` to the shard directory `out`
    with the rules of `cfg["dictionary"][lang]` (the ppdb_substitute params section) that
    have p >= theta. No rule left, or no sentence matched, is a valid outcome: `out` is
    written empty (right schema) and the metrics' notes say why."""
    spec = cfg["dictionary"][lang]
    max_words = cfg["max_phrase_words"][lang]
    report, kept, index, notes = _rules(spec, lang, theta, max_words)
    meta = _metadata(report, spec, theta, lang)
    key = fingerprint(
        "ppdb_substitute", cfg, lang, theta, input_checksum(corpus), input_checksum(spec["path"])
    )
    sentences = CountedShards(parquet_shards(corpus, cfg["shard_size"], schemas.CORPUS))
    job = SubstituteJob(
        kept[["source", "target", "prob"]],
        lang,
        max_words,
        cfg["max_candidates"],
        cfg["max_substitutions"],
    )
    manifest = map_shards(
        job,
        sentences,
        out=out,
        schema=schemas.PPDB_CANDIDATES,
        key=key,
        engine=engine,
        metadata=meta,
        desc="ppdb_substitute",
    )
    n_cands = manifest["rows"]
    matched = matched_sentences(out) if n_cands else 0
    if sentences.rows and not n_cands and len(index):
        notes.append(f"no sentence of {corpus} contains a source phrase of a kept rule")
        log.warning(notes[-1])
    metrics = {
        "lang": lang,
        "theta": theta,
        "dictionary": report,
        **_counts(kept, index, sentences.rows, matched, n_cands),
        "max_candidates": cfg["max_candidates"],
        "max_substitutions": cfg["max_substitutions"],
        "shards": len(manifest["shards"]),
        "notes": notes,
    }
    log.info(
        "%d of %d sentences matched, %d candidates → %s", matched, sentences.rows, n_cands, out
    )
    return Substitution(kept, {**meta, "metrics": metrics}, metrics)


def _rules(
    spec: dict, lang: str, theta: float, max_words: int
) -> tuple[dict, pd.DataFrame, RuleIndex, list[str]]:
    """The dictionary `spec` (ppdb_substitute.dictionary.<lang>) read: its report, the
    rules with p >= theta, their index and the notes (a note when no rule is left)."""
    try:
        table = read_dictionary(spec["path"], spec["format"])
    except DictionaryError as err:
        raise InputError(f"ppdb_substitute.dictionary.{lang}: {err}") from None
    report = table.report()
    kept = keep_rules(table.rules, theta)
    index = RuleIndex(kept, lang, max_words)
    log.info(
        "%s: %d rules read, %d with p >= theta=%s, %d usable",
        spec["path"],
        len(table.rules),
        len(kept),
        theta,
        len(index),
    )
    notes = []
    if len(index) == 0:
        notes.append(f"no rule of {spec['path']} has p >= theta={theta}: nothing to substitute")
        log.warning(notes[-1])
    return report, kept, index, notes


def _metadata(report: dict, spec: dict, theta: float, lang: str) -> dict:
    """The candidates' metadata: the dictionary, its probabilities' kind, theta."""
    return {
        "stage": "ppdb_substitute",
        "probability": report["probability"],
        "stand_in_probability": report["stand_in_probability"],
        "dictionary": {"format": spec["format"], "path": spec["path"]},
        "theta": theta,
        "lang": lang,
    }


def _counts(
    kept: pd.DataFrame, index: RuleIndex, sentences: int, matched: int, n_cands: int
) -> dict:
    """The metrics' counts of rules, sentences and candidates."""
    return {
        "rules_kept_theta": int(len(kept)),
        "rules_usable": len(index),
        "rules_too_long": index.too_long,
        "sentences": sentences,
        "sentences_matched": matched,
        "candidates": int(n_cands),
        "candidates_per_matched_sentence": round(n_cands / matched, 4) if matched else 0.0,
    }


# dvc.yaml's metrics (paracl.core.key_figures): rules kept at θ, candidates made
KEY_FIGURES = ("rules_kept_theta", "candidates")


def main(params: dict) -> None:
    paths = args("corpus", "rules", "candidates", "metrics")
    done = substitute_corpus(
        paths.corpus,
        paths.candidates,
        params["ppdb_substitute"],
        params["lang"],
        params["theta"],
        Engine.from_params(params),
    )
    write_parquet(done.rules, paths.rules, schemas.PPDB_RULES, metadata=done.metadata)
    write_metrics(done.metrics, paths.metrics, KEY_FIGURES)
