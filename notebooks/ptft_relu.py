# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # The PT+FT penalty of a ReLU unit
#
# This chapter regenerates Fig. 1 of paper 003 {cite:p}`ptft_relu_penalty` (see also
# {cite:p}`lippl2024inductive`): the cost that fine-tuning pays to move one pretrained
# ReLU unit of a shallow network $f(x) = \sum_h w^{(2)}_h(\langle w^{(1)}_h, x\rangle)_+$
# (Eq. 1), and its consequence for sample efficiency.
#
# **Theory** (Eqs. 2-11). After pretraining, unit $h$ has first-layer weight $w_0$ of norm
# $m_0$ and its readout is re-initialised at a small $\gamma$. Giving it the direction
# $\hat w$ (cosine $\rho$ with $w_0$) and the magnitude $m = \|w^{(1)}\|\,w^{(2)}$ costs at
# least
#
# $$\tilde r(m) = \min_{u>0} p(u),\qquad p(u) = (m/u - \gamma)^2 + u^2 + m_0^2 - 2um_0\rho,$$
#
# where $u$ is the first-layer norm; the minimiser $u^*$ is a positive root of the quartic
# $u^4 - m_0\rho u^3 + \gamma m u - m^2 = 0$ (Eq. 10). A pretrained feature with
# coefficient $m^{\rm aux}$ has $m_0 = \sqrt{m^{\rm aux}}$.
# `transferkit.theory.penalties.relu_ptft_penalty` solves Eq. 10 for whole grids at once
# (batched companion-matrix eigenvalues polished by Newton's method) and takes the global
# minimiser of $p$ when several positive roots exist.

# %% tags=["hide-input"]
import dataclasses
import math
import time
import warnings

import numpy as np
from scipy.optimize import minimize_scalar

import transferkit as tk
from transferkit import experiments, figures, provenance, stats, theory

figures.plotting.use_style()
SCALE = tk.scale()
tk.models.device.use_threads()  # TRANSFERKIT_THREADS, default 1 (transferkit.config.threads)
print(f"TRANSFERKIT_SCALE = {SCALE}")

# %% [markdown]
# ## Parameters
#
# Fig. 1a-b use the paper's $\rho\in\{1, 0.99, 0.9\}$ and $m^{\rm aux}\in\{0.01, 1, 100\}$;
# the paper does not state $\gamma$ ("a small value"), we use $\gamma = 10^{-2}$.

# %%
FIG1AB = experiments.ptft_relu.PENALTY[SCALE]  # each value's source: the preset's docs
RHOS, MAUX, GAMMA = list(FIG1AB.rhos), list(FIG1AB.m_aux), FIG1AB.gamma
# the grids avoid m = gamma m0 = 1e-3 (rho = 1, m_aux = 0.01), where r~ = 0 and its
# logarithmic derivative is undefined (it jumps from -inf to +inf)
M = np.logspace(*FIG1AB.log10_m, FIG1AB.m_points)
M_CHECK = np.logspace(*FIG1AB.log10_m_check, FIG1AB.check_points)

# %% [markdown]
# ## Fig. 1a-b: the penalty and its local exponent
#
# *Theory*: $\tilde r$ from Eq. 10-11, and the local exponent
# $\partial\log\tilde r/\partial\log m = 2m(m/u^*-\gamma)/(u^*\tilde r)$ (envelope theorem).
# *Check*: at the marked points, $p$ is minimised directly (a dense grid in $\log u$ refined
# by Brent's method, without the quartic), and the exponent is taken by central finite
# differences of $\log\tilde r$, as in the paper ("computed empirically").


# %%
def direct_min(m, rho, m0, gamma):
    f = lambda lu: float(theory.penalties.relu_ptft_p(math.exp(lu), m, rho, m0, gamma))  # noqa: E731
    grid = np.linspace(-12, 12, 2401)
    v = np.asarray(theory.penalties.relu_ptft_p(np.exp(grid), m, rho, m0, gamma))
    i = int(np.argmin(v))
    res = minimize_scalar(f, bracket=tuple(grid[[max(i - 1, 0), i, min(i + 1, 2400)]]), tol=1e-13)
    return min(res.fun, v[i])


t0 = time.perf_counter()
R = {(rho, ma): theory.penalties.relu_ptft_penalty(M, rho, math.sqrt(ma), GAMMA) for rho in RHOS for ma in MAUX}
DLOG = {k: theory.penalties.relu_ptft_dlog_penalty(M, k[0], math.sqrt(k[1]), GAMMA) for k in R}
NMIN = {k: theory.penalties.relu_ptft_u_star(M, k[0], math.sqrt(k[1]), GAMMA)[1].max() for k in R}
DIRECT = {k: np.array([direct_min(m, k[0], math.sqrt(k[1]), GAMMA) for m in M_CHECK]) for k in R}
h = FIG1AB.fd_step
FD = {k: (np.log(theory.penalties.relu_ptft_penalty(M_CHECK * math.exp(h), k[0], math.sqrt(k[1]), GAMMA))
          - np.log(theory.penalties.relu_ptft_penalty(M_CHECK * math.exp(-h), k[0], math.sqrt(k[1]), GAMMA)))
      / (2 * h) for k in R}
print(f"{time.perf_counter() - t0:.1f} s; largest number of local minima of p on the grid: "
      f"{max(NMIN.values())}")

fig = figures.paper003_004.ptft_penalty_figure(M, R, DLOG, M_CHECK, DIRECT, FD, RHOS, MAUX)
provenance.record(fig, "p003-fig1ab", params=dict(rhos=RHOS, m_aux=MAUX, gamma=GAMMA, m_checked=M_CHECK),
                  caption="paper 003 Fig. 1a-b: the PT+FT penalty of one ReLU unit and its local exponent")

# %% [markdown]
# *Fig. 1a-b.* Top (Fig. 1a): the penalty $\tilde r$ against the magnitude $m$ for
# $\rho = 1, 0.99, 0.9$ (columns) and $m^{\rm aux} = 0.01, 1, 100$ (colours), $\gamma = 10^{-2}$;
# lines: Eqs. 10-11; circles: direct numerical minimisation of $p(u)$. Bottom (Fig. 1b): the
# local exponent $\partial\log\tilde r/\partial\log m$ (lines: closed form; circles: finite
# differences); 2 is $\ell_2$-like, 1 is $\ell_1$-like. For $\rho = 1$ the penalty vanishes
# at $m = \gamma m_0$ (the initial unit itself), where the exponent runs off to $\pm\infty$
# (clipped to $[-0.5, 2.5]$ here). The paper labels the panel
# $\partial\log\tilde r/\partial m$; its reading (2: $\ell_2$, 1: $\ell_1$) is that of the
# derivative in $\log m$ shown here. As in the paper, for $\rho = 1$ a pretrained feature
# ($m^{\rm aux} = 1$) stays cheaper than a new one ($m^{\rm aux} = 0.01$) in the
# $\ell_1$-like regime, and for $\rho = 0.9$ a feature pretrained with a much larger weight
# ($m^{\rm aux} = 100$) is *more* expensive around $m\approx1$ than a new one.

# %%
# The checks this chapter asserts (`make test` runs them): the quartic solution is the minimum of p, and the closed-form
# exponent matches finite differences.
for k in R:
    th = theory.penalties.relu_ptft_penalty(M_CHECK, k[0], math.sqrt(k[1]), GAMMA)
    assert np.all(th <= DIRECT[k] * (1 + 1e-9) + 1e-14), k
    np.testing.assert_allclose(th, DIRECT[k], rtol=1e-7, atol=1e-13)
    np.testing.assert_allclose(theory.penalties.relu_ptft_dlog_penalty(M_CHECK, k[0], math.sqrt(k[1]), GAMMA),
                               FD[k], rtol=1e-5, atol=1e-6)
# the paper's reading of Fig. 1a: for rho = 0.9 the m_aux = 100 unit costs more at m = 1
# than a fresh unit (m_aux = 0.01); for rho = 1 it costs less
r1 = {k: theory.penalties.relu_ptft_penalty(1.0, k[0], math.sqrt(k[1]), GAMMA) for k in R}
assert r1[0.9, 100.0] > r1[0.9, 0.01] and r1[1.0, 100.0] < r1[1.0, 0.01]

# %% [markdown]
# ## Fig. 1c: sample efficiency of STL and PT+FT
#
# The prediction of Fig. 1a is tested by training small ReLU networks: a six-unit teacher
# for the auxiliary task (orthonormal directions $\theta_h$, readout 1) and for the main
# task (directions at cosine $\rho$ with the $\theta_h$, readout of magnitude $m$). STL
# trains a student from a small initialisation on the main task; PT+FT pretrains it on the
# auxiliary task, resets the readout to $\gamma$ and fine-tunes both layers. Smaller $m$
# corresponds to a relatively larger auxiliary weight (larger $m^{\rm aux}/m$), where the
# theory predicts that only highly correlated pretrained features help.
#
# The parameters are printed; where the paper leaves one open (most of them) the value is
# ours. Training stops at a relative loss of $10^{-6}$ or at a step cap; the fraction of
# converged runs is printed and runs stopped at a cap are marked.

# %%
FIG1C = experiments.ptft_relu.SAMPLE_EFFICIENCY[SCALE]  # sources: the preset's docs
FIG_RHOS, FIG_MAGS, NS = list(FIG1C.rhos), list(FIG1C.magnitudes), list(FIG1C.ns)
DRAWS, STEPS, SEED = FIG1C.draws, FIG1C.max_steps, FIG1C.seed
D_IN, WIDTH, N_AUX, ALPHA = FIG1C.d, FIG1C.width, FIG1C.n_aux, FIG1C.alpha
assert FIG1C.gamma == ALPHA, "the line below prints alpha = gamma"
print(f"d = {D_IN}, width {WIDTH}, n_aux = {N_AUX}, alpha = gamma = {ALPHA}, {DRAWS} draws, "
      f"n = {NS}, at most {STEPS} steps")
t0 = time.perf_counter()
with warnings.catch_warnings():
    # runs stopped at their step cap are counted below and marked in the figures
    warnings.simplefilter("ignore", tk.ConvergenceWarning)
    # one transferkit.sweep over (rho, m): cached, resumable, on Dask with TRANSFERKIT_SCHEDULER;
    # pretraining (the same for every rho and m) is trained once
    SE = experiments.ptft_relu.run_sample_efficiency_grid(FIG1C)
SE_SECONDS = time.perf_counter() - t0
print(f"{SE_SECONDS:.0f} s")
for k, r in SE.items():
    print(k, "converged: pretraining", r.pre_converged.mean(), "STL", r.stl.converged.mean(),
          "PT+FT", r.ptft.converged.mean())

fig = figures.paper003_004.sample_efficiency_figure(SE, FIG_RHOS, FIG_MAGS, FIG1C.gamma)
provenance.record(fig, "p003-fig1c", seeds=SEED,
                  params=dict(rhos=FIG_RHOS, magnitudes=FIG_MAGS, ns=NS, draws=DRAWS, max_steps=STEPS,
                              d=D_IN, width=WIDTH, n_aux=N_AUX, alpha=ALPHA),
                  caption="paper 003 Fig. 1c (reduced): sample efficiency of STL vs PT+FT")

# %% [markdown]
# *Fig. 1c.* Normalised test error of STL and PT+FT students (mean over draws)
# against the number of main-task samples, for rows of $\rho$ and columns of main-task
# feature magnitude $m$ (auxiliary weight 1, so $m^{\rm aux}/m = 1/m$). Each title gives the
# theory's prediction: the penalty $\tilde r$ of re-using a pretrained unit
# ($m_0 = 1$, cosine $\rho$) relative to that of a fresh unit ($m_0 = 0$, Eq. 35's
# $2|m|$ when $\gamma = 0$); below 1, pretraining should help. An open marker: some draw of
# that method stopped at its step cap before the $10^{-6}$ loss tolerance. Differences from
# the paper (the printed parameters; each value's source is in
# `experiments.ptft_relu.SAMPLE_EFFICIENCY`): the paper states only the six teacher units
# and, in paper 004 App. D, 1024 auxiliary samples and up to 1024 main-task samples; $d$,
# the width, the values of $\rho$ and $m$, the initialisation, the optimiser, the stopping
# rule and the number of draws are ours. At `paper` scale $n\le64$ instead of up to 1024
# (the CPU budget); `experiments.ptft_relu.SAMPLE_EFFICIENCY_FULL` keeps $n$ up to 1024 for
# a Dask cluster (`run_sample_efficiency_grid`). At `smoke` scale there are 128 auxiliary
# samples and pretraining stops at its cap before the tolerance (printed below).

# %%
# The check this chapter asserts: with identical features (rho = 1, m = 1), PT+FT generalises
# better than STL at the smallest sample size.
r = SE[1.0, 1.0]
assert r.ptft.error[0].mean() < r.stl.error[0].mean(), (r.ptft.error, r.stl.error)

# %% [markdown]
# ### Does the reversal appear where the penalty predicts it?
#
# The penalty makes a prediction for each cell of Fig. 1c: re-using a pretrained unit
# (norm $m_0 = 1$, cosine $\rho$) costs $\tilde r(m;\rho, 1, \gamma)$, a fresh unit
# $\tilde r(m; 0, 0, \gamma)$; where the ratio is below 1 PT+FT should be the more
# sample-efficient, where it is above 1 STL should win (the reversal of Sec. 1.2). For
# $\rho = 1$ the ratio is below 1 at every $m$; for $\rho = 0.9$ it is 0.47 at $m = 1$,
# 1.03 at $m = 0.1$ (parity), 3.4 at $m = 0.03$ and 10.5 at $m = 0.01$. The measurement
# that this compares with is, per draw, $\log_{10}$ of the PT+FT test error over the STL
# test error of the same draw (same teachers and samples), averaged over the draws in which
# pretraining, STL and PT+FT all reached the loss tolerance (runs stopped at a step cap are
# left out and counted).

# %%
PRED = {k: float(experiments.ptft_relu.penalty_ratio(k[1], k[0], FIG1C.gamma)) for k in SE}
LOGR = {k: figures.paper003_004.paired_log_ratio(r) for k, r in SE.items()}  # NaN: a run stopped at its cap
print(f"pretraining: at most {max(int(r.pre_steps.max()) for r in SE.values())} steps "
      f"(cap {FIG1C.pre_max_steps or 5 * STEPS}), converged in "
      f"{min(int(r.pre_converged.sum()) for r in SE.values())} of {DRAWS} draws")


def ratio_summary(logr):
    """Per (rho, m) of paired log ratios (NaN: a run stopped at its cap): the mean, standard
    error and number of converged draws per n, over the converged draws (three dicts)."""
    mean, se, count = {}, {}, {}
    for k, lr in logr.items():
        ok = np.isfinite(lr)
        count[k] = ok.sum(1)
        mean[k], se[k] = stats.mean_se(lr, axis=1, where=ok)
    return mean, se, count


def sign_test(mean, se, count):
    """The cells (rho, m, n) with at least two converged draws, each -1 (PT+FT significantly
    better), +1 (STL significantly better: the reversal) or 0, Bonferroni t critical values
    over those cells (family-wise 1 %)."""
    tested = [(k, i) for k in mean for i in range(len(NS)) if count[k][i] >= 2]
    out = {}
    for k, i in tested:
        crit = stats.critical_value(len(tested), int(count[k][i]))
        lo, hi = mean[k][i] - crit * se[k][i], mean[k][i] + crit * se[k][i]
        out[k[0], k[1], NS[i]] = -1 if hi < 0 else (1 if lo > 0 else 0)
    return tested, out


LR_MEAN, LR_SE, LR_COUNT = ratio_summary(LOGR)   # per (rho, m): mean, s.e., converged draws per n
for k in LOGR:
    cells = ", ".join(f"n={n}: {m:+.2f} +- {e:.2f} ({c}/{DRAWS})"
                      for n, m, e, c in zip(NS, LR_MEAN[k], LR_SE[k], LR_COUNT[k]))
    print(f"rho = {k[0]}, m = {k[1]}: penalty ratio {PRED[k]:.2f}; log10(PT+FT/STL) {cells}")

fig = figures.paper003_004.reversal_figure(SE, FIG_RHOS, FIG_MAGS, FIG1C.gamma)
provenance.record(fig, "p003-fig1c-prediction", seeds=SEED,
                  params=dict(rhos=FIG_RHOS, magnitudes=FIG_MAGS, ns=NS, draws=DRAWS, max_steps=STEPS,
                              pre_max_steps=FIG1C.pre_max_steps, d=D_IN, width=WIDTH, n_aux=N_AUX,
                              alpha=ALPHA, gamma=FIG1C.gamma, loss_tol=FIG1C.loss_tol),
                  caption="paper 003 Fig. 1c against Eqs. 10-11: measured PT+FT / STL error ratio "
                          "beside the penalty's reuse / fresh ratio")

