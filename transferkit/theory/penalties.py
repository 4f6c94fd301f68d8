r"""Implicit-regularisation penalties of pretraining + fine-tuning (PT+FT) and multi-task learning.

Closed forms of papers 003 and 004 {Lippl and Lindsey}:

* :func:`relu_ptft_penalty` -- the cost :math:`\tilde r` of giving one pretrained ReLU unit a
  new direction and magnitude (paper 003, Eqs. 6-11), the minimum over :math:`u>0` of
  :math:`p(u)`, found from the positive roots of the quartic Eq. 10;
* :func:`q` and :func:`diagonal_ptft_penalty` -- the penalty minimised by gradient flow in a
  diagonal linear network from a given initialisation (paper 004, Eqs. 22-23);
* :func:`l12_norm` -- the :math:`\ell_{1,2}` norm minimised (at minimum parameter norm) by
  multi-task learning (paper 004, Eqs. 26-35).

All functions take numpy float64 arrays, broadcast over them, and raise ``ValueError``
naming the parameter for inputs outside their domain (non-finite values, :math:`|\rho|>1`,
negative magnitudes).
"""

from __future__ import annotations

import numpy as np

from .._validate import check_axis, check_broadcast, check_values

__all__ = ["q", "q_prime", "relu_ptft_p", "relu_ptft_u_star", "relu_ptft_penalty", "relu_ptft_dlog_penalty", "diagonal_ptft_penalty", "diagonal_dual_beta", "l12_norm"]


NEWTON_STEPS = 40


"""Newton steps polishing each eigenvalue root of Eq. 10 (quadratic convergence)."""


#: The largest magnitude of ``m``, ``m0`` and ``gamma`` that the ReLU PT+FT penalty accepts
#: (paper 003, Eq. 10); beyond it the coefficients of the quartic overflow float64.
PTFT_MAX = 1e100


def _out(x):
    """0-d arrays come back as Python floats."""
    x = np.asarray(x, dtype=np.float64)
    return float(x) if x.ndim == 0 else x


# ---------------------------------------------------------------------------
# paper 003: one ReLU unit
# ---------------------------------------------------------------------------


def relu_ptft_p(u, m, rho, m0, gamma):
    r"""The cost :math:`p(u)` of Eq. 8 (paper 003):

    .. math:: p(u) = (m/u - \gamma)^2 + u^2 + m_0^2 - 2 u m_0 \rho ,

    the squared distance from the pretrained unit :math:`(w_0^{(1)}, \gamma)` to the unit
    with first-layer norm :math:`u`, direction at cosine :math:`\rho` to :math:`w_0^{(1)}`
    and magnitude :math:`m = u\,w^{(2)}`.  ``u`` must be > 0.
    """
    u = check_values("u", u, 0.0, lo_open=True)
    m, rho = check_values("m", m), check_values("rho", rho, -1.0, 1.0)
    m0, gamma = check_values("m0", m0, 0.0), check_values("gamma", gamma)
    return _out(_p(u, m, rho, m0, gamma))


def _p(u, m, rho, m0, gamma):
    r"""Eq. 8 written as :math:`(m/u-\gamma)^2 + (u-m_0)^2 + 2um_0(1-\rho)` (no cancellation)."""
    return (m / u - gamma) ** 2 + (u - m0) ** 2 + 2 * u * m0 * (1 - rho)


def _readout_gap(u, m, rho, m0, gamma):
    r""":math:`m/u - \gamma` at a root :math:`u` of Eq. 10, where it equals
    :math:`(u - m_0\rho)\,u^2/m` (Eq. 10 divided by :math:`m u`).  The direct difference
    cancels when :math:`m/u \approx \gamma` is large (at :math:`\gamma = 10^{16}`, a root
    exact to rounding left an error of order 1 in the penalty); the second form is taken
    where its rounding error, about :math:`\epsilon\,u^2|3u - 2m_0\rho|/|m|`, is below a
    thousandth of the direct one's, :math:`\epsilon|m/u|` (never in the book's ranges)."""
    direct = m / u - gamma
    ident = (u - m0 * rho) * u * u / m
    better = u * u * np.abs(3 * u - 2 * m0 * rho) < 1e-3 * np.abs(m) * np.abs(m / u)
    return np.where(better & np.isfinite(ident), ident, direct)


