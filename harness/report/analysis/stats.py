"""Compare two sides (baseline, candidate) of one workload: ratio, confidence interval, test, verdict.

The protocol follows asv and nvbench (docs/method.md). Each side is a list of per-process
(per-round) medians, so process effects (cuDNN's algorithm choice, allocator layout) count as noise,
as pyperf argues. With a single round per side the raw samples of that one process stand in, and
the verdict says so: process-to-process variation is then not covered.

The exact Mann-Whitney U test needs 7 rounds per side to reach p < 0.002. With fewer (3 or more per
side: a sequential qualification stops adding rounds to rows already decided), the rounds are judged by
Welch's t test on the logarithms of the round medians, and "same" by an equivalence test (TOST: the
1 - 2 alpha interval of the ratio lies inside the threshold). docs/method.md says how resampling
recorded rounds validated that rule.
"""

from __future__ import annotations

import math
import statistics
import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal, TypeGuard

import numpy as np
import numpy.typing as npt
from scipy import stats as scistats

Verdict = Literal["faster", "slower", "same", "inconclusive", "failed", "missing"]
VERDICTS: tuple[Verdict, ...] = ("slower", "faster", "same", "inconclusive", "failed", "missing")
CONFIDENCE = 0.99
Samples = npt.NDArray[np.float64]  # one side's per-round medians, or one process's raw samples
BOOTSTRAP_RESAMPLES = 2000
RATIO_DIGITS = 3  # ratios are shown as 1.050; the threshold is applied at that precision
SEED = 20261122  # a fixed seed: the same results always render the same intervals
WELCH_MIN_ROUNDS = 3  # per side, where the Mann-Whitney test cannot reach alpha
Center = Literal["median", "geometric mean"]
Test = Literal["mann-whitney", "welch-tost", "samples"]
TEST_NAMES: dict[str, str] = {"welch-tost": "Welch", "mann-whitney": "MW", "samples": "samples"}


@dataclass(frozen=True)
class Comparison:
    verdict: Verdict
    ratio: float | None  # candidate time / baseline time: > 1 is slower
    ci_low: float | None
    ci_high: float | None
    p_value: float | None
    basis: str  # "rounds" (per-process medians) or "samples" (one process per side)
    reason: str
    # what the ratio divides, by the statistic the test compares: the ratio is centre_b / centre_a
    center: Center = "median"
    center_a: float | None = None
    center_b: float | None = None
    test: Test = "mann-whitney"
    level: float = CONFIDENCE  # the interval's confidence


def rounds_text(rounds_a: object, rounds_b: object, test: object) -> str:
    """``3+3 Welch``: a row's rounds a side and the test they were judged by."""
    return f"{rounds_a}+{rounds_b} {TEST_NAMES.get(str(test), '')}".rstrip()


def geomean(ratios: Iterable[object]) -> float | None:
    """The geometric mean of the finite, positive ratios among ``ratios``; None where there are none."""
    logs = [math.log(r) for r in ratios if finite(r) and r > 0]
    return math.exp(statistics.fmean(logs)) if logs else None


def finite(value: object) -> TypeGuard[float]:
    """A number that is neither NaN nor infinite; None, text and NaN are not."""
    return isinstance(value, (int, float)) and math.isfinite(value)


def interval_text(low: object, high: object) -> str:
    """An interval as the tables show it, "[0.990, 1.011]"; '' where an end is not a finite number. An end
    of 1000 or more (a few noisy rounds) in three figures, "[0.000, 5.03e+13]", not fifteen."""
    if not (finite(low) and finite(high)):
        return ""
    return "[" + ", ".join(f"{x:.3f}" if abs(x) < 1000 else f"{x:.3g}" for x in (low, high)) + "]"


def change_size(ratio: object) -> float:
    """How large a change a time ratio is, slower or faster alike (|log ratio|); -1 where there is none,
    so rows without a ratio sort last."""
    return abs(math.log(ratio)) if finite(ratio) and ratio > 0 else -1.0


def change_words(ratio: object) -> str:
    """pyperf's words for a time ratio: "7.36x slower", "1.23x faster"; '' where there is none."""
    if not (finite(ratio) and ratio > 0):
        return ""
    return f"{ratio:.2f}x slower" if ratio >= 1 else f"{1 / ratio:.2f}x faster"


_LOG_SPAN = 700.0  # exp(700) is about 1e304: the largest ratio (and interval end) a float holds with room


def time_ratio(after: float, before: float) -> float:
    """``after / before`` of two positive times, computed in logs and held within exp(+-700): valid times
    as far apart as 5e-324 s and 86,400 s give a large finite ratio, never an overflow, zero or inf."""
    return _held_exp(math.log(after) - math.log(before))


def _held_exp(log: float) -> float:
    """exp(log), ``log`` held within +-700: a ratio of valid times far apart stays a finite number."""
    return math.exp(min(max(log, -_LOG_SPAN), _LOG_SPAN))