# %% [markdown]
# *Fig. 1c against the penalty.* Markers: mean and standard error over converged draws of
# the paired $\log_{10}(e_{\rm PT+FT}/e_{\rm STL})$ (one colour per $n$; a thin dashed line,
# the mean over all draws, where some run stopped at its cap); black line: $\log_{10}$ of
# the penalty ratio. The theory predicts the sign (below 0 pretraining helps, above 0 the
# reversal), not the size of the error ratio.
#
# **What we measured** (`TRANSFERKIT_SCALE=paper`, the printed parameters: $d = 12$, 24
# hidden units, 1024 auxiliary samples, $n = 8$ to 64, 8 draws, $\alpha = \gamma = 10^{-2}$;
# the grid took 455 s in a script and 415 s and 289 s in two runs of this notebook, on two
# CPU cores shared with other jobs, and 607 s and 661 s in two later runs of the whole
# notebook on one core; all gave the same numbers. Since 2026-11-29 the networks train on the
# compiled kernel of `train_units` (each network to its own stop on its own samples, the
# torch loop's operations; `engine="torch"` keeps the loop): the grid took 36 s against the
# loop's 319 s in two runs side by side, and every number this notebook prints was the
# same). Pretraining reached its
# tolerance in every draw (at most 37059 steps of the $10^6$ allowed). STL reached it in
# all 256 runs, PT+FT in 223: the other 33 stopped at the 50000-step cap, mostly at small
# $m$ and large $n$ (stopped: $\rho = 1$, $m = 0.01$: 1, 3 and 7 of 8 at $n = 8$, 32, 64;
# $\rho = 0.9$, $m = 0.03$: 5 of 8 at $n = 64$; $\rho = 0.9$, $m = 0.01$: 2, 5 and 8 of 8
# at $n = 16$, 32, 64; and one at $n = 16$ in each cell with $m = 1$; the counts of
# converged draws are the "(k/8)" printed above). Those points rest on few or no converged draws and are marked; no
# claim below rests on them.
#
# Each cell with at least two converged draws is tested against 0 with a Bonferroni
# $t$ critical value over all 30 such cells (family-wise level 1%):
#
# - $\rho = 1$: PT+FT is significantly more sample-efficient than STL in every tested cell
#   (e.g. $\log_{10}$ ratio $-0.52\pm0.04$ at $m = 1$, $n = 8$; below $-2.4$ for
#   $m \le 0.03$), as the penalty (ratio 0.33 down to 0) and the paper say.
# - $\rho = 0.9$, $m = 1$ (ratio 0.47): PT+FT significantly better at every $n$ ($-0.43$ to
#   $-0.71$), as predicted.
# - $\rho = 0.9$, $m = 0.1$ (ratio 1.03, parity predicted): PT+FT still significantly better
#   at every $n$, by about the same factor ($-0.57$ to $-0.62$, every run converged).
# - $\rho = 0.9$, $m = 0.03$ (ratio 3.4, a reversal predicted): PT+FT significantly better
#   at $n = 16$ ($-0.52\pm0.04$) and 32 ($-0.46\pm0.05$); not significant at $n = 8$
#   ($-0.39\pm0.14$) and $n = 64$ (3 converged draws).
# - $\rho = 0.9$, $m = 0.01$ (ratio 10.5): no significant difference either way at any $n$
#   with converged draws ($-0.21\pm0.17$ at $n = 8$; $-0.47\pm0.06$ at $n = 16$, 6 draws;
#   $-0.43\pm0.13$ at $n = 32$, 3 draws; none converged at $n = 64$). At $n = 8$ the
#   arithmetic means even order the other way (2.10 for PT+FT, 1.97 for STL), driven by one
#   draw.
#
# **The reversal does not appear where the penalty predicts it**: no cell has STL
# significantly better, and every mean is below 0. What does follow the prediction is the
# direction of the trend at the smallest $n$: at $\rho = 0.9$, $n = 8$ the benefit of
# pretraining shrinks from $-0.62$ ($m = 0.1$) to $-0.39$ ($m = 0.03$) and $-0.21$
# ($m = 0.01$) (the last two steps within their standard errors, so only suggestive),
# while at $\rho = 1$ it is far larger at every $m < 1$ than at $m = 1$.
#
# **Not reproduced, and not a finding.** The paper reports the benefit at $\rho = 0.9$
# vanishing and reversing for small $m$; our runs show neither, but they are not the paper's
# protocol: the paper states neither $d$, the width, the values of $\rho$ and $m$, the
# initialisation, the optimiser nor the stopping rule, and our $n$ stops at 64 where the
# paper's goes to 1024 (`SAMPLE_EFFICIENCY_FULL`, for a cluster). Reasons it may differ:
# (i) the penalty compares re-using *one* pretrained unit with a fresh one, and the
# students here are not forced to choose: PT+FT keeps 18 units that pretraining left near
# their small initialisation, so it can learn new features as STL does, while each new
# direction lies 26 degrees from a pretrained one, a head start that a learner with
# $n \le 64$ samples in $d = 12$ may use whatever the per-unit penalty; (ii) gradient
# descent from the pretrained weights need not reach the minimum-penalty interpolant the
# theory describes, and at small $m$ fine-tuning is slow (the unconverged runs above);
# (iii) the sizes. One sensitivity check of an open choice, the initialisation scale, was
# run outside the chapter (a one-off probe, same pipeline, $\alpha = \gamma = 10^{-3}$,
# 8 draws, $n = 8, 16$, about 3 minutes): at $\rho = 0.9$ the paired $\log_{10}$ ratios were
# $-0.26\pm0.14$ and $-0.43\pm0.05$ at $m = 0.03$, and $-0.04\pm0.17$ and $-0.35\pm0.07$ at
# $m = 0.01$ (penalty ratios 3.2 and 9.6 at that $\gamma$): a smaller initialisation does
# not bring the reversal either.

# %%
# The checks of what the text above claims, on every cell with at least two converged draws
# (at smoke scale there is none: one draw). Tolerances: Bonferroni t critical values over
# those cells with the converged draws of each (only runs that reached the tolerance enter).
# -1: PT+FT significantly better, +1: STL significantly better (the reversal), 0: neither.
tested, sign = sign_test(LR_MEAN, LR_SE, LR_COUNT)
print(f"{len(tested)} cells tested; PT+FT significantly better in "
      f"{sum(v == -1 for v in sign.values())}, STL in {sum(v == 1 for v in sign.values())}")
assert not any(v == 1 for v in sign.values()), sign      # no reversal anywhere
# where the penalty predicts a benefit or parity (ratio <= 1.05), PT+FT is significantly better
assert all(v == -1 for (rho, m, n), v in sign.items() if PRED[rho, m] <= 1.05), sign
assert all(LR_MEAN[k][i] < 0 for k, i in tested)         # every tested mean below 0
# the penalty's ratios quoted in the text (Eqs. 10-11, the closed form)


def ratio_at(m):
    """The penalty's reuse / fresh ratio at rho = 0.9 (Eqs. 10-11)."""
    return float(experiments.ptft_relu.penalty_ratio(m, 0.9, FIG1C.gamma))


assert ratio_at(0.03) > 3 and ratio_at(0.01) > 10 and abs(ratio_at(0.1) - 1) < 0.05

# %% [markdown]
# ### The step of gradient descent, a choice the papers leave open
#
# Neither paper states its optimiser's learning rate. Ours is half a bound on the loss's
# curvature, recomputed every step (`lr_scale` = 0.5 in
# `experiments.ptft_relu.SAMPLE_EFFICIENCY`; `models.relu.train_units`). The theory is
# about gradient flow, the limit of small steps, and a network trained from a small
# initialisation keeps a memory of its path, so the step is a reading that may matter. We
# show the results under other steps: the STL students of $(\rho, m) = (1, 1)$ at a ladder of
# steps from a quarter to four times ours (`step_ladder`), each run for the same horizon
# (step cap times step), against the smallest; and the whole grid of Fig. 1c, pretraining
# included, at four times our step (`step_check`), with the sign test above.

# %%
LADDER = sorted(set(FIG1C.step_ladder) | {FIG1C.lr_scale})
t0 = time.perf_counter()
STL_STEPS = {}
with warnings.catch_warnings():
    warnings.simplefilter("ignore", tk.ConvergenceWarning)   # counted and printed below
    for lr in LADDER:
        if lr == FIG1C.lr_scale:
            STL_STEPS[lr] = SE[1.0, 1.0].stl                 # Fig. 1c's own students
            continue
        STL_STEPS[lr] = experiments.ptft_relu.run_stl_init_scale(
            D_IN, 1.0, 1.0, NS, [ALPHA], draws=DRAWS, width=WIDTH, units=FIG1C.units,
            n_aux=N_AUX, n_test=FIG1C.n_test, seed=SEED, loss_tol=FIG1C.loss_tol,
            max_steps=math.ceil(STEPS * FIG1C.lr_scale / lr), lr_scale=lr).runs[0]
    SE_STEP = experiments.ptft_relu.run_sample_efficiency_grid(
        dataclasses.replace(FIG1C, lr_scale=FIG1C.step_check))
print(f"{time.perf_counter() - t0:.0f} s; STL at lr_scale = {LADDER}, the grid at "
      f"lr_scale = {FIG1C.step_check} (the chapter's: {FIG1C.lr_scale})")
REF = STL_STEPS[LADDER[0]]
STEP_LOG = {}                                   # lr -> (mean, se, count) per n, vs the smallest
for lr, run in STL_STEPS.items():
    ok = run.converged & REF.converged
    STEP_LOG[lr] = (*stats.mean_se(np.log10(run.error / REF.error), axis=1, where=ok), ok.sum(1))
    vs = ("the reference" if lr == LADDER[0] else f"log10 over lr_scale = {LADDER[0]:g}: "
          + ", ".join(f"{m:+.3f}" + (f" +- {e:.3f}" if c > 1 else "")
                      for m, e, c in zip(*STEP_LOG[lr])))
    print(f"lr_scale = {lr:5g}: STL at tolerance {run.converged.sum(1).tolist()} of {DRAWS}; "
          f"test error {np.round(run.error.mean(1), 3)}; {vs}")
LOGR_STEP = {k: figures.paper003_004.paired_log_ratio(r) for k, r in SE_STEP.items()}
print(f"pretraining at lr_scale = {FIG1C.step_check}: at most "
      f"{max(int(r.pre_steps.max()) for r in SE_STEP.values())} steps, converged in "
      f"{min(int(r.pre_converged.sum()) for r in SE_STEP.values())} of {DRAWS} draws")
STEP_MEAN, STEP_SE, STEP_COUNT = ratio_summary(LOGR_STEP)
for k in LOGR_STEP:
    print(f"rho = {k[0]}, m = {k[1]}: log10(PT+FT/STL) at lr_scale = {FIG1C.step_check} "
          + ", ".join(f"n={n}: {m:+.2f} +- {e:.2f} ({c}/{DRAWS})"
                      for n, m, e, c in zip(NS, STEP_MEAN[k], STEP_SE[k], STEP_COUNT[k])))
fig = figures.paper003_004.reversal_figure(SE_STEP, FIG_RHOS, FIG_MAGS, FIG1C.gamma,
                                           note=f"step {FIG1C.step_check:g} (ours: {FIG1C.lr_scale:g})")
provenance.record(fig, "p003-fig1c-prediction-step", seeds=SEED,
                  params=dict(rhos=FIG_RHOS, magnitudes=FIG_MAGS, ns=NS, draws=DRAWS,
                              max_steps=STEPS, pre_max_steps=FIG1C.pre_max_steps, d=D_IN,
                              width=WIDTH, n_aux=N_AUX, alpha=ALPHA, gamma=FIG1C.gamma,
                              loss_tol=FIG1C.loss_tol, lr_scale=FIG1C.step_check),
                  caption="paper 003 Fig. 1c against Eqs. 10-11 at four times the chapter's "
                          "step: measured PT+FT / STL error ratio beside the penalty's ratio")

# %% [markdown]
# *Fig. 1c against the penalty, at four times our step.* As the figure of the previous
# section, every network (pretraining included) trained with `lr_scale` = 2 instead of 0.5.
# Below it, the sign test of the previous section at this step, and per draw the change of
# $\log_{10}(e_{\rm PT+FT}/e_{\rm STL})$ from our step to this one at $\rho = 0.9$.

# %%
# The sign test of the previous section at the larger step: Bonferroni over its tested cells.
tested_step, sign_step = sign_test(STEP_MEAN, STEP_SE, STEP_COUNT)
print(f"{len(tested_step)} cells tested; PT+FT significantly better in "
      f"{sum(v == -1 for v in sign_step.values())}, STL in "
      f"{sum(v == 1 for v in sign_step.values())}; verdict changed from the chapter's step in "
      f"{sorted(c for c in sign_step if c in sign and sign_step[c] != sign[c])}")
# How the benefit moves with the step: per draw, log10(PT+FT/STL) at the larger step minus
# at ours (the same teachers, samples and initial normals), on the draws where every run of
# both steps converged; its own family (Bonferroni over the rho = 0.9 cells, 1 %).
SHIFT = {k: LOGR_STEP[k] - LOGR[k] for k in SE if k[0] == 0.9}
n_shift = sum(int((np.isfinite(v).sum(1) >= 2).sum()) for v in SHIFT.values())
SHIFT_SIG = {}
for k, v in SHIFT.items():
    pt = stats.paired_test(v, n_shift, where=np.isfinite(v))
    cells = []
    for n, mm, ee, c, sig in zip(NS, pt.mean, pt.se, pt.count, pt.sign != 0):
        SHIFT_SIG[k[0], k[1], n] = (mm, ee, int(c), bool(sig))
        cells.append(f"n={n}: {mm:+.2f} +- {ee:.2f} ({c}){' *' if sig else ''}" if c >= 2
                     else f"n={n}: {c} draw(s) converged at both steps")
    print(f"rho = {k[0]}, m = {k[1]}: log10(PT+FT/STL), step {FIG1C.step_check:g} minus "
          f"{FIG1C.lr_scale:g}: " + "; ".join(cells))
print(f"(* significant: Bonferroni t over {n_shift} comparisons, family-wise 1 %)")

# %% [markdown]
# **What we measured** (`paper` preset, 8 draws; this build's numbers are printed above;
# the section took 168 s of one core beside other jobs, 2026-11-28, with the torch loop, and
# 17 s with the compiled kernel, 2026-11-29).
# - *STL at a ladder of steps* ($(\rho, m) = (1, 1)$, every run at its tolerance). The test
#   error falls as the step grows, most at small $n$: at $n = 8$ it is 2.08, 2.07, 2.03,
#   1.93 and 1.72 for `lr_scale` = 0.125, 0.25, 0.5 (ours), 1 and 2; at $n = 64$ it hardly
#   moves after the smallest step (0.190, then 0.178 or 0.179). Against the smallest
#   step, halving it again would change little (0.25: $\log_{10}$ ratios $-0.003$ to
#   $-0.027$, about 1 to 6 %); our step's errors are lower by 2.5 % at $n = 8$
#   ($-0.011\pm0.001$) to 7 % at $n = 32$ ($-0.030\pm0.016$); four times our step's by 17 %
#   ($n = 8$, $-0.082\pm0.007$) to 20 % ($n = 32$) and 7 % at $n = 64$. Our step is near,
#   not at, the small-step limit, and a step four times larger is another learner, not the
#   same one faster: it generalises better at small $n$.
# - *The grid at four times our step.* Pretraining took at most 7,736 steps (37,059 at
#   ours), every draw to its tolerance. The sign test finds no reversal: PT+FT
#   significantly better in 24 of the 32 tested cells, STL in none, every mean below 0. Two
#   cells lose their significance, $\rho = 0.9$ with $m = 0.1$ at $n = 8$ ($-0.45\pm0.08$,
#   against $-0.62\pm0.07$ at our step, where the penalty predicts parity) and $m = 0.03$ at
#   $n = 16$ ($-0.38\pm0.06$ against $-0.52\pm0.04$).
# - *How the benefit moves.* At $\rho = 0.9$ the benefit of pretraining is smaller at the
#   larger step in every one of the 15 cells with converged draws at both steps (the
#   paired changes above, $+0.02$ to $+0.26$ in $\log_{10}$; at $m = 1$ the smallest, one no
#   larger than its standard error), none significant alone at the family's 1 %; the
#   largest at small $m$ ($m = 0.01$: $-0.08\pm0.13$ at $n = 8$
#   against $-0.21\pm0.17$). At $\rho = 1$ and $m < 1$ too the ratios at small $n$ are less
#   extreme ($m = 0.03$, $n = 8$: $-2.20$ against $-2.83$); at $m = 1$ they hardly move.
# - *A smaller step*, a one-off probe outside the chapter (`run_sample_efficiency_grid` of
#   `dataclasses.replace(SAMPLE_EFFICIENCY["paper"], lr_scale=0.25)`, 315 s of one core beside
#   other jobs; pretraining took 75,723 steps): at half our step the $\rho = 0.9$ ratios are
#   ours within their standard errors ($m = 0.1$: $-0.64$, $-0.59$, $-0.57$, $-0.62$ for
#   $n = 8$ to 64; $m = 0.03$: $-0.40$, $-0.47$, $-0.48$; $m = 0.01$: $-0.31$, $-0.38$ at
#   $n = 8$, 16), and more fine-tuning runs stop at the cap of 50,000 steps, which is half
#   the horizon at half the step ($m = 0.01$: none at its tolerance at $n\ge32$).
#
# **Verdict.** The chapter's conclusion, no reversal where the penalty predicts one, holds
# at half, one and four times our step. The size of the benefit at $\rho = 0.9$ does depend
# on the step, in the direction of the predicted reversal as the step grows, and least
# between half our step and ours: the step is a reading that matters for this chapter's
# numbers (a few percent at our step, up to 20 % at four times it), not for its sign
# pattern. A four times larger step would make Fig. 1c about five times cheaper, but it is
# another learner, farther from the gradient flow the theory describes; the chapter keeps
# its step.

# %%
# The claims of the text above, for the preset they are stated for (a data check, not a
# scale switch).
if FIG1C == experiments.ptft_relu.SAMPLE_EFFICIENCY["paper"]:
    assert all(run.converged.all() for run in STL_STEPS.values())
    errs8 = [STL_STEPS[lr].error[0].mean() for lr in LADDER]
    assert np.all(np.diff(errs8) < 0), errs8                 # smaller error at larger steps
    m_ours, se_ours, _ = STEP_LOG[FIG1C.lr_scale]
    m_big, se_big, _ = STEP_LOG[max(LADDER)]
    assert abs(m_ours[0]) < 0.02 and m_big[0] < -5 * se_big[0], (m_ours, m_big, se_big)
    assert not any(v == 1 for v in sign_step.values()), sign_step     # no reversal
    assert all(STEP_MEAN[k][i] < 0 for k, i in tested_step)
    # verdicts that change with the step are only at rho = 0.9 (the text's two cells; their
    # count is not asserted: a cell near its critical value may fall either side elsewhere)
    assert all(c[0] == 0.9 for c in sign_step if c in sign and sign_step[c] != sign[c])
    shifts = [v for v in SHIFT_SIG.values() if v[2] >= 2]
    assert len(shifts) == n_shift and not any(v[3] for v in shifts), shifts
    # the shifts with the smallest standard errors (8 draws; 3.7 to 4.7 of them) are positive
    assert all(SHIFT_SIG[0.9, m, n][0] > 3 * SHIFT_SIG[0.9, m, n][1]
               for m in (0.1, 0.03) for n in (8, 32)), SHIFT_SIG