def _p_root(u, m, rho, m0, gamma):
    """:func:`_p` at a root of Eq. 10, its first term from :func:`_readout_gap`."""
    return _readout_gap(u, m, rho, m0, gamma) ** 2 + (u - m0) ** 2 + 2 * u * m0 * (1 - rho)


def _quartic_positive_roots(a, b, c):
    r"""Real positive roots of :math:`u^4 - a u^3 + b u - c = 0` (Eq. 10), elementwise.

    Candidates are the eigenvalues of the companion matrices (one batched ``eigvals``
    call) plus the dominant balances near 0 when :math:`c \ll 1` (:math:`c/b`,
    :math:`(c/|a|)^{1/3}`, :math:`c^{1/4}`: eigenvalues resolve a root near 0 only to an
    absolute accuracy), each polished by :data:`NEWTON_STEPS` Newton
    steps.  A candidate is kept if it is positive and the quartic vanishes there to
    :math:`10^{-10}` of the size of its terms.  Returns ``(..., 7)``, NaN for rejected or
    duplicate candidates.  Call with coefficients of order one (see
    :func:`relu_ptft_u_star`).
    """
    shape = a.shape
    a, b, c = a.ravel(), b.ravel(), c.ravel()
    comp = np.zeros((a.size, 4, 4))
    comp[:, 0, :] = np.stack([a, np.zeros_like(a), -b, c], axis=-1)
    comp[:, 1, 0] = comp[:, 2, 1] = comp[:, 3, 2] = 1.0
    with np.errstate(all="ignore"):
        lam = np.linalg.eigvals(comp)
        scale = np.maximum(np.abs(lam), 1e-300)
        real = np.abs(lam.imag) <= 1e-6 * np.maximum(scale, 1.0)
        u = np.where(real, lam.real, np.nan)
        extra = np.stack([np.where(b > 0, c / b, np.nan),
                          np.where(a < 0, np.cbrt(c / np.abs(a)), np.nan), np.sqrt(np.sqrt(c))], 1)
    u = np.concatenate([u, extra], axis=1)
    A, B, C = a[:, None], b[:, None], c[:, None]

    def f(v):
        return ((v - A) * v * v + B) * v - C

    for _ in range(NEWTON_STEPS):
        with np.errstate(all="ignore"):
            fv = f(u)
            df = (4 * u - 3 * A) * u * u + B
            new = u - np.where(df != 0, fv / df, 0.0)
            ok = (new > 0) & (np.abs(f(new)) <= np.abs(fv))
        u = np.where(ok, new, u)
    with np.errstate(all="ignore"):
        size = u ** 4 + np.abs(A) * u ** 3 + np.abs(B) * u + C
        good = (u > 0) & (np.abs(f(u)) <= 1e-10 * size)
    u = np.where(good, u, np.nan)
    # drop duplicates (the extra candidate usually repeats an eigenvalue root)
    for i in range(1, u.shape[1]):
        with np.errstate(invalid="ignore"):
            dup = np.any(np.abs(u[:, :i] - u[:, i:i + 1]) <= 1e-8 * u[:, i:i + 1], axis=1)
        u[dup, i] = np.nan
    return u.reshape(shape + (u.shape[1],))


