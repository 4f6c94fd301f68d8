r"""Closed-form arc-cosine kernels of ReLU networks (Cho and Saul, 2009).

For Gaussian :math:`w \sim \mathcal N(0, I_d)` and two vectors :math:`x, y` at angle
:math:`t = \arccos\big(x\cdot y / (\|x\|\|y\|)\big)`,

:math:`k_0(x, y) = \mathbb E[\Theta(w\cdot x)\,\Theta(w\cdot y)] = \frac{\pi - t}{2\pi},`

:math:`k_1(x, y) = \mathbb E[\mathrm{relu}(w\cdot x)\,\mathrm{relu}(w\cdot y)] = \frac{\|x\|\|y\|}{2\pi}\big(\sin t + (\pi - t)\cos t\big).`

Swapping the roles of weights and inputs, the same formula gives the population
Gram matrix of ReLU units under Gaussian inputs, :math:`E_{x\sim\mathcal N(0, I)}
[\mathrm{relu}(w\cdot x)\,\mathrm{relu}(v\cdot x)]` (paper 000, Eq. 150, there for unit
vectors; here scaled by :math:`\|w\|\|v\|`).

All functions take numpy arrays of rows, shape ``(..., N, d)`` and ``(..., M, d)``
with broadcasting leading batch dimensions, compute in float64 and return
``(..., N, M)``.  They are numerically safe: the cosine is clipped to :math:`[-1, 1]`
before the arccos, :math:`\sin t` is computed as :math:`\sqrt{1 - \cos^2 t}` clipped at 0, so
parallel rows give exactly :math:`k_0 = 1/2`, :math:`k_1 = \|x\|\|y\|/2` and antiparallel rows
exactly :math:`0` (cosines within :math:`10^{-15}` of :math:`\pm1` are rounded to :math:`\pm1`); a zero-norm row has an undefined angle, and is given :math:`t = \pi/2`,
which makes :math:`k_1 = 0` (the exact value) and :math:`k_0 = 1/4` (the value of
:math:`E[\Theta(w\cdot x)\Theta(0)]` with the convention :math:`\Theta(0) = 1/2`).
"""

from __future__ import annotations

import numpy as np

from .._validate import InputTypeError, as_array, check_array, check_magnitude, check_rows

__all__ = ["safe_arccos", "snap_cosines", "arccos_kernel_terms", "cosines", "arccos_kernel0", "arccos_kernel1", "relu_kernel", "relu_ntk_kernel", "tangent_kernel", "tangent_kernel_solution", "least_squares_factor", "beyond_linear_norm"]


def safe_arccos(c):
    r""":math:`\arccos(c)` with :math:`c` clipped to :math:`[-1, 1]` first (rounding can push a cosine
    of parallel vectors to :math:`1 + 10^{-16}`, where ``np.arccos`` returns NaN).  An
    elementwise helper: NaN in, NaN out; ``c`` beyond the float range (``10**400``) or not
    numeric is a ``ValueError`` naming ``c``."""
    return np.arccos(np.clip(as_array("c", c), -1.0, 1.0))


def _pair(X, Y, xname="X", yname="Y"):
    A = check_rows(xname, X)
    B = check_rows(yname, Y)
    if A.shape[-1] != B.shape[-1]:
        raise ValueError(f"{yname} must have the same number of columns as {xname} "
                         f"(got d = {B.shape[-1]} and {A.shape[-1]})")
    try:
        np.broadcast_shapes(A.shape[:-2], B.shape[:-2])
    except ValueError as err:
        raise ValueError(f"{yname} batch dimensions {B.shape[:-2]} do not broadcast with "
                         f"{xname}'s {A.shape[:-2]}") from err
    return A, B


def _norms_cos(A, B):
    """Row norms ``(..., N, 1)``, ``(..., 1, M)`` and the clipped cosines ``(..., N, M)``.

    Zero-norm rows get cosine 0 (angle pi/2)."""
    na = _row_norms(A)
    nb = _row_norms(B)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore", under="ignore"):
        dots = A @ np.swapaxes(B, -1, -2)
        denom = na[..., :, None] * nb[..., None, :]
        c = np.where(denom > 0, dots / np.where(denom > 0, denom, 1.0), 0.0)
        # rows so small or large that the product of norms (or the dot product) leaves the
        # normal range: cosines of the unit rows instead (same value, no underflow / overflow)
        extreme = (na[..., :, None] > 0) & (nb[..., None, :] > 0) & ~(
            (denom > _TINY) & (denom < _HUGE) & np.isfinite(dots))
        if np.any(extreme):
            ua = A / np.where(na > 0, na, 1.0)[..., None]
            ub = B / np.where(nb > 0, nb, 1.0)[..., None]
            c = np.where(extreme, ua @ np.swapaxes(ub, -1, -2), c)
    return na[..., :, None], nb[..., None, :], snap_cosines(c)