# %% [markdown]
# ## Paper 004, Fig. 4b (reduced): how many features the tasks share
#
# Paper 004 (App. D, Fig. 4b) repeats its Fig. 2a with 40 teacher units and 8192 auxiliary
# samples and varies how many of the main teacher's units are auxiliary units: "MTL and
# PT+FT tend to outperform STL if the features are overlapping and MTL tends to outperform
# PT+FT", and "the finetuned networks still benefit from feature learning, especially if
# some features are novel", against the NTK, the lazy tangent-kernel solution. Here, on the
# draws of Fig. 1c (the same auxiliary teacher, samples, initialisation and pretraining),
# the main teacher shares $s$ of its six units with the auxiliary one and its other units
# are orthogonal to every auxiliary unit, all readouts 1: $s = 6$ is Fig. 1c's cell
# $(\rho, m) = (1, 1)$, bit for bit (asserted below), and $s = 0$ is $\rho = 0$. The NTK
# column is kernel regression with the infinite-width NTK of the two-layer network on the
# same main samples (`theory.relu.relu_ntk_kernel`), the limit of gradient descent in the
# lazy regime from a zero-output start.
#
# **Reduced** (the values and their sources: `experiments.ptft_relu.OVERLAP`): six units
# instead of 40 and 1024 auxiliary samples instead of 8192. With 12 units and 1024 samples
# (d = 24, width 48) pretraining from the chapter's initialisation had not reached its
# tolerance after 200,000 steps in a trial, where six units take 17,000 to 37,000. No MTL
# students in this figure: each learns the auxiliary task from the small initialisation
# (about 65,000 steps; Figs. 6d-e below, 4 draws at two $n$, took 315 to 422 s of one core
# per cell with the torch loop and about 45 s with the compiled kernel, and this figure
# would need one such cell per $s$ at four times the networks); the subsection after it
# trains them at the sizes of Figs. 6d-e. The
# paper's size is the preset `OVERLAP_FULL` with `OVERLAP_FULL_STUDENTS` (40 units, 8192
# auxiliary samples, $n$ up to 1024, MTL; $d$, the width and the values of $s$ ours) for a
# Dask cluster (`run_overlap`, one sweep cell per $s$); it is not run here.

# %%
OV = experiments.ptft_relu.OVERLAP[SCALE]
t0 = time.perf_counter()
with warnings.catch_warnings():
    warnings.simplefilter("ignore", tk.ConvergenceWarning)     # counted below
    OVR = experiments.ptft_relu.run_overlap(OV, FIG1C)
print(f"s = {OVR.shared.tolist()} of {OVR.units} units, n = {OVR.ns.tolist()}, {DRAWS} draws "
      f"({time.perf_counter() - t0:.0f} s)")
print("converged: STL", OVR.stl.converged.mean().round(3), "PT+FT", OVR.ptft.converged.mean().round(3),
      "pretraining", OVR.pre_converged.mean())
print("\nnormalised test error, mean +- s.e. over draws (rows s, columns n)")
for name, err in (("STL", OVR.stl.error), ("PT+FT", OVR.ptft.error), ("NTK", OVR.ntk_error)):
    mean, se = stats.mean_se(err, -1)
    for k, s in enumerate(OVR.shared):
        print(f"{name:6s} s = {s}: " + "  ".join(f"{m:.3g} +- {e:.2g}" for m, e in zip(mean[k], se[k])))
fig = figures.paper003_004.overlap_figure(OVR)
provenance.record(fig, "p004-fig4b-overlap", seeds=SEED,
                  params=dict(shared=list(OV.shared), ns=list(OV.ns), units=OVR.units,
                              draws=DRAWS, d=D_IN, width=WIDTH, n_aux=N_AUX, alpha=ALPHA),
                  caption="paper 004 Fig. 4b (reduced): test error against the number of "
                          "teacher units shared by the main and auxiliary tasks")

# %%
# s = K is Fig. 1c's cell (rho, m) = (1, 1): the same students, bit for bit
K_ALL = list(OVR.shared).index(OVR.units)
for name in ("stl", "ptft"):
    assert np.array_equal(getattr(OVR, name).error[K_ALL], getattr(SE[1.0, 1.0], name).error)

# %%
def print_pairs(pt, shared, ns):
    """One line per s of a stats.paired_test result: per n the mean log10 ratio, its t and
    '<' or '>' beyond the family's critical t."""
    for k, s in enumerate(shared):
        print(f"  s = {s}: " + "  ".join(
            f"n = {n}: {pt.mean[k, i]:+.2f} ({pt.t[k, i]:+.1f}){' ><'[pt.sign[k, i]]}"
            for i, n in enumerate(ns)))


def paired_family(pairs, err, ok, shared, ns):
    """The comparisons ``pairs`` (label: (a, b)) of log10(err[a] / err[b]), paired on the
    draws, as one Bonferroni family over all their (s, n) cells, where ``ok`` of both holds;
    per comparison its label with the family's critical t and draws, then ``print_pairs``.
    Returns the signs and the mean log10 ratios, by label."""
    tests = len(pairs) * len(shared) * len(ns)
    signs, ratios = {}, {}
    for label, (a, b) in pairs.items():
        pt = stats.paired_test(np.log10(err[a] / err[b]), tests, where=ok[a] & ok[b])
        signs[label], ratios[label] = pt.sign, pt.mean
        crit = np.unique(pt.critical[np.isfinite(pt.critical)].round(1))
        print(label + (f" (critical t {' / '.join(f'{c:.1f}' for c in crit)} at "
                       f"{' / '.join(str(k) for k in np.unique(pt.count[pt.count >= 2])[::-1])}"
                       " draws)" if crit.size else ""))
        print_pairs(pt, shared, ns)
    return signs, ratios


# paired comparisons on the same draws (same samples and test inputs): log10 of one
# method's error over another's, mean +- s.e. over draws and t; '<' or '>' where |t| is
# above the Bonferroni critical value over every cell of the three comparisons (fwer 1 %).
# A draw whose student stopped at its step cap is left out of the comparisons it enters.
PAIRS = {"PT+FT / STL": ("ptft", "stl"), "PT+FT / NTK": ("ptft", "ntk"),
         "NTK / STL": ("ntk", "stl")}
OV_ERR = {"stl": OVR.stl.error, "ptft": OVR.ptft.error, "ntk": OVR.ntk_error}
OV_OK = {"stl": OVR.stl.converged, "ptft": OVR.ptft.converged,
         "ntk": np.ones(OVR.ntk_error.shape, bool)}
OV_TESTS = len(PAIRS) * OVR.ntk_error[..., 0].size
OV_SIGN = {}                 # per comparison and cell: -1 (below), +1 (above), 0 (neither)
print(f"{OV_TESTS} paired tests; critical t at 8 draws {stats.critical_value(OV_TESTS, 8):.2f}"
      if DRAWS >= 8 else f"{OV_TESTS} paired tests")
for label, (a, b) in PAIRS.items():
    pt = stats.paired_test(np.log10(OV_ERR[a] / OV_ERR[b]), OV_TESTS, where=OV_OK[a] & OV_OK[b])
    OV_SIGN[label] = pt.sign
    print(label)
    print_pairs(pt, OVR.shared, OVR.ns)

# %% [markdown]
# *Fig. 4b (paper 004, reduced).* Normalised test error of STL, PT+FT and the lazy NTK
# solution (black, dashed) against the number $s$ of the main teacher's six units that
# are auxiliary units, one panel per main-task $n$; mean over the draws of Fig. 1c with one
# standard error; an open marker: some draw of that method stopped at its step cap.
# Students, pretraining and training as in Fig. 1c; the values of $s$ are ours.
#
# **What we measured** (`TRANSFERKIT_SCALE=paper`, 8 draws; the paired comparisons above,
# 48 tests, critical $t$ about 7). Not a finding either way: six teacher units instead of
# 40, 1024 auxiliary samples instead of 8192, $n\le64$ instead of up to 1024, and no MTL.
# Pretraining and every STL run reached the tolerance; three PT+FT runs of 128 ($n = 16$, one
# each at $s = 0$, 2 and 6) stopped at the step cap and are left out of the comparisons.
#
# - *PT+FT against STL.* Pretraining helps as far as the tasks share units: with all six
#   shared PT+FT's error is 3 to 60 times below STL's (0.655 against 2.03 at $n = 8$,
#   0.003 against 0.178 at $n = 64$), with four or two shared it is below at $n = 8$ and
#   16, and with none it is not below at any $n$ (at $n = 64$ it is 1.5 times above,
#   $t = 4.2$, short of the critical value). This is the paper's "PT+FT tend[s] to
#   outperform STL if the features are overlapping".
# - *STL against the lazy solution.* STL's error does not depend on $s$ (it never sees the
#   auxiliary task, and the main teachers differ by a rotation: the means agree within
#   their errors), and the NTK's lies below it
#   at every $n\le32$ for every $s$ (ratios 0.42 to 0.56); at $n = 64$ the ratio is 0.67
#   to 0.74, significant at $s = 6$ only. Paper 004 reads its Figs. 2a and 4a as the rich regime
#   helping when the teacher's units are sparse, as these six are; at our $n\le64$ and
#   $d = 12$ the small-initialisation students are not there yet (the chapter's reduced
#   Fig. 8a and Figs. 6a-b below reach $n = 256$).
# - *PT+FT against the lazy solution.* PT+FT is below the NTK only when all six units are
#   shared (at every $n$); with none shared the NTK is below PT+FT at $n = 32$ and 64 (error
#   ratios 2.6 and 2.1; at $n = 16$ 2.1, $t = 7.3$, short of the critical value for its 7
#   converged draws), and with two or four shared neither is significantly below at any $n$.
#   The caption's "the finetuned networks still benefit from feature learning, especially
#   if some features are novel" is therefore not reproduced at these sizes under this
#   reading. Which comparison it makes is open (PT+FT against the NTK of a fresh network,
#   as here, or against the pretrained network fine-tuned in the lazy regime: the next
#   subsection), and at $n\le64$ even STL, which learns every feature itself, is above the
#   NTK.

# %%
# checks: what the text above says of the paper-scale run
if OV == experiments.ptft_relu.OVERLAP["paper"] and FIG1C == experiments.ptft_relu.SAMPLE_EFFICIENCY["paper"]:
    ALL, NONE = list(OVR.shared).index(OVR.units), list(OVR.shared).index(0)
    NS_OV = list(OVR.ns)
    assert np.all(OV_SIGN["PT+FT / STL"][ALL] == -1)                  # all shared: below STL
    assert np.all(OV_SIGN["PT+FT / STL"][:, :2][OVR.shared > 0] == -1)   # any shared, n <= 16
    assert np.all(OV_SIGN["PT+FT / STL"][NONE] >= 0)                  # none shared: not below
    assert np.all(OV_SIGN["NTK / STL"][:, :NS_OV.index(32) + 1] == -1)   # NTK below STL, n <= 32
    assert np.all(OV_SIGN["PT+FT / NTK"][ALL] == -1)                  # PT+FT below NTK: s = 6
    assert np.all(OV_SIGN["PT+FT / NTK"][NONE, NS_OV.index(32):] == 1)   # NTK below: s = 0
    assert np.all(OV_SIGN["PT+FT / NTK"][(OVR.shared > 0) & (OVR.shared < OVR.units)] == 0)

# %% [markdown]
# ### Which tangent kernel? A choice the caption leaves open
#
# "NTK indicates the (lazy) tangent kernel solution" does not say whose kernel. The figure
# above uses the infinite-width NTK from a zero output, the lazy limit of training a fresh,
# infinitely wide network. Two other readings use the students themselves
# (`theory.relu.tangent_kernel_solution`): the limit of gradient descent on the network
# *linearised* where STL starts (its small initialisation, width 24: **lazy STL**) and
# where PT+FT starts (the pretrained units, readout $\gamma$: **lazy PT+FT**), on the same
# samples. Both are the limit of the chapter's trainer (one step size for all weights, the
# Euclidean metric) in the lazy regime; the caption's second claim, "the finetuned networks
# still benefit from feature learning", is read most directly as PT+FT against lazy PT+FT:
# the same start, with and without the features moving. A fourth reading is the papers' own
# lazy protocol, trained rather than linearised: **PT+FT x 10**, fine-tuning after the
# pretrained first layer is rescaled by 10 (paper 004, App. E.2.3 and G; the factor is
# `experiments.ptft_relu.OVERLAP_LAZY_SCALE`, the readout reset to $\gamma$ as in PT+FT).
# Its weights are ten times larger, so its steps are smaller (the curvature bound grows
# with their squared norm): it runs to the pretraining's cap of $10^6$ steps instead of
# PT+FT's 50,000 (up to about 110,000 are taken). The comparisons below are paired on the
# draws and form their own family (Bonferroni, 1 % family-wise); a draw stopped at its
# cap is left out of the comparisons it enters.

# %%
OV_LAZY = {"ntk": OVR.ntk_error, "lazy_stl": OVR.lazy_stl_error,
           "lazy_ptft": OVR.lazy_ptft_error, "ptft_x10": OVR.ptft_rescaled.error}
LAZY_LABELS = {"ntk": "NTK", "lazy_stl": "lazy STL", "lazy_ptft": "lazy PT+FT",
               "ptft_x10": "PT+FT x 10"}
print(f"PT+FT x {experiments.ptft_relu.OVERLAP_LAZY_SCALE:g} converged: "
      f"{int(OVR.ptft_rescaled.converged.sum())}/{OVR.ptft_rescaled.converged.size}")
print("normalised test error, mean +- s.e. over draws (rows s, columns n)")
for name, err in OV_LAZY.items():
    mean, se = stats.mean_se(err, -1)
    for k, s in enumerate(OVR.shared):
        print(f"{LAZY_LABELS[name]:10s} s = {s}: "
              + "  ".join(f"{m:.3g} +- {e:.2g}" for m, e in zip(mean[k], se[k])))
LAZY_PAIRS = {"PT+FT / lazy PT+FT": ("ptft", "lazy_ptft"), "STL / lazy STL": ("stl", "lazy_stl"),
              "lazy STL / NTK": ("lazy_stl", "ntk"), "PT+FT / PT+FT x 10": ("ptft", "ptft_x10"),
              "PT+FT x 10 / lazy PT+FT": ("ptft_x10", "lazy_ptft")}
LZ_ERR = {**OV_ERR, **OV_LAZY}
LZ_OK = {**OV_OK, **{k: np.ones(v.shape, bool) for k, v in OV_LAZY.items()},
         "ptft_x10": OVR.ptft_rescaled.converged}
LZ_TESTS = len(LAZY_PAIRS) * OVR.ntk_error[..., 0].size
print(f"\n{LZ_TESTS} paired tests (log10 error ratio, mean and t; '<' or '>' beyond the "
      "family's critical t)")
LZ_SIGN, LZ_RATIO = paired_family(LAZY_PAIRS, LZ_ERR, LZ_OK, OVR.shared, OVR.ns)
# how lazy is PT+FT x 10? Against its own linearisation (the lazy limit from 10 times the
# pretrained units, readout gamma), a family of its own (16 tests, Bonferroni, 1 %)
OWN = OVR.lazy_ptft_rescaled_error
print("\nlazy limit of PT+FT x 10 (its own linearisation), mean +- s.e. over draws")
for k, s in enumerate(OVR.shared):
    mean, se = stats.mean_se(OWN[k], -1)
    print(f"  s = {s}: " + "  ".join(f"{m:.3g} +- {e:.2g}" for m, e in zip(mean, se)))
OWN_PT = stats.paired_test(np.log10(OVR.ptft_rescaled.error / OWN), OWN[..., 0].size,
                           where=OVR.ptft_rescaled.converged)
OWN_CRIT = OWN_PT.critical[np.isfinite(OWN_PT.critical)]
print(f"PT+FT x 10 / its lazy limit ({OWN[..., 0].size} paired tests"
      + (f", critical t {OWN_CRIT.min():.1f} at {OWN_PT.count.max()} draws)" if OWN_CRIT.size
         else ")"))
print_pairs(OWN_PT, OVR.shared, OVR.ns)
fig = figures.paper003_004.overlap_figure(OVR, lazy=True)
provenance.record(fig, "p004-fig4b-overlap-lazy", seeds=SEED,
                  params=dict(shared=list(OV.shared), ns=list(OV.ns), units=OVR.units,
                              draws=DRAWS, d=D_IN, width=WIDTH, n_aux=N_AUX, alpha=ALPHA),
                  caption="paper 004 Fig. 4b (reduced) under four readings of its tangent "
                          "kernel solution: the infinite-width NTK, the lazy limits from the "
                          "STL and PT+FT students' starting weights, and PT+FT after rescaling "
                          "the pretrained units by 10")

# %% [markdown]
# *Fig. 4b (paper 004, reduced) under four readings of its lazy solution.* As the
# figure above, with the lazy limits from the students' own starting weights (dotted, open
# squares, in the colour of STL and PT+FT) and PT+FT after rescaling by 10 (dash-dotted,
# triangles) beside the infinite-width NTK (black, dashed). Reduced as above: six teacher
# units instead of the paper's 40, 1024 auxiliary samples instead of 8192, $n\le64$
# instead of up to 1024, $d = 12$ and width 24 (ours); the factor 10 is paper 004's
# (App. E.2.3 and G), the rescaled students' cap of $10^6$ steps ours.
#
# **What we measured** (`TRANSFERKIT_SCALE=paper`, 8 draws; the five comparisons above as
# one family of 80 tests, critical $t$ 7.6 at 8 draws; 123 of the 128 PT+FT x 10 runs
# reached the tolerance, the other five stopped at the cap and are left out, as are the
# three PT+FT runs stopped at theirs).
#
# - *PT+FT against lazy PT+FT, the same start with and without the features moving.*
#   Wherever some units are novel, fine-tuning is below its own lazy limit at every $n$
#   in direction (log10 ratios $-0.07$ to $-0.89$): with none shared by 2.8 to 7.8 times
#   in geometric mean over the draws (mean errors 1.66 against 7.0 at $n = 8$, 0.27
#   against 2.13 at $n = 64$), significantly at $n = 16$ and 64 ($t = -14.0$ and $-14.7$;
#   at $n = 8$ and 32, $-7.4$ and $-7.2$, just short of the critical value), and with two
#   or four shared significantly at $n = 64$ ($t = -11.2$ and $-8.5$). With all six shared
#   it is the other way round: the lazy limit, a regression of the readout on features
#   that are already the teacher's units (plus the small first-layer term), is 2 to 3.5
#   decades below PT+FT ($8.2\times10^{-5}$ against 0.24 at $n = 16$, $1.6\times10^{-5}$
#   against 0.0032 at $n = 64$; significant at $n\ge16$): moving features that are right
#   already costs accuracy.
# - *PT+FT x 10, the papers' lazy protocol.* Trained at ten times the pretrained scale,
#   fine-tuning lands near lazy PT+FT (the linearisation at the start without rescaling):
#   log10 ratios between $-0.30$ and $+0.20$, significant only at $n = 64$ with none shared
#   ($-0.28$, $t = -8.4$; at $n = 64$ it is below lazy PT+FT for every $s < 6$, by $-0.27$
#   to $-0.30$). But it is not lazy in the sense of its own linearisation (printed last, a
#   family of its own, 16 tests, critical $t$ 5.9; that limit weighs the readout's term of
#   the kernel 100 times more): where units are novel it is below that limit at every $n$
#   (log10 ratios $-0.35$ to $-0.59$, significant in 4 of the 12 cells), and only with all
#   six shared does it match it ($+0.05$ to $+0.36$, none significant). At ten times the
#   scale the network still learns the features it lacks; its nearness to lazy PT+FT
#   comes from two effects meeting, not from laziness. Against it PT+FT shows
#   the pattern above: below wherever units are novel (significantly with none shared at
#   $n = 8$, 16 and 64), 2 to 3.5 decades above with all shared ($n\ge16$).
# - So the caption's "the finetuned networks still benefit from feature learning,
#   especially if some features are novel" is **reproduced under both readings that start
#   from the pretrained network** (its linearisation, and its rescaling by 10, which is
#   itself less lazy than its name), at our reduced sizes, where the infinite-width NTK of
#   the figure above did not reproduce it: which lazy solution the caption means decides
#   the verdict.
# - *STL against lazy STL.* Training from the small initialisation is below its own lazy
#   limit in direction everywhere (log10 ratios $-0.05$ to $-0.38$), significantly only at
#   $n = 64$ ($s = 0$, 2 and 6; $t = -8.3$ to $-10.8$): at $n\le32$ the rich regime gains
#   little over the lazy one at width 24.
# - *Finite against infinite width.* The lazy limit at the students' width 24 is above the
#   infinite-width NTK in all 16 cells (log10 ratios $+0.32$ to $+0.53$): 24 random
#   features of the initialisation are fewer than the kernel's infinitely many. So the
#   NTK of the figure above is the strongest of the lazy baselines from scratch, and
#   comparing STL and PT+FT with it, rather than with their own lazy limits, is the
#   harshest reading.