def relu_ptft_u_star(m, rho, m0, gamma):
    r"""Minimiser :math:`u^*` of :math:`p` (paper 003, Eqs. 6 and 10) and its number of rivals.

    :math:`u^*` is a positive root of the quartic (Eq. 10)

    .. math:: u^4 - m_0\rho\,u^3 + \gamma m\,u - m^2 = 0 .

    By Descartes' rule of signs Eq. 10 can have three positive roots (two local minima of
    :math:`p` and a maximum) when :math:`\rho m_0 > 0` and :math:`\gamma m > 0`; the paper
    reports a unique positive root "in all empirical cases we explored".  Where several
    exist we return the one with the smallest :math:`p` (the global minimiser).

    Returns
    -------
    u_star : float or array
        The global minimiser; for :math:`m = 0` the infimum is at :math:`u = \max(m_0\rho, 0)`
        (attained only as a limit when it is 0).
    n_minima : int or array
        The number of local minima of :math:`p` on :math:`u>0` (1 or 2); 2 flags the cases
        where the choice of root matters.
    """
    m, rho = check_values("m", m), check_values("rho", rho, -1.0, 1.0)
    m0, gamma = check_values("m0", m0, 0.0), check_values("gamma", gamma)
    check_broadcast(m=m, rho=rho, m0=m0, gamma=gamma)
    for name, v in (("m", m), ("m0", m0), ("gamma", gamma)):
        if np.any(np.abs(v) > PTFT_MAX):   # the quartic's coefficients would overflow
            raise ValueError(f"{name} must lie in [-{PTFT_MAX:g}, {PTFT_MAX:g}] (got "
                             f"{v[np.abs(v) > PTFT_MAX].ravel()[0]!r})")
    m, rho, m0, gamma = np.broadcast_arrays(m, rho, m0, gamma)
    a = m0 * rho
    # u = s v with s the root scale max(|a|, |gamma m|^(1/3), |m|^(1/2)): coefficients O(1)
    with np.errstate(all="ignore"):
        s = np.maximum.reduce([np.abs(a), np.cbrt(np.abs(gamma)) * np.cbrt(np.abs(m)),
                               np.sqrt(np.abs(m))])
        s = np.where(s > 0, s, 1.0)
        c_scaled = (m / s / s) ** 2
        # m = 0, or |m| so small against the root scale that it cannot change p in float64: the
        # m -> 0 limit (p is continuous), set below. Near m = 0, p(u*) moves by O(|m|/s^2) when
        # m0 rho > 0 and by O(sqrt(|gamma m|)) otherwise, so below |m|/s^2 = 1e-40 the change is
        # < 1e-19 relative; the quartic's smallest root (~ sqrt|gamma m|) is not resolvable there.
        zero = (m == 0) | (c_scaled == 0) | (np.abs(m) / s / s <= 1e-40)
        # those entries get the harmless quartic u^4 = 1 (with m = 0 and a subnormal root scale
        # s, gamma / s overflows and (gamma / s) (m / s) is inf * 0: NaN in the companion matrix)
        roots = s[..., None] * _quartic_positive_roots(
            np.where(zero, 0.0, a / s), np.where(zero, 0.0, (gamma / s) * (m / s) / s),
            np.where(zero, 1.0, c_scaled))
    with np.errstate(all="ignore"):
        U = roots
        M, G, M0, R = (x[..., None] for x in (m, gamma, m0, rho))
        pv = _p_root(U, M, R, M0, G)
        # p''(u) = 2 + 6 m^2/u^4 - 4 gamma m / u^3: > 0 at a local minimum
        curv = 2 + 6 * M ** 2 / U ** 4 - 4 * G * M / U ** 3
    pv = np.where(np.isnan(pv), np.inf, pv)
    best = np.argmin(pv, axis=-1)
    u_star = np.take_along_axis(U, best[..., None], -1)[..., 0]
    n_min = np.sum(np.isfinite(pv) & (curv > 0), axis=-1)
    u_star = np.where(zero, np.maximum(a, 0.0), u_star)
    n_min = np.where(zero, 1, np.maximum(n_min, 1))
    if np.any(~zero & ~np.isfinite(u_star)):  # cannot happen: p -> inf at 0 and inf
        raise FloatingPointError("no positive root of Eq. 10 found")
    return _out(u_star), (int(n_min) if n_min.ndim == 0 else n_min)