def _fixed(value: float, digits: int) -> str:
    """A ratio or percentage in ``digits`` decimals, or three figures where it is 1000 or more."""
    return f"{value:.{digits}f}" if abs(value) < 1000 else f"{value:.3g}"


def smallest_p(n_a: int, n_b: int) -> float:
    """The smallest two-sided p-value an exact Mann-Whitney U test can give for these sizes."""
    return 2 / math.comb(n_a + n_b, n_a)


def judge(
    baseline: list[float],
    candidate: list[float],
    threshold_pct: float,
    alpha: float,
    basis: str = "rounds",
) -> Comparison:
    """Classify candidate against baseline; both are per-round medians (or one round's samples)."""
    a: Samples = np.asarray(baseline, dtype=np.float64)
    b: Samples = np.asarray(candidate, dtype=np.float64)
    if basis == "rounds" and min(len(a), len(b)) >= WELCH_MIN_ROUNDS and smallest_p(len(a), len(b)) >= alpha:
        return _welch(a, b, threshold_pct, alpha)
    center_a, center_b = float(np.median(a)), float(np.median(b))
    ratio = time_ratio(center_b, center_a)
    low, high = _ratio_interval(a, b)
    p = _mann_whitney(a, b)
    upper = 1 + threshold_pct / 100
    lower = 1 / upper
    shown = round(ratio, RATIO_DIGITS)
    significant = p is not None and p < alpha
    too_few = _too_few_rounds(len(a), len(b), alpha)
    if basis == "samples":
        # Samples of one process share that process's state (algorithm choice, allocator layout,
        # clocks), so one process per side supports no verdict, only the numbers (docs/method.md).
        return Comparison(
            "inconclusive",
            ratio,
            low,
            high,
            p,
            basis,
            (
                f"one process per side: ratio {_fixed(ratio, 3)}, {CONFIDENCE:.0%} interval "
                f"{interval_text(low, high)} over its "
                "samples cannot separate a change from process-to-process variation; run 7 or more rounds"
            ),
            center_a=center_a,
            center_b=center_b,
            test="samples",
        )
    if significant and shown >= round(upper, RATIO_DIGITS):
        verdict: Verdict = "slower"
        reason = (
            f"{_fixed((ratio - 1) * 100, 1)}% slower, p={p:.2g} < {alpha:g}, beyond the {threshold_pct:g}% "
            "threshold"
        )
    elif significant and shown <= round(lower, RATIO_DIGITS):
        verdict = "faster"
        reason = f"{_fixed((1 / ratio - 1) * 100, 1)}% faster, p={p:.2g} < {alpha:g}"
    elif lower <= low and high <= upper and not too_few:
        verdict = "same"
        reason = (
            f"{CONFIDENCE:.0%} interval [{low:.3f}, {high:.3f}] lies within the {threshold_pct:g}% threshold"
        )
    else:
        verdict = "inconclusive"
        reason = _why_inconclusive(ratio, (low, high), p, alpha, threshold_pct, (len(a), len(b)))
    return Comparison(verdict, ratio, low, high, p, basis, reason, center_a=center_a, center_b=center_b)


def _welch(a: Samples, b: Samples, threshold_pct: float, alpha: float) -> Comparison:
    """Rounds too few for the Mann-Whitney test: Welch's t on log medians, TOST for "same".

    The ratio is the geometric mean ratio; the interval is the 1 - 2 alpha one that TOST uses."""
    x, y = np.log(a), np.log(b)
    diff = float(y.mean() - x.mean())

    def welch(verdict: Verdict, low: float, high: float, p: float, reason: str) -> Comparison:
        return Comparison(
            verdict,
            ratio,
            low,
            high,
            p,
            "rounds",
            reason,
            center="geometric mean",
            center_a=math.exp(float(x.mean())),
            center_b=math.exp(float(y.mean())),
            test="welch-tost",
            level=1 - 2 * alpha,
        )

    va, vb = float(x.var(ddof=1)) / len(x), float(y.var(ddof=1)) / len(y)
    se = math.sqrt(va + vb)
    bound = math.log(1 + threshold_pct / 100)
    ratio = _held_exp(diff)
    shown, upper = round(ratio, RATIO_DIGITS), round(1 + threshold_pct / 100, RATIO_DIGITS)
    lower = round(1 / (1 + threshold_pct / 100), RATIO_DIGITS)
    rounds = f"{len(a)}+{len(b)} rounds, Welch's t on log medians"
    if se == 0:  # identical rounds on each side: the difference is exact
        verdict: Verdict = "slower" if shown >= upper else "faster" if shown <= lower else "same"
        return welch(verdict, ratio, ratio, 0.0 if diff else 1.0, f"exact ({rounds})")
    df = (va + vb) ** 2 / (va**2 / (len(x) - 1) + vb**2 / (len(y) - 1))
    p = float(2 * scistats.t.sf(abs(diff) / se, df))
    half = float(scistats.t.ppf(1 - alpha, df)) * se
    # a tiny alpha over few rounds gives a half-width no float's exp holds: the interval is then open-ended
    low, high = _held_exp(diff - half), _held_exp(diff + half)
    level = f"{1 - 2 * alpha:.1%}"
    if p < alpha and shown >= upper:
        verdict = "slower"
        reason = f"{_fixed((ratio - 1) * 100, 1)}% slower, p={p:.2g} < {alpha:g} ({rounds})"
    elif p < alpha and shown <= lower:
        verdict = "faster"
        reason = f"{_fixed((1 / ratio - 1) * 100, 1)}% faster, p={p:.2g} < {alpha:g} ({rounds})"
    elif -bound < diff - half and diff + half < bound:
        verdict = "same"
        reason = (
            f"{level} interval [{low:.3f}, {high:.3f}] lies within the {threshold_pct:g}% threshold "
            f"({rounds})"
        )
    else:
        verdict = "inconclusive"
        reason = (
            f"ratio {_fixed(ratio, 3)}, p={p:.2g}, {level} interval {interval_text(low, high)} reaches "
            f"beyond the {threshold_pct:g}% threshold ({rounds}); more rounds narrow it"
        )
    return welch(verdict, low, high, p, reason)