# %%
# checks: what the text above says of the paper-scale run
if OV == experiments.ptft_relu.OVERLAP["paper"] and FIG1C == experiments.ptft_relu.SAMPLE_EFFICIENCY["paper"]:
    NOVEL = OVR.shared < OVR.units                                     # some units novel
    SIG, RATIO = LZ_SIGN["PT+FT / lazy PT+FT"], LZ_RATIO["PT+FT / lazy PT+FT"]
    assert np.all(RATIO[NOVEL] < 0) and np.all(SIG[NONE, [1, 3]] == -1)   # below its lazy limit
    assert np.all(SIG[NOVEL, -1] == -1)                               # significant at n = 64
    assert np.all(SIG[ALL, 1:] == 1) and RATIO[ALL].min() > 2         # all shared: lazy below
    X10, VS10 = "PT+FT x 10 / lazy PT+FT", "PT+FT / PT+FT x 10"
    assert np.all(np.abs(LZ_RATIO[X10]) < 0.31) and np.all(LZ_SIGN[X10][:, :-1] == 0)
    assert np.all(LZ_RATIO[X10][NOVEL, -1] < 0)                        # n = 64: below the limit
    assert np.all(LZ_RATIO[VS10][NOVEL] < 0) and np.all(LZ_SIGN[VS10][NONE, [0, 1, 3]] == -1)
    assert np.all(LZ_SIGN[VS10][ALL, 1:] == 1)
    assert int(OVR.ptft_rescaled.converged.sum()) == 123
    assert np.all(OWN_PT.mean[NOVEL] < -0.3) and int((OWN_PT.sign[NOVEL] == -1).sum()) == 4
    assert np.all(OWN_PT.sign[NOVEL] <= 0) and np.all(OWN_PT.sign[ALL] == 0)
    assert np.all(OWN_PT.mean[ALL] > 0)                               # all shared: as lazy
    assert np.all(LZ_RATIO["STL / lazy STL"] < 0)
    assert np.all(LZ_SIGN["STL / lazy STL"][:, :-1] == 0)              # n <= 32: not significant
    assert np.all(LZ_SIGN["STL / lazy STL"][[0, 1, 3], -1] == -1)      # n = 64, s = 0, 2, 6
    assert np.all(LZ_SIGN["lazy STL / NTK"] == 1)                      # width 24 above the NTK

# %% [markdown]
# ### Fig. 4b (reduced) with multi-task students
#
# The caption's other claim, "MTL tends to outperform PT+FT", needs the multi-task students
# the figure above leaves out. We train them, with `run_overlap_mtl`, at the sizes of the
# multi-task students of the reduced Figs. 6d-e below (`RELU_FEATURES[...].mtl_ns` and
# `mtl_draws`, printed: the smallest and largest $n$ of Fig. 1c and its first draws; an MTL
# network learns the auxiliary task from the small initialisation, on the auxiliary samples
# plus the main ones), at every $s$ of the figure above, beside the STL and PT+FT students
# of the same draws (the figure's own at those $n$: asserted) and the NTK solution. The
# open choices are those of Figs. 6d-e (the tasks' weighting, the stopping rule, the step
# cap). With 4 draws a paired comparison needs $|t|$ above a large critical value
# (printed), so this is a reading of direction more than a test.

# %%
OV_FEATURES = experiments.ptft_relu.RELU_FEATURES[SCALE]  # sources: the preset's docs
t0 = time.perf_counter()
with warnings.catch_warnings():
    warnings.simplefilter("ignore", tk.ConvergenceWarning)     # counted below
    OVM = experiments.ptft_relu.run_overlap_mtl(OV, FIG1C, OV_FEATURES)
OVM_NS = [int(n) for n in OVM.ns]
print(f"s = {OVM.shared.tolist()}, n = {OVM_NS}, the first {OV_FEATURES.mtl_draws} draw(s) "
      f"({time.perf_counter() - t0:.0f} s)")
print("converged: " + ", ".join(f"{figures.paper003_004.METHOD_LABELS[k]} "
                                f"{int(r.converged.sum())}/{r.converged.size}"
                                for k, r in OVM.methods.items()))
print("\nnormalised test error, mean +- s.e. over draws (rows s, columns n)")
OVM_ERR = {**{k: r.error for k, r in OVM.methods.items()}, "ntk": OVM.ntk_error}
for name, err in OVM_ERR.items():
    mean, se = stats.mean_se(err, -1)
    label = figures.paper003_004.METHOD_LABELS.get(name, "NTK")
    for k, s in enumerate(OVM.shared):
        print(f"{label:6s} s = {s}: " + "  ".join(f"{m:.3g} +- {e:.2g}" for m, e in zip(mean[k], se[k])))
# the STL and PT+FT students and NTK errors are those of the figure above (its first draws)
for name in ("stl", "ptft"):
    for f in ("W", "a"):
        assert np.array_equal(getattr(getattr(OVM, name), f),
                              getattr(getattr(OVR, name), f)[:, [list(OVR.ns).index(n) for n in OVM_NS],
                                                              :OV_FEATURES.mtl_draws])
fig = figures.paper003_004.overlap_figure(OVM)
provenance.record(fig, "p004-fig4b-overlap-mtl", seeds=SEED,
                  params=dict(shared=list(OV.shared), ns=OVM_NS, units=OVM.units,
                              draws=OV_FEATURES.mtl_draws, d=D_IN, width=WIDTH, n_aux=N_AUX,
                              alpha=ALPHA),
                  caption="paper 004 Fig. 4b (reduced) with multi-task students: test error "
                          "against the number of shared teacher units")

# %%
# paired comparisons of MTL with the three others on the same draws, as above (log10 error
# ratio, mean +- s.e. and t, '<' or '>' beyond the Bonferroni critical value over this
# family's cells, fwer 1 %); a draw stopped at its cap is left out of the comparisons it enters
OVM_OK = {**{k: r.converged for k, r in OVM.methods.items()},
          "ntk": np.ones(OVM.ntk_error.shape, bool)}
OVM_PAIRS = {"MTL / PT+FT": ("mtl", "ptft"), "MTL / STL": ("mtl", "stl"),
             "MTL / NTK": ("mtl", "ntk")}
print(f"{len(OVM_PAIRS) * OVM.ntk_error[..., 0].size} paired tests")
OVM_SIGN, OVM_RATIO = paired_family(OVM_PAIRS, OVM_ERR, OVM_OK, OVM.shared, OVM_NS)

# %% [markdown]
# *Fig. 4b with multi-task students (paper 004, reduced).* As the figure above, at the
# smallest and largest $n$ of Fig. 1c and its first draws (printed), with the MTL students
# trained on the auxiliary and main tasks at once from the STL initialisation plus
# an auxiliary readout of the same scale; the STL and PT+FT points are the figure above's
# at those $n$ and draws.
#
# **What we measured** (`TRANSFERKIT_SCALE=paper`: $n = 8$ and 64, the first 4 draws, the
# four $s$; 131 s of one core on the compiled kernel, 2026-11-29, in the book build beside
# another chapter). Every MTL run reached its tolerance. With 4 draws no paired comparison
# of the 24 passes the family's critical $t$ (17.4), so what follows are directions, not
# findings; the paper's own sizes (40 units, 8192 auxiliary samples) are `OVERLAP_FULL`.
# - *MTL against STL.* Sharing units helps MTL as it helps PT+FT: its error is below
#   STL's at every $s > 0$ and both $n$ (log10 ratios $-0.04$ to $-1.77$, $t$ down to
#   $-9.5$; 0.0046 against 0.19 at $s = 6$, $n = 64$), and with none shared it is not
#   ($+0.14$ at $n = 64$, $t = 2.0$).
# - *MTL against PT+FT* (the caption's "MTL tends to outperform PT+FT"). Only with some
#   units shared and some novel, at $n = 64$: 0.146 against 0.202 at $s = 2$ and 0.051
#   against 0.148 at $s = 4$ ($t = -4.3$ and $-2.9$). With all six shared PT+FT is below
#   MTL at $n = 64$ (0.0023 against 0.0046, $t = 0.9$), with none the two are alike, and
#   at $n = 8$ neither is below the other beyond $|t| = 1.8$.
# - *MTL against the lazy solution.* As PT+FT: below the NTK with all units shared
#   ($-1.57$ at $n = 64$, $t = -8.0$), above it with none ($+0.31$, $t = 13.5$).
#
# **Verdict.** Not a finding either way (4 draws, six units, 1024 auxiliary samples,
# $n \le 64$). At these sizes the caption's MTL claim holds in direction where tasks share
# some but not all features, and not where they share all.

# %%
# checks: what the text above says of the paper-scale run
if (OV == experiments.ptft_relu.OVERLAP["paper"] and FIG1C == experiments.ptft_relu.SAMPLE_EFFICIENCY["paper"]
        and OV_FEATURES == experiments.ptft_relu.RELU_FEATURES["paper"]):
    R, SH = OVM_RATIO, OVM.shared
    ALL_M, NONE_M = list(SH).index(OVM.units), list(SH).index(0)
    PARTIAL = (SH > 0) & (SH < OVM.units)
    assert OVM.mtl.converged.all()
    assert all(np.all(v == 0) for v in OVM_SIGN.values())          # nothing beyond critical t
    assert np.all(R["MTL / STL"][SH > 0] < 0) and R["MTL / STL"][NONE_M, -1] > 0
    assert np.all(R["MTL / PT+FT"][PARTIAL, -1] < 0) and R["MTL / PT+FT"][ALL_M, -1] > 0
    assert np.all(R["MTL / NTK"][ALL_M] < 0) and np.all(R["MTL / NTK"][NONE_M] > 0)

# %% [markdown]
# #### The multi-task students against the other readings of the lazy solution
#
# The comparisons above hold MTL against the infinite-width NTK only. The other three
# readings of the caption's "(lazy) tangent kernel solution" (set out for STL and PT+FT
# above) are computed by the same run at these $n$ and draws, bit for bit the values of the
# figure with STL, PT+FT and the four readings (asserted): **lazy STL**, the network
# linearised where STL starts (MTL starts there too, with an auxiliary readout of the same
# scale; MTL's own linearised two-task limit is not computed), **lazy PT+FT**, linearised at
# the pretrained units, and
# **PT+FT x 10**, the papers' lazy protocol. The comparisons are paired on the draws and form
# a family of their own (Bonferroni, 1 % family-wise); a draw stopped at its cap is left out
# of the comparisons it enters.

# %%
OVM_LAZY = {"lazy_stl": OVM.lazy_stl_error, "lazy_ptft": OVM.lazy_ptft_error,
            "ptft_x10": OVM.ptft_rescaled.error}
OV_AT_M = np.ix_(range(len(OVR.shared)), [list(OVR.ns).index(n) for n in OVM_NS],
                 range(OV_FEATURES.mtl_draws))
for name, err in OVM_LAZY.items():      # that figure's readings at these n and draws
    assert np.array_equal(err, OV_LAZY[name][OV_AT_M]), name
OVM_LZ_ERR = {**OVM_ERR, **OVM_LAZY}
OVM_LZ_OK = {**OVM_OK, **{k: np.ones(v.shape, bool) for k, v in OVM_LAZY.items()},
             "ptft_x10": OVM.ptft_rescaled.converged}
OVM_LZ_PAIRS = {"MTL / lazy STL": ("mtl", "lazy_stl"), "MTL / lazy PT+FT": ("mtl", "lazy_ptft"),
                "MTL / PT+FT x 10": ("mtl", "ptft_x10")}
print(f"{len(OVM_LZ_PAIRS) * OVM.ntk_error[..., 0].size} paired tests (log10 error ratio, "
      "mean and t; '<' or '>' beyond the family's critical t)")
OVM_LZ_SIGN, OVM_LZ_RATIO = paired_family(OVM_LZ_PAIRS, OVM_LZ_ERR, OVM_LZ_OK, OVM.shared,
                                          OVM_NS)
fig = figures.paper003_004.overlap_figure(OVM, lazy=True)
provenance.record(fig, "p004-fig4b-overlap-mtl-lazy", seeds=SEED,
                  params=dict(shared=list(OV.shared), ns=OVM_NS, units=OVM.units,
                              draws=OV_FEATURES.mtl_draws, d=D_IN, width=WIDTH, n_aux=N_AUX,
                              alpha=ALPHA),
                  caption="paper 004 Fig. 4b (reduced) with multi-task students under four "
                          "readings of its tangent kernel solution: the infinite-width NTK, the "
                          "lazy limits from the STL and PT+FT students' starting weights, and "
                          "PT+FT after rescaling the pretrained units by 10; reduced from the "
                          f"paper's 40 units, 8192 auxiliary samples and n up to 1024 to "
                          f"{OVM.units} units, {N_AUX} auxiliary samples, n = "
                          f"{', '.join(map(str, OVM_NS))} and {OV_FEATURES.mtl_draws} draw(s) "
                          f"(d = {D_IN}, width {WIDTH} ours)")

# %% [markdown]
# *Fig. 4b with multi-task students under four readings of its lazy solution (paper 004,
# reduced).* The figure before this one with the lazy readings of the figure with STL and
# PT+FT alone (dotted, open squares: lazy STL and lazy PT+FT; dash-dotted, triangles:
# PT+FT x 10), at the same $n$ and draws. Reduced from the paper as those figures: six
# teacher units instead of 40, 1024 auxiliary samples instead of 8192, $n = 8$ and 64
# instead of up to 1024, the first 4 draws; $d = 12$ and width 24 ours; the factor 10 is
# paper 004's (App. E.2.3 and G).
#
# **What we measured** (`TRANSFERKIT_SCALE=paper`, the run above: $n = 8$ and 64, the first
# 4 draws). As for the NTK, these are directions: one comparison of the 24 passes the
# family's critical $t$ (17.4), barely.
# - *MTL against lazy STL* (the linearisation at the start MTL shares with STL). MTL is
#   below at every $s$ and both $n$ (log10 ratios $-0.11$ to $-2.04$, $t$ from $-1.5$ to
#   $-9.4$), most where the tasks share the most units: at $s = 6$, $n = 64$, 0.0046
#   against 0.36. Learning the features on both tasks does what its own lazy start cannot.
# - *MTL against lazy PT+FT and PT+FT x 10.* MTL is below both wherever some units are
#   novel ($s < 6$; log10 ratios $-0.29$ to $-1.04$; against lazy PT+FT at $s = 0$,
#   $n = 8$, $-0.53$ with $t = -17.6$, the one comparison beyond the critical $t$), as
#   PT+FT is below its own lazy limit there. With all six units shared it is above both,
#   by 1.6 to 2.5 decades: the pretrained units span the main teacher, so a regression on
#   them (lazy PT+FT) or a lazy fine-tuning of them (PT+FT x 10) is nearly exact, while
#   MTL learns the shared features from a small initialisation.
#
# So the reading of "NTK" decides the caption's comparison for MTL as it does for PT+FT.
# MTL is below its lazy start (lazy STL) everywhere, below the infinite-width NTK from
# $s = 4$ on (above it at $s \le 2$, as measured above), and below the lazy limits from the
# pretrained units wherever some units are novel, above them when all are shared.

# %%
# checks: what the text above says of the paper-scale run
if (OV == experiments.ptft_relu.OVERLAP["paper"] and FIG1C == experiments.ptft_relu.SAMPLE_EFFICIENCY["paper"]
        and OV_FEATURES == experiments.ptft_relu.RELU_FEATURES["paper"]):
    R, SH = OVM_LZ_RATIO, OVM.shared
    NOVEL_M, ALL_M = SH < OVM.units, list(SH).index(OVM.units)
    assert OVM.ptft_rescaled.converged.all()
    assert np.all(R["MTL / lazy STL"] < 0)
    for label in ("MTL / lazy PT+FT", "MTL / PT+FT x 10"):
        assert np.all(R[label][NOVEL_M] < 0) and np.all(R[label][ALL_M] > 1.5), label
    # beyond the critical t at most where the text says, and in the direction of the mean
    SIG = {k: v.copy() for k, v in OVM_LZ_SIGN.items()}
    SIG["MTL / lazy PT+FT"][list(SH).index(0), 0] = 0
    assert all(np.all(v == 0) for v in SIG.values())
    assert OVM_LZ_SIGN["MTL / lazy PT+FT"][list(SH).index(0), 0] in (0, -1)

# %% [markdown]
# ## App. E.2 and G: clustering and dimensionality of the learned ReLU features
#
# For the students of the $(\rho, m) = (1, 1)$ cell at the largest $n$, we run k-means on
# the normalised first-layer weights, each unit weighted by $|a_h|\,\|w_h\|$ (paper 004,
# App. E.2), and report the inertia (fraction of weighted variance unexplained by $K$
# clusters) and the alignment score (mean over teacher units of the best cosine with a
# cluster centre), and the participation ratio of the hidden representation on test
# inputs (App. G).

# %%
r = SE[1.0, 1.0]
FEATURES = experiments.ptft_relu.RELU_FEATURES[SCALE]  # sources: the preset's docs
KS = list(FEATURES.ks)
X_test = r.X_test
rows = []
for name, run in r.methods.items():
    # (draws, width, d); a unit's readout: |a_h|, or for MTL ||A_h|| over both tasks (Eq. 32)
    W, a = run.W[-1], run.unit_readout[-1]
    cl = experiments.ptft_relu.unit_clusters(W, a, [T[2] for T in r.teachers], KS,
                                             FEATURES.align_k)
    H = np.maximum(X_test @ W.transpose(0, 2, 1), 0) * np.abs(a)[:, None, :]
    pr = stats.participation_ratio(H)
    rows.append((name, cl.inertia.mean(0), cl.alignment.mean(), pr.mean()))
