"""Language identification with langdetect, seeded.

langdetect samples n-grams at random: unseeded, the same sentence can pass the 0.99
threshold in one run and fail it in the next. Setting `DetectorFactory.seed` makes
each detector reseed its own generator per call, so a sentence's probability depends
only on its text: the result is the same whatever the order, shard or worker.
"""

from __future__ import annotations

from paracl.core.languages import profile


def set_seed(seed: int) -> None:
    from langdetect import DetectorFactory

    DetectorFactory.seed = seed


def language_prob(text: str, lang: str) -> float:
    """langdetect's probability that `text` is in `lang` (its profile's `langdetect` code;
    0.0 when it has no features)."""
    from langdetect import detect_langs
    from langdetect.lang_detect_exception import LangDetectException

    try:
        ranked = detect_langs(text)
    except LangDetectException:  # no letters langdetect knows (digits, symbols)
        return 0.0
    code = profile(lang).langdetect
    return next((r.prob for r in ranked if r.lang == code), 0.0)


def describe() -> str:
    from importlib.metadata import version

    return f"langdetect {version('langdetect')}"