def relu_ptft_penalty(m, rho, m0, gamma):
    r"""PT+FT penalty :math:`\tilde r` of one ReLU unit (paper 003, Eqs. 6-11).

    .. math::

        \tilde r(m \mid \rho, m_0, \gamma) = \min_{u>0} p(u)
        = (m/u^* - \gamma)^2 + u^{*2} + m_0^2 - 2 u^* m_0 \rho ,

    the smallest squared distance :math:`(w^{(2)}-\gamma)^2 + \|w^{(1)} - w_0^{(1)}\|^2` from
    the pretrained unit (first-layer norm :math:`m_0`, readout re-initialised at
    :math:`\gamma`) to a unit of magnitude :math:`m = \|w^{(1)}\| w^{(2)}` whose direction
    has cosine :math:`\rho` with :math:`w_0^{(1)}`.  :math:`u^*` is the global minimiser of
    :math:`p` from :func:`relu_ptft_u_star`.  After pretraining to a minimum-norm solution
    with coefficient :math:`m^{\rm aux}`, :math:`m_0 = \sqrt{m^{\rm aux}}` (Sec. 1.2).

    Parameters
    ----------
    m : array_like, finite
        Signed magnitude of the fine-tuned unit.
    rho : array_like in [-1, 1]
        Cosine between the fine-tuned and pretrained directions.
    m0 : array_like, >= 0
        Norm of the pretrained first-layer weight.
    gamma : array_like, finite
        Readout initialisation before fine-tuning.

    Special values: :math:`m = 0` (or :math:`|m|` so small that its square underflows at
    the root scale) gives the infimum
    :math:`\gamma^2 + m_0^2(1 - \max(\rho, 0)^2)`.  The penalty is even under
    :math:`(m, \gamma) \to (-m, -\gamma)`.
    """
    u, _ = relu_ptft_u_star(m, rho, m0, gamma)
    m, rho = check_values("m", m), check_values("rho", rho, -1.0, 1.0)
    m0, gamma = check_values("m0", m0, 0.0), check_values("gamma", gamma)
    u = np.asarray(u)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        rp = np.maximum(rho, 0.0)
        val = np.where((m == 0) | (u == 0), gamma ** 2 + m0 ** 2 * (1 - rp) * (1 + rp),
                       _p_root(np.where((m == 0) | (u == 0), 1.0, u), m, rho, m0, gamma))
    return _out(np.maximum(val, 0.0))


def relu_ptft_dlog_penalty(m, rho, m0, gamma):
    r"""Local exponent :math:`\partial \log\tilde r / \partial \log m` of the ReLU penalty.

    By the envelope theorem :math:`\partial\tilde r/\partial m = \partial p/\partial m
    = 2(m/u^* - \gamma)/u^*`, so

    .. math:: \frac{\partial\log\tilde r}{\partial\log m} = \frac{2 m (m/u^*-\gamma)}{u^*\,\tilde r}.

    Paper 003 (Fig. 1b) reads this as "closer to 2: :math:`\ell_2`-like; closer to 1:
    :math:`\ell_1`-like" and labels it :math:`\partial\log\tilde r/\partial m`; the
    :math:`\ell_1`/:math:`\ell_2` reading holds for the logarithmic derivative in
    :math:`\log m` computed here (a power law :math:`m^k` has exponent :math:`k`).  The
    paper's panel was "computed empirically"; the notebook compares this closed form with
    finite differences of :func:`relu_ptft_penalty`.  Where :math:`\tilde r = 0` (the
    initial unit itself, :math:`\rho = 1`, :math:`m = \gamma m_0`) the logarithmic
    derivative is undefined (it jumps from :math:`-\infty` to :math:`+\infty`); 0 is
    returned there by convention.
    """
    u, _ = relu_ptft_u_star(m, rho, m0, gamma)
    r = np.asarray(relu_ptft_penalty(m, rho, m0, gamma))
    m, gamma = check_values("m", m), check_values("gamma", gamma)
    rho, m0 = check_values("rho", rho, -1.0, 1.0), check_values("m0", m0, 0.0)
    u = np.asarray(u)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        z = (m == 0) | (u == 0)
        uu = np.where(z, 1.0, u)
        g = np.where(z, 0.0, 2 * m * _readout_gap(uu, np.where(z, 1.0, m), rho, m0, gamma) / uu)
        out = np.where(r > 0, g / np.where(r > 0, r, 1.0), np.where(g == 0, 0.0, np.inf))
    return _out(out)