_TINY, _HUGE = 1e-290, 1e290


def _row_norms(A):
    """Euclidean row norms, exact also for rows whose squares leave the float range
    (rescaled by the largest entry there; ``np.linalg.norm`` elsewhere, bit for bit)."""
    with np.errstate(over="ignore", under="ignore"):
        n = np.linalg.norm(A, axis=-1)
    bad = (n > 0) & ~((n > 1e-150) & (n < 1e150))
    if np.any(bad):
        scale = np.max(np.abs(A), axis=-1)
        safe = np.where(bad, scale, 1.0)
        n = np.where(bad, safe * np.linalg.norm(A / safe[..., None], axis=-1), n)
    return n


SNAP = 1e-15


def _cosine_input(c, xp):
    """``c`` checked: a finite float64 array for numpy; a torch tensor is passed through
    (the torch kernel feeds it cosines it computed)."""
    if xp is np:
        return check_array("c", c, 0)
    if getattr(xp, "__name__", None) == "torch":
        return c
    raise InputTypeError(f"xp must be the numpy or the torch module (got {xp!r})")


def snap_cosines(c, xp=np):
    r"""Cosines clipped to :math:`[-1, 1]`, those within ``SNAP`` (:math:`10^{-15}`) of
    :math:`\pm1` rounded to :math:`\pm1`, so that parallel and antiparallel rows get the exact
    limits of the kernels (a change of at most ``SNAP / 2`` relative in :math:`k_1` near
    :math:`+1` and about :math:`10^{-23}` near :math:`-1`).

    ``xp``: the array namespace, ``numpy`` (default) or ``torch``
    (:func:`transferkit.models.relu.relu_kernel_torch` calls it with ``xp=torch``, so the
    kernel formula of paper 000, Eq. 150 is written once).
    """
    c = _cosine_input(c, xp)
    c = xp.clip(c, -1.0, 1.0)
    return xp.where(xp.abs(c) >= 1.0 - SNAP, xp.sign(c), c)


def arccos_kernel_terms(c, xp=np):
    r"""The angular terms of the arc-cosine kernels at snapped cosines
    :math:`c = \cos t` (:func:`snap_cosines`): :math:`t`, :math:`\sin t` and

    .. math::
        J_1(t) = \max\big(\sin t + (\pi - t)\cos t,\ 0\big),

    so that :math:`k_0 = (\pi - t)/2\pi` and :math:`k_1(x, y) = \|x\|\|y\|\,J_1(t)/2\pi`
    (Cho and Saul 2009; paper 000, Eq. 150 for the population Gram matrix of ReLU units).
    :math:`\sin t = \sqrt{1 - c^2}` clipped at 0, and :math:`J_1` clipped at 0 against the
    rounding at antiparallel rows.  ``xp``: ``numpy`` (default) or ``torch``, as in
    :func:`snap_cosines`.
    """
    c = _cosine_input(c, xp)
    if xp is np and np.any(np.abs(c) > 1.0):
        raise ValueError("c must lie in [-1, 1] (cosines; snap_cosines clips them)")
    t = xp.arccos(c)
    s = xp.sqrt(xp.clip(1.0 - c * c, 0.0, 1.0))
    return t, s, xp.clip(s + (np.pi - t) * c, 0.0, None)



def cosines(X, Y) -> np.ndarray:
    r"""Cosines :math:`x_i\cdot y_j/(\|x_i\|\|y_j\|)` clipped to :math:`[-1, 1]` (0 for a zero row)."""
    A, B = _pair(X, Y)
    return _norms_cos(A, B)[2]


def _k0_from_cos(c):
    return (np.pi - arccos_kernel_terms(c)[0]) / (2 * np.pi)


def _k1_from_cos(c):
    return arccos_kernel_terms(c)[2] / (2 * np.pi)


def _scaled_k1(na, nb, c):
    """``na * nb * k1(c)``: ``inf`` where the product of norms overflows (its value), and
    exactly 0 where ``k1`` is 0 (antiparallel rows; ``inf * 0`` would be NaN)."""
    k = _k1_from_cos(c)
    with np.errstate(over="ignore", invalid="ignore"):
        out = na * nb * k
    return np.where(k == 0, 0.0, out) if np.isnan(out).any() else out