for name, inert, align, pr in rows:
    print(f"{name}: inertia {np.round(inert, 3)}, alignment (K={FEATURES.align_k}) {align:.3f}, "
          f"participation ratio {pr:.2f}")
fig = figures.paper003_004.relu_features_figure(KS, rows)
provenance.record(fig, "p004-relu-features", seeds=SEED, params=dict(ks=KS, d=D_IN, width=WIDTH),
                  caption="paper 004 App. E.2/G: k-means inertia of ReLU features ("
                          + ", ".join(name.upper().replace("PTFT", "PT+FT") for name in r.methods)
                          + ")")

# %% [markdown]
# *App. E.2 / G (reduced).* Inertia of weighted k-means on the students' hidden-unit
# directions against $K$, with the alignment score at $K = 6$ and the participation ratio
# of the (readout-weighted) hidden representation in the legend; students of Fig. 1c,
# $\rho = 1$, $m = 1$, largest $n$: STL and PT+FT (Fig. 1c trains no MTL students at the
# chapter's presets; they are in the section on Figs. 6d-e, where each unit is weighted by
# the norm of its two readouts times $\|w_h\|$, its weight in the $\ell_{1,2}$ norm,
# Eq. 35). The paper's Figs. 6 and 8 use more samples
# (App. D: up to 1024 per task; it states no width) and a range of tasks; there is no closed-form counterpart for these
# statistics, so this panel is descriptive. So are the PR and ENSD printed below: the
# paper's statement (ENSD close to PR after fine-tuning, PR lower than after pretraining) is
# made for its rescaled networks of Fig. 8, which this chapter does not train.

# %%
# Sanity checks of the analysis: inertia is 1 for one cluster (by definition) and lower
# with more clusters; the participation ratio lies between 1 and the width.
for name, inert, align, pr in rows:
    assert abs(inert[0] - 1) < 1e-9 and inert[-1] < inert[0] and inert.min() >= 0
    assert 1 - 1e-9 <= pr <= WIDTH and -1 <= align <= 1

# %% [markdown]
# ### Figs. 6d-e (reduced): multi-task students beside STL and PT+FT
#
# Paper 004 (App. E.2.2, Figs. 6c-e) runs the same analysis on networks trained by
# multi-task learning (MTL: one shared first layer, one readout per task, both tasks at
# once; App. B.2). Its claims: MTL "also learns sparse solutions" (Fig. 6d), and when the
# tasks share features "PT+FT and MTL networks exhibit higher alignment between learned
# features and ground-truth features than single-task-trained networks, especially when
# main task samples are limited" (Fig. 6e). We train MTL students
# (`models.relu.train_units_mtl`) on two cells of Fig. 1c, $\rho = 1$, $m = 1$, where the
# two tasks share all six features, and $\rho = 0.9$, $m = 1$, where each main feature
# lies at cosine 0.9 from an auxiliary one (`RELU_FEATURES[...].mtl_cells`), from the STL
# initialisation plus an auxiliary readout of the same scale, and compare them with the
# STL and PT+FT students of the same draws (the alignment is with the main teacher).
# Each unit is weighted by the norm of its two readouts times $\|w_h\|$, its weight in
# the $\ell_{1,2}$ norm (Eq. 35). The reduction (`RELU_FEATURES[...].mtl_ns` and
# `mtl_draws`, printed) is the CPU budget's: an MTL network learns the auxiliary task from
# the small initialisation, as pretraining does, on the 1024 auxiliary samples plus the
# main ones, and took about 65,000 steps in our runs. Open choices, ours: the tasks'
# weighting (the sum of their mean losses), the stopping rule (each task to its own
# relative $10^{-6}$), the step cap (pretraining's), and the main teacher (the paper uses
# the tasks of its Fig. 2, which paper 003 does not describe).

# %%
t0 = time.perf_counter()
MT = {}
with warnings.catch_warnings():
    warnings.simplefilter("ignore", tk.ConvergenceWarning)   # counted and printed below
    for cell in FEATURES.mtl_cells:
        MT[cell] = experiments.ptft_relu.run_mtl_students(FIG1C, FEATURES, *cell)
MT_NS, MT_DRAWS = [int(n) for n in MT[1.0, 1.0].ns], FEATURES.mtl_draws
print(f"n = {MT_NS}, the first {MT_DRAWS} draw(s) of Fig. 1c, (rho, m) in {list(MT)} "
      f"({time.perf_counter() - t0:.0f} s)")


def teacher_l12(T):
    """The l1,2 norm (Eq. 35) of the two teachers as one two-output network: a unit shared
    by both tasks (rho = 1) carries both readouts, distinct units one each (norm-1 units)."""
    if np.array_equal(T[0], T[2]):
        return np.hypot(T[1], T[3]).sum()
    return np.abs(T[1]).sum() + np.abs(T[3]).sum()


ALIGN6, ROWS6, L12_RATIO = {}, [], {}
for cell, r6 in MT.items():
    ALIGN6[cell] = {}
    for name, run in r6.methods.items():
        w = run.unit_readout                   # (len(MT_NS), draws, width)
        cl = experiments.ptft_relu.unit_clusters(run.W, w, [T[2] for T in r6.teachers], KS,
                                                 FEATURES.align_k)
        ALIGN6[cell][name] = cl.alignment
        m6, se6 = stats.mean_se(ALIGN6[cell][name], axis=1)
        line = (f"rho = {cell[0]}, m = {cell[1]}, {figures.paper003_004.METHOD_LABELS[name]}: "
                f"converged {int(run.converged.sum())}/{run.converged.size}; test error "
                f"{np.round(run.error.mean(1), 3)}; alignment (K={FEATURES.align_k}) "
                + ", ".join(f"{a:.3f}" + (f" +- {b:.3f}" if MT_DRAWS > 1 else "")
                            for a, b in zip(m6, se6)))
        if cell == (1.0, 1.0):                 # Fig. 6d: the inertia at the largest n
            inert = cl.inertia[-1].mean(0)
            H = np.maximum(r6.X_test @ run.W[-1].transpose(0, 2, 1), 0) * w[-1][:, None, :]
            ROWS6.append((name, inert, ALIGN6[cell][name][-1].mean(),
                          stats.participation_ratio(H).mean()))
            line += f"; inertia at n = {MT_NS[-1]}: {np.round(inert, 3)}"
        print(line)
    # paper 004, Fig. 5a's reading for ReLU networks: the l1,2 norm of the MTL solution,
    # sum_h ||A_h|| ||w_h|| (Eq. 35), against the teachers'
    l12 = (np.linalg.norm(r6.mtl.W, axis=-1) * r6.mtl.unit_readout).sum(-1)  # (len(MT_NS), draws)
    L12_RATIO[cell] = l12 / np.array([teacher_l12(T) for T in r6.teachers])
    print(f"rho = {cell[0]}, m = {cell[1]}: l1,2(MTL) / l1,2(teachers) per n: "
          + ", ".join(f"n={n}: {v:.3f}" for n, v in zip(MT_NS, L12_RATIO[cell].mean(1))))
fig = figures.paper003_004.relu_features_figure(KS, ROWS6)
provenance.record(fig, "p004-fig6d-mtl-inertia", seeds=SEED,
                  params=dict(ks=KS, ns=MT_NS, draws=MT_DRAWS, d=D_IN, width=WIDTH, n_aux=N_AUX),
                  caption="paper 004 Fig. 6d (reduced): k-means inertia of MTL, PT+FT and STL "
                          "students, rho = 1, m = 1, largest n")
fig = figures.paper003_004.alignment_figure(
    MT_NS, {rf"$\rho = {rho:g}$, $m = {m:g}$": ALIGN6[rho, m] for rho, m in MT})
provenance.record(fig, "p004-fig6e-alignment", seeds=SEED,
                  params=dict(align_k=FEATURES.align_k, ns=MT_NS, draws=MT_DRAWS, d=D_IN,
                              width=WIDTH, n_aux=N_AUX, cells=[list(c) for c in MT]),
                  caption="paper 004 Fig. 6e (reduced): alignment of MTL, PT+FT and STL "
                          "features with the main teacher against n")

# %% [markdown]
# *Figs. 6d-e of paper 004, reduced.* First figure (Fig. 6d): weighted k-means inertia
# against $K$ at the largest $n$ printed, cell $\rho = 1$, mean over the draws, with the
# alignment score and the participation ratio in the legend. Second figure (Fig. 6e): the
# alignment score with the main teacher against $n$, one panel per cell, mean and
# standard error over the draws. Descriptive, as the panels above.
#
# **What we measured** (`TRANSFERKIT_SCALE=paper`: $n = 8$ and 64, the first 4 draws of
# Fig. 1c. In two runs of this whole notebook at that scale, on one core, the cell
# $\rho = 1$ took 415 s and 315 s, the cell $\rho = 0.9$ 394 s and 385 s, and the whole
# notebook 31 min and, with the nested tasks' MTL students below, 35 min; most of it is the
# eight MTL networks of each cell, about 65,000 steps each for the first draw at
# $\rho = 1$. On the compiled kernel, 2026-11-29, the two cells took 89 s together and the
# whole notebook about 6 min.) Every run of the three methods reached its tolerance.
#
# At $\rho = 1$, $m = 1$ the two tasks share all their features (the two teachers are one
# function), the case most favourable to PT+FT and MTL.
#
# - *Alignment (Fig. 6e).* At $K = 6$: STL $0.386\pm0.023$ at $n = 8$ and
#   $0.598\pm0.018$ at $n = 64$; PT+FT $0.983\pm0.002$ and $0.999\pm0.0003$; MTL
#   $0.989\pm0.004$ and $0.998\pm0.001$. PT+FT and MTL align far better than STL, by
#   more at the smaller $n$, as the paper says (checked below with a Bonferroni $t$
#   critical value on the paired differences).
# - *Sparsity (Fig. 6d).* At $n = 64$ six clusters leave an inertia of 0.012 (PT+FT) and
#   0.080 (MTL) against 0.361 for STL: the MTL students are clustered around a few
#   directions, as the paper says MTL's are; STL's units are still spread at this $n$.
# - *Test error.* MTL 0.630 and 0.005, PT+FT 0.834 and 0.002, STL 2.158 and 0.194
#   (normalised). MTL is below PT+FT in 3 of the 4 draws at $n = 8$ and above it in 3 of
#   4 at $n = 64$: no ordering of the two (paper 004's Fig. 4b, with 40 features and 8192
#   auxiliary samples, has MTL ahead when features overlap; not run here).
# - *The $\ell_{1,2}$ norm* of the MTL solution over the teachers': $0.99\pm0.02$ at
#   $n = 8$ and $1.06\pm0.02$ at $n = 64$. Paper 004 reads its Fig. 5a (for its
#   networks of Fig. 1a) as MTL finding solutions of lower $\ell_{1,2}$ norm than the ground
#   truth at small $n$; it states nothing of this kind for ReLU networks. Here the norm is
#   at the teachers' at $n = 8$ and 6 % above it at $n = 64$, where the auxiliary output
#   alone has 1024 samples of the six-unit function, so that we expect the
#   minimum-$\ell_{1,2}$ interpolant to be the teacher (not computed: for ReLU networks it
#   is a convex problem over infinitely many directions). An excess of that size is what
#   the chapter *Diagonal linear networks* measures for diagonal networks trained from a
#   finite initialisation, shrinking as the initialisation does; we did not vary it here.
#
# At $\rho = 0.9$, $m = 1$ each main feature lies at cosine 0.9 from an auxiliary one:
# the teachers have twelve distinct units.
#
# - *Alignment with the main teacher.* STL $0.407\pm0.028$ and $0.637\pm0.029$ at $n = 8$
#   and 64; PT+FT $0.858\pm0.037$ and $0.977\pm0.005$; MTL $0.884\pm0.004$ and
#   $0.904\pm0.003$. Both align better than STL at both $n$ (paired differences 0.27 to
#   0.48, 8.6 to 19.7 standard errors), as the paper says. But at $n = 64$ MTL aligns less
#   than PT+FT, by $0.073\pm0.003$: its clusters stay near 0.9, the cosine between the
#   auxiliary and the main features, while PT+FT's move onto the main ones. This matches
#   the paper's remark on MTL in App. E.2.3: a multi-task network keeps the features both
#   tasks need, so its representation cannot specialise to one of them.
# - *Test error.* MTL 0.795 and 0.127, PT+FT 0.826 and 0.035, STL 2.048 and 0.210: MTL below
#   PT+FT in 3 of 4 draws at $n = 8$, above it in all 4 at $n = 64$.
# - *The $\ell_{1,2}$ norm* over the teachers' (twelve units, $6 + 6m$): $0.73\pm0.03$ at
#   $n = 8$ and $0.93\pm0.01$ at $n = 64$: below the ground truth, and closer to it with
#   more samples, the pattern paper 004 reads off its Fig. 5a. The MTL solution spends less
#   norm than the teachers by serving the main task with units shared with the auxiliary
#   one, the bias that the lower alignment above shows.
#
# Reduced, and not a finding either way: 4 draws, $d = 12$, width 24, two pairs of tasks;
# the paper states neither its sizes nor its tasks for these panels.

# %%
# sanity of the analysis, and the same students as Fig. 1c at those n and draws
for name, inert, align, pr in ROWS6:
    assert abs(inert[0] - 1) < 1e-9 and inert.min() >= 0 and -1 <= align <= 1
assert all(np.all(np.abs(a) <= 1 + 1e-12) for c in ALIGN6.values() for a in c.values())
# the claims of the text above, at the paper preset: every run converged; PT+FT and MTL align
# better than STL at every n (paired over draws, Bonferroni t critical value over the tests)
if (FIG1C, FEATURES) == (experiments.ptft_relu.SAMPLE_EFFICIENCY["paper"],
                         experiments.ptft_relu.RELU_FEATURES["paper"]):
    assert all(run.converged.all() for r6 in MT.values() for run in r6.methods.values())
    crit6 = stats.critical_value(2 * len(MT_NS), MT_DRAWS)
    for name in ("ptft", "mtl"):
        gain, gain_se = stats.mean_se(ALIGN6[1.0, 1.0][name] - ALIGN6[1.0, 1.0]["stl"], axis=1)
        assert np.all(gain - crit6 * gain_se > 0), (name, gain, gain_se)
# at rho = 1 the two teachers share their units (teacher_l12 counts each unit once)
assert all(np.array_equal(T[0], T[2]) for T in MT[1.0, 1.0].teachers)
assert all(np.all(v > 0) for v in L12_RATIO.values())
i_grid = [NS.index(n) for n in MT_NS]
for cell in MT:
    for name in ("stl", "ptft"):
        if cell in SE:
            assert np.array_equal(getattr(MT[cell], name).W,
                                  getattr(SE[cell], name).W[i_grid, :MT_DRAWS])

# %% [markdown]
# ### Figs. 6c and 6e on the whole grid: PT+FT against STL
#
# The MTL students above fit only 2 of the 4 $n$ and 4 of the 8 draws, but the STL and
# PT+FT students of every cell of Fig. 1c are already trained. On them, at every $n$ and
# draw, App. E.2.2's two statements about PT+FT can be tested: its solutions are "quite
# sparse (comparable to the sparsity of solutions learned by single-task learning)"
# (Fig. 6c: the inertia at $K = 6$), and when the tasks share features it aligns better
# with the teacher than STL, "especially when main task samples are limited" (Fig. 6e).
# Paired over the draws where both runs reached their tolerance, one family for the
# whole grid (Bonferroni, 1 % family-wise); the figure shows four of the eight cells.

# %%
VERDICT = {}


def paired_verdicts(claims, ns):
    """Each claim's paired difference per n over the draws where every run converged: mean,
    standard error, count and significance (Bonferroni t over the family's comparisons,
    family-wise 1 %), stored in VERDICT[name, n] and printed."""
    n_tests = len(claims) * len(ns)
    for name, (diff, ok, sign) in claims.items():
        cells = []
        pt = stats.paired_test(diff, n_tests, where=ok)
        for n, m, se, k, sig in zip(ns, pt.mean, pt.se, pt.count, pt.sign != 0):
            VERDICT[name, n] = (m, se, int(k), bool(sig))
            cells.append(f"n={n}: {m:+.3g} +- {se:.2g} ({k}){' *' if sig else ''}" if k > 1
                         else f"n={n}: {k} draw(s) with every run converged, not tested")
        print(f"{name}: " + "; ".join(cells))
    print(f"(* significant: Bonferroni t over {n_tests} comparisons, family-wise 1 %)")


K6 = KS.index(FEATURES.align_k)                 # the K of the alignment score among KS
GRID_CLUSTERS, GRID_CLAIMS = {}, {}
for cell, rc in SE.items():
    dirs = [T[2] for T in rc.teachers]
    GRID_CLUSTERS[cell] = {name: experiments.ptft_relu.unit_clusters(
        run.W, run.unit_readout, dirs, KS, FEATURES.align_k) for name, run in rc.methods.items()}
    stl_c, ptft_c = GRID_CLUSTERS[cell]["stl"], GRID_CLUSTERS[cell]["ptft"]
    both = rc.stl.converged & rc.ptft.converged
    print(f"rho = {cell[0]}, m = {cell[1]}: alignment STL {np.round(stl_c.alignment.mean(1), 3)}, "
          f"PT+FT {np.round(ptft_c.alignment.mean(1), 3)}; inertia at K = {FEATURES.align_k} "
          f"STL {np.round(stl_c.inertia[..., K6].mean(1), 3)}, "
          f"PT+FT {np.round(ptft_c.inertia[..., K6].mean(1), 3)}")
    GRID_CLAIMS[f"Fig. 6e, rho = {cell[0]}, m = {cell[1]}: alignment PT+FT - STL"] = (
        ptft_c.alignment - stl_c.alignment, both, +1)
    GRID_CLAIMS[f"Fig. 6c, rho = {cell[0]}, m = {cell[1]}: inertia at K = "
                f"{FEATURES.align_k}, PT+FT - STL"] = (
        ptft_c.inertia[..., K6] - stl_c.inertia[..., K6], both, -1)
paired_verdicts(GRID_CLAIMS, NS)
shown = [c for c in SE if c[1] in (FIG1C.magnitudes[0], FIG1C.magnitudes[-1])]
fig = figures.paper003_004.alignment_figure(
    NS, {rf"$\rho = {rho:g}$, $m = {m:g}$": {name: GRID_CLUSTERS[rho, m][name].alignment
                                            for name in ("stl", "ptft")} for rho, m in shown},
    converged={rf"$\rho = {rho:g}$, $m = {m:g}$": {name: SE[rho, m].methods[name].converged
                                                  for name in ("stl", "ptft")}
               for rho, m in shown})