def _too_few_rounds(n_a: int, n_b: int, alpha: float) -> bool:
    """Fewer than 3 rounds a side where no rank test can reach alpha: nothing is decided, same included,
    since a bootstrap over 2 medians a side is as narrow as those 2 happen to agree."""
    return min(n_a, n_b) < WELCH_MIN_ROUNDS and smallest_p(n_a, n_b) >= alpha


def _why_inconclusive(
    ratio: float,
    interval: tuple[float, float],
    p: float | None,
    alpha: float,
    pct: float,
    sizes: tuple[int, int],
) -> str:
    """Why a row is neither slower, faster nor the same: ``interval`` (low, high) of the ratio, ``sizes`` the
    number of values on each side."""
    (low, high), (n_a, n_b) = interval, sizes
    told = (
        f"{CONFIDENCE:.0%} interval [{_fixed(low, 3)}, {_fixed(high, 3)}] reaches beyond the {pct:g}% "
        "threshold"
    )
    if p is None:
        return f"{told}; no test possible with {n_a}+{n_b} values"
    if _too_few_rounds(n_a, n_b, alpha):
        return (
            f"ratio {_fixed(ratio, 3)}: {n_a}+{n_b} rounds decide nothing (smallest p "
            f"{smallest_p(n_a, n_b):.2g}; no sameness either); run {WELCH_MIN_ROUNDS} or more a side"
        )
    if 1 / (1 + pct / 100) < ratio < 1 + pct / 100:
        return f"ratio {_fixed(ratio, 3)} is inside the threshold, but the {told}; more rounds narrow it"
    return f"ratio {_fixed(ratio, 3)} is beyond the threshold but not significant (p={p:.2g} >= {alpha:g})"


def _mann_whitney(a: Samples, b: Samples) -> float | None:
    if len(a) < 1 or len(b) < 1 or len(a) + len(b) < 3:
        return None
    if np.all(a == a[0]) and np.all(b == a[0]):
        return 1.0  # identical constants: no evidence of a difference (scipy would return nan)
    method: Literal["exact", "asymptotic"] = "exact" if len(a) <= 50 and len(b) <= 50 else "asymptotic"
    return float(scistats.mannwhitneyu(b, a, alternative="two-sided", method=method).pvalue)


def _ratio_interval(a: Samples, b: Samples) -> tuple[float, float]:
    """Percentile bootstrap interval of median(b) / median(a), resampling each side independently."""
    if len(a) < 2 or len(b) < 2 or (np.all(a == a[0]) and np.all(b == b[0])):
        ratio = time_ratio(float(np.median(b)), float(np.median(a)))
        return (ratio, ratio) if len(a) > 1 and len(b) > 1 else (0.0, math.inf)
    with warnings.catch_warnings(), np.errstate(over="ignore", invalid="ignore"):  # its spread of 1e304s
        warnings.simplefilter("ignore", category=scistats.DegenerateDataWarning)
        result = scistats.bootstrap(
            (b, a),
            _median_ratio,
            vectorized=True,
            paired=False,
            confidence_level=CONFIDENCE,
            n_resamples=BOOTSTRAP_RESAMPLES,
            batch=200,
            method="percentile",
            random_state=np.random.default_rng(SEED),
        )
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


_RATIO_SPAN = (math.exp(-_LOG_SPAN), math.exp(_LOG_SPAN))


def _median_ratio(x: Samples, y: Samples, axis: int) -> Samples:
    """median(x) / median(y) held within exp(+-700), as ``time_ratio``: the bootstrap's statistic, which
    a resample of valid times far apart would otherwise take to inf or 0."""
    with np.errstate(over="ignore", under="ignore"):
        ratios: Samples = np.median(x, axis=axis) / np.median(y, axis=axis)
    return np.clip(ratios, *_RATIO_SPAN)