def arccos_kernel0(X, Y) -> np.ndarray:
    r"""Order-0 arc-cosine kernel (Cho and Saul 2009), shape ``(..., N, M)``:

    :math:`k_0(x, y) = \mathbb E_{w\sim\mathcal N(0, I)}[\Theta(w\cdot x)\Theta(w\cdot y)] = \frac{\pi - t}{2\pi},\qquad t = \angle(x, y).`

    Independent of the norms; a zero row gives :math:`1/4` (angle :math:`\pi/2`).
    """
    A, B = _pair(X, Y)
    return _k0_from_cos(_norms_cos(A, B)[2])


def arccos_kernel1(X, Y) -> np.ndarray:
    r"""Order-1 arc-cosine kernel (Cho and Saul 2009), shape ``(..., N, M)``:

    :math:`k_1(x, y) = \mathbb E_{w\sim\mathcal N(0, I)}[\mathrm{relu}(w\cdot x)\, \mathrm{relu}(w\cdot y)] = \frac{\|x\|\|y\|}{2\pi}\big(\sin t + (\pi - t)\cos t\big).`

    Homogeneous of degree one in each argument; exactly 0 for a zero row.
    """
    A, B = _pair(X, Y)
    na, nb, c = _norms_cos(A, B)
    return _scaled_k1(na, nb, c)


def relu_kernel(W, V) -> np.ndarray:
    r"""Population Gram matrix of ReLU units, shape ``(..., N, M)``:

    :math:`K_{ij} = \mathbb E_{x\sim\mathcal N(0, I_d)}[\mathrm{relu}(w_i\cdot x)\, \mathrm{relu}(v_j\cdot x)] = \frac{\|w_i\|\|v_j\|}{2\pi} \big(\sin t_{ij} + (\pi - t_{ij})\cos t_{ij}\big)`

    (paper 000, Eq. 150, scaled by :math:`\|w_i\|\|v_j\|`; it is :func:`arccos_kernel1` with
    the roles of weights and inputs swapped).
    """
    A, B = _pair(W, V, "W", "V")
    na, nb, c = _norms_cos(A, B)
    return _scaled_k1(na, nb, c)


def relu_ntk_kernel(X, Y) -> np.ndarray:
    r"""Infinite-width NTK of a two-layer ReLU network, shape ``(..., N, M)``:

    for :math:`f(x) = m^{-1/2}\sum_i a_i\,\mathrm{relu}(w_i\cdot x)` with
    :math:`a_i \sim \mathcal N(0, 1)`, :math:`w_i\sim\mathcal N(0, I_d)` and :math:`m\to\infty`,

    :math:`\Theta(x, y) = \underbrace{k_1(x, y)}_{\text{readout}} + \underbrace{(x\cdot y)\,k_0(x, y)}_{\text{first layer}}`

    (Jacot et al. 2018; the companion of :func:`relu_kernel`, whose first term it is).
    """
    A, B = _pair(X, Y)
    na, nb, c = _norms_cos(A, B)
    with np.errstate(over="ignore"):
        dots = A @ np.swapaxes(B, -1, -2)
    k0 = _k0_from_cos(c)
    with np.errstate(over="ignore", invalid="ignore"):
        out = _scaled_k1(na, nb, c) + dots * k0
    if np.isnan(out).any():
        # rows so large that |x||y| overflows (inf - inf, inf * 0): the same kernel as
        # |x||y| g(t), g = (sin t + 2 (pi - t) cos t) / (2 pi), which is +-inf or exactly 0
        t = safe_arccos(c)
        g = (np.sqrt(np.clip(1.0 - c * c, 0.0, 1.0)) + 2 * (np.pi - t) * c) / (2 * np.pi)
        with np.errstate(over="ignore", invalid="ignore"):
            alt = np.where(g == 0, 0.0, na * nb * g)
        out = np.where(np.isnan(out), alt, out)
    return out


# The largest magnitude of the entries of the arguments of tangent_kernel and
# tangent_kernel_solution. Their terms are products of four entries, so below 1e50 every
# product and sum stays far from the float range (check_magnitude's 1e100 is that rule for
# products of two).
_TANGENT_MAX_ABS = 1e50


def _network(W, a):
    """A two-layer network's units ``W`` ``(H, d)`` and readout ``a`` ``(H,)``, checked: finite,
    entries of magnitude at most :data:`_TANGENT_MAX_ABS`, matching shapes; a ``ValueError``
    naming the argument."""
    W = check_magnitude("W", check_rows("W", W), _TANGENT_MAX_ABS)
    if W.ndim != 2:
        raise ValueError(f"W must be one network's units, shape (H, d) (got shape {W.shape})")
    a = check_magnitude("a", check_array("a", a, 1), _TANGENT_MAX_ABS)
    if a.shape != W.shape[:1]:
        raise ValueError(f"a must have one entry per unit of W, shape ({W.shape[0]},) "
                         f"(got shape {a.shape})")
    return W, a