# ---------------------------------------------------------------------------
# paper 004: diagonal linear networks
# ---------------------------------------------------------------------------


def q(z):
    r"""The hyperbolic entropy of paper 004, Eq. 23:

    .. math:: q(z) = 2 - \sqrt{4 + z^2} + z\,\operatorname{arcsinh}(z/2).

    Evaluated as :math:`z\,\operatorname{arcsinh}(z/2) - z^2/(2 + \sqrt{4+z^2})` (no
    cancellation in :math:`2-\sqrt{4+z^2}`) and with ``hypot`` (no overflow).  Even,
    convex, :math:`q(0)=0`, :math:`q(z) = z^2/4 - z^4/192 + z^6/2560 + O(z^8)` near 0
    (:math:`\ell_2`-like) and :math:`|z|\log|z| - |z| + 2 + O(\log|z|/|z|)` for large
    :math:`|z|` (:math:`\ell_1`-like up to a logarithm).
    """
    z = check_values("z", z)
    az = np.abs(z)
    h = np.hypot(2.0, az)
    small = az < 1e-4
    zs = np.where(small, az, 0.0)
    series = zs ** 2 / 4 - zs ** 4 / 192
    with np.errstate(over="ignore"):
        big = az * np.arcsinh(az / 2) - az * (az / (2 + h))
    return _out(np.where(small, series, big))


def q_prime(z):
    r"""Derivative :math:`q'(z) = \operatorname{arcsinh}(z/2)` (paper 004, Eq. 23)."""
    return _out(np.arcsinh(check_values("z", z) / 2))


