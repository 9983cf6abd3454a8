"""T5's span-corruption objective: which tokens to hide, and the (input, target) pair.

A port of `random_spans_noise_mask` and `noise_span_to_unique_sentinel` from the T5
code base (google-research/text-to-text-transfer-transformer, preprocessors.py), in
NumPy with an explicit Generator so a seed fixes every mask. JCSE adapts T5 to the
target domain with exactly T5's setting: 15 % of tokens, mean span length 3 (§3.2).
"""

from __future__ import annotations

import numpy as np


def _random_segmentation(num_items: int, num_segments: int, rng: np.random.Generator):
    """Split num_items into num_segments non-empty parts at random; return their lengths."""
    first = np.arange(num_items - 1) < (num_segments - 1)
    rng.shuffle(first)
    segment_id = np.cumsum(np.pad(first, [[1, 0]]))
    return np.unique(segment_id, return_counts=True)[1]


def random_spans_noise_mask(
    length: int,
    noise_density: float,
    mean_noise_span_length: float,
    rng: np.random.Generator,
) -> np.ndarray:
    """Boolean mask of `length` with about noise_density*length True in spans.

    As in T5: the number of noise tokens is round(length * density) (at least 1, at
    most length-1), the number of spans round(noise / mean span length) (at least 1),
    noise and non-noise span lengths are random segmentations, and the sequence always
    starts with a non-noise span.
    """
    orig_length = length
    length = max(length, 2)
    num_noise = int(round(length * noise_density))
    num_noise = min(max(num_noise, 1), length - 1)
    num_spans = max(int(round(num_noise / mean_noise_span_length)), 1)
    num_nonnoise = length - num_noise
    num_spans = min(num_spans, num_nonnoise)
    noise_lengths = _random_segmentation(num_noise, num_spans, rng)
    nonnoise_lengths = _random_segmentation(num_nonnoise, num_spans, rng)
    interleaved = np.stack([nonnoise_lengths, noise_lengths], axis=1).reshape(-1)
    starts = np.cumsum(interleaved)[:-1]
    indicator = np.zeros(length, dtype=np.int64)
    indicator[starts] = 1
    is_noise = np.cumsum(indicator) % 2 == 1
    return is_noise[:orig_length]


def span_corrupt(
    ids: list[int], noise: np.ndarray, sentinel_ids: list[int], eos_id: int
) -> tuple[list[int], list[int]]:
    """(input, target) for T5 denoising: each noise span of `ids` becomes a sentinel.

    input  = kept tokens with sentinel_k where the k-th noise span was, then eos;
    target = sentinel_k followed by the k-th span's tokens, for every span, then eos.
    """
    inp: list[int] = []
    tgt: list[int] = []
    k = -1
    prev = False
    for token, is_noise in zip(ids, noise, strict=True):
        if is_noise:
            if not prev:
                k += 1
                if k >= len(sentinel_ids):
                    raise ValueError(f"more noise spans than the {len(sentinel_ids)} sentinels")
                inp.append(sentinel_ids[k])
                tgt.append(sentinel_ids[k])
            tgt.append(token)
        else:
            inp.append(token)
        prev = bool(is_noise)
    return inp + [eos_id], tgt + [eos_id]