def _inputs(name, X, d):
    """Inputs ``(N, d)`` for one network of input dimension ``d``, checked as :func:`_network`."""
    X = check_magnitude(name, check_rows(name, X), _TANGENT_MAX_ABS)
    if X.ndim != 2 or X.shape[1] != d:
        raise ValueError(f"{name} must have shape (N, {d}), the units' input dimension "
                         f"(got shape {X.shape})")
    return X


def tangent_kernel(W, a, X, Y) -> np.ndarray:
    r"""Empirical neural tangent kernel of one two-layer ReLU network, shape ``(N, M)``.

    For the students of papers 003 and 004, :math:`f(x) = \sum_h a_h\,\mathrm{relu}(w_h\cdot x)`
    (:func:`transferkit.models.relu.forward`), the kernel of their gradients in all weights
    :math:`\theta = (W, a)`,

    .. math::

        \Theta_\theta(x, y) = \nabla_\theta f(x)\cdot\nabla_\theta f(y)
        = \sum_h \mathrm{relu}(w_h\cdot x)\,\mathrm{relu}(w_h\cdot y)
        + (x\cdot y)\sum_h a_h^2\,\mathbf 1[w_h\cdot x > 0]\,\mathbf 1[w_h\cdot y > 0]

    (the readout's term, then the first layer's; :math:`\mathrm{relu}'(0) = 0`, as torch's).
    With :math:`w_h = \tilde w_h/\sqrt H`, :math:`a_h = \tilde a_h/\sqrt H` and
    :math:`\tilde w_h\sim\mathcal N(0, I_d)`, :math:`\tilde a_h\sim\mathcal N(0, 1)` it
    tends to :func:`relu_ntk_kernel` as the width :math:`H\to\infty` (Jacot et al. 2018;
    tested against Monte Carlo).

    Parameters
    ----------
    W : array_like, shape (H, d)
        The units (first-layer weights), one row each.
    a : array_like, shape (H,)
        The readout.
    X, Y : array_like, shapes (N, d) and (M, d)
        Inputs, one row each.

    Every entry of ``W``, ``a``, ``X`` and ``Y`` must be finite and of magnitude at most
    1e50 (the kernel multiplies four of them), else a ``ValueError`` names the argument.
    """
    W, a = _network(W, a)
    X, Y = _inputs("X", X, W.shape[1]), _inputs("Y", Y, W.shape[1])
    px, py = X @ W.T, Y @ W.T                                 # pre-activations (N, H), (M, H)
    readout = np.maximum(px, 0.0) @ np.maximum(py, 0.0).T
    first = (X @ Y.T) * (((px > 0) * a ** 2) @ (py > 0).T)
    return readout + first


def tangent_kernel_solution(W, a, X, y, Xt) -> np.ndarray:
    r"""Predictions at ``Xt`` of the lazy limit from one network: gradient descent (or flow)
    to convergence on :math:`\frac12\|f_{\rm lin}(X) - y\|^2` of the network linearised at its
    weights :math:`\theta_0 = (W, a)`, :math:`f_{\rm lin}(x) = f(x) + \nabla_\theta f(x)\cdot
    (\theta - \theta_0)`, started at :math:`\theta_0`:

    .. math::

        f_{\rm lin}^\infty(x) = f(x) + \Theta(x, X)\,\Theta(X, X)^+\,\big(y - f(X)\big),

    with :math:`\Theta` = :func:`tangent_kernel` at :math:`\theta_0` (the steps stay in the
    span of the gradients at the samples, so the limit is the least-squares solution of
    least norm; it interpolates where :math:`\Theta(X, X)` is invertible).  This is
    "the (lazy) tangent kernel solution" of paper 004, caption of Fig. 4b, read at a given
    network: at the small initialisation of a student it is the lazy version of training
    from scratch, at the pretrained weights the lazy version of fine-tuning (the kernel of a
    finite network; :func:`relu_ntk_kernel` is the infinite-width one, from a zero output).
    Gradient descent in the Euclidean metric on all weights, one step size for all, is what
    :func:`transferkit.models.relu.train_units` runs; another metric would weigh the two
    terms of the kernel differently.

    Parameters
    ----------
    W, a : array_like, shapes (H, d) and (H,)
        The network the model is linearised at.
    X, y : array_like, shapes (n, d) and (n,)
        Training inputs and targets.
    Xt : array_like, shape (M, d)
        Inputs to predict at.

    Every entry must be finite and of magnitude at most 1e50, as for :func:`tangent_kernel`,
    else a ``ValueError`` names the argument.

    Returns
    -------
    ndarray, shape (M,)
    """
    W, a = _network(W, a)
    X, Xt = _inputs("X", X, W.shape[1]), _inputs("Xt", Xt, W.shape[1])
    y = check_magnitude("y", check_array("y", y, 1), _TANGENT_MAX_ABS)
    if y.shape != X.shape[:1]:
        raise ValueError(f"y must have one target per row of X, shape ({X.shape[0]},) "
                         f"(got shape {y.shape})")
    f = lambda Z: np.maximum(Z @ W.T, 0.0) @ a                 # noqa: E731
    coef = np.linalg.lstsq(tangent_kernel(W, a, X, X), y - f(X), rcond=None)[0]
    return f(Xt) + tangent_kernel(W, a, Xt, X) @ coef