def diagonal_ptft_penalty(beta, w1_0, w2_0, axis=-1):
    r"""Penalty :math:`\|\beta\|_Q` minimised by a diagonal linear network (paper 004, Eq. 22).

    .. math::

        \|\beta\|_Q = \sum_{d} c_d\, q\!\left(\frac{2\beta_d}{c_d}\right),\qquad
        c_d = (w_{0,d}^{(1)})^2 + (w_{0,d}^{(2)})^2 ,

    for gradient flow on :math:`\beta = w_+^{(2)}\circ w_+^{(1)} - w_-^{(2)}\circ w_-^{(1)}`
    from :math:`w_\pm(0) = w_0` (so :math:`\beta(0) = 0`).  Single-task learning from scale
    :math:`\alpha` has :math:`w_0^{(1)} = w_0^{(2)} = \alpha`; PT+FT has
    :math:`w_{0,d}^{(1)} = \sqrt{|\beta^{\rm aux}_d|}` and :math:`w_0^{(2)} = \gamma`.

    ``beta``, ``w1_0`` and ``w2_0`` broadcast; the sum runs over ``axis`` (``None``: no sum,
    the per-coordinate terms).  A coordinate with :math:`c_d = 0` costs 0 if
    :math:`\beta_d = 0` and ``inf`` otherwise (the limit :math:`c\to0`).  Scaling:
    :math:`\|s\beta\|_Q` at :math:`(\sqrt s w_0)` is :math:`s\|\beta\|_Q` at :math:`w_0`.
    """
    beta = check_values("beta", beta)
    w1, w2 = check_values("w1_0", w1_0), check_values("w2_0", w2_0)
    ndim = len(check_broadcast(beta=beta, w1_0=w1, w2_0=w2))
    axis = check_axis("axis", axis, ndim)
    with np.errstate(over="ignore"):  # c = inf for weights beyond 1e154: its limit below
        c = w1 ** 2 + w2 ** 2
    beta, c = np.broadcast_arrays(beta, c)
    pos = c > 0
    with np.errstate(over="ignore"):
        z = np.where(pos, 2 * beta / np.where(pos, c, 1.0), 0.0)
    z = np.where(np.isfinite(z), z, 0.0)
    with np.errstate(invalid="ignore"):  # inf * 0 where c = inf: replaced by its limit below
        terms = np.where(pos, c * np.asarray(q(z)), np.where(beta == 0, 0.0, np.inf))
    # c * q(2 beta / c) when 2 beta / c overflows: c q(z) ~ 2|beta| log(2|beta|/c) -> inf
    with np.errstate(over="ignore", divide="ignore"):
        ovf = pos & ~np.isfinite(2 * beta / np.where(pos, c, 1.0))
    terms = np.where(ovf, np.inf, terms)
    # c = inf: c q(2 beta / c) ~ beta^2 / c -> 0 (inf * q(0) = inf * 0 gave NaN)
    terms = np.where(np.isnan(terms) & np.isinf(c), 0.0, terms)
    return _out(terms if axis is None else terms.sum(axis=axis))


def diagonal_dual_beta(lam_x, w1_0, w2_0):
    r"""The interpolant's form :math:`\beta_d = c_d \sinh(s_d/2)` given :math:`s = X^\top\lambda`.

    Stationarity of Eq. 22 under :math:`X\beta = y` gives
    :math:`2\,q'(2\beta_d/c_d) = 2\operatorname{arcsinh}(\beta_d/c_d) = (X^\top\lambda)_d`,
    the same form as the gradient-flow solution
    :math:`\beta(t) = c\circ\sinh(-4X^\top\!\int_0^t r)` (paper 004, Eq. 21).
    """
    s = check_values("lam_x", lam_x)
    w1, w2 = check_values("w1_0", w1_0), check_values("w2_0", w2_0)
    check_broadcast(lam_x=s, w1_0=w1, w2_0=w2)
    with np.errstate(over="ignore", invalid="ignore"):
        c = w1 ** 2 + w2 ** 2
        out = c * np.sinh(s / 2)
    # c = 0 with sinh(s/2) = inf: the limit c -> 0 at fixed s is 0 (0 * inf gave NaN);
    # c = inf with s = 0: inf * 0, the limit s -> 0 at fixed c is 0 as well
    return _out(np.where(np.isnan(out), 0.0, out))


def l12_norm(beta, axis=0):
    r""":math:`\ell_{1,2}` norm :math:`\sum_d \|\vec\beta_d\|_2` (paper 004, Eqs. 30 and 35).

    ``beta`` has the outputs (tasks) :math:`o` along ``axis`` (default 0, the
    :math:`O\times D` layout of Eq. 24) and the input dimensions :math:`d` along the last
    remaining axis; the result sums the per-dimension Euclidean norms over that last axis.
    At minimum parameter norm a multi-task diagonal network (or ReLU network, Eq. 35) has
    parameter norm :math:`2\sum_d\|\vec\beta_d\|_2`; with one output this is the
    :math:`\ell_1` norm.
    """
    beta = check_values("beta", beta)
    if beta.ndim < 2:
        raise ValueError(f"beta must have at least 2 dimensions (outputs, inputs) (got shape {beta.shape})")
    axis = check_axis("axis", axis, beta.ndim, allow_none=False)
    return _out(np.sqrt((beta ** 2).sum(axis=axis)).sum(axis=-1))
