"""Summaries over seeds and the paired test that says how sure a comparison is."""

from __future__ import annotations

import math
import statistics
from typing import Mapping, Sequence


def mean_std(values: Sequence[float]) -> tuple[float, float]:
    """Mean and sample standard deviation (0 for a single value).

    >>> mean_std([1.0, 3.0])
    (2.0, 1.4142135623730951)
    """
    values = list(values)
    return statistics.mean(values), statistics.stdev(values) if len(values) > 1 else 0.0


def relative_improvement(value: float, base: float) -> float:
    """(value - base) / base in percent; nan when the base is 0.

    >>> round(relative_improvement(0.0291, 0.0265), 2)
    9.81
    """
    return (value - base) / base * 100.0 if base else math.nan


def paired_p_value(variant: Sequence[float], base: Sequence[float]) -> float:
    """Two-sided paired t-test p-value over seeds (pairs share a seed); nan with fewer than two
    pairs. Identical pairs give p = 1. The same nonzero difference on every seed (common when a
    small test set moves a recall in steps of 1/users) leaves the t statistic undefined: nan, not
    the p = 0 of an infinite t, which would claim certainty from two or three seeds.

    >>> paired_p_value([0.0867, 0.1367], [0.0767, 0.1267])  # +0.01 on both seeds, up to rounding
    nan
    """
    from scipy.stats import ttest_rel

    if len(variant) != len(base):
        raise ValueError("paired test needs one value per seed on both sides")
    if len(variant) < 2:
        return math.nan
    differences = [v - b for v, b in zip(variant, base)]
    if all(d == 0 for d in differences):
        return 1.0
    # Equal up to floating point: scipy would divide by a variance of rounding errors.
    scale = max(1.0, *(abs(x) for x in (*variant, *base)))
    if max(differences) - min(differences) <= 1e-12 * scale:
        return math.nan
    return float(ttest_rel(variant, base).pvalue)


def summary_against(values: Mapping[int, float], reference: Mapping[int, float]) -> tuple[float, float, float, float]:
    """One cell of a comparison: the mean and std of ``values`` (one per seed) over all their seeds,
    and the improvement in % and the paired p-value against ``reference``, its values on the seeds
    to pair, those both sides have (both nan without any: nothing to pair).

    >>> [round(x, 4) for x in summary_against({1: 0.2, 2: 0.4, 3: 0.9}, {1: 0.1, 2: 0.2})]
    [0.5, 0.3606, 100.0, 0.2048]
    """
    mean, std = mean_std([values[s] for s in sorted(values)])
    seeds = sorted(reference)
    if not seeds:
        return mean, std, math.nan, math.nan
    shared, base_shared = [values[s] for s in seeds], [reference[s] for s in seeds]
    return mean, std, relative_improvement(mean_std(shared)[0], mean_std(base_shared)[0]), paired_p_value(shared, base_shared)
