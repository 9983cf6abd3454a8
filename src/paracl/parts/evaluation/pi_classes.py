"""Table II's classes of the cross-lingual PI paper, and Table I's mean over them.

The paper scores three classes of pairs (§III-A, Table II): a phrase against a paraphrase
in the other language (inter-para), against its own translation (inter-same), and within
one language (intra). Its Table I mean accuracy is the mean of those three: 79.3 =
(77.4 + 82.2 + 78.3) / 3. A mean over the sets instead (en, ja, en–ja, ja–en) weighs the
classes otherwise and leaves the translation pairs out.

Light on purpose (numpy only): the summary and `paracl report` read it without loading
an encoder.
"""

from __future__ import annotations

import numpy as np

# each class pools these scored sets (tasks.PI_XLING's jobs: en, ja and their cross pairs;
# the set names are the language codes, spelt here so that this module imports nothing)
PI_CLASSES = {
    "inter_para": ("en_ja", "ja_en"),
    "inter_same": ("translation",),
    "intra": ("en", "ja"),
}


def class_scores(values: dict[str, float | None], pairs: dict[str, int] | None = None) -> dict:
    """Each class's value from its sets' (PI_CLASSES): their mean weighted by their pairs
    (equal weights where a count is missing), which for accuracy is the accuracy over the
    class's pairs pooled. A class with a set missing is left out."""
    out = {}
    for name, sets in PI_CLASSES.items():
        if all(values.get(k) is not None for k in sets):
            counts = [(pairs or {}).get(k) for k in sets]
            weights = counts if all(counts) else None  # a count missing: equal weights
            out[name] = float(np.average([values[k] for k in sets], weights=weights))
    return out


def paper_mean(
    values: dict[str, float | None], pairs: dict[str, int] | None = None
) -> float | None:
    """Table I's mean accuracy: the mean of the three classes' (class_scores). None where a
    class is missing."""
    classes = class_scores(values, pairs)
    return float(np.mean(list(classes.values()))) if len(classes) == len(PI_CLASSES) else None


def chance(positive_share: dict[str, float], measure=paper_mean) -> float | None:
    """The better constant answer's score on a measure (a function of per-set accuracies,
    ×100): accept every pair (each set scores its positive share) or reject every pair
    (its negative share). On one set this is the larger label share; on Table I's mean
    it is the mean over the classes of the share one answer gets, because a threshold is
    one answer for every class."""
    accept = measure(positive_share)
    reject = measure({k: 100.0 - v for k, v in positive_share.items()})
    return None if accept is None or reject is None else max(accept, reject)
