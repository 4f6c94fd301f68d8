r"""Agreement between simulations and closed forms, measured with Monte Carlo errors.

Every figure of the book compares a simulated mean over independent draws with a
theoretical expectation.  The tolerance of such a comparison is not a free parameter:
it is the Monte Carlo standard error :math:`s/\sqrt{m}` of the mean of ``m`` draws times
a critical value of Student's :math:`t_{m-1}` distribution, Bonferroni-corrected for the
number of cells compared so that the *family* of checks has false-alarm probability
``fwer``.  A simulation that departs from the theory by more than that is a finding.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

from ._validate import check_int

__all__ = ["Agreement", "agreement", "critical_value", "linear_transfer_checks", "risk_error_bound",
           "scratch_limit_table", "transferability_draws"]


def critical_value(n_tests: int, draws: int | None, fwer: float = 0.01) -> float:
    r"""Two-sided Bonferroni critical value :math:`t_{m-1}^{-1}(1 - \mathrm{fwer}/2k)`.

    Parameters
    ----------
    n_tests : int
        Number ``k`` of cells compared (>= 1).
    draws : int or None
        Draws ``m`` per cell (>= 2); ``None`` when the standard deviation is known
        exactly, which gives the normal quantile instead of Student's.
    fwer : float in (0, 1)
        Family-wise false-alarm probability.
    """
    check_int("n_tests", n_tests, 1)
    if draws is not None:
        check_int("draws", draws, 2)
    if not 0 < fwer < 1:
        raise ValueError(f"fwer must be in (0, 1) (got {fwer!r})")
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
        The exact standard deviation of one draw, when theory provides it (e.g.
        :func:`transferkit.theory.linear_transfer_risk_std`).  Then the standard error is
        ``std / sqrt(m)`` and the critical value is normal; otherwise both are estimated
        from the draws (Student's t).  Small samples of skewed risks can have a sample
        standard deviation far below the true one, so the exact one is preferred.

    Notes
    -----
    The standard error is estimated from the draws themselves; for heavy-tailed risks
    (near :math:`n = d`, where the scratch risk has no variance) the estimate is
    unreliable, so callers exclude those cells through ``mask`` and say so.
    """
    draws = np.asarray(draws, float)
    if draws.ndim < 1 or draws.shape[-1] < 2:
        raise ValueError("draws must have at least 2 entries along its last axis")
    m = draws.shape[-1]
    mean = draws.mean(-1)
    known = std is not None
    std = (draws.std(-1, ddof=1) if not known
           else np.broadcast_to(np.asarray(std, float), mean.shape))
    se = std / np.sqrt(m)
    th = np.broadcast_to(np.asarray(theory, float), mean.shape)
    ok = np.isfinite(th) & np.isfinite(mean) & np.isfinite(se)
    mask = ok if mask is None else (np.broadcast_to(mask, mean.shape) & ok)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(se > 0, (mean - th) / np.where(se > 0, se, 1.0),
                     np.where(np.isclose(mean, th, rtol=1e-9, atol=1e-12), 0.0, np.inf))
    z = np.where(mask, z, 0.0)
    crit = critical_value(max(int(mask.sum()), 1), None if known else m, fwer)
    atol = np.broadcast_to(np.asarray(atol, float), mean.shape)
    if not np.all(np.isfinite(atol) & (atol >= 0)):
        raise ValueError("atol must be finite and >= 0")
    return Agreement(mean, std, se, th, z, crit, mask, atol)


def risk_error_bound(risk, dist):
    r"""Bound on the error of a risk caused by stopping at distance ``dist`` from the optimum.

    With :math:`R = \|\hat\beta - \beta_t\|^2`, :math:`R_\star = \|\beta_\star - \beta_t\|^2`
    and :math:`\|\hat\beta - \beta_\star\| \le \delta`, the triangle inequality gives
    :math:`|\sqrt R - \sqrt{R_\star}| \le \delta`, hence
    :math:`|R - R_\star| \le \delta\,(2\sqrt R + \delta)`.
    """
    risk = np.asarray(risk, float)
    dist = np.asarray(dist, float)
    if np.any(risk < 0) or np.any(dist < 0):
        raise ValueError("risk and dist must be >= 0")
    with np.errstate(invalid="ignore"):
        bound = dist * (2 * np.sqrt(risk) + dist)
    return np.where(dist == 0, 0.0, bound)  # an exact optimum has no error, even at inf risk