provenance.record(fig, "p004-fig6e-grid-alignment", seeds=SEED,
                  params=dict(align_k=FEATURES.align_k, ns=NS, draws=DRAWS, d=D_IN,
                              width=WIDTH, n_aux=N_AUX, cells=[list(c) for c in shown]),
                  caption="paper 004 Fig. 6e (reduced): alignment of PT+FT and STL students "
                          "with the main teacher against n, cells of Fig. 1c")

# %% [markdown]
# *Fig. 6e of paper 004 on the students of Fig. 1c.* Alignment score ($K = 6$) of the
# PT+FT and STL students with the main teacher against $n$, mean and standard error over
# all draws, at the largest and smallest magnitude $m$ of each $\rho$; every cell's
# numbers are printed above. Open markers: some run of that point stopped at its step cap
# before its tolerance; at $m = 0.01$ many fine-tuning runs did (Fig. 1c's
# counts: 1, 3 and 7 of 8 at $n = 8$, 32, 64 with $\rho = 1$; 2, 5 and 8 of 8 at $n = 16$,
# 32, 64 with $\rho = 0.9$; at $m = 1$, one of 8 at $n = 16$ with either $\rho$), and
# those points describe networks stopped at the cap. The paired tests
# printed above use only the draws where both runs converged.
#
# **What we measured** (`paper` preset: 8 draws, $n = 8$ to 64; the numbers are this
# build's). PT+FT aligns far better than STL in every cell at every $n$: by 0.55 to 0.59 at
# $n = 8$ and 0.36 to 0.37 at $n = 64$ (where tested) with $\rho = 1$, by 0.47 to 0.50 and
# 0.29 to 0.33 with $\rho = 0.9$. PT+FT's alignment is 0.98 to 1.00 with $\rho = 1$ and 0.87
# to 0.98 with $\rho = 0.9$; STL's climbs from 0.38-0.45 at $n = 8$ to 0.62-0.66 at
# $n = 64$. The advantage shrinks as $n$ grows in every cell, the paper's "especially when
# main task samples are limited". Every difference with at least 6 converged draws is
# significant; those with fewer (at $m = 0.01$ and at $n = 64$, $m = 0.03$, $\rho = 0.9$,
# where fine-tuning stops at its cap) have the same sign.
# PT+FT is not only "comparable" in sparsity: its mean inertia at $K = 6$ over all draws
# is lower than STL's in every cell and at every $n$ (0.01 to 0.13 against 0.04 to 0.38;
# the cells at the cap included), significantly at
# $n = 64$ in five cells, at $n = 32$ in two and at $n = 16$ in one, where STL spreads over
# more directions (the section on Figs. 6a-b below). Reduced sizes, not a finding either
# way.

# %%
# The claims of the text above, for the preset they are stated for (a data check, not a
# scale switch): PT+FT aligns better than STL in every tested cell and n, significantly
# wherever at least 6 draws converged, and its advantage falls from n = 8 to the largest
# tested n; its inertia at K = 6 is below STL's wherever tested.
if (FIG1C, FEATURES) == (experiments.ptft_relu.SAMPLE_EFFICIENCY["paper"],
                         experiments.ptft_relu.RELU_FEATURES["paper"]):
    for name, (diff, ok, sign) in GRID_CLAIMS.items():
        tested = [n for n in NS if VERDICT[name, n][2] > 1]
        assert all(np.sign(VERDICT[name, n][0]) == sign for n in tested), name
        if name.startswith("Fig. 6e"):
            assert all(VERDICT[name, n][3] for n in tested if VERDICT[name, n][2] >= 6), name
            assert VERDICT[name, tested[0]][0] > VERDICT[name, tested[-1]][0], name

# %% [markdown]
# Paper 004 (App. G, Fig. 8c) reads nested feature selection off two dimensionalities: after
# fine-tuning the representation should have fewer dimensions than after pretraining, and
# nearly all of them should be inherited, i.e. the effective number of shared dimensions
# $\mathrm{ENSD}(X_{\rm PT}, X_{\rm FT})$ (Giaffar et al. 2023; `stats.ensd`) close to
# $\mathrm{PR}(X_{\rm FT})$. Here $X$ are the hidden ReLU responses on the test inputs
# (without the readout, which PT+FT re-initialises), pretrained network against the PT+FT
# students of the same draw.

# %%
H_pt = np.maximum(X_test @ r.W_pre.transpose(0, 2, 1), 0)                   # (draws, n_test, width)
H_ft = np.maximum(X_test @ r.ptft.W[-1].transpose(0, 2, 1), 0)
pr_pt, pr_ft = stats.participation_ratio(H_pt), stats.participation_ratio(H_ft)
ensd_pf = stats.ensd(H_pt, H_ft)
print(f"PR(pretrained) {pr_pt.mean():.2f}, PR(PT+FT) {pr_ft.mean():.2f}, "
      f"ENSD(pretrained, PT+FT) {ensd_pf.mean():.2f}  (mean over {DRAWS} draw(s); "
      f"rho = 1, m = 1, n = {NS[-1]})")
# identities: ENSD is the CKA (<= 1) times the geometric mean of the two PRs, and >= 0
assert (ensd_pf >= 0).all() and (ensd_pf <= np.sqrt(pr_pt * pr_ft) * (1 + 1e-9)).all()

# %% [markdown]
# ## Paper 004, Fig. 8a (reduced): dimensionality against the initialisation scale
#
# Paper 004 (App. G, Fig. 8a): networks in the rich regime, biased towards sparse solutions,
# learn representations of lower participation ratio than networks in the lazy regime. We
# train the STL students of Fig. 1c's $(\rho, m) = (1, 1)$ cell (same teachers, samples and
# initial normals) from the chapter's $\alpha$ and from 100 times it
# (`RELU_FEATURES[...].pr_alphas`, ours: the paper states neither scale, nor its widths and
# $n$ for this figure), and report the participation ratio of the readout-weighted hidden
# representation on the test inputs, as above, and how far the first layer moved,
# $\|W - W(0)\|_F / \|W(0)\|_F$, which tells the regimes apart.

# %%
# The students are trained at the n of Fig. 1c and beyond (FEATURES.cluster_ns, for Figs.
# 6a-b below); a student does not depend on the other n of the call, so this figure's are
# those of the n of Fig. 1c alone (checked below against Fig. 1c's STL students).
STL_NS = list(FEATURES.cluster_ns)
N8 = len(NS)
assert STL_NS[:N8] == NS, (STL_NS, NS)
with warnings.catch_warnings():
    warnings.simplefilter("ignore", tk.ConvergenceWarning)   # counted and printed below
    FIG8A = experiments.ptft_relu.run_stl_init_scale(
        D_IN, 1.0, 1.0, STL_NS, FEATURES.pr_alphas, draws=DRAWS, width=WIDTH,
        units=FIG1C.units, n_aux=N_AUX, n_test=FIG1C.n_test, seed=SEED,
        loss_tol=FIG1C.loss_tol, max_steps=FEATURES.cluster_max_steps)
PR8, PR8_SE, PR8_DRAWS = [], [], []
for alpha, run, W0 in zip(FIG8A.alphas, FIG8A.runs, FIG8A.W0):
    H = (np.maximum(FIG8A.X_test[None] @ run.W.transpose(0, 1, 3, 2), 0)
         * np.abs(run.a)[:, :, None, :])
    pr = stats.participation_ratio(H)                                    # (len(STL_NS), draws)
    m, se = stats.mean_se(pr, axis=1)
    PR8.append(m)
    PR8_SE.append(se)
    PR8_DRAWS.append(pr)
    moved = (np.linalg.norm(run.W - W0[None], axis=(2, 3))
             / np.linalg.norm(W0, axis=(1, 2))[None])
    conv, err = run.converged[:N8], run.error[:N8]
    print(f"alpha = {alpha:g}: converged {int(conv.sum())}/{conv.size}; "
          f"test error {np.round(err.mean(1), 3)}; ||W - W(0)|| / ||W(0)|| "
          f"{np.round(moved[:N8].mean(1), 3)}")
    print(f"  participation ratio per n = {NS}: "
          + ", ".join(f"{a:.2f} +- {b:.2f}" for a, b in zip(m[:N8], se[:N8])))
    print(f"  beyond Fig. 1c's n, n = {STL_NS[N8:]}: participation ratio "
          + ", ".join(f"{a:.2f} +- {b:.2f}" for a, b in zip(m[N8:], se[N8:]))
          + f"; runs at their tolerance {run.converged[N8:].sum(1).tolist()} of {DRAWS}")
PR8, PR8_SE, PR8_DRAWS = np.array(PR8), np.array(PR8_SE), np.array(PR8_DRAWS)
# at the chapter's alpha these are exactly the STL students of Fig. 1c above
assert np.array_equal(FIG8A.runs[0].W[:N8], SE[1.0, 1.0].stl.W) == (FEATURES.pr_alphas[0] == ALPHA)
fig = figures.paper003_004.participation_ratio_figure(
    STL_NS, FIG8A.alphas, PR8, PR8_SE, converged=[run.converged.all(1) for run in FIG8A.runs])
provenance.record(fig, "p004-fig8a-participation-ratio", seeds=SEED,
                  params=dict(alphas=list(FEATURES.pr_alphas), ns=STL_NS, d=D_IN, width=WIDTH,
                              draws=DRAWS, max_steps=FEATURES.cluster_max_steps),
                  caption="paper 004 Fig. 8a (reduced): participation ratio of STL students "
                  "against n, small and large initialisation")

# %% [markdown]
# *Fig. 8a of paper 004, reduced.* Participation ratio of the readout-weighted hidden ReLU
# responses of the STL students on the test inputs, against $n$, mean and standard error
# over the draws, for the two initialisation scales printed above (six-unit teacher,
# $\rho = 1$, $m = 1$; Fig. 1c's network and teacher at $n$ up to 256, as printed above,
# far below the paper's sizes; hollow markers: $n$ at which some run stopped at the step
# cap). Descriptive, as the
# panel above: there is no closed form to hold it against, and at this width the large
# initialisation is "lazier" (its first layer moves less, printed above), not the lazy
# limit.
#
# At `paper` scale (8 draws; numbers from the run behind the book) the small
# initialisation gives the lower participation ratio at every $n$, as the paper's Fig. 8a
# says of the rich regime: it grows with $n$ from 1.7 to 5.0 (the six teacher units are
# resolved as the data grow), while from $\alpha = 1$ it stays near 6 (5.9 to 6.1); the
# gap is 7.4, 5.5, 4.6 and 2.5 standard errors at $n$ = 8, 16, 32, 64. The large
# initialisation moves the first layer by 21-43 % of its norm (the small one by 33 to 49
# times its norm) and generalises worse at every $n$ (normalised test error 7.7 to 0.85
# against 2.0 to 0.18). Every run reached its tolerance. Reduced, not the paper's sizes
# (one cell of Fig. 1c, width 24, $d = 12$, $n \le 64$).
#
# **Beyond Fig. 1c's $n$** (the students of Figs. 6a-b below, hollow markers where runs
# stopped at the cap of 250,000 steps) the ordering does not hold at every $n$. At
# $n = 128$ the small initialisation's participation ratio (6.94 $\pm$ 0.22; 4 of its 8
# runs at the cap) is above the large one's (5.74 $\pm$ 0.24): on the 4 draws where both
# runs converged the large-minus-small difference is $-1.6 \pm 0.4$, the opposite sign,
# though not significant at 1 % with 4 draws. This is the $n$ at which Fig. 6a finds the
# small initialisation "less sparse" (its inertia at $K = 6$ is that of the large one). At
# $n = 256$ it is 5.44 $\pm$ 0.07 (every run converged, six features), against
# 7.27 $\pm$ 0.50 from $\alpha = 1$, whose runs all stopped at the cap. So in this setting
# "rich gives the lower participation ratio" is reproduced for $n \le 64$ and not at the
# intermediate $n = 128$. That is not a finding: half the small-initialisation runs there
# stopped at the cap, the reversal rests on 4 draws and is not significant, the sizes are
# reduced, and the paper does not state the $n$ of its Fig. 8a. At $n = 256$ the
# comparison waits on the large initialisation's runs.

# %%
# sanity: the participation ratio lies between 1 and the width
assert np.all((PR8 >= 1 - 1e-9) & (PR8 <= WIDTH)), PR8
# the claim above, at the paper preset: the small initialisation's PR is lower at every n
# by at least two standard errors of the difference
if FIG1C == experiments.ptft_relu.SAMPLE_EFFICIENCY["paper"]:
    z8 = (PR8[1, :N8] - PR8[0, :N8]) / np.hypot(PR8_SE[0, :N8], PR8_SE[1, :N8])
    assert FIG8A.alphas[0] < FIG8A.alphas[1] and np.all(z8 > 2), z8
if (FIG1C, FEATURES) == (experiments.ptft_relu.SAMPLE_EFFICIENCY["paper"],
                         experiments.ptft_relu.RELU_FEATURES["paper"]):
    # beyond Fig. 1c's n: at n = 128 the ordering turns round on the 4 draws where both
    # runs converged (the text's -1.6 +- 0.4); at 256 the large initialisation's runs all
    # stopped at the cap
    i128 = STL_NS.index(128)
    both = FIG8A.runs[0].converged[i128] & FIG8A.runs[1].converged[i128]
    gap, gap_se = stats.mean_se((PR8_DRAWS[1, i128] - PR8_DRAWS[0, i128])[both])
    assert both.sum() == 4 and gap < -3 * gap_se, (both.sum(), gap, gap_se)
    assert not FIG8A.runs[1].converged[STL_NS.index(256)].any()

# %% [markdown]
# ## Paper 004, Figs. 6a-b (reduced): feature clusters of STL students against $n$ and the initialisation
#
# **What the paper states** (App. E.2.1 and the caption of Figs. 6a-b). In single-task
# learning from a small initialisation (rich regime) on a sparse teacher (six units) the
# networks "learn solutions that make use of approximately six nonlinear features"
# (the inertia of Fig. 6a falls to near zero by $K = 6$), although they are "relatively
# less sparse for an intermediate number of training examples"; networks from a large
# initialisation (lazy regime) "display no such bias"; and the learned clusters are
# "highly aligned with the ground-truth teacher features in the sparse ground-truth case,
# and moreso as the number of main task samples ... increases" (Fig. 6b). For a teacher of
# 1000 units the networks use few clusters at small $n$ and more as $n$ grows.
#
# **What it leaves open, and ours.** Not stated: $d$, the width, the $n$, the two
# initialisation scales, the values of $K$ and the $K$ of the alignment score. Ours: the
# students of Fig. 8a above (the teacher, samples and initial normals of Fig. 1c's
# $(\rho, m) = (1, 1)$ cell: $d = 12$, width 24, six orthonormal teacher units,
# $\alpha = 10^{-2}$ and 1, 8 draws), at $n$ = 8 to 256 (`RELU_FEATURES[...].cluster_ns`;
# the paper's $n$ reach 1024), each trained to Fig. 1c's tolerance or 250,000 steps
# (`cluster_max_steps`; at Fig. 1c's 50,000 no small-initialisation run at $n \ge 128$
# reached it); $K$ and the alignment at $K = 6$ as in the sections above. The teacher of
# 1000 units is the next section's.

# %%
CL6 = [experiments.ptft_relu.unit_clusters(run.W, run.unit_readout, FIG8A.teacher_dirs, KS,
                                           FEATURES.align_k) for run in FIG8A.runs]
for alpha, run, cl in zip(FIG8A.alphas, FIG8A.runs, CL6):
    print(f"alpha = {alpha:g}: runs at their tolerance per n = {STL_NS}: "
          f"{run.converged.sum(1).tolist()} of {DRAWS}")
    for i, n in enumerate(STL_NS):
        m, _ = stats.mean_se(cl.inertia[i], axis=0)
        am, ase = stats.mean_se(cl.alignment[i])
        print(f"  n = {n:3d}: inertia at K = {KS}: {np.round(m, 3)}; alignment (K = "
              f"{FEATURES.align_k}) {am:.3f}" + (f" +- {ase:.3f}" if DRAWS > 1 else "")
              + ("" if run.converged[i].all() else
                 f"  [{DRAWS - run.converged[i].sum()} stopped at the step cap]"))
fig = figures.paper003_004.stl_clusters_figure(STL_NS, FIG8A.alphas, CL6,
                                               [run.converged for run in FIG8A.runs])
provenance.record(fig, "p004-fig6ab-stl-clusters", seeds=SEED,
                  params=dict(alphas=list(FEATURES.pr_alphas), ns=STL_NS, ks=KS,
                              align_k=FEATURES.align_k, d=D_IN, width=WIDTH, draws=DRAWS,
                              max_steps=FEATURES.cluster_max_steps),
                  caption="paper 004 Figs. 6a-b (reduced): k-means inertia and alignment of "
                          "STL students against n, small and large initialisation")

# %% [markdown]
# *Figs. 6a-b of paper 004, reduced.* (a) Weighted k-means inertia of the STL students'
# unit directions against $K$, one colour per $n$, solid for the small initialisation and
# dashed for the large one, mean over the draws; (b) the alignment score at $K = 6$ against
# $n$, mean and standard error over the draws. Hollow markers: some runs of that $n$
# stopped at the step cap. Descriptive, as the panels above; below, the two readings the
# paper compares (small against large initialisation) are tested per $n$ on the draws where
# both runs reached their tolerance, a family of its own (Bonferroni, 1 % family-wise).

# %%
SMALL, LARGE = CL6
BOTH6 = FIG8A.runs[0].converged & FIG8A.runs[1].converged
CLUSTER_CLAIMS = {
    f"Fig. 6a: inertia at K = {FEATURES.align_k}, large - small initialisation":
        (LARGE.inertia[..., K6] - SMALL.inertia[..., K6], BOTH6, +1),
    "Fig. 6b: alignment, small - large initialisation":
        (SMALL.alignment - LARGE.alignment, BOTH6, +1),
}
paired_verdicts(CLUSTER_CLAIMS, STL_NS)

