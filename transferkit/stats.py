r"""Monte Carlo statistics shared by every chapter.

Agreement between simulated means and closed forms with Bonferroni-corrected critical values
(:func:`agreement`), rank correlations and R^2 with bootstrap intervals (:func:`score`,
:func:`rank_correlation`, :func:`r_squared`), power-law fits, and the measures of learned
representations used by papers 003/004 (participation ratio, ENSD, clustering of units).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from scipy import stats

from ._validate import (MAX_INT, as_array, check_array, check_axis, check_broadcast,
                        check_budget, check_int, check_open_unit, check_real, check_seed,
                        InputTypeError)

__all__ = ["Agreement", "agreement", "critical_value", "risk_error_bound", "participation_ratio", "ensd", "rank_correlation", "Score", "ScoreRow", "score", "spearman", "score_table", "kernel_distance", "fit_power_law", "kmeans_inertia", "direction_spread", "alignment_score", "r_squared", "table_r2", "pow2_normalise", "mean_se", "Paired", "paired_test"]


def critical_value(n_tests: int, draws: int | None, fwer: float = 0.01) -> float:
    r"""Two-sided Bonferroni critical value :math:`t_{m-1}^{-1}(1 - \mathrm{fwer}/2k)`.

    Parameters
    ----------
    n_tests : int
        Number ``k`` of cells compared (>= 1, at most :math:`2^{53}`).
    draws : int or None
        Draws ``m`` per cell (>= 2, at most :math:`2^{53}`); ``None`` when the standard
        deviation is known exactly, which gives the normal quantile instead of Student's.
    fwer : float in (0, 1)
        Family-wise false-alarm probability.
    """
    n_tests = check_int("n_tests", n_tests, 1, MAX_INT)
    if draws is not None:
        draws = check_int("draws", draws, 2, MAX_INT)
    fwer = check_open_unit("fwer", fwer)
    q = 1 - fwer / (2 * n_tests)
    return float(stats.norm.ppf(q) if draws is None else stats.t.ppf(q, df=draws - 1))


@dataclass
class Agreement:
    """Per-cell comparison of simulated draws with theory."""

    mean: np.ndarray
    std: np.ndarray
    se: np.ndarray
    theory: np.ndarray
    z: np.ndarray          # (mean - theory) / se
    critical: float        # Bonferroni t critical value
    mask: np.ndarray       # cells that were compared
    atol: np.ndarray       # optimisation error allowed on top of the MC error

    @property
    def excess(self) -> np.ndarray:
        """``|mean - theory| / (critical se + atol)``: above 1 is a disagreement."""
        with np.errstate(divide="ignore", invalid="ignore"):
            tol = self.critical * self.se + self.atol
            e = np.where(tol > 0, np.abs(self.mean - self.theory) / np.where(tol > 0, tol, 1.0),
                         np.where(np.isclose(self.mean, self.theory, rtol=1e-9, atol=1e-12),
                                  0.0, np.inf))
        return np.where(self.mask, e, 0.0)

    @property
    def disagree(self) -> np.ndarray:
        """Boolean map of the compared cells that disagree."""
        return self.mask & (self.excess > 1)

    @property
    def n_compared(self) -> int:
        return int(self.mask.sum())

    @property
    def worst(self) -> float:
        """Largest ``|z|`` over the compared cells."""
        return float(np.abs(self.z[self.mask]).max()) if self.mask.any() else 0.0

    @property
    def ok(self) -> bool:
        return not bool(self.disagree.any())

    def summary(self, name: str = "") -> str:
        head = f"{name}: " if name else ""
        opt = (" plus the certified optimisation error"
               if np.any(self.atol[self.mask] > 0) else "")
        return (f"{head}{self.n_compared} cells compared, max |z| = {self.worst:.2f} "
                f"(critical {self.critical:.2f} at 1% family-wise{opt}), "
                f"{int(self.disagree.sum())} disagree -> {'agree' if self.ok else 'DISAGREE'}")


def agreement(draws: np.ndarray, theory, mask=None, fwer: float = 0.01, atol=0.0,
              std=None) -> Agreement:
    r"""Compare per-draw simulation values (last axis) with a theoretical mean.

    Parameters
    ----------
    draws : array ``(..., m)``
        Simulated values, one per independent draw.
    theory : array broadcastable to ``draws.shape[:-1]``
        Theoretical expectation per cell; cells where it is infinite are excluded.
    mask : boolean array, optional
        Cells to compare (default: all finite ones).
    atol : float or array, optional
        Optimisation error allowed on top of the Monte Carlo error, per cell (>= 0): a
        cell disagrees when :math:`|\bar x - \mu| > t_{\rm crit}\,\mathrm{se} + \mathrm{atol}`.
        It comes from the trainer's convergence certificate
        (:func:`risk_error_bound`), never from the observed discrepancy.
    std : array, optional
        The exact standard deviation (>= 0) of one draw, when theory provides it (e.g.
        :func:`transferkit.theory.deep_linear.linear_transfer_risk_std`).  Then the standard error is
        ``std / sqrt(m)`` and the critical value is normal; otherwise both are estimated
        from the draws (Student's t).  Small samples of skewed risks can have a sample
        standard deviation far below the true one, so the exact one is preferred.

    Notes
    -----
    The standard error is estimated from the draws themselves; for heavy-tailed risks
    (near :math:`n = d`, where the scratch risk has no variance) the estimate is
    unreliable, so callers exclude those cells through ``mask`` and say so.
    """
    draws = as_array("draws", draws)
    check_open_unit("fwer", fwer)
    if draws.ndim < 1 or draws.shape[-1] < 2:
        raise ValueError("draws must have at least 2 entries along its last axis")
    cells = draws.shape[:-1]
    theory = _to_cells("theory", as_array("theory", theory), cells)
    atol = _to_cells("atol", as_array("atol", atol), cells)
    if not np.all(np.isfinite(atol) & (atol >= 0)):
        raise ValueError("atol must be finite and >= 0")
    if std is not None:
        std = _to_cells("std", as_array("std", std), cells)
        if np.any(std < 0):
            raise ValueError("std must be >= 0 (inf and NaN mark cells without a finite std)")
    if mask is not None:
        mask = np.asarray(mask) if not isinstance(mask, (str, bytes)) else None
        if mask is None or mask.dtype != bool:
            raise InputTypeError("mask must be a boolean array (cells to compare)")
        mask = _to_cells("mask", mask, cells)
    m = draws.shape[-1]
    _, mean, sd = _mean_sd(draws, -1, np.ones(draws.shape, bool))
    known = std is not None
    std = sd if not known else np.broadcast_to(std, mean.shape)
    se = std / np.sqrt(m)
    th = np.broadcast_to(theory, mean.shape)
    ok = np.isfinite(th) & np.isfinite(mean) & np.isfinite(se)
    mask = ok if mask is None else (np.broadcast_to(mask, mean.shape) & ok)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(se > 0, (mean - th) / np.where(se > 0, se, 1.0),
                     np.where(np.isclose(mean, th, rtol=1e-9, atol=1e-12), 0.0, np.inf))
    z = np.where(mask, z, 0.0)
    crit = critical_value(max(int(mask.sum()), 1), None if known else m, fwer)
    atol = np.broadcast_to(atol, mean.shape)
    return Agreement(mean, std, se, th, z, crit, mask, atol)


def _to_cells(name, a, cells):
    """``a`` (an array) checked to broadcast to the ``cells`` shape, else ``ValueError``."""
    try:
        np.broadcast_to(a, cells)
    except ValueError:
        raise ValueError(f"{name} must broadcast to the cells draws.shape[:-1] = {cells} "
                         f"(got shape {a.shape})") from None
    return a


def _pow2_tame(a, axes, limit=500):
    """``a`` scaled, per slice over ``axes``, by the power of two that brings its largest
    entry into [0.5, 1) -- only in slices whose largest entry is beyond ``2**limit`` or below
    ``2**-limit`` (where squares and products would overflow or underflow; a statistic of
    degree ``k`` in the entries needs ``limit`` below about ``1000 / k``).  Other slices
    are returned untouched, bit for bit; for scale-invariant statistics the result is
    exact wherever it is applied."""
    if a.size == 0:
        return a
    top = np.max(np.abs(a), axis=axes, keepdims=True)
    _, e = np.frexp(np.where(top > 0, top, 1.0))
    return np.ldexp(a, np.where(np.abs(e) > limit, -e, 0))


def risk_error_bound(risk, dist):
    r"""Bound on the error of a risk caused by stopping at distance ``dist`` from the optimum.

    With :math:`R = \|\hat\beta - \beta_t\|^2`, :math:`R_\star = \|\beta_\star - \beta_t\|^2`
    and :math:`\|\hat\beta - \beta_\star\| \le \delta`, the triangle inequality gives
    :math:`|\sqrt R - \sqrt{R_\star}| \le \delta`, hence
    :math:`|R - R_\star| \le \delta\,(2\sqrt R + \delta)`.
    """
    risk = as_array("risk", risk)
    dist = as_array("dist", dist)
    if not (np.all(risk >= 0) and np.all(dist >= 0)):  # NaN fails too
        raise ValueError("risk and dist must be >= 0 (inf allowed, NaN not)")
    check_broadcast(risk=risk, dist=dist)
    with np.errstate(invalid="ignore"):
        bound = dist * (2 * np.sqrt(risk) + dist)
    return np.where(dist == 0, 0.0, bound)  # an exact optimum has no error, even at inf risk


# ---------------------------------------------------------------------------
# dimensionality of representations (paper 004, App. G)
# ---------------------------------------------------------------------------


def _centred(X, name, limit):
    X = as_array(name, X)
    if X.ndim < 2 or X.shape[-2] < 2 or not np.all(np.isfinite(X)):
        raise ValueError(f"{name} must be a finite (..., n, p) array with n >= 2")
    # entries beyond 2**+-limit (e.g. near 1e308 or 1e-308): exact power-of-two rescaling
    X = _pow2_tame(X, (-2, -1), limit)
    return X - X.mean(-2, keepdims=True)


def participation_ratio(X):
    r"""Participation ratio of responses ``X`` ``(..., n, p)`` (paper 004, App. G):

    .. math:: \mathrm{PR}(X) = \frac{(\sum_i\lambda_i)^2}{\sum_i\lambda_i^2}
              = \frac{\operatorname{tr}(C_X)^2}{\operatorname{tr}(C_X^2)},

    with :math:`C_X` the covariance of the (mean-centred) rows.  Between 1 and
    :math:`\min(n-1, p)`; ``nan``-free: a constant representation has PR 0 by convention.
    Scale invariant: a representation whose entries are beyond :math:`2^{\pm 200}` (the
    statistic is of degree 4 in them) is first rescaled by a power of two (exact), so
    entries near 1e308 do not overflow.
    """
    X = _centred(X, "X", 200)
    G = X.swapaxes(-1, -2) @ X
    tr = np.trace(G, axis1=-2, axis2=-1)
    tr2 = (G * G).sum((-2, -1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(tr2 > 0, tr ** 2 / np.where(tr2 > 0, tr2, 1.0), 0.0)


def ensd(X, Y):
    r"""Effective number of shared dimensions (Giaffar et al. 2023; paper 004, App. G):

    .. math:: \mathrm{ENSD}(X,Y) = \frac{\operatorname{tr}(Y^\top XX^\top Y)\,
              \operatorname{tr}(X^\top X)\,\operatorname{tr}(Y^\top Y)}
              {\operatorname{tr}(X^\top XX^\top X)\,\operatorname{tr}(Y^\top YY^\top Y)}.

    ``X`` ``(..., n, p)`` and ``Y`` ``(..., n, q)``, finite, with the same ``n`` and leading
    axes that broadcast; 0 where either is constant.  Scale invariant in each: entries
    beyond :math:`2^{\pm 100}` (the statistic is of degree 8) are first rescaled by a
    power of two (exact).
    """
    X, Y = _centred(X, "X", 100), _centred(Y, "Y", 100)
    if X.shape[-2] != Y.shape[-2]:
        raise ValueError(f"X and Y must have the same number of samples (rows) "
                         f"(got X {X.shape}, Y {Y.shape})")
    try:
        np.broadcast_shapes(X.shape[:-2], Y.shape[:-2])
    except ValueError:
        raise ValueError(f"X and Y must have leading (batch) axes that broadcast together "
                         f"(got X {X.shape}, Y {Y.shape})") from None
    # feature-space forms (p x p), never the n x n Gram matrices:
    # tr(Y'XX'Y) = ||X'Y||_F^2, tr(X'XX'X) = ||X'X||_F^2
    xy = X.swapaxes(-1, -2) @ Y
    xx = X.swapaxes(-1, -2) @ X
    yy = Y.swapaxes(-1, -2) @ Y
    num = (xy ** 2).sum((-2, -1)) * np.trace(xx, axis1=-2, axis2=-1) * np.trace(yy, axis1=-2, axis2=-1)
    den = (xx ** 2).sum((-2, -1)) * (yy ** 2).sum((-2, -1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), 0.0)


# ---------------------------------------------------------------------------
# rank correlation with a bootstrap interval
# ---------------------------------------------------------------------------

def rank_correlation(x, y, n_boot: int = 2000, level: float = 0.95, seed: int = 0):
    r"""Spearman's :math:`\rho` between ``x`` and ``y`` with a paired bootstrap interval.

    The interval resamples the *pairs* (``scipy.stats.bootstrap``, percentile method,
    ``n_boot`` resamples).  Returns ``(rho, low, high)``.  ``ValueError`` when ``x`` or
    ``y`` is constant (no ranking); resamples in which one of them is constant have no
    correlation and are left out of the interval (as in :func:`score`).
    """
    x = check_array("x", x, 0).ravel()
    y = check_array("y", y, 0).ravel()
    if x.shape != y.shape or x.size < 3:
        raise ValueError(f"x and y must have the same length >= 3 (got {x.size} and {y.size})")
    n_boot = check_int("n_boot", n_boot, 10)
    _level(level)
    seed = check_seed("seed", seed, allow_generator=True)
    _boot_budget(n_boot, x.size)
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        raise ValueError("x and y must not be constant (a rank correlation needs variation)")
    rho = float(stats.spearmanr(x, y).statistic)

    def stat(a, b):
        return stats.spearmanr(a, b).statistic

    with warnings.catch_warnings():  # resamples in which x or y is constant: handled below
        warnings.simplefilter("ignore", stats.ConstantInputWarning)
        warnings.simplefilter("ignore", stats.DegenerateDataWarning)
        res = stats.bootstrap((x, y), stat, paired=True, vectorized=False, n_resamples=n_boot,
                              confidence_level=level, method="percentile",
                              random_state=np.random.default_rng(seed))
    low, high = float(res.confidence_interval.low), float(res.confidence_interval.high)
    if not (math.isfinite(low) and math.isfinite(high)):  # constant resamples: no rho
        low, high = (float(v) for v in _percentiles(res.bootstrap_distribution, level, "x, y"))
    return rho, low, high


def _boot_budget(n_boot, n):
    """Refuse, before drawing, ``n_boot`` resamples of ``n`` pairs that would not fit in memory
    (indices and two resampled arrays, 8 bytes each)."""
    check_budget("n_boot", n_boot, 3 * 8 * n_boot * n)


def _percentiles(values, level, names):
    """The two-sided percentile interval at ``level`` of the finite ``values`` (the statistic
    of the bootstrap resamples that have one); ``ValueError`` naming ``names`` when none has."""
    values = np.asarray(values, dtype=float)
    values = values[np.isfinite(values)]
    if values.size == 0:
        raise ValueError(f"{names}: no bootstrap resample has a correlation (every one is "
                         "without variation); give more, or more varied, data")
    return np.percentile(values, [(1 - level) / 2 * 100, (1 + level) / 2 * 100])


# ---------------------------------------------------------------------------------------
# scoring
# ---------------------------------------------------------------------------------------

def _pair(x, y):
    x = check_array("x", x, 0).ravel()
    y = check_array("y", y, 0).ravel()
    if x.shape != y.shape or x.size < 3:
        raise ValueError(f"x and y must have the same length >= 3 (got {x.size} and {y.size})")
    return pow2_normalise(x), pow2_normalise(y)


def pow2_normalise(a, axis=None):
    """``a`` scaled by the power of two that brings its largest entry (along ``axis``) into
    [0.5, 1).  Exact: every statistic of this module is unchanged bit for bit where
    nothing overflowed before, and scale invariant where something did (the R^2 of a
    predictor times 1e200 is the R^2 of the predictor)."""
    a = check_array("a", a, 0)
    axis = check_axis("axis", axis, a.ndim)
    if a.size == 0:
        return a
    top = np.max(np.abs(a), axis=axis, keepdims=axis is not None)
    _, e = np.frexp(np.where(top > 0, top, 1.0))
    return np.ldexp(a, -e)


def _level(level) -> float:
    return check_open_unit("level", level)


def _ranks(a):
    """Average ranks along the last axis (ties share their mean rank), as scipy does."""
    return stats.rankdata(a, axis=-1)


def _pearson(a, b):
    ac = a - a.mean(-1, keepdims=True)
    bc = b - b.mean(-1, keepdims=True)
    num = (ac * bc).sum(-1)
    den = np.sqrt((ac ** 2).sum(-1) * (bc ** 2).sum(-1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def spearman(x, y):
    r"""Spearman's rank correlation along the last axis: Pearson's :math:`r` of the average
    ranks (ties share their mean rank, as :func:`scipy.stats.spearmanr` does).

    ``nan`` where ``x`` or ``y`` is constant along that axis: no ranking, the correlation
    is undefined. :func:`score` validates its input and adds bootstrap intervals.
    """
    x, y = check_array("x", x, 1), check_array("y", y, 1)
    check_broadcast(x=x, y=y)
    return _pearson(_ranks(x), _ranks(y))


@dataclass(frozen=True)
class Score:
    r"""Spearman's :math:`\rho` and :math:`R^2` of a predictor against an outcome, with
    bootstrap intervals: the result of :func:`score`.

    Attributes
    ----------
    rho, rho_lo, rho_hi : float
        Spearman's :math:`\rho` and its percentile interval.
    r2, r2_lo, r2_hi : float
        :math:`R^2`, the squared Pearson correlation, and its percentile interval.
    n : int
        Number of tasks (pairs of predictor and outcome values).
    dropped : int
        Bootstrap resamples left out because ``x`` or ``y`` was constant in them.
    """

    rho: float
    rho_lo: float
    rho_hi: float
    r2: float
    r2_lo: float
    r2_hi: float
    n: int
    dropped: int


@dataclass(frozen=True)
class ScoreRow(Score):
    r"""One row of :func:`score_table`: the :class:`Score` of one predictor against one
    outcome, with their names.

    Attributes
    ----------
    rho, rho_lo, rho_hi, r2, r2_lo, r2_hi, n, dropped
        As in :class:`Score`; the six statistics are ``nan`` for a constant predictor.
    predictor, outcome : str
        The keys of the predictor and the outcome in the dicts given to :func:`score_table`.
    constant : bool
        Whether the predictor (or the outcome) is constant over the tasks, so that it has no
        correlation.
    """

    predictor: str
    outcome: str
    constant: bool


def score(x, y, n_boot: int = 2000, level: float = 0.95, seed: int = 0) -> Score:
    r"""Spearman's :math:`\rho` and :math:`R^2` of predictor ``x`` against outcome ``y``.

    .. math:: \rho = \mathrm{corr}(\mathrm{rank}\,x, \mathrm{rank}\,y), \qquad
              R^2 = \mathrm{corr}(x, y)^2 ,

    (:math:`R^2` is paper 001's Table 1 statistic, the coefficient of determination of the
    least-squares line), with percentile intervals from ``n_boot`` paired bootstrap
    resamples of the tasks at confidence ``level``. A resample in which ``x`` or ``y`` is
    constant has no correlation; such resamples are dropped (their number is returned as
    ``dropped``). ``ValueError`` when ``x`` or ``y`` itself is constant, or when every
    resample is.

    Returns a :class:`Score` (``rho, rho_lo, rho_hi, r2, r2_lo, r2_hi, n, dropped``).
    """
    x, y = _pair(x, y)
    n_boot = check_int("n_boot", n_boot, 10)
    _level(level)
    seed = check_seed("seed", seed)
    _boot_budget(n_boot, x.size)
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        raise ValueError("x and y must not be constant (a correlation needs variation)")
    rho = float(spearman(x, y))
    r = float(_pearson(x, y))
    idx = np.random.default_rng([seed, 8]).integers(0, x.size, (n_boot, x.size))
    xb, yb = x[idx], y[idx]
    rb = spearman(xb, yb)
    pb = _pearson(xb, yb) ** 2
    ok = np.isfinite(rb) & np.isfinite(pb)
    lo_r, hi_r = _percentiles(rb[ok], level, "x, y")
    lo_2, hi_2 = _percentiles(pb[ok], level, "x, y")
    return Score(rho=rho, rho_lo=float(lo_r), rho_hi=float(hi_r), r2=r * r,
                 r2_lo=float(lo_2), r2_hi=float(hi_2), n=int(x.size),
                 dropped=int((~ok).sum()))


def score_table(preds: dict, outcomes: dict, n_boot: int = 2000, level: float = 0.95,
                seed: int = 0) -> list[ScoreRow]:
    """:func:`score` for every predictor in ``preds`` against every outcome in ``outcomes``
    (dicts name -> array over the same tasks). Returns a list of :class:`ScoreRow`, outcome
    by outcome, predictors in the order of ``preds``. A predictor (or an outcome) that is
    constant over the tasks gets ``nan`` scores and ``constant=True``; any other bad value
    is a ``ValueError`` naming its predictor and outcome."""
    for name, d in (("preds", preds), ("outcomes", outcomes)):
        if not isinstance(d, Mapping):
            raise InputTypeError(f"{name} must be a dict of name -> array (got {type(d).__name__})")
    rows = []
    for o, y in outcomes.items():
        for p, x in preds.items():
            try:
                s = score(x, y, n_boot, level, seed)
                row = ScoreRow(**vars(s), predictor=p, outcome=o, constant=False)
            except ValueError as err:
                if "must not be constant" not in str(err):
                    raise type(err)(f"predictor {p!r}, outcome {o!r}: {err}") from err
                nan = math.nan
                row = ScoreRow(rho=nan, rho_lo=nan, rho_hi=nan, r2=nan, r2_lo=nan, r2_hi=nan,
                               n=int(np.size(x)), dropped=0, predictor=p, outcome=o,
                               constant=True)
            rows.append(row)
    return rows


def kernel_distance(A, B) -> float:
    r"""Relative Frobenius distance :math:`\|A - B\|_F / \|B\|_F` of two Gram matrices.

    ``A`` and ``B`` are finite arrays of the same shape, ``B`` not zero.  Scale invariant:
    when the entries are beyond :math:`2^{\pm 200}` both are first rescaled by the same power
    of two (exact), so entries near 1e308 do not overflow.
    """
    A, B = check_array("A", A, 0), check_array("B", B, 0)
    if A.shape != B.shape:
        raise ValueError(f"A and B must have the same shape (got {A.shape} and {B.shape})")
    if not np.any(B != 0):
        raise ValueError("B must not be zero (the distance is relative to ||B||)")
    AB = _pow2_tame(np.stack([A, B]), None, 200)
    A, B = AB[0], AB[1]
    return float(np.linalg.norm(A - B) / np.linalg.norm(B))


def fit_power_law(n, R, R_se=None):
    r"""Weighted least-squares fit of :math:`\log R = \log A - \nu\log n`; returns
    ``(A, nu, se_logA, se_nu)`` with standard errors from the residuals (or from the
    standard errors ``R_se`` of the means, by the delta method, when given).

    ``n`` and ``R``: finite positive 1-d arrays of the same length >= 3, ``n`` with at least
    two distinct values; ``R_se``: finite, >= 0, broadcastable to ``R`` (relative errors
    below :math:`10^{-12}` count as :math:`10^{-12}`).  ``A`` is ``inf`` where it overflows.
    """
    n = check_array("n", n, 0)
    R = check_array("R", R, 0)
    for name, v in (("n", n), ("R", R)):
        if v.ndim != 1 or v.size < 3 or not np.all(v > 0):
            raise ValueError(f"{name} must be a 1-d array of >= 3 positive numbers "
                             f"(got shape {v.shape})")
    if n.shape != R.shape:
        raise ValueError(f"n and R must have the same length (got {n.size} and {R.size})")
    if np.ptp(n) == 0:
        raise ValueError("n must have at least two distinct values (a slope needs them)")
    x, yv = np.log(n), np.log(R)
    if R_se is None:
        w = np.ones_like(x)
    else:
        R_se = check_array("R_se", R_se, 0)
        if check_broadcast(R=R, R_se=R_se) != R.shape or not np.all(R_se >= 0):
            raise ValueError(f"R_se must be >= 0 and broadcast to the shape of R {R.shape} "
                             f"(got shape {R_se.shape})")
        with np.errstate(over="ignore", under="ignore"):
            w = 1.0 / np.maximum(R_se / R, 1e-12) ** 2
        if np.count_nonzero(w > 0) < 2 or not np.all(np.isfinite(w)):
            raise ValueError("R_se must be finite relative to R at two points at least "
                             "(R_se / R overflows)")
    Xd = np.stack([np.ones_like(x), -x], axis=1)
    WX = Xd * w[:, None]
    try:
        cov = np.linalg.inv(Xd.T @ WX)
    except np.linalg.LinAlgError:
        raise ValueError("n must have at least two distinct values with a finite, non-zero "
                         "weight (the fit is singular)") from None
    beta = cov @ (WX.T @ yv)
    resid = yv - Xd @ beta
    dof = max(n.size - 2, 1)
    scale = float(resid @ (w * resid)) / dof
    if R_se is None:
        cov = cov * scale
    else:
        cov = cov * max(scale, 1.0)  # inflate when the scatter exceeds the error bars
    if not np.all(np.isfinite(cov)) or not np.all(np.isfinite(beta)):
        raise ValueError("n and R give an ill-conditioned fit (distinct n too close together)")
    with np.errstate(over="ignore"):
        A = float(np.exp(beta[0]))  # inf beyond the float range
    # rounding can leave a variance a hair below 0 in an ill-conditioned fit
    return (A, float(beta[1]), float(np.sqrt(max(cov[0, 0], 0.0))),
            float(np.sqrt(max(cov[1, 1], 0.0))))


# ---------------------------------------------------------------------------
# clustering analysis (paper 004, App. E.2)
# ---------------------------------------------------------------------------


def _weighted_kmeans(P, w, K, rng, iters=100):
    """Weighted Lloyd's algorithm with k-means++ seeding; returns (centres, weighted SSE)."""
    n = len(P)
    K = min(K, n)
    idx = [rng.choice(n, p=w / w.sum())]
    for _ in range(1, K):
        d2 = np.min(((P[:, None] - P[idx][None]) ** 2).sum(-1), 1) * w
        idx.append(rng.choice(n, p=d2 / d2.sum()) if d2.sum() > 0 else rng.choice(n))
    C = P[idx].copy()
    for _ in range(iters):
        lab = np.argmin(((P[:, None] - C[None]) ** 2).sum(-1), 1)
        newC = np.array([np.average(P[lab == k], 0, w[lab == k]) if np.any(w[lab == k] > 0)
                         else C[k] for k in range(K)])
        if np.allclose(newC, C, atol=1e-12):
            break
        C = newC
    sse = float((w * ((P - C[lab]) ** 2).sum(-1)).sum())
    return C, sse


#: Most restarts :func:`kmeans_inertia` accepts (each is a full Lloyd's run).
MAX_RESTARTS = 1000


def kmeans_inertia(W, a, K: int, *, restarts: int = 5, seed: int = 0):
    r"""Fraction of variance of the hidden units' directions left unexplained by ``K`` clusters.

    Paper 004, App. E.2: k-means on the normalised input weights :math:`w_h/\|w_h\|`, each
    unit weighted by :math:`|a_h|\,\|w_h\|` (its contribution to the function); the
    "inertia" is the weighted within-cluster sum of squares over the weighted total sum of
    squares about the mean.  Returns ``(inertia, centres)`` (best of ``restarts``, at most
    :data:`MAX_RESTARTS`).
    """
    W, a = check_array("W", W, 2), check_array("a", a, 1)
    if W.ndim != 2 or a.ndim != 1 or a.shape[0] != W.shape[0]:
        raise ValueError(f"W must be (units, inputs) and a (units,) (got W {W.shape}, a {a.shape})")
    K = check_int("K", K, 1)
    restarts = check_int("restarts", restarts, 1, MAX_RESTARTS)
    seed = check_seed("seed", seed, allow_generator=True)
    if not np.any((a != 0) & np.any(W != 0, axis=1)):
        raise ValueError("W and a must have at least one unit with a_h != 0 and w_h != 0")
    # the inertia and the centres are invariant to scaling W and a: exact power-of-two
    # rescaling where entries are extreme (norms and weights would overflow or underflow)
    W, a = _pow2_tame(W, None, 200), _pow2_tame(a, None, 200)
    norms = np.linalg.norm(W, axis=1)
    w = np.abs(a) * norms
    keep = w > 1e-12 * max(w.max(), 1e-300)
    P, w = W[keep] / norms[keep, None], w[keep]
    total = float((w * ((P - np.average(P, 0, w)) ** 2).sum(-1)).sum())
    rng = np.random.default_rng(seed)
    best = (None, np.inf)
    for _ in range(restarts):
        C, sse = _weighted_kmeans(P, w, K, rng)
        if sse < best[1]:
            best = (C, sse)
    return (best[1] / total if total > 0 else 0.0), best[0]


def direction_spread(W, a):
    r"""Spread of the hidden units' directions about their weighted mean: the k-means inertia
    with one cluster, per unit of weight (paper 004, App. E.2.3, Fig. 6f).

    .. math::

        S = \frac{\sum_h \omega_h\,\|p_h-\bar p\|^2}{\sum_h \omega_h}
          = 1-\|\bar p\|^2,\qquad p_h = \frac{w_h}{\|w_h\|},\quad
          \omega_h = |a_h|\,\|w_h\|,\quad \bar p = \frac{\sum_h\omega_h p_h}{\sum_h\omega_h}.

    0 when every unit that carries weight points the same way (an effectively one-feature
    network), at most 1.  :func:`kmeans_inertia` divides by the spread about the mean
    instead, which makes its one-cluster value 1 by definition; Fig. 6f plots the inertia
    "using k = 1 clusters" as a sparsity measure, which is this normalisation (the weighted
    sum of squares of k-means, as scikit-learn's ``inertia_``, over the total weight).

    Parameters
    ----------
    W : array_like, shape (..., units, inputs)
        First-layer weights :math:`w_h`, finite.
    a : array_like, shape (..., units)
        Readout weights :math:`a_h`, finite; some unit with :math:`a_h\ne0` and
        :math:`w_h\ne0` in every network.

    Returns
    -------
    ndarray, shape (...)
        :math:`S` per network, in [0, 1].

    References
    ----------
    Paper 004, App. E.2 (k-means of the normalised input weights, weighted by
    :math:`|a_h|\,\|w_h\|`) and Fig. 6f.
    """
    W, a = check_array("W", W, 2), check_array("a", a, 1)
    if W.ndim < 2 or a.shape != W.shape[:-1]:
        raise ValueError(f"W must be (..., units, inputs) and a (..., units) "
                         f"(got W {W.shape}, a {a.shape})")
    # scale invariant in each network's W and a: exact power-of-two rescaling of extreme ones
    W, a = _pow2_tame(W, (-2, -1), 200), _pow2_tame(a, -1, 200)
    norms = np.linalg.norm(W, axis=-1)
    w = np.abs(a) * norms
    total = w.sum(-1)
    if np.any(total <= 0):
        raise ValueError("W and a must have, in every network, a unit with a_h != 0 and w_h != 0")
    P = W / np.where(norms > 0, norms, 1.0)[..., None]
    mean = (w[..., None] * P).sum(-2) / total[..., None]
    return np.clip(1.0 - (mean ** 2).sum(-1), 0.0, 1.0)


def alignment_score(centres, teacher_dirs):
    r"""Mean over teacher units of the largest cosine with a cluster centre (App. E.2).

    ``centres`` ``(K, d)`` and ``teacher_dirs`` ``(m, d)``, finite, no teacher direction zero
    (a zero centre has cosine 0).  Rows with entries beyond :math:`2^{\pm 200}` are first
    rescaled by a power of two (exact; cosines are scale invariant).
    """
    C = check_array("centres", centres, 2)
    T = check_array("teacher_dirs", teacher_dirs, 2)
    if C.ndim != 2 or T.ndim != 2 or C.shape[1] != T.shape[1] or 0 in C.shape or 0 in T.shape:
        raise ValueError(f"centres (K, d) and teacher_dirs (m, d) must be non-empty matrices "
                         f"with the same d (got {C.shape} and {T.shape})")
    if not np.all(np.any(T != 0, axis=1)):
        raise ValueError("teacher_dirs must not contain a zero direction")
    C, T = _pow2_tame(C, 1, 200), _pow2_tame(T, 1, 200)
    C = C / np.maximum(np.linalg.norm(C, axis=1, keepdims=True), 1e-300)
    T = T / np.linalg.norm(T, axis=1, keepdims=True)
    return float((T @ C.T).max(1).mean())


def mean_se(x, axis: int = -1, *, where=None, single: float = np.nan):
    r"""Monte Carlo mean and its standard error over ``axis`` (the draws).

    .. math::

        \bar x = \frac1k\sum_{i\in S} x_i, \qquad
        \mathrm{SE} = \sqrt{\frac{1}{k(k-1)}\sum_{i\in S}(x_i-\bar x)^2},

    over the entries :math:`S` selected by ``where`` (a boolean array of ``x``'s shape, e.g.
    the converged runs or ``np.isfinite(x)``; default every entry), :math:`k = |S|`.  The mean
    is NaN where :math:`k = 0`; the error is ``single`` where :math:`k < 2` (NaN by default;
    a figure that draws one run without an error bar passes 0).  Entries outside ``where``
    may be anything, NaN included; a non-finite entry inside it (a diverged run that the
    mask keeps) makes that mean infinite or NaN and its error NaN, so that no plot hides it.
    Finite entries give a finite mean and error up to the float range (each slice is
    scaled by a power of two, :func:`pow2_normalise`, which changes no bit where nothing
    overflowed). Returns ``(mean, se)``, arrays without ``axis``.
    """
    x, axis, ok = _checked_draws(x, axis, where)
    check_real("single", single, "a number >= 0 or nan")
    single = float(single)
    if not (math.isnan(single) or single >= 0):
        raise ValueError(f"single must be a number >= 0 or nan (got {single!r})")
    k, mean, sd = _mean_sd(x, axis, ok)
    with np.errstate(invalid="ignore"):
        se = sd / np.sqrt(np.maximum(k, 1))
    return mean, np.where(k > 1, se, single)


def _checked_draws(x, axis, where):
    """The draws ``x`` of :func:`mean_se` (a float array with at least one entry along
    ``axis``), the axis and the selection ``where`` (a boolean array of ``x``'s shape;
    default all), checked: ``(x, axis, ok)``."""
    x = as_array("x", x, 1)
    axis = check_axis("axis", axis, x.ndim, allow_none=False)
    if x.shape[axis] == 0:
        raise ValueError(f"x must have at least one entry along axis {axis} (got shape {x.shape})")
    if where is None:
        return x, axis, np.ones(x.shape, bool)
    ok = np.asarray(where)
    if ok.dtype != bool or ok.shape != x.shape:
        raise ValueError(f"where must be a boolean array of x's shape {x.shape} "
                         f"(got {ok.dtype} of shape {ok.shape})")
    return x, axis, ok


def _mean_sd(x, axis, ok):
    """``(k, mean, sd)`` of the entries ``ok`` of ``x`` along ``axis`` (sample standard
    deviation, ``ddof = 1``; mean NaN where ``k = 0``, sd meaningless where ``k < 2``).

    Every slice is scaled by the power of two that brings its largest selected finite
    entry into [0.5, 1) (:func:`pow2_normalise`): the same bits as the unscaled sums where
    nothing overflowed or underflowed, and no overflow of the squared deviations of draws
    of order 1e200 (a risk under huge label noise)."""
    k, mean, sd, e = _scaled_mean_sd(x, axis, ok)
    return k, np.asarray(np.ldexp(mean, e)), np.ldexp(sd, e)


def _scaled_mean_sd(x, axis, ok):
    """``(k, mean, sd, e)``: :func:`_mean_sd` of each slice scaled by ``2**-e``, before the
    scale is put back (ratios such as a t statistic taken here keep their digits where the
    mean and sd of subnormal draws would round)."""
    k = ok.sum(axis)
    top = np.where(ok & np.isfinite(x), np.abs(x), 0.0).max(axis)
    _, e = np.frexp(np.where(top > 0, top, 1.0))
    xs = np.ldexp(x, -np.expand_dims(e, axis))
    with np.errstate(invalid="ignore", divide="ignore"):
        total = np.where(ok, xs, 0.0).sum(axis)
        mean = np.where(k > 0, total / np.maximum(k, 1), np.nan)
        dev = np.where(ok, xs - np.expand_dims(mean, axis), 0.0)
        sd = np.sqrt((dev * dev).sum(axis) / np.maximum(k - 1, 1))
    return k, mean, sd, e


@dataclass(frozen=True)
class Paired:
    """The result of :func:`paired_test`, one entry per cell (the shape of ``diff`` without
    its last axis)."""

    mean: np.ndarray        #: mean difference over the draws compared
    se: np.ndarray          #: its standard error (NaN with fewer than two draws)
    t: np.ndarray           #: mean / se from the unrounded moments (NaN without spread or 2 draws)
    count: np.ndarray       #: draws compared (``where``'s count)
    critical: np.ndarray    #: Bonferroni critical t of the family (inf with fewer than two draws)
    sign: np.ndarray        #: -1 (below 0 beyond the critical t), +1 (above), 0 (neither)


def paired_test(diff, n_tests: int, *, where=None, fwer: float = 0.01) -> Paired:
    r"""Paired comparisons of two methods on the same draws, one family of ``n_tests``.

    Per cell, the mean :math:`\bar x` of the paired differences over the last axis (the
    draws selected by ``where``, e.g. those where both runs converged) and its standard error
    (:func:`mean_se`); the difference is called significant where

    .. math::

        |t| = |\bar x| / \mathrm{SE} > t_{k-1}^{-1}(1 - \mathrm{fwer}/2K),

    the two-sided Bonferroni critical value (:func:`critical_value`) over the family's
    :math:`K` = ``n_tests`` comparisons at the cell's :math:`k` draws; a cell with fewer
    than two draws, or with a zero standard error, is never significant.

    Parameters
    ----------
    diff : array_like
        Paired differences, draws on the last axis (e.g. log10 of one method's error over
        the other's).
    n_tests : int
        Comparisons in the family (>= 1), usually every cell of every comparison made.
    where : array_like of bool, optional
        Draws to compare, ``diff``'s shape (default all).
    fwer : float in (0, 1)
        Family-wise false-alarm probability.

    Returns
    -------
    Paired
    """
    n_tests = check_int("n_tests", n_tests, 1, MAX_INT)
    fwer = check_open_unit("fwer", fwer)
    x, _, ok = _checked_draws(diff, -1, where)
    count, mean_s, sd_s, e = _scaled_mean_sd(x, -1, ok)
    critical = np.vectorize(lambda c: critical_value(n_tests, int(c), fwer) if c >= 2
                            else np.inf, otypes=[float])(count)
    # mean and se as mean_se gives them; t from the scaled moments: the same bits as
    # mean / se, and finite for subnormal draws
    root = np.sqrt(np.maximum(count, 1))
    mean = np.asarray(np.ldexp(mean_s, e))
    with np.errstate(invalid="ignore", divide="ignore"):
        se = np.where(count > 1, np.ldexp(sd_s, e) / root, np.nan)
        se_s = np.where(count > 1, sd_s / root, np.nan)
        t = mean_s / np.where(se_s > 0, se_s, np.nan)
    sign = np.where(t < -critical, -1, np.where(t > critical, 1, 0))
    return Paired(mean=mean, se=se, t=t, count=count, critical=critical, sign=sign)


def r_squared(x, y, axis=-1):
    r"""Coefficient of determination of the least-squares line of ``y`` on ``x``:
    the squared Pearson correlation :math:`R^2 = \mathrm{cov}(x,y)^2/(\mathrm{var}\,x\,\mathrm{var}\,y)`
    (Table 1 of paper 001), along ``axis``.  ``ValueError`` when ``x`` or ``y`` is constant.
    """
    x = check_array("x", x, 1)
    y = check_array("y", y, 1)
    try:
        x, y = np.broadcast_arrays(x, y)
    except ValueError:
        raise ValueError(f"y must have a shape that broadcasts with x's: x {x.shape}, "
                         f"y {y.shape}") from None
    axis = check_axis("axis", axis, x.ndim, allow_none=False)
    # exact power-of-two scaling per slice: bit for bit the same where nothing overflows
    x, y = pow2_normalise(x, axis), pow2_normalise(y, axis)
    xc = x - x.mean(axis, keepdims=True)
    yc = y - y.mean(axis, keepdims=True)
    vx = (xc ** 2).sum(axis)
    vy = (yc ** 2).sum(axis)
    if not ((vx > 0).all() and (vy > 0).all()):
        raise ValueError("x and y must not be constant along axis (R^2 undefined)")
    return (xc * yc).sum(axis) ** 2 / (vx * vy)


def table_r2(errors, measures):
    r"""Table 1 statistics: R^2 between error and each measure across pairs.

    ``errors`` ``(reps, n_values, K)``: the 0-1 error of each of ``K`` pairs (averaged over
    draws); ``measures``: dict name -> array broadcastable to ``errors``.  Returns dict
    name -> ``(mean, std)`` over repetitions, each of shape ``(n_values,)``; ``std`` is the
    sample standard deviation (ddof = 1, 0 for one repetition).
    """
    errors = check_array("errors", errors, 3)
    if errors.ndim != 3:
        raise ValueError(f"errors must have shape (reps, n_values, K) (got {errors.shape})")
    if not isinstance(measures, Mapping):
        raise InputTypeError(f"measures must be a dict of name -> array "
                             f"(got {type(measures).__name__})")
    out = {}
    for name, m in measures.items():
        label = f"measures[{name!r}]"
        m = check_array(label, m, 0)
        try:
            m = np.broadcast_to(m, errors.shape)
        except ValueError:
            raise ValueError(f"{label} must broadcast to the shape of errors {errors.shape} "
                             f"(got shape {m.shape})") from None
        r2 = r_squared(m, errors, axis=-1)
        sd = r2.std(0, ddof=1) if r2.shape[0] > 1 else np.zeros(r2.shape[1:])
        out[name] = (r2.mean(0), sd)
    return out