def transferability_draws(result: dict, method: str = "linear") -> np.ndarray:
    r"""Per-draw transferability :math:`\mathcal R_{sc} - \mathcal R_{tx}` (Eq. 5).

    Scratch and transferred models of one draw share the target sample, so the
    difference is paired; returns an array ``(len(gammas), len(thetas), draws)``.
    """
    if "scratch" not in result or method not in result:
        raise ValueError(f"result must contain 'scratch' and {method!r} risks")
    return result["scratch"] - result[method]


def linear_transfer_checks(result: dict, fwer: float = 0.01) -> dict:
    r"""Agreement of a :func:`~transferkit.simulate.simulate_grid` result with paper 000's theory.

    Compares, cell by cell, with the **exact finite-size** expectations: the scratch risk
    (:func:`~transferkit.theory.scratch_risk_finite`, the finite-size form of Eq. 8; one
    value per :math:`\gamma`, it does not depend on :math:`\theta`), the linear-transfer
    risk (Eq. 10, with its exact standard deviation,
    :func:`~transferkit.theory.linear_transfer_risk_std`) and the transferability (paired
    per draw).  The optimisation error of scratch training,
    bounded by its distance to :math:`X^+y` (:func:`risk_error_bound`), is allowed on top of
    the Monte Carlo error.

    Returns a dict ``{"scratch", "linear transfer", "transferability"}`` of :class:`Agreement`.
    """
    from . import theory

    n = result["n"][:, None]
    d, sigma = result["d"], result["sigma"]
    th = result["thetas"][None, :]
    fin_sc = theory.scratch_risk_finite(n, d, sigma) + 0 * th
    fin_lt = theory.linear_transfer_risk(n, th, sigma)
    opt = risk_error_bound(result["scratch"], result["scratch_minnorm_dist"][:, None, :]).mean(-1)
    return {
        "scratch": agreement(result["scratch"][:, :1], fin_sc[:, :1], atol=opt[:, :1], fwer=fwer),
        "linear transfer": agreement(result["linear"], fin_lt, fwer=fwer,
                                     std=theory.linear_transfer_risk_std(n, th, sigma)),
        "transferability": agreement(transferability_draws(result), fin_sc - fin_lt, atol=opt,
                                     fwer=fwer),
    }


def scratch_limit_table(result: dict, scratch_check: Agreement) -> tuple[str, Agreement]:
    r"""Simulated scratch risk beside its exact finite-size value and the limit of Eq. 8.

    Returns the table as text and the :class:`Agreement` of the simulation with the
    :math:`d\to\infty` formula (cells marked ``*`` lie outside the Monte Carlo tolerance).
    """
    from . import theory

    lim = theory.scratch_risk(result["gammas"], result["sigma"])
    a_lim = agreement(result["scratch"][:, :1], lim[:, None], atol=scratch_check.atol)
    lines = [f"sigma = {result['sigma']}, d = {result['d']}",
             f"{'gamma':>6} {'n':>5} {'simulated':>17} {'exact (finite d)':>17} {'Eq. 8 (limit)':>14}"]
    for i, g in enumerate(result["gammas"]):
        flag = "*" if a_lim.disagree[i, 0] else ""
        lines.append(f"{g:6.2f} {result['n'][i]:5d} {scratch_check.mean[i, 0]:10.4f} ± "
                     f"{scratch_check.se[i, 0]:.4f} {scratch_check.theory[i, 0]:17.4f} "
                     f"{lim[i]:14.4f} {flag}")
    return "\n".join(lines), a_lim