# %% [markdown]
# **What we measured** (`paper` preset, 8 draws; this build's numbers are printed above).
# Every large-initialisation run reached its tolerance up to $n = 128$ and none at
# $n = 256$; every small-initialisation run up to $n = 64$ and at $n = 256$, 4 of 8 at
# $n = 128$. The two scales' students took 314 s of one core at $n$ = 128 and 256 (on
# this project's 2-core machine, 2026-11-28, with the torch loop; 84 s on the compiled
# kernel, 2026-11-29), 7 s at the $n$ of Fig. 1c.
# - *Fig. 6a, sparse teacher, small initialisation.* At $n = 256$, where every run reached
#   its tolerance, six clusters explain all but 3 % of the weighted variance (inertia 0.034
#   at $K = 6$, 0.42 at $K = 4$) and the alignment score is 1.000: the network uses the
#   six teacher units, as the paper says. At small $n$ it uses fewer than six (inertia
#   0.26 at $K = 2$ and 0.04 at $K = 6$ for $n = 8$), sparser than the teacher, and the
#   inertia at $K = 6$ grows with $n$ (0.04, 0.08, 0.21, 0.34, 0.41 for $n = 8$ to 128,
#   half the runs at 128 stopped at the cap) before it falls at 256: "relatively less
#   sparse for an intermediate number of training examples", reproduced in direction; at
#   $n = 128$ it is that of the large initialisation.
# - *Lazy regime.* From $\alpha = 1$ the inertia at $K = 6$ stays at 0.40 to 0.45 at every
#   $n$: no such bias. The paired difference with the small initialisation is positive and
#   significant at $n$ = 8, 16, 32 ($+0.39\pm0.02$, $+0.34\pm0.02$, $+0.21\pm0.01$),
#   positive but not significant at 64 ($+0.07\pm0.02$), about zero at 128
#   ($-0.02\pm0.05$, the 4 draws where both runs converged), and not tested at 256 (the
#   large-initialisation runs stopped at the cap).
# - *Fig. 6b.* With the small initialisation the alignment score grows with $n$ (0.39, 0.45,
#   0.55, 0.63, 0.83, 1.00), as the paper says; it is higher than with the large one from
#   $n = 16$ on, significantly at $n = 64$ ($+0.17\pm0.03$) and 128 ($+0.31\pm0.01$, the 4
#   draws where both runs converged), and not at $n = 8$ ($-0.03\pm0.02$).
#
# **Verdict.** Reduced sizes ($d = 12$, width 24, $n\le256$ against the paper's 1024, the
# paper stating none of its sizes for these figures): not a finding either way. The
# statements on the sparse teacher are reproduced in direction: about six features at the
# largest $n$, fewer at small $n$, less sparse at an intermediate $n$, none of this from
# the large initialisation, and an alignment that grows with $n$. The dense teacher is the
# next section's.

# %%
# The claims of the text above, for the preset they are stated for (a data check, not a
# scale switch).
if (FIG1C == experiments.ptft_relu.SAMPLE_EFFICIENCY["paper"]
        and FEATURES == experiments.ptft_relu.RELU_FEATURES["paper"]):
    i256, i128 = STL_NS.index(256), STL_NS.index(128)
    small6, large6 = SMALL.inertia[..., K6].mean(-1), LARGE.inertia[..., K6].mean(-1)
    assert FIG8A.runs[0].converged[i256].all() and not FIG8A.runs[1].converged[i256].any()
    assert small6[i256] < 0.05 and SMALL.alignment[i256].min() > 0.99, (small6, SMALL.alignment)
    assert np.all(np.diff(small6[:i128 + 1]) > 0) and abs(small6[i128] - large6[i128]) < 0.05
    assert np.all((large6 > 0.395) & (large6 < 0.455)), large6
    name6a, name6b = CLUSTER_CLAIMS
    assert all(VERDICT[name6a, n][0] > 0 and VERDICT[name6a, n][3] for n in (8, 16, 32))
    assert VERDICT[name6a, 64][0] > 0 and not VERDICT[name6a, 128][3] and VERDICT[name6a, 256][2] == 0
    assert all(VERDICT[name6b, n][0] > 0 and VERDICT[name6b, n][3] for n in (64, 128))
    assert np.all(np.diff(SMALL.alignment.mean(-1)) > 0)

# %% [markdown]
# ### Fig. 6a (reduced): a dense teacher of 1000 units
#
# **What the paper states** (App. E.2.1, Fig. 6a). "For tasks with many (1000) units in the
# teacher network, the network finds solutions that use a small number of feature clusters
# when main task samples are limited, but gradually uses more clusters as the number of
# samples is increased", where it "matches the teacher function very well"; networks from
# a large initialisation "display no such bias".
#
# **What it leaves open, and ours.** The law of the dense teacher: neither its units'
# directions nor its readouts, nor their scale. Ours (`experiments.ptft_relu.dense_teacher`,
# `RELU_FEATURES[...].dense_readouts`): 1000 directions uniform on the sphere of
# $\mathbb R^{12}$ and two readings of the readouts, each its own teacher: Gaussian
# $a_h\sim\mathcal N(0, 1)$ (a generic dense function) and equal positive $a_h$ (whose sum is
# nearly radial, $\propto\|x\|$); both scaled so that the teacher's mean squared output is
# the six-unit teacher's (7.78, the closed form $a^\top K a$ of the ReLU Gram matrix), so
# that the labels, and with them the tolerance and the distance from the initialisation,
# are on the scale of the sections above. The students are those of Figs. 6a-b (same
# initial normals, same main-task inputs, same widths and tolerance: they differ in their
# teacher alone), at the same $n$, with a cap of 50,000 steps
# (`RELU_FEATURES[...].dense_max_steps`: at $n\le64$, on the Gaussian teacher, no run that
# missed its tolerance by 50,000 steps reached it by 250,000 in our trial). Claims rest on
# the runs that reached their tolerance; the others are marked (hollow) and counted.

# %%
t0 = time.perf_counter()
with warnings.catch_warnings():
    warnings.simplefilter("ignore", tk.ConvergenceWarning)   # counted and printed below
    DENSE = experiments.ptft_relu.run_stl_dense(
        D_IN, STL_NS, FEATURES.pr_alphas, FEATURES.dense_readouts, draws=DRAWS, width=WIDTH,
        units=FIG1C.units, dense_units=FEATURES.dense_units, n_aux=N_AUX,
        n_test=FIG1C.n_test, seed=SEED, loss_tol=FIG1C.loss_tol,
        max_steps=FEATURES.dense_max_steps)
print(f"{time.perf_counter() - t0:.0f} s; {DENSE.dense_units} teacher units, readouts "
      f"{list(DENSE.readouts)}, alpha = {DENSE.alphas.tolist()}, n = {STL_NS}, {DRAWS} draws, "
      f"at most {FEATURES.dense_max_steps} steps")
# the initial normals are those of Figs. 6a-b (the teacher alone differs)
assert np.array_equal(DENSE.W0, FIG8A.W0)
CL_DENSE = [[experiments.ptft_relu.unit_clusters(run.W, run.unit_readout, FIG8A.teacher_dirs,
                                                 KS, FEATURES.align_k) for run in runs]
            for runs in DENSE.runs]
for law, runs, cls in zip(DENSE.readouts, DENSE.runs, CL_DENSE):
    for alpha, run, cl in zip(DENSE.alphas, runs, cls):
        print(f"{law:8s} alpha = {alpha:g}: at their tolerance per n {run.converged.sum(1).tolist()}"
              f" of {DRAWS}; test error {np.round(run.error.mean(1), 3)}; inertia at K = "
              f"{FEATURES.align_k} {np.round(cl.inertia[..., K6].mean(1), 3)}")
fig = figures.paper003_004.dense_clusters_figure(
    STL_NS, DENSE.alphas, DENSE.readouts, CL_DENSE,
    [[run.converged for run in runs] for runs in DENSE.runs], CL6,
    [run.converged for run in FIG8A.runs], k=FEATURES.align_k)
provenance.record(fig, "p004-fig6a-dense-teacher", seeds=SEED,
                  params=dict(dense_units=DENSE.dense_units, readouts=list(DENSE.readouts),
                              alphas=list(FEATURES.pr_alphas), ns=STL_NS, ks=KS, d=D_IN,
                              width=WIDTH, draws=DRAWS, max_steps=FEATURES.dense_max_steps),
                  caption="paper 004 Fig. 6a (reduced): k-means inertia of STL students of a "
                          "dense teacher (1000 units), two readout laws, small and large "
                          "initialisation, beside the six-unit teacher")

# %% [markdown]
# *Fig. 6a of paper 004, dense teacher, reduced.* One panel per readout law: the weighted
# k-means inertia of the STL students' unit directions against $K$, one colour per $n$,
# solid from the small initialisation and dashed from the large one (mean over the draws);
# last panel: the inertia at $K = 6$ against $n$ for the six-unit teacher of Figs. 6a-b
# and the two dense ones (mean and standard error; hollow where a run stopped at its cap).
# Below, the paper's two statements are tested per $n$ and law on the draws where the runs
# compared reached their tolerance (one family, Bonferroni, 1 % family-wise): the large
# initialisation above the small one in inertia (no bias towards few clusters), and, from
# the small initialisation, the inertia at $n$ above that at the smallest $n$ (more
# clusters with more samples; the same draw's teacher and initialisation at both $n$).

# %%
N0 = STL_NS[0]
DENSE_CLAIMS = {}
for law, runs, cls in zip(DENSE.readouts, DENSE.runs, CL_DENSE):
    (small_run, large_run), (small_cl, large_cl) = runs, cls
    i6s, i6l = small_cl.inertia[..., K6], large_cl.inertia[..., K6]
    DENSE_CLAIMS[f"dense {law}: inertia at K = {FEATURES.align_k}, large - small initialisation"] = (
        i6l - i6s, small_run.converged & large_run.converged, +1)
    DENSE_CLAIMS[f"dense {law}, small initialisation: inertia at K = {FEATURES.align_k}, "
                 f"at n - at n = {N0}"] = (
        i6s - i6s[:1], small_run.converged & small_run.converged[:1], +1)
paired_verdicts(DENSE_CLAIMS, STL_NS)

# %% [markdown]
# **What we measured** (`paper` preset, 8 draws; this build's numbers are printed above;
# 201 and 251 s of one core in two runs on this project's 2-core machine beside other jobs,
# 2026-11-28, with the torch loop; 46 s on the compiled kernel, 2026-11-29).
# - *Gaussian readouts, small initialisation.* The inertia at $K = 6$ grows with $n$: 0.014,
#   0.052, 0.105, 0.27, 0.40, 0.46 for $n$ = 8 to 256 (few clusters at small $n$, more with
#   more samples), and the normalised test error falls from 0.95 to 0.09. Fewer runs reach
#   their tolerance than on the sparse teacher: 7, 5, 7, 5, 2 and 0 of 8, so $n = 128$ rests
#   on 2 draws and $n = 256$ on none.
# - *Equal positive readouts, small initialisation.* The same picture: 0.06, 0.13, 0.27,
#   0.40, 0.54, 0.63, every run at its tolerance up to $n = 128$, none at 256.
# - *Large initialisation.* The inertia stays at 0.42 to 0.50 at every $n$ under both laws
#   (it is that of the initial random directions: the first layer moves little).
# - *The paired tests.* The large initialisation's inertia is above the small one's at
#   every $n$ up to 64 under both laws ($+0.41\pm0.02$ and $+0.38\pm0.03$ at $n = 8$),
#   significantly up to $n = 32$ ($t$ = 7.8 to 27 against critical values of 6.3 to 10.8;
#   the Gaussian law at $n = 16$ with a thin margin, 11.6 against 10.8 on 5 draws), not at
#   64 (Gaussian 9.9 against 10.8, positive 1.8 against 6.3). At $n = 128$ the order turns
#   round under the positive law ($-0.12\pm0.01$, 7 draws, $t = -9.1$ against 7.0: there
#   the rich network is less clustered than the random directions of the lazy one). The
#   growth from $n = 8$ is positive wherever tested; it is significant under the positive
#   law at $n = 64$ and 128 ($t$ = 11 and 20 against 6.3), and with thin margins under the
#   positive law at $n = 32$ (6.9 against 6.3) and the Gaussian one at $n = 64$ (11.2
#   against 10.8, 5 draws). The thin margins are stated, not asserted: they could fall
#   either side on another machine.
#
# **Against the six-unit teacher** (last panel). Up to $n = 128$ the dense teachers'
# students are clustered about as much as the sparse teacher's: under the Gaussian law no
# less (0.27 against 0.34 at $n = 64$), under the positive law a little less at every $n$
# (0.40 against 0.34 at $n = 64$; the inertia higher by 0.02 to 0.13 from $n = 8$ to 128).
# These are means over all draws, the runs stopped at the cap included (Gaussian: 3 of 8
# at $n = 64$, 6 of 8 at 128; sparse: 4 of 8 at 128): a description, not a test. At
# $n\le64$ a rich network uses few clusters whatever the teacher. They part at $n = 256$, where the sparse teacher's students settle
# on its six units (0.03, every run converged) and the dense teachers' go on to more
# clusters (0.46 and 0.63), but every dense run there stopped at the cap: a marked,
# unconverged observation. And at our largest $n$ the network does not "match the teacher
# function very well": its normalised test error is 0.09 (Gaussian) and 0.10 (positive) at
# $n = 256$, stopped at the cap; the paper's $n$ reach 1024.
#
# **Verdict.** Reduced sizes ($d = 12$, width 24, $n\le256$; the paper states neither its
# sizes nor its teacher's law): not a finding. Under both readings of the dense teacher,
# the two statements of the paper are reproduced in direction on converged runs: few
# clusters at small $n$ and more as $n$ grows, and no such bias from the large
# initialisation. That the sparse and the dense teachers' students differ only at the
# largest $n$, where the dense runs did not converge, is what a reader should take from
# this reduced run, not a sparse-against-dense contrast at small $n$.

# %%
# The claims of the text above, for the preset they are stated for (a data check, not a
# scale switch).
if (FIG1C == experiments.ptft_relu.SAMPLE_EFFICIENCY["paper"]
        and FEATURES == experiments.ptft_relu.RELU_FEATURES["paper"]):
    for law in DENSE.readouts:
        lazy = f"dense {law}: inertia at K = {FEATURES.align_k}, large - small initialisation"
        grow = (f"dense {law}, small initialisation: inertia at K = {FEATURES.align_k}, "
                f"at n - at n = {N0}")
        assert all(VERDICT[lazy, n][0] > 0 for n in (8, 16, 32, 64)), law
        assert all(VERDICT[grow, n][0] > 0 for n in STL_NS[1:] if VERDICT[grow, n][2] > 1)
        # significant with a margin (t at least 1.2 times its critical value); the thin
        # ones of the text are not asserted
        robust = {"gaussian": ((lazy, 8), (lazy, 32)),
                  "positive": ((lazy, 8), (lazy, 16), (lazy, 32), (grow, 64), (grow, 128))}
        for name, n in robust[law]:
            m, se, k, _ = VERDICT[name, n]
            assert abs(m) > 1.2 * stats.critical_value(len(DENSE_CLAIMS) * len(STL_NS), k) * se, (
                name, n, m, se, k)
    lazy_p = f"dense positive: inertia at K = {FEATURES.align_k}, large - small initialisation"
    m, se, k, _ = VERDICT[lazy_p, 128]
    assert m < -1.2 * stats.critical_value(len(DENSE_CLAIMS) * len(STL_NS), k) * se
    small_g = CL_DENSE[0][0].inertia[..., K6].mean(-1)
    assert DENSE.readouts[0] == "gaussian" and np.all(np.diff(small_g) > 0), small_g
    i256 = STL_NS.index(256)
    assert not any(run.converged[i256].any() for runs in DENSE.runs for run in runs)
    assert SMALL.inertia[i256, :, K6].mean() < 0.05 < small_g[i256]

# %% [markdown]
# ## Paper 004, Figs. 6f-g and 8b-c (reduced): rescaling before fine-tuning, nested tasks
#
# **What the paper states** (paper 004, App. E.2.3 and G). A "nested feature selection"
# regime, at intermediate ratios of the main-task coefficients to the pretrained weight
# scale, lets a network learn a main task that uses a *subset* of the auxiliary features
# with few samples while still reusing them. For ReLU networks it is reached by rescaling
# the weights after pretraining by 1.0; by 10.0 the network is lazy, by 0.1 rich. On a main
# task that uses *one* of the six auxiliary teacher units, the claims are:
# (Fig. 6f) at $s = 1$ the fine-tuned network is effectively a one-feature network (k-means
# inertia with one cluster near 0), at $s = 10$ it is not; (Fig. 6g) at $s = 1$ its
# cluster is better aligned with the teacher when the main unit is one of the auxiliary ones
# ("nested") than when it is a new one ("disjoint"), a benefit mostly lost at $s = 0.1$;
# (Fig. 8b) the participation ratio (PR) of the hidden representation falls during
# fine-tuning at $s = 1$ and $s = 0.1$, not at $s = 10$; (Fig. 8c) the effective number of
# shared dimensions $\mathrm{ENSD}(X_{\rm PT}, X_{\rm FT})$ is almost equal to
# $\mathrm{PR}(X_{\rm FT})$. Fig. 6f-g also show MTL.
#
# **What it leaves open** (our choices in brackets; sources in
# `experiments.ptft_relu.RELU_FEATURES` and `run_nested_rescaling`): which weights are
# rescaled [the pretrained first layer; the readout is re-initialised at $\gamma$, as in the
# chapter's PT+FT, so $s$ sets the pretrained norm $m_0$ of Eqs. 10-11]; the main teacher's
# readout [1, the auxiliary readout]; which auxiliary unit the nested task uses [the first]
# and the disjoint unit [orthogonal to all six]; the sizes, the initialisation, the
# optimiser and the stopping rule [those of Fig. 1c above, whose pretrained networks these
# are]; the normalisation of the one-cluster inertia [`stats.direction_spread`: the
# weighted sum of squares about the weighted mean direction over the total weight,
# $1-\|\bar p\|^2$; the chapter's `kmeans_inertia` divides by the spread about the mean,
# which makes one cluster 1 by definition]; the representation [hidden ReLU responses on the
# test inputs, without the readout, as the ENSD above, and with it, as Fig. 8a above: both
# are shown]; the multi-task students of Figs. 6f-g [trained as in Figs. 6d-e above, with
# that section's choices, from the same draws as the nested tasks' STL and PT+FT students,
# at its reduced $n$ and draws (`mtl_ns`, `mtl_draws`: the CPU budget)]; the weight of a
# multi-task unit in the spread and the alignment [the norm of its two readouts times
# $\|w_h\|$, its weight in the $\ell_{1,2}$ norm (Eq. 32), and its main readout alone:
# both are shown].

# %%
def mean_pm(x):
    """Per n, the mean over the draws (last axis) and, with several draws, its standard error."""
    m, se = stats.mean_se(x, axis=-1, single=0.0)
    return " ".join(f"{a:.3g}" + (f"+-{b:.2g}" if x.shape[-1] > 1 else "") for a, b in zip(m, se))


NESTED_SCALES = FEATURES.rescale_factors
t0 = time.perf_counter()
with warnings.catch_warnings():
    warnings.simplefilter("ignore", tk.ConvergenceWarning)   # counted and printed below
    NESTED = experiments.ptft_relu.run_nested_rescaling(FIG1C, NESTED_SCALES,
                                                        magnitude=FEATURES.nested_magnitude)