def least_squares_factor(n, m):
    r"""Risk of least squares on ``m`` features over the part of the target outside their
    span, for Gaussian features (the Breiman-Freedman / inverse-Wishart identity):

    :math:`\frac{\mathbb E\,\mathcal R_{lt}}{\|P_\perp f_t\|^2} = 1 + \frac{m}{n-m-1} = \frac{n-1}{n-m-1}, \qquad n > m + 1,`

    the out-of-span part acting as noise of variance :math:`\|P_\perp f_t\|^2` uncorrelated with
    the features. This is the :math:`n`-dependent term :math:`C(n)` that paper 000 (Sec. 4, Eq. 18)
    neglects at large :math:`n`; here it is the approximation we test against the ReLU
    features (which are not Gaussian). ``inf`` at ``n = m + 1``; ``nan`` below (the
    minimum-norm interpolant of ``n <= m`` points has no such form). Broadcasts."""
    n, m = check_array("n", n, 0), check_array("m", m, 0)
    try:
        np.broadcast_shapes(n.shape, m.shape)
    except ValueError:
        raise ValueError(f"n and m must broadcast together (got shapes {n.shape}, {m.shape})") from None
    if np.any(n < 1) or np.any(m < 1):
        raise ValueError(f"n and m must be >= 1 (got n = {n!r}, m = {m!r})")
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(n > m + 1, (n - 1) / (n - m - 1),
                       np.where(n == m + 1, np.inf, np.nan))
    return float(out) if out.ndim == 0 else out


def beyond_linear_norm(W, a) -> np.ndarray:
    r"""Squared :math:`L_2` norm of the part of a two-layer ReLU network
    :math:`f(x) = \sum_i a_i\,\mathrm{relu}(w_i\cdot x)`, :math:`x\sim\mathcal N(0, I_d)`,
    beyond its constant and linear parts (its Hermite components of order 2 and higher):

    .. math::

        \|f\|^2 - (E f)^2 - \|E[f\,x]\|^2
        = a^\top K(W, W)\,a - \frac{1}{2\pi}\Big(\sum_i a_i\|w_i\|\Big)^2
          - \frac14\Big\|\sum_i a_i w_i\Big\|^2,

    with :math:`K` the population Gram matrix of ReLU units (:func:`relu_kernel`, paper 000,
    Eq. 150), :math:`E\,\mathrm{relu}(w\cdot x) = \|w\|/\sqrt{2\pi}` and
    :math:`E[\mathrm{relu}(w\cdot x)\,x] = w/2`.  A network that has fitted only the
    constant and linear parts of a target leaves this much of it (for one unit,
    :math:`\|w\|^2(\frac14 - \frac1{2\pi})`, 0.18 of its squared norm).  ``W (..., N, d)``,
    ``a (..., N)``, entries of magnitude at most :math:`10^{50}` (the terms are of degree
    four in them, so no overflow turns into ``inf - inf``); returns ``(...)``, clipped at 0
    (it is :math:`\ge 0` up to rounding).
    """
    W = check_magnitude("W", check_rows("W", W), 1e50)
    a = check_magnitude("a", check_array("a", a, 1), 1e50)
    if a.shape != W.shape[:-1]:
        raise ValueError(f"a must have shape {W.shape[:-1]} (one readout per row of W; got {a.shape})")
    total = np.einsum("...i,...ij,...j->...", a, relu_kernel(W, W), a)
    const = np.einsum("...i,...i->...", a, np.linalg.norm(W, axis=-1)) ** 2 / (2 * np.pi)
    lin = np.sum(np.einsum("...i,...id->...d", a, W) ** 2, axis=-1) / 4
    out = np.maximum(total - const - lin, 0.0)
    return float(out) if out.ndim == 0 else out