NSTAT = experiments.ptft_relu.nested_statistics(NESTED)
print(f"{time.perf_counter() - t0:.0f} s; factors s = {list(NESTED_SCALES)}, main readout "
      f"{FEATURES.nested_magnitude}, n = {NS}, {DRAWS} draw(s), at most {STEPS} steps")
t0 = time.perf_counter()
with warnings.catch_warnings():
    warnings.simplefilter("ignore", tk.ConvergenceWarning)   # counted and printed below
    NESTED_MTL = experiments.ptft_relu.run_nested_mtl(FIG1C, FEATURES,
                                                      magnitude=FEATURES.nested_magnitude)
NMSTAT = experiments.ptft_relu.nested_mtl_statistics(NESTED_MTL)
NM_NS = [int(n) for n in NESTED_MTL.ns]
assert set(NM_NS) <= set(NS) and FEATURES.mtl_draws <= DRAWS      # MTL's draws are the first
print(f"MTL: {time.perf_counter() - t0:.0f} s; n = {NM_NS}, the first {FEATURES.mtl_draws} "
      f"draw(s), at most {NESTED_MTL.steps.max()} steps taken")
print(f"pretraining converged in {int(NESTED.pre_converged.sum())} of {DRAWS} draws; "
      f"PR after pretraining {NSTAT.pr_pre.mean():.2f} (hidden responses), "
      f"{NSTAT.pr_pre_readout.mean():.2f} (readout-weighted)")
for t, task in enumerate(NESTED.tasks):
    for k, method in enumerate(NESTED.methods):
        line = [f"{task:8s} {method:12s} converged {int(NESTED.converged[t, k].sum()):2d}/"
                f"{NESTED.converged[t, k].size}"]
        for name, value in (("error", NESTED.error), ("spread", NSTAT.spread),
                            ("alignment", NSTAT.alignment), ("PR", NSTAT.pr),
                            ("PR (readout-weighted)", NSTAT.pr_readout)):
            line.append(f"{name} " + mean_pm(value[t, k]))
        if k > 0:
            line.append("ENSD " + mean_pm(NSTAT.ensd[t, k - 1]))
            line.append("ENSD (readout-weighted) " + mean_pm(NSTAT.ensd_readout[t, k - 1]))
        print("; ".join(line))
for t, task in enumerate(NESTED_MTL.tasks):
    line = [f"{task:8s} {'MTL':12s} converged {int(NESTED_MTL.converged[t].sum()):2d}/"
            f"{NESTED_MTL.converged[t].size}", "error " + mean_pm(NESTED_MTL.error[t])]
    for name, value in (("spread", NMSTAT.spread), ("spread (main readout)", NMSTAT.spread_main),
                        ("alignment", NMSTAT.alignment),
                        ("alignment (main readout)", NMSTAT.alignment_main)):
        line.append(f"{name} " + mean_pm(value[t]))
    print("; ".join(line) + f" (n = {NM_NS})")
fig = figures.paper003_004.nested_rescaling_figure(NESTED, NSTAT, NESTED_MTL, NMSTAT)
provenance.record(fig, "p004-fig6fg-8bc-nested", seeds=SEED,
                  params=dict(scales=list(NESTED_SCALES), magnitude=FEATURES.nested_magnitude,
                              ns=NS, d=D_IN, width=WIDTH, draws=DRAWS, n_aux=N_AUX,
                              alpha=ALPHA, gamma=FIG1C.gamma, max_steps=STEPS,
                              mtl_ns=NM_NS, mtl_draws=FEATURES.mtl_draws),
                  caption="paper 004 Figs. 6f-g, 8b-c (reduced): rescaled PT+FT and MTL on "
                          "one-feature main tasks, nested and disjoint")

# %% [markdown]
# *Figs. 6f-g and 8b-c of paper 004, reduced.* Against $n$, mean and standard error over the
# draws, one colour per method (grey: STL; PT+FT from the pretrained first layer times
# $s$), the nested task solid and the disjoint task dashed: normalised test error; the
# one-cluster spread of the readout-weighted unit directions (Fig. 6f's "inertia with
# $k = 1$"); the cosine between their weighted mean and the main teacher's unit (Fig. 6g's
# alignment score with one cluster); the participation ratio after training, nested task,
# of the hidden responses and of the readout-weighted ones (Fig. 8b; black line: after
# pretraining) with crosses for $\mathrm{ENSD}(X_{\rm PT}, X_{\rm FT})$ (Fig. 8c). Diamonds
# on the first three panels: the multi-task students at their reduced $n$ and draws, each
# unit weighted by the norm of its two readouts (black) or by its main readout (brown). Open
# markers: some draw stopped at its step cap. Sizes of Fig. 1c ($d = 12$, width 24, $n\le64$), not the paper's.

# %%
# Sanity of the statistics (any scale): spread in [0, 1], |alignment| <= 1, PR between 1 and
# the width, and ENSD <= sqrt(PR_pre PR_ft) (the CKA identity).
assert np.all((NSTAT.spread >= 0) & (NSTAT.spread <= 1)) and np.all(np.abs(NSTAT.alignment) <= 1)
for pr, pr_pre, shared in ((NSTAT.pr, NSTAT.pr_pre, NSTAT.ensd),
                           (NSTAT.pr_readout, NSTAT.pr_pre_readout, NSTAT.ensd_readout)):
    assert np.all((pr >= 1 - 1e-9) & (pr <= WIDTH)), pr
    assert np.all(shared <= np.sqrt(pr_pre * pr[:, 1:]) * (1 + 1e-9))

# %%
# The comparisons the text below makes, per n: the paired difference over the draws in which
# every run involved reached its tolerance (same pretrained network, samples and test
# inputs), its standard error, and whether it is significant with a Bonferroni t critical
# value over all of them (family-wise level 1 %). Runs at s = 10, mostly stopped at the step
# cap, enter none of them.
iM = {m: k for k, m in enumerate(NESTED.methods)}
s01, s1, STL_ = iM["PT+FT s=0.1"], iM["PT+FT s=1"], iM["STL"]
C = NESTED.converged
lg = np.log10(NESTED.error)
CLAIMS = {  # name: (per-draw difference (n, draws), runs that must have converged, expected sign)
    "Fig. 6g, s = 1: alignment nested - disjoint":
        (NSTAT.alignment[0, s1] - NSTAT.alignment[1, s1], C[0, s1] & C[1, s1], +1),
    "Fig. 6g: that benefit at s = 1 minus at s = 0.1":
        ((NSTAT.alignment[0, s1] - NSTAT.alignment[1, s1])
         - (NSTAT.alignment[0, s01] - NSTAT.alignment[1, s01]),
         C[0, s1] & C[1, s1] & C[0, s01] & C[1, s01], +1),
    "Fig. 8b, s = 0.1: PR after - before fine-tuning (hidden responses), nested":
        (NSTAT.pr[0, s01] - NSTAT.pr_pre, C[0, s01], -1),
    "Fig. 8b, s = 1: PR after - before fine-tuning (hidden responses), nested":
        (NSTAT.pr[0, s1] - NSTAT.pr_pre, C[0, s1], -1),
    "nested: log10 error, s = 1 over s = 0.1": (lg[0, s1] - lg[0, s01], C[0, s1] & C[0, s01], -1),
    "nested: log10 error, s = 1 over STL": (lg[0, s1] - lg[0, STL_], C[0, s1] & C[0, STL_], -1),
    "disjoint: log10 error, s = 1 over STL": (lg[1, s1] - lg[1, STL_], C[1, s1] & C[1, STL_], +1),
}
paired_verdicts(CLAIMS, NS)

# MTL beside PT+FT at s = 1 on the same draws (the first mtl_draws, at n in NM_NS). Paper 004,
# App. E.2.3: "multi-task networks cannot exhibit such a bias in their internal
# representation as they still need to maintain the features needed for the [other] task":
# on the nested task MTL's spread should stay above that of PT+FT at s = 1. Both weightings
# of an MTL unit; a family of its own (Bonferroni over these comparisons).
rows = [NS.index(n) for n in NM_NS]
near = lambda x: x[..., rows, :FEATURES.mtl_draws]                 # noqa: E731
CM = NESTED_MTL.converged
MTL_CLAIMS = {
    "Fig. 6f, nested: spread MTL - PT+FT s=1":
        (NMSTAT.spread[0] - near(NSTAT.spread[0, s1]), CM[0] & near(C[0, s1]), +1),
    "Fig. 6f, nested: spread MTL (main readout) - PT+FT s=1":
        (NMSTAT.spread_main[0] - near(NSTAT.spread[0, s1]), CM[0] & near(C[0, s1]), +1),
    "Fig. 6g, MTL: alignment nested - disjoint":
        (NMSTAT.alignment[0] - NMSTAT.alignment[1], CM[0] & CM[1], +1),
    "Fig. 6g, MTL (main readout): alignment nested - disjoint":
        (NMSTAT.alignment_main[0] - NMSTAT.alignment_main[1], CM[0] & CM[1], +1),
}
paired_verdicts(MTL_CLAIMS, NM_NS)

# %% [markdown]
# **Result** (`paper` preset: the sizes of Fig. 1c, $d = 12$, width 24, 1024 auxiliary
# samples, $n = 8$ to 64, 8 draws; this build's numbers are printed above). Pretraining
# reached its tolerance in every draw; its hidden representation has PR 6.0 (the six teacher
# units; 5.2 readout-weighted). STL and PT+FT at $s = 0.1$ and 1 reached the tolerance in
# every run but one ($s = 0.1$, nested, $n = 32$); at $s = 10$ most runs stopped at the
# 50000-step cap (nested: 6, 5, 3 and 1 of 8 converged at $n$ = 8 to 64; disjoint: 7, 5, 0,
# 0), so nothing below rests on $s = 10$ beyond a description.
#
# - *Fig. 6g, reproduced in direction.* At $s = 1$ the cluster is better aligned with the
#   main unit when that unit is an auxiliary one: 0.88 against 0.26 at $n = 8$ (paired
#   difference $+0.62\pm0.06$), the gap closing as $n$ grows ($+0.010\pm0.002$ at
#   $n = 64$, where both reach 0.99 to 1.0); at $s = 0.1$ the difference is gone (at most
#   0.03 either way), as App. E.2.3 says ("mostly lost"). The same sign at every $n$ (4.1 to
#   10.8 standard errors), significant at the section's Bonferroni level at $n = 8$.
# - *Fig. 6f, in part.* At $s = 1$ the fine-tuned network approaches one feature as $n$
#   grows (spread 0.51, 0.22, 0.09, 0.08), lower than at $s = 10$ from $n = 16$ on (0.33,
#   0.30, 0.24, at the cap) but higher at $n = 8$ (0.40). At $s = 0.1$ and for STL the
#   spread is about the same (0.22 to 0.28 at $n\le16$, 0.03 to 0.14 at $n\ge32$), lower
#   than at $s = 1$ at $n = 8$ and 64: in this reading the one-feature solution is not
#   specific to $s = 1$.
# - *Fig. 8b.* With the hidden responses the PR falls during fine-tuning at $s = 0.1$ (from
#   6.0 to 1.1 to 1.8, significant at every $n$) and at $s = 1$ by 2 to 4 % (to 5.75 to 5.9;
#   $-0.12\pm0.03$ at $n = 8$ to $-0.26\pm0.03$ at $n = 64$, significant at $n = 32$, 64),
#   and not at $s = 10$ (6.0, at the cap): the paper's ordering, but a small fall at
#   $s = 1$, where the five unused pretrained units keep their first-layer weights (their
#   readouts stay near $\gamma$) and so stay in the representation. With the readout
#   weighting (Fig. 8a's reading) the PR falls from 5.2 to about 1.0 to 1.4 at every factor,
#   $s = 10$ included (1.01 to 1.04): the lazy networks' output uses one cluster too. Which
#   representation the paper means decides whether its statement on $s = 10$ holds here.
# - *Fig. 8c.* $\mathrm{ENSD}(X_{\rm PT}, X_{\rm FT})$ is within 2 % of
#   $\mathrm{PR}(X_{\rm FT})$ at $s = 1$ (5.79 against 5.89 at $n = 8$, equal to three
#   digits at $n = 64$) and at $s = 10$; at $s = 0.1$ it comes within 3 % only at $n = 64$
#   (1.06 against 1.09; 0.88 against 1.65 at $n = 8$).
# - *Sample efficiency* (the main text's Fig. 2e, which App. E.2.3 cites; not in our copy).
#   On the nested task $s = 1$ learns with fewer samples than $s = 0.1$ and than STL at every
#   $n$ (paired $\log_{10}$ error ratio against $s = 0.1$: $-0.42\pm0.04$ at $n = 8$ to
#   $-1.56\pm0.06$ at $n = 64$, about the same against STL; significant at every $n$),
#   while $s = 0.1$ stays within 0.11 of STL; on the disjoint task $s = 1$ pays for its bias
#   to reuse ($+0.25\pm0.04$ to $+1.3\pm0.3$ against STL, significant at $n = 8$, 16). The
#   lazy $s = 10$ is the best on the nested task at $n\le32$ (error 0.012 at $n = 8$
#   against 0.32 at $s = 1$: its target is a pretrained feature, which training the readout
#   suffices to use) and the worst on the disjoint one (6.3 down to 0.88), both at the cap.
#
# - *MTL (Figs. 6f-g).* The multi-task students ($n = 8$ and 64, the first 4 draws; every
#   run reached its tolerance, in 24,000 to 76,000 steps) keep the six auxiliary features,
#   as App. E.2.3 says they must ("they still need to maintain the features needed for the
#   [other] task"). Weighted by the norm of their two readouts, their spread is 0.83 to
#   0.86 on both tasks at both $n$ (0.858 on the disjoint task at $n = 64$, the others
#   0.830 to 0.835), near the value of six equally weighted orthogonal directions
#   ($1 - 1/6 = 0.833$). On the nested task it lies above that of PT+FT at $s = 1$ on the same
#   draws: $+0.36\pm0.08$ at $n = 8$ and $+0.75\pm0.006$ at $n = 64$, significant at
#   $n = 64$. Weighted by their main readout alone, the spread falls with $n$ (0.73, 0.36)
#   and stays above PT+FT's at $s = 1$ ($+0.25\pm0.10$, $+0.28\pm0.05$), but with 4 draws
#   not significantly at this section's Bonferroni level. The cluster is better aligned on
#   the nested than on the disjoint task under both weightings ($+0.42\pm0.02$ and
#   $+0.16\pm0.002$ with the readout norm, significant at both $n$; $+0.57\pm0.09$ and
#   $+0.03\pm0.005$ with the main readout, not significant). Their main-task error on the nested task is
#   about that of PT+FT at $s = 1$ (0.33 and $4\times10^{-5}$ against 0.38 and
#   $2\times10^{-5}$) and below STL's (1.0 and $9\times10^{-4}$); on the disjoint task it is
#   above STL's (1.5 against 0.78 at $n = 8$): a description, not tested. The cell took
#   418 s in a run of this whole notebook at that scale (1,275 s in a script beside that
#   run) with the torch loop, and 40 s on the compiled kernel (2026-11-29): 16 networks, each
#   learning the auxiliary task from the small initialisation.
#
# **Verdict.** Reduced sizes (those of Fig. 1c; the paper does not state its own for these
# figures), MTL at 2 of the 4 $n$ and 4 of the 8 draws: not a finding either way.
# Reproduced in direction: Fig. 6g (nested over disjoint alignment at $s = 1$, lost at
# $s = 0.1$), Fig. 8b with the hidden responses (a fall at $s = 0.1$ and 1, none at
# $s = 10$), Fig. 8c at $s = 1$, the nested-task benefit of $s = 1$ over $s = 0.1$, and
# MTL's lack of the nested sparsity (Fig. 6f: its spread stays at that of the six auxiliary
# features, above PT+FT's at $s = 1$). Not reproduced: a one-feature solution specific to
# $s = 1$ (Fig. 6f: $s = 0.1$ and STL are as sparse) and a large fall of the PR at $s = 1$
# (2 to 4 %); with the readout-weighted representation $s = 10$ falls as well, against the
# paper's statement. The $s = 10$ runs stop at the step cap; more steps, not afforded here,
# could move them.

# %%
# The claims of the text above, for the preset they are stated for (a data check, not a
# scale switch): the sign of every comparison at every n, and its significance where the
# text says so; Fig. 8c at s = 1; the PR at s = 10 in both readings; the MTL students.
if (FIG1C == experiments.ptft_relu.SAMPLE_EFFICIENCY["paper"]
        and FEATURES == experiments.ptft_relu.RELU_FEATURES["paper"]):
    for name, (diff, ok, sign) in CLAIMS.items():
        assert all(np.sign(VERDICT[name, n][0]) == sign for n in NS), name
    SIGNIFICANT_AT = {"Fig. 6g, s = 1: alignment nested - disjoint": [8],
                      "Fig. 6g: that benefit at s = 1 minus at s = 0.1": [8],
                      "Fig. 8b, s = 0.1: PR after - before fine-tuning (hidden responses), nested": NS,
                      "Fig. 8b, s = 1: PR after - before fine-tuning (hidden responses), nested": [32, 64],
                      "nested: log10 error, s = 1 over s = 0.1": NS,
                      "nested: log10 error, s = 1 over STL": NS,
                      "disjoint: log10 error, s = 1 over STL": [8, 16]}
    assert all(VERDICT[name, n][3] for name, ns_ in SIGNIFICANT_AT.items() for n in ns_), VERDICT
    s10 = iM["PT+FT s=10"]
    gap = np.abs(NSTAT.ensd[0, s1 - 1] - NSTAT.pr[0, s1]).mean(-1) / NSTAT.pr[0, s1].mean(-1)
    assert np.all(gap < 0.02), gap
    assert np.all(np.abs(NSTAT.pr[0, s10] - NSTAT.pr_pre).mean(-1) < 0.05)
    assert NSTAT.pr_pre_readout.mean() > 5 and np.all(NSTAT.pr_readout[0, s10].mean(-1) < 1.1)
    # MTL: every run converged; the sign of every comparison at every n, significance where
    # the text says so; the readout-norm spread at that of six equal features
    assert NESTED_MTL.converged.all()
    for name, (diff, ok, sign) in MTL_CLAIMS.items():
        assert all(np.sign(VERDICT[name, n][0]) == sign for n in NM_NS), name
    assert VERDICT["Fig. 6f, nested: spread MTL - PT+FT s=1", 64][3]
    assert all(VERDICT["Fig. 6g, MTL: alignment nested - disjoint", n][3] for n in NM_NS)
    assert np.all(np.abs(NMSTAT.spread.mean(-1) - 5 / 6) < 0.04), NMSTAT.spread
