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
# # Diagonal linear networks: the implicit penalties of PT+FT and multi-task learning
#
# This chapter checks the norm-minimisation biases derived in paper 004
# {cite:p}`ptft_diagonal_appendix` (see also {cite:p}`lippl2024inductive`) for diagonal
# linear networks $\beta_d = w^{(2)}_{+,d}w^{(1)}_{+,d} - w^{(2)}_{-,d}w^{(1)}_{-,d}$
# (Eqs. 6-7), building on {cite:p}`woodworth2020kernel`.
#
# **Theory.** Gradient flow on the squared loss from $w_\pm(0) = w_0$ converges (if it
# interpolates) to the minimiser of (Eqs. 22-23)
#
# $$\|\beta\|_Q = \sum_d c_d\, q\!\left(\frac{2\beta_d}{c_d}\right),\qquad
# c_d = (w^{(1)}_{0,d})^2 + (w^{(2)}_{0,d})^2,\qquad
# q(z) = 2 - \sqrt{4+z^2} + z\operatorname{arcsinh}(z/2),$$
#
# subject to $X\beta = y$. Single-task learning (STL) from scale $\alpha$ has
# $c_d = 2\alpha^2$ for every $d$: an $\ell_1$-like penalty. PT+FT fine-tunes from
# $w^{(1)}_{0,d} = \sqrt{|\beta^{\rm aux}_d|}$, $w^{(2)}_0 = \gamma$, so features used in
# pretraining ($c_d$ large) are cheap and $\ell_2$-like, new ones $\ell_1$-like. Multi-task
# learning (MTL) at minimum parameter norm minimises the $\ell_{1,2}$ norm
# $2\sum_d\|\vec\beta_d\|_2$ (Eqs. 26-30).
#
# **Simulation.** Gradient descent with a small relative step (so that it follows gradient
# flow) on sparse noiseless teachers, $x\sim\mathcal N(0, I_D)$; we compare every STL and
# PT+FT solution with the minimiser of Eq. 22 computed by a convex solver
# (`transferkit.models.diagonal.q_min_interpolant`), and measure generalisation
# $\|\hat\beta-\beta\|^2$ against the number of samples.

# %% tags=["hide-input"]
import dataclasses
import time
import warnings

import numpy as np

import transferkit as tk
from transferkit import experiments, figures, provenance, stats, theory

figures.plotting.use_style()
SCALE = tk.scale()
tk.models.device.use_threads()  # TRANSFERKIT_THREADS, default 1 (transferkit.config.threads)
print(f"TRANSFERKIT_SCALE = {SCALE}")

# %% [markdown]
# ## Parameters
#
# The paper states 40 teacher features per task, 1024 auxiliary samples and up to 1024
# main-task samples (App. D, the caption of Fig. 5, App. E.1); our copy states no input
# dimension (the caption of its Fig. 1 is missing), and where this page says "the paper's
# size" it means $D = 1000$, issue 18's reading, an assumption. On a CPU we use a smaller version of the same
# design (printed below): $k$ features per task out of $D$, an auxiliary task with
# $n_{\rm aux} = 2D$ samples (so pretraining recovers $\beta^{\rm aux}$ exactly), teacher
# coefficients $\pm1$, and the main task's support either **identical** to the auxiliary
# one ($k/k$ overlap, with independent signs) or **disjoint** ($0/k$). The initialisation
# is $\alpha = \gamma = 0.1$ (the paper says only "small initialization"; from smaller $\alpha$ gradient
# descent needs many more steps to converge, and $c = 2\alpha^2 = 0.02$ is already far in
# the $\ell_1$-like regime for coefficients of size 1). Training stops at a loss of
# $10^{-10}$ times the mean squared target ($10^{-8}$ for MTL), with relative step 0.01.
# The last two sections run at $D = 1000$ (the paper's size as we read it) and 40 features: the MTL comparison
# with the minimum-$\ell_{1,2}$ interpolant, and the generalisation, Fig. 5a and Figs. 5c-f
# of the sections below.

# %%
PRESET = experiments.diagonal_networks.DIAGONAL[SCALE]  # sources: its docstring and the API reference
D, K, DRAWS, NS = PRESET.D, PRESET.k, PRESET.draws, list(PRESET.ns)
ALPHA, GAMMA = PRESET.alpha, PRESET.gamma
N_AUX, REL_STEP, LOSS_TOL, SEED = PRESET.n_aux, PRESET.rel_step, PRESET.loss_tol, PRESET.seed
OVERLAPS = dict(PRESET.overlaps)
PARAMS = (f"D = {D}, k = {K}, n_aux = {N_AUX}, alpha = gamma = {ALPHA}, {DRAWS} draws, "
          f"relative step {REL_STEP}")
print(PARAMS)

# %% [markdown]
# ## Simulation

# %%
t0 = time.perf_counter()
RUNS = {}
for name, ov in OVERLAPS.items():
    RUNS[name] = experiments.diagonal_networks.run_tasks(D, K, ov, NS, draws=DRAWS, n_aux=N_AUX, alpha=ALPHA,
                                    gamma=GAMMA, seed=SEED, rel_step=REL_STEP,
                                    loss_tol=LOSS_TOL, mtl_loss_tol=PRESET.mtl_loss_tol,
                                    max_steps=PRESET.max_steps)
print(f"wall time {time.perf_counter() - t0:.0f} s")
for name, r in RUNS.items():
    print(name, {m: f"{run.converged.mean():.0%} converged, max steps "
                    f"{run.steps.max()}" for m, run in r.methods.items()})

# %% [markdown]
# *Convergence.* Every pretraining and every STL and PT+FT network reaches its tolerance
# (asserted below). A few MTL networks may not: in the `paper` run behind the book three
# stopped at the budget of 100,000 steps (2 of 48 with overlapping supports, 1 of 48
# disjoint; their losses are in the warnings above). They are kept in the figures and
# numbers below that use MTL; Fig. 5a prints its MTL ratio both over all runs and over the
# runs at their tolerance.

# %% [markdown]
# ## Gradient descent reaches the minimiser of Eq. 22
#
# For every STL and PT+FT network we measure the relative distance
# $\|\hat\beta_{\rm GD} - \beta_Q\|/\|\beta_Q\|$ to the convex minimiser $\beta_Q$ of Eq. 22
# at the same initialisation (solved to a relative residual $\le 10^{-12}$). Gradient
# descent differs from gradient flow by a first-order error in the step
# (`tests/test_diagonal.py` checks that the distance halves with the step and that the
# Richardson extrapolation to zero step lands on $\beta_Q$); we require the distance to be
# below the relative step itself, i.e. 1 %.

# %%
DIST = {}
for name, r in RUNS.items():
    for m, qmin in r.qmin.items():
        q = qmin.beta
        d = np.linalg.norm(r.methods[m].beta - q, axis=-1) / np.maximum(np.linalg.norm(q, axis=-1), 1e-300)
        DIST[name, m] = d
        print(f"{name:12s} {m:5s}: largest distance to the Eq. 22 minimiser {d.max():.2e}; "
              f"solver residual {qmin.residual.max():.1e}")

# %%
# The checks this chapter asserts (`make test` runs them): every STL / PT+FT network converged and sits within the
# discretisation tolerance of the minimiser of Eq. 22.
for name, r in RUNS.items():
    assert r.pre_converged.all()
    for m, qmin in r.qmin.items():
        assert r.methods[m].converged.all(), (name, m)
        assert DIST[name, m].max() < REL_STEP, (name, m, DIST[name, m].max())
        assert qmin.residual.max() < 1e-10

# %% [markdown]
# ## Generalisation against the number of samples

# %%
fig = figures.paper003_004.diagonal_generalisation_figure(RUNS)
provenance.record(fig, "p004-generalisation", seeds=SEED,
                  params=dict(D=D, k=K, draws=DRAWS, ns=NS, alpha=ALPHA, gamma=GAMMA, n_aux=N_AUX,
                              rel_step=REL_STEP, loss_tol=LOSS_TOL),
                  caption="paper 004: diagonal networks, STL vs PT+FT vs MTL against n")

# %% [markdown]
# *Generalisation.* Test error $\|\hat\beta-\beta\|^2$ (mean and standard error over the
# draws) of STL, PT+FT and MTL diagonal networks trained by gradient descent (markers),
# and of the minimiser of Eq. 22 at the STL and PT+FT initialisations (lines, the theory;
# same samples). Parameters as printed above; the paper's Fig. 1a uses 40 features and
# up to 1024 samples, at a $D$ our copy does not state (the last section runs $D = 1000$). With
# overlapping supports PT+FT and MTL need fewer samples than STL; with disjoint supports
# pretraining does not help.

# %% [markdown]
# ## Fig. 5a: the Q and $\ell_{1,2}$ norms of the learned solutions
#
# For overlapping features we compare the penalty each method is biased towards with its
# value at the ground truth: the PT+FT penalty $\|\beta\|_Q$ (Eq. 22 at the PT+FT
# initialisation) and the $\ell_{1,2}$ norm of the pair (auxiliary, main) of weight vectors
# (Eq. 30; for STL and PT+FT the auxiliary weights are the pretrained ones). The minimiser
# of Eq. 22 can never exceed the ground truth's penalty (the ground truth interpolates):
# this is checked for the PT+FT networks up to the 1 % discretisation tolerance.

# %%
def penalty_ratios(r):
    """Fig. 5a's ratios for one run (a TasksResult), per method, shape (len(ns), draws): the
    PT+FT penalty (Eq. 22 at the PT+FT initialisation) and the l1,2 norm (Eq. 30; STL and
    PT+FT paired with the pretrained auxiliary weights) of the learned main-task weights,
    each over the ground truth's."""
    w1_ft = np.sqrt(np.abs(r.beta_pre))  # (draws, D)
    q_true = theory.penalties.diagonal_ptft_penalty(r.beta_main, w1_ft, r.gamma)  # (draws,)
    pre = r.beta_pre[None].repeat(len(r.ns), 0)
    aux_of = {"stl": pre, "ptft": pre, "mtl": r.mtl_aux}
    l12_true = theory.penalties.l12_norm(np.stack([r.beta_aux, r.beta_main], -2), axis=-2)
    q = {m: theory.penalties.diagonal_ptft_penalty(run.beta, w1_ft[None], r.gamma) / q_true
         for m, run in r.methods.items()}
    l12 = {m: theory.penalties.l12_norm(np.stack([aux_of[m], run.beta], -2), axis=-2) / l12_true
           for m, run in r.methods.items()}
    return q, l12


Q_RATIO, L12_RATIO = penalty_ratios(RUNS["overlapping"])
fig = figures.paper003_004.diagonal_norms_figure(RUNS["overlapping"].ns, Q_RATIO, L12_RATIO)
provenance.record(fig, "p004-fig5a", seeds=SEED,
                  params=dict(D=D, k=K, draws=DRAWS, ns=NS, alpha=ALPHA, gamma=GAMMA),
                  caption="paper 004 Fig. 5a (reduced): Q and l1,2 norms of learned solutions")
print("Q ratio, PT+FT:", np.round(Q_RATIO["ptft"].mean(1), 3))
MTL_CONV = RUNS["overlapping"].methods["mtl"].converged          # (len(ns), draws)
print("l12 ratio, MTL:", np.round(L12_RATIO["mtl"].mean(1), 3), "(all runs); converged runs only:",
      np.round(stats.mean_se(L12_RATIO["mtl"], axis=1, where=MTL_CONV)[0], 3),
      f"({MTL_CONV.sum()} of {MTL_CONV.size} MTL runs at their tolerance)")

# %%
# The minimiser of Eq. 22 never exceeds the ground truth's penalty: PT+FT networks
# reach at most the ground truth's Q (up to the discretisation tolerance).
assert np.all(Q_RATIO["ptft"] <= 1 + REL_STEP), Q_RATIO["ptft"].max()

# %% [markdown]
# *Fig. 5a (reduced).* Penalties of the learned main-task solutions relative to the ground
# truth's, mean over draws, overlapping supports ($k/k$), parameters as above. PT+FT finds
# solutions with a lower PT+FT penalty than the ground truth when samples are few and
# converges to it as $n$ grows (as in the paper; checked above). **Difference from the
# paper:** in this reduced run the $\ell_{1,2}$ norm of the MTL solutions is *above* the
# ground truth's (ratios printed above; at paper scale 1.04-1.13 over all runs, and over the 46 of 48
# runs at their tolerance the same but at $n = 5$, 1.03 instead of 1.04), whereas the paper's
# Fig. 5a shows it below at small $n$. Eq. 30 is the bias of the *minimum parameter norm*
# interpolant, not of gradient descent from a finite $\alpha$; the next section measures
# which of the two the MTL networks are near. The paper shows these panels for 40
# features (its $D$ is not in our copy); the last section draws them at $D = 1000$.

# %% [markdown]
# ## MTL against the minimum-$\ell_{1,2}$ interpolant
#
# Two explanations fit an MTL $\ell_{1,2}$ norm above the ground truth's: (i) gradient
# descent from $\alpha = 0.1$ is not yet at the small-initialisation limit, or (ii) for a
# first layer shared by two tasks that limit is not the minimum-$\ell_{1,2}$ interpolant
# at all (Eq. 30 is a statement about minimum *parameter norm*, which small initialisation
# reaches for one task but need not for several). To tell them apart we compute the
# minimum-$\ell_{1,2}$ interpolant of the same samples with a convex solver (CVXPY with
# Clarabel: `models.diagonal.min_l12_interpolant`, a second-order cone program; its
# optimality is certified by duality, whatever the solver's accuracy: the solver's
# multipliers, scaled into the dual's feasible set, bound the minimum from below, and the
# largest relative gap between that bound and the interpolant's norm is printed) and train
# the MTL network again from smaller $\alpha$ on the same samples (overlapping supports;
# every other setting as above; `experiments.diagonal_networks.mtl_small_init`). Under (i)
# the networks approach the interpolant as $\alpha$ shrinks; under (ii) the gap stays.

# %%
t0 = time.perf_counter()
MIN12 = experiments.diagonal_networks.mtl_small_init(
    D, K, OVERLAPS["overlapping"], NS, draws=DRAWS, n_aux=N_AUX, alphas=PRESET.mtl_alphas,
    seed=SEED, rel_step=REL_STEP, mtl_loss_tol=PRESET.mtl_loss_tol,
    max_steps=PRESET.mtl_max_steps)
print(f"wall time {time.perf_counter() - t0:.0f} s")
ratio12 = MIN12.l12_mtl / MIN12.l12_min
conv12 = MIN12.converged


def on_conv(v):
    """Mean over the converged draws (nan where none converged)."""
    return np.nanmean(np.where(conv12, v, np.nan), -1)


print("minimum-l1,2 interpolant / ground truth, per n:",
      np.round((MIN12.l12_min / MIN12.l12_true).mean(1), 4))
print(f"  solver: largest relative residual {MIN12.l12_residual.max():.1e}, largest certified "
      f"optimality gap {MIN12.l12_gap.max():.1e} (dual bound)")
print("  alpha  converged  max steps   l1,2(MTL) / l1,2(min), per n: converged runs | all runs")
for i, a in enumerate(MIN12.alphas):
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)      # a mean over no converged run is nan
        print(f"{a:7g} {conv12[i].mean():9.0%} {MIN12.steps[i].max():10d}   "
              f"{np.round(on_conv(ratio12)[i], 4)} | {np.round(ratio12[i].mean(-1), 4)}")
with warnings.catch_warnings():
    warnings.simplefilter("ignore", RuntimeWarning)
    dist_conv = on_conv(MIN12.distance)
print("relative distance to the interpolant at the largest n, per alpha: converged runs",
      np.round(dist_conv[:, -1], 4), "| all runs", np.round(MIN12.distance[:, -1].mean(-1), 4))
fig = figures.paper003_004.diagonal_l12_figure(MIN12.ns, MIN12.alphas, ratio12, MIN12.distance,
                                               converged=conv12)
provenance.record(fig, "p004-mtl-l12", seeds=SEED,
                  params=dict(D=D, k=K, draws=DRAWS, ns=NS, alphas=PRESET.mtl_alphas,
                              n_aux=N_AUX, rel_step=REL_STEP, loss_tol=PRESET.mtl_loss_tol,
                              max_steps=PRESET.mtl_max_steps),
                  caption="MTL diagonal networks against the minimum-l1,2 interpolant as alpha shrinks")

# %%
# The solver's interpolant interpolates, is the minimum to a certified 1e-6 (far below
# every ratio printed) and, the ground truth being an interpolant, its
# l1,2 norm is at most the ground truth's; no converged network (an interpolant up to its
# loss tolerance) has a smaller l1,2 norm than it.  The claim of the section rests on
# converged runs: at every n, the mean l1,2 ratio over converged runs falls as alpha shrinks
# (alphas without a converged run at that n are skipped), and so does the distance at the
# largest n.
assert MIN12.l12_residual.max() < 1e-7 and MIN12.l12_gap.max() < 1e-6
assert (MIN12.l12_min <= MIN12.l12_true * (1 + 1e-7)).all()
assert (MIN12.l12_mtl[conv12] >= MIN12.l12_min[None].repeat(len(MIN12.alphas), 0)[conv12] * (1 - 1e-7)).all()
assert conv12[0].all(), "the largest alpha must converge everywhere"
with warnings.catch_warnings():
    warnings.simplefilter("ignore", RuntimeWarning)
    r_conv = on_conv(ratio12)
for j in range(len(MIN12.ns)):
    seen = r_conv[:, j][~np.isnan(r_conv[:, j])]
    assert (np.diff(seen) < 0).all(), (MIN12.ns[j], r_conv[:, j])
seen = dist_conv[:, -1][~np.isnan(dist_conv[:, -1])]
assert len(seen) == len(MIN12.alphas) and (np.diff(seen) < 0).all(), dist_conv[:, -1]
# The claim of the text below for the preset it is stated for (a data check, not a scale
# switch): every run converged, and where the interpolant lies below the ground truth the
# extrapolated alpha -> 0 excess (L12Result.excess_limit) is above zero by more than the
# Bonferroni t critical value times its standard error over those (n, draw) runs.
if PRESET == experiments.diagonal_networks.DIAGONAL["paper"]:
    assert conv12.all()
    small12 = MIN12.l12_min < MIN12.l12_true * (1 - 1e-6)
    lim12 = MIN12.excess_limit[small12]
    se12 = lim12.std(ddof=1) / np.sqrt(lim12.size)
    assert lim12.mean() > stats.critical_value(1, lim12.size) * se12, (lim12.mean(), se12)

# %% [markdown]
# *MTL against the minimum-$\ell_{1,2}$ interpolant.* Left: $\ell_{1,2}$ norm of the MTL
# networks over that of the interpolant; right: their relative distance to it; mean and
# standard error over the converged draws (solid; a dashed line gives the mean over all
# draws for an $\alpha$ with runs stopped at the step budget), one line per $\alpha$,
# parameters as printed.
#
# **Result.** At the chapter's paper-scale preset ($D = 50$, $k = 5$, 8 draws, overlapping
# supports, $\alpha = 0.1, 0.03, 0.01$, at most $4\times10^5$ steps; this build's numbers are
# printed above) the networks are trained by `models.diagonal.train_diagonal_gram` with the
# grown step under the chapter's 1 % relative cap (see the next section; on this batch at
# $\alpha = 0.1$ it lands within $3.5\times10^{-4}$ (relative) of the fixed rule's
# solutions). Every one of the 144 runs converged, in at most 2,548, 10,609 and 21,510
# accepted steps at $\alpha = 0.1, 0.03, 0.01$; the section took 4 s on one core (the
# compiled kernel of `train_diagonal_gram`, each network to its own stop; 79-90 s with its
# batched torch loop, same printed numbers). The minimum-$\ell_{1,2}$ interpolant is the ground
# truth for $n \ge 20$ and lies below it for fewer samples (ratio about 0.93, 0.97, 1.00 at
# $n = 5, 10, 15$). The MTL networks' $\ell_{1,2}$ norm exceeds the interpolant's by 8-13 %
# at $\alpha = 0.1$, 1.6-6.5 % at $\alpha = 0.03$ and 0.4-4.5 % at $\alpha = 0.01$ (mean
# over draws, per $n$), and their distance to it at $n = 30$ falls from 0.065 to 0.014 to
# 0.003. Where the interpolant is the ground truth
# ($n \ge 20$) the networks approach it as $\alpha$ shrinks: explanation (i). Where it lies
# below the ground truth ($n = 5, 10$ and one draw at $n = 15$) the excess still falls at
# $\alpha = 0.01$, but each step down in $\alpha$ removes only about a third of what the
# previous one did, and the distance at $n = 5$ barely moves (0.33, 0.28, 0.28);
# extrapolated to $\alpha \to 0$ (Aitken's $\Delta^2$ on the three $\alpha$,
# `L12Result.excess_limit`; exact for a geometric approach on scales in a constant ratio,
# which 0.1, 0.03, 0.01 are only approximately) it is $2.7 \pm 0.5$ % over those 16 runs,
# 5.4 standard errors above zero (3.4 and 1.9 % at $n = 5, 10$, mean over all eight
# draws): a limit above the minimum, explanation (ii). The extrapolation from three scales,
# the largest of them far from the limit, is the weak point; the next section runs the same comparison at $D = 1000$, $k = 40$,
# down to $\alpha = 0.001$ and on disjoint supports as well.

# %% [markdown]
# ## MTL against the minimum-$\ell_{1,2}$ interpolant at $D = 1000$
#
# The same comparison at the paper's size as we read it: $D = 1000$ inputs (not stated in
# our copy of the paper), $k = 40$ features per task,
# supports identical (40/40, independent signs) or disjoint (0/40), initialisation scales
# $\alpha = 0.1, 0.03, 0.01, 0.003$ and, one step further, 0.001
# (`experiments.diagonal_networks.mtl_small_init_large`;
# parameters printed below, every value with its source in the API reference of
# `DIAGONAL_L12_LARGE`). **Reductions** (each beside its reason): $n_{\rm aux} = 2D = 2000$
# instead of the paper's 1024 -- at $n_{\rm aux} = 1024\approx D$ the auxiliary least squares
# is ill-conditioned ($\lambda_{\min}(X^\top X/n) = 1.3\times10^{-4}$) and gradient descent
# from $\alpha = 0.1$ still has a relative loss of $3.5\times10^{-5}$ after $6\times10^4$
# steps; main-task samples $n$ up to 256 instead of 1024 -- at $n\ge D$ the main task has one
# interpolant, the teacher, and leaves nothing to the implicit bias; 2 draws (time). The
# full protocol is the preset `DIAGONAL_L12_FULL`, for a Dask cluster.
#
# **How it fits in the time.** A diagonal network costs $O(D)$ per sample and step. The
# trainer here (`models.diagonal.train_diagonal_gram`) writes the loss with the sample
# moments $X^\top X/n$ and $X^\top y/n$ (or $X$ itself where $2n < D$): the 25 networks of
# one draw (every $\alpha$ and $n$) share the auxiliary moments, those of one $n$ share the
# main-task ones, and each step is one matrix-matrix product per sample set, at most
# $O(D^2)$ whatever $n$. It takes the largest stable step under
# the chapter's relative cap of 1 % per step (accept when the loss does not rise and grow the
# step by 1.1, else halve it): the fixed curvature bound of the chapter's trainer uses
# $\lambda_{\max}(X^\top X/n)\approx D/n$ and throttles the step by that factor. On the
# chapter's $D = 50$ batch at $\alpha = 0.1$ this needs 2,548 steps instead of 148,492 and
# lands within $3.5\times10^{-4}$ (relative) of the fixed rule's solutions
# (`benchmarks/diagonal_speed.py`), far below the distances measured here. Converged networks
# leave the batch. One `transferkit.sweep` cell per draw and overlap holds all $\alpha$ (the
# vectorised axis), so the cache and Dask work per draw.

# %%
L12L = PRESET.l12_large
print(f"D = {L12L.D}, k = {L12L.k}, n_aux = {L12L.n_aux}, n = {list(L12L.ns)}, "
      f"alphas = {list(L12L.alphas)}, {L12L.draws} draws, overlaps {dict(L12L.overlaps)}, "
      f"relative step {L12L.rel_step}, loss tolerance {L12L.loss_tol:g}, "
      f"budget {L12L.max_steps} steps")
t0 = time.perf_counter()
LARGE = {name: experiments.diagonal_networks.mtl_small_init_large(
             L12L.D, L12L.k, ov, L12L.ns, draws=L12L.draws, n_aux=L12L.n_aux,
             alphas=L12L.alphas, seed=L12L.seed, rel_step=L12L.rel_step,
             loss_tol=L12L.loss_tol, max_steps=L12L.max_steps)
         for name, ov in L12L.overlaps}
print(f"wall time {time.perf_counter() - t0:.0f} s")


for name, res in LARGE.items():
    ex, conv = res.excess, res.converged
    print(f"\n{name}: minimum-l1,2 interpolant / ground truth, per n:",
          np.round((res.l12_min / res.l12_true).mean(-1), 4))
    print(f"  solver: largest relative residual {res.l12_residual.max():.1e}, largest "
          f"certified optimality gap {res.l12_gap.max():.1e} (dual bound)")
    print("  alpha  converged  max steps  largest rel. loss   l1,2 excess over the minimum, per n:"
          " converged runs | all runs")
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for i, a in enumerate(res.alphas):
            print(f"{a:7g} {conv[i].mean():9.0%} {res.steps[i].max():10d} {res.rel_loss[i].max():18.1e}"
                  f"   {np.round(np.nanmean(np.where(conv[i], ex[i], np.nan), -1), 4)}"
                  f" | {np.round(ex[i].mean(-1), 4)}")
    print("  relative distance to the interpolant, per alpha (rows) and n (columns), all runs:")
    print(np.round(res.distance.mean(-1), 4))
    print("  alpha -> 0 limit of the excess (Aitken, last three alphas), per n:",
          np.round(res.excess_limit.mean(-1), 4))
fig = figures.paper003_004.diagonal_l12_large_figure(LARGE)
provenance.record(fig, "p004-mtl-l12-d1000", seeds=L12L.seed,
                  params=dict(D=L12L.D, k=L12L.k, n_aux=L12L.n_aux, ns=list(L12L.ns),
                              alphas=list(L12L.alphas), draws=L12L.draws,
                              overlaps=dict(L12L.overlaps), rel_step=L12L.rel_step,
                              loss_tol=L12L.loss_tol, max_steps=L12L.max_steps),
                  caption="MTL diagonal networks at D = 1000 against the minimum-l1,2 "
                          "interpolant as alpha shrinks (n_aux = 2000, n <= 256, 2 draws)")

# %%
# The solver's interpolants interpolate, are the minimum to a certified 1e-6 (the smallest
# excess the text reads is 3e-4) and are never above the ground truth's l1,2 norm;
# no converged network has an l1,2 norm below the interpolant's by more than its loss
# tolerance allows (a relative residual sqrt(loss_tol) ~ 1e-4).
for name, res in LARGE.items():
    assert res.l12_residual.max() < 1e-7 and res.l12_gap.max() < 1e-6, name
    assert (res.l12_min <= res.l12_true * (1 + 1e-7)).all(), name
    assert (res.excess[res.converged] > -np.sqrt(L12L.loss_tol)).all(), name
# The claims of the text below, for the preset they are stated for (a data check, not a
# scale switch), on converged runs only (all of them here):
# (a) every step down in alpha lowers the excess, paired over (n, draw), beyond the
#     Bonferroni t critical value times its standard error;
# (b) where the interpolant lies below the ground truth (n too small to recover the teachers),
#     the extrapolated alpha -> 0 excess is above zero by more than the critical value times
#     its standard error over the (n, draw) pairs: the excess levels off, explanation (ii);
# (c) where the interpolant is the ground truth with overlapping supports, the extrapolated
#     excess is below 0.5 %, a tenth of (b)'s, and the networks reach the interpolant.
if L12L == experiments.diagonal_networks.DIAGONAL_L12_LARGE["paper"]:
    n_pairs = len(LARGE) * (len(L12L.alphas) - 1)
    for name, res in LARGE.items():
        assert res.converged.all(), name
        for i in range(len(res.alphas) - 1):
            d = (res.excess[i] - res.excess[i + 1]).ravel()
            se = d.std(ddof=1) / np.sqrt(d.size)
            assert d.mean() > stats.critical_value(n_pairs, d.size) * se, (name, i, d.mean(), se)
        small = res.l12_min < res.l12_true * (1 - 1e-6)
        lim = res.excess_limit[small]
        se = lim.std(ddof=1) / np.sqrt(lim.size)
        assert lim.mean() > stats.critical_value(len(LARGE), lim.size) * se, (name, lim.mean(), se)
    res = LARGE["overlapping"]
    rec = res.l12_min >= res.l12_true * (1 - 1e-6)
    assert rec.any() and res.excess_limit[rec].mean() < 0.005, res.excess_limit[rec]

# %% [markdown]
# *MTL against the minimum-$\ell_{1,2}$ interpolant at $D = 1000$.* One row per support
# overlap; panels and lines as in the previous figure (all runs converged, so there are no
# dashed lines); the sample-size axis is logarithmic. Parameters as printed; reductions from
# the paper as stated above.
#
# **Result** (the section's paper-scale preset: $D = 1000$, $k = 40$, $n_{\rm aux} = 2000$,
# $n = 16, \dots, 256$, 2 draws, $\alpha = 0.1, \dots, 0.001$; this build's numbers are
# printed above; the section took 199 s on one core of the idle machine with the lockstep
# engine of `train_diagonal_gram`, whose matrix products go through numpy's BLAS; 324 s on
# the same idle machine with torch's, 455 s in an earlier build beside another chapter,
# 793-862 s with its batched torch loop). Every network converged
# (relative loss $\le 10^{-8}$, at most about 47,200 steps: the grown step's counts move by a
# few in ten thousand with rounding, e.g. between those two engines or those two BLAS
# libraries, since it accepts a step whose loss is not above the current one and the two can
# agree to rounding; no other printed number moved, except the relative differences of the
# next section's check against this one, 5e-5 to 1e-4, far within the 0.01 it allows).
# The minimum-$\ell_{1,2}$ interpolant lies below the ground truth where the samples are too
# few to recover the teachers (ratio 0.78, 0.88, 0.93 at $n = 16, 32, 64$ with overlapping
# supports; 0.60 to 0.86 at $n = 16, \dots, 128$ with disjoint ones) and is the ground truth
# above. The networks' $\ell_{1,2}$ excess over it falls at every step down in $\alpha$, on
# both supports (mean over $n$ and draws: 22.2, 10.1, 5.8, 4.0, 3.3 % overlapping, 17.8, 8.9,
# 5.5, 4.0, 3.4 % disjoint; every step at least 6.5 standard errors of the paired
# difference), but each decrease is 0.3 to 0.5 times the previous one. *Where the
# interpolant is the teacher* (overlapping, $n = 128, 256$) the networks reach it: excess 1.0
# and 0.13 % at $\alpha = 0.001$, distance 0.098 and 0.002, extrapolated limit at most
# 0.3 %. *Where it lies below the teacher* the excess levels off: extrapolated to
# $\alpha\to0$ (Aitken's $\Delta^2$ on the last three $\alpha$, exact for a geometric
# approach; `L12Result.excess_limit`) it is 5.2, 5.7 and 3.1 % at $n = 16, 32, 64$
# (overlapping; mean over the six runs $4.7 \pm 0.5$ %, 8.9 standard errors above zero) and
# 5.2, 4.2, 2.7, 1.8 % at $n = 16, \dots, 128$ (disjoint; $3.5 \pm 0.5$ %), and the relative
# distance to the interpolant barely changes at $n = 16, 32$ (0.30 and 0.39 at
# $\alpha = 0.1$, 0.31 and 0.35 at 0.001, overlapping; 0.45 and 0.39 to 0.40 and 0.35,
# disjoint).
#
# **Which explanation holds.** Both, in different places. Most of the excess at
# $\alpha = 0.1$ (16-25 %) is the finite initialisation, explanation (i), and where the
# samples determine the teachers the small-initialisation limit is the minimum-$\ell_{1,2}$
# interpolant. Below that sample size it is not: the networks converge, as $\alpha$ shrinks,
# to interpolants 2-6 % above the minimum and far from the minimiser -- explanation (ii).
# Eq. 30 is a property of the minimum-*parameter-norm* interpolant; gradient flow from a
# small initialisation with a first layer shared by two outputs does not reach it there. The
# reduced run of the previous section ($D = 50$, $\alpha \ge 0.01$) points the same way, but
# from three scales only, its excess still falling at the smallest. What this rests on and what
# it does not settle: the minimum is certified, not only solved for (the dual bound is within
# $1.0\times10^{-8}$ of every interpolant's norm, printed, also for the one of the 20 solves
# that Clarabel ended at its reduced tolerances, disjoint supports at $n = 256$, 30,000 times
# below the smallest excess read here); the extrapolation assumes that the geometric approach seen from
# $\alpha = 0.01$ to 0.001 goes on, which no finite $\alpha$ can prove (a much slower
# approach to zero below $\alpha = 0.001$ is not excluded); the runs use $n_{\rm aux} = 2000$
# instead of the paper's 1024, $n \le 256$ and 2 draws; the relative step is 0.01 (halving
# it moves the networks by at most $5\times10^{-4}$ (relative) and the excess by at most
# $10^{-4}$ at $\alpha = 0.003, 0.001$, $n \le 64$, one draw, overlapping supports:
# checked once, not in this build).

# %% [markdown]
# ## Rescaling the pretrained weights before fine-tuning (nested feature selection)
#
# **What the paper states.** Paper 004 (App. E.1, Fig. 5b) says that "weight rescaling by
# a factor less than 1.0 following pretraining reduces the propensity of the network to
# share features between auxiliary and main tasks during finetuning", measured as the
# proportion of the main-task weight norm in the dimensions the auxiliary task uses; and
# (App. E.2.3) that a "nested feature selection" regime, at intermediate ratios of
# main-task coefficients to pretrained weight scale, lets networks learn main tasks that use
# a *subset* of the auxiliary features with fewer samples. Its factors are 0.1, 1.0 and 10.0
# for ReLU networks (App. E.2.3, Figs. 6 and 8b) and 0.5 for ImageNet networks (App. F).
# In a diagonal network the rescaled initialisation enters Eq. 22 directly: fine-tuning from
# $w^{(1)}_{\pm,0} = s\sqrt{|\beta^{\rm pre}|}$, $w^{(2)}_{\pm,0} = \gamma$ gives
# $c_d = s^2|\beta^{\rm pre}_d| + \gamma^2$, so $s < 1$ makes the penalty on the auxiliary
# features more $\ell_1$-like and brings their $c_d$ closer to that of unused features
# ($\approx\gamma^2$).
#
# **What it leaves open** for diagonal networks (our choices in brackets; sources in the
# preset's documentation): the factors of Fig. 5b [0.1 and 0.5 from the paper's other
# experiments, 0.25 between them, 1 as the reference, 2 on the lazy side: the paper's 10
# needs more than the chapter's $10^5$ steps here]; which weights are rescaled [the
# pretrained first layer: the readout is re-initialised at $\gamma$, as in the chapter's
# PT+FT]; the nested task's support [$k_{\rm main}$ of the $k$ auxiliary features, chosen at
# random, with their own signs]; $\gamma$, $\alpha$ and the coefficient sizes [those of the
# chapter]; the norm of Fig. 5b's "weight norm" [the fraction of $\|\hat\beta\|^2$ on the
# auxiliary support]; the number of draws. The paper's main-text Fig. 1f-g, which the
# appendix cites for the nested task, is not in our copy of the paper.
#
# **Measured.** Pretraining as in the chapter, then PT+FT from the rescaled first layer on
# the nested main task (`experiments.diagonal_networks.rescaling_experiment`, one
# `transferkit.sweep` cell per factor), every network beside the minimiser of Eq. 22 at its
# own initialisation (the theory).

# %%
R_FACTORS, R_KMAIN = PRESET.rescale_factors, PRESET.rescale_k_main
R_NS, R_DRAWS = list(PRESET.rescale_ns), PRESET.rescale_draws
R_PARAMS = (f"D = {D}, k = {K} auxiliary features, main task on k_main = {R_KMAIN} of them, "
            f"n = {R_NS}, factors s = {R_FACTORS}, {R_DRAWS} draws, n_aux = {N_AUX}, "
            f"alpha = gamma = {ALPHA}, relative step {REL_STEP}")
print(R_PARAMS)

# %%
t0 = time.perf_counter()
RESC = experiments.diagonal_networks.rescaling_experiment(
    D, K, R_KMAIN, R_NS, scales=R_FACTORS, draws=R_DRAWS, n_aux=N_AUX, alpha=ALPHA, gamma=GAMMA,
    seed=SEED, rel_step=REL_STEP, loss_tol=LOSS_TOL, max_steps=PRESET.max_steps)
print(f"wall time {time.perf_counter() - t0:.0f} s")
i_ref = list(RESC.scales).index(1.0)


def rescaling_table(res):
    """Print, per factor s of a RescalingResult: convergence, the distance to the Eq. 22
    minimiser, and per n the test error, its paired difference to s = 1 and the auxiliary
    fraction (mean and standard error over the draws)."""
    ref = list(res.scales).index(1.0)
    print("n:", res.ns)
    for i, s in enumerate(res.scales):
        risk, risk_se = stats.mean_se(res.risk[i])
        diff, diff_se = stats.mean_se(res.risk[i] - res.risk[ref])
        frac, frac_se = stats.mean_se(res.aux_fraction[i])
        print(f"s = {s:g}: {res.converged[i].mean():.0%} converged, max steps {res.steps[i].max()}, "
              f"largest distance to the Eq. 22 minimiser {res.distance[i].max():.1e}")
        print("   risk          ", np.round(risk, 3), "+-", np.round(risk_se, 3))
        print("   risk - risk(1)", np.round(diff, 3), "+-", np.round(diff_se, 3))
        print("   aux fraction  ", np.round(frac, 3), "+-", np.round(frac_se, 3))


rescaling_table(RESC)
fig = figures.paper003_004.diagonal_rescaling_figure(RESC)
provenance.record(fig, "p004-rescaling", seeds=SEED,
                  params=dict(D=D, k=K, k_main=R_KMAIN, ns=R_NS, scales=R_FACTORS, draws=R_DRAWS,
                              n_aux=N_AUX, alpha=ALPHA, gamma=GAMMA, rel_step=REL_STEP,
                              loss_tol=LOSS_TOL, max_steps=PRESET.max_steps),
                  caption="paper 004: rescaling the pretrained weights before fine-tuning, "
                          "nested main task (reduced)")

# %%
# The theory lines are the networks' own limit: pretraining and every fine-tuning run
# converged, and each network sits within the discretisation tolerance of the minimiser of
# Eq. 22 at its rescaled initialisation.
assert RESC.pre_converged.all() and RESC.converged.all()
assert RESC.qmin_residual.max() < 1e-10
assert RESC.distance.max() < REL_STEP, RESC.distance.max()
# The claims of the text below, for the preset they are stated for (a data check, not a
# scale switch): below s = 1 the auxiliary fraction grows with s at every n, and every
# factor below 1 has a larger error than s = 1 beyond two standard errors of the paired
# difference at every n (no nested-selection benefit).
if PRESET == experiments.diagonal_networks.DIAGONAL["paper"]:
    below = [i for i in np.argsort(RESC.scales) if RESC.scales[i] <= 1]   # s increasing
    frac = RESC.aux_fraction.mean(-1)[below]                    # (factors <= 1, n)
    assert np.all(np.diff(frac, axis=0) > 0), frac
    for i in below[:-1]:
        diff, diff_se = stats.mean_se(RESC.risk[i] - RESC.risk[i_ref])
        assert np.all(diff > 2 * diff_se), (RESC.scales[i], diff, diff_se)

# %% [markdown]
# *Rescaling before fine-tuning.* Left: test error $\|\hat\beta-\beta\|^2$ of PT+FT on a
# main task that uses $k_{\rm main}$ of the $k$ auxiliary features, one colour per factor
# $s$ (black: no rescaling); right: fraction of $\|\hat\beta\|^2$ on the auxiliary support
# (Fig. 5b's quantity). Markers: gradient descent, mean and standard error over the draws;
# lines: the minimiser of Eq. 22 at the rescaled initialisation. Parameters as printed; the
# paper's Fig. 5b uses 40 auxiliary features.
#
# **Result** (the chapter's paper-scale preset: $D = 50$, $k = 5$, $k_{\rm main} = 2$,
# $n = 2, \dots, 10$, 16 draws, $\alpha = \gamma = 0.1$; a reduced scale; this build's
# numbers are printed above). Every network converged and lies within $4\times10^{-3}$ of
# the Eq. 22 minimiser at its initialisation. *Fig. 5b's trend is seen:* the fraction of
# the main-task weight norm on the auxiliary support falls as $s$ shrinks, from at least
# 0.996 at $s = 1$ to 0.965-0.99 at $s = 0.5$, 0.72-0.93 at $s = 0.25$ and 0.24-0.71 at
# $s = 0.1$ (ranges over $n$; standard errors at most 0.08). *The nested-feature-selection
# benefit is not reproduced:* on the nested task no factor below 1 learns with fewer
# samples. The mean error rises as $s$ falls below 1 at every $n$ (at $s = 1$: 1.21, 0.77,
# 0.62, 0.40, 0.18, 0.13, 0.03; at $s = 0.5$: 1.35, 0.94, 0.90, 0.72, 0.39, 0.32, 0.15), the
# paired difference to $s = 1$ (same samples) being $+0.12$ to $+0.32$ at $s = 0.5$
# (standard errors 0.03-0.05; 4.0 to 6.3 of them) and $+0.68$ to $+1.18$ at
# $s = 0.1$; the factor 2 is below $s = 1$ at every $n$ (paired difference $-0.03$ to
# $-0.21$, standard errors 0.01-0.05; beyond two of them except at $n = 8$). Why this may
# be so, none of it
# tested here: with the chapter's $\gamma = 0.1$ the unused features have
# $c_d\approx\gamma^2 = 0.01$, so shrinking $s$ removes the auxiliary features' advantage
# (the falling fraction) faster than it sparsifies the fit within them; with $k = 5$ and
# $k_{\rm main} = 2$ the unrescaled, $\ell_2$-like fit on the auxiliary support needs only
# about $k$ samples, which leaves little for nested selection to gain; and the ratio of
# main-task coefficients to pretrained weights (here $2\beta_d/c_d\approx2$ at $s = 1$,
# already between the $\ell_2$ and $\ell_1$ limits of $q$), $\gamma$ and the coefficient
# sizes the paper used for diagonal networks are not stated. This reduced run supports no
# finding; the last section runs $D = 1000$ and the paper's 40 auxiliary features, at two
# $\gamma$.

# %% [markdown]
# ## Fig. 5c-f: sparsity of the learned solutions
#
# **What the paper states** (Fig. 5 caption and App. E.1): for the networks of its Fig. 1,
# (c) the "proportion of variance concentrated in the top k weights, as a function of k"
# decreases "much more rapidly" for STL than for "pure linear readout training (STL (LP))",
# "demonstrating the sparsity of the learned solution"; (d) the $\ell_1$ norm of STL
# "increases with the training sample size" ("largely monotonic"); (e) the same measure for
# PT+FT and MTL at several overlaps shows "the sparsity of the learned solutions both for
# PT+FT and MTL": as sparse as STL for disjoint features, sparser otherwise; (f) the
# proportion of the main-task weight norm on the auxiliary features shows that solutions
# "are biased to share auxiliary task features when few samples are available".
#
# **Our readings** (sources in the preset's documentation). With
# $V_k(\hat\beta)$ the share of $\sum_d\hat\beta_d^2$ held by the $k$ largest $|\hat\beta_d|$
# (`experiments.diagonal_networks.top_k_variance`), $V_k$ rises with $k$; the caption's
# quantity "decreases", so we plot the share *outside* the top $k$, $1 - V_k$ (a solution
# with $s$ non-zero weights has $1 - V_s = 0$). Fig. 5f's "weight norm" is the squared
# $\ell_2$ norm, as in the rescaling section. Fig. 5e is shown at one sample size
# ($n$ printed below; the paper does not say which). STL (LP) trains only the readout from
# the chapter's STL initialisation ($\alpha$ in both layers). The output is then linear in
# the readout, and gradient descent on the readout converges to the least-squares solution
# nearest its initial value (it moves only in the row space of the feature map). We compute
# that limit in closed form with numpy's minimum-norm least squares
# (`experiments.diagonal_networks.readout_only_fit`; `tests/experiments` checks it against
# readout-only gradient descent). From $\beta(0) = 0$ it is the minimum-$\ell_2$ interpolant
# $X^+y$, whatever $\alpha$. Every other network is one of the chapter's runs above: no new
# training. The last section draws the same panels at $D = 1000$ and the paper's 40
# features.

# %%
S_N = PRESET.sparsity_n
LP = {name: experiments.diagonal_networks.stl_readout_only(
          D, K, ov, NS, draws=DRAWS, n_aux=N_AUX, alpha=ALPHA, seed=SEED)
      for name, ov in OVERLAPS.items()}


def sparsity_tables(runs, lp, k, n_show):
    """Figs. 5c-f's measures for runs (support name -> TasksResult) and their STL (LP) fits
    lp, printed: per support and method (and "lp"), the share outside the top k weights
    (len(ns), draws), and the fraction of |beta|^2 on the auxiliary support; returns both."""
    topk = {name: {**{m: 1 - experiments.diagonal_networks.top_k_variance(run.beta)[..., k - 1]
                      for m, run in r.methods.items()},
                   "lp": 1 - experiments.diagonal_networks.top_k_variance(lp[name].beta)[..., k - 1]}
            for name, r in runs.items()}
    auxf = {name: {m: experiments.diagonal_networks.aux_norm_fraction(run.beta, r.beta_aux[None])
                   for m, run in r.methods.items()} for name, r in runs.items()}
    first = runs[next(iter(runs))]
    l1 = experiments.diagonal_networks.l1_norm(first.stl.beta)
    print("n:", first.ns.tolist(), f"; Fig. 5e at n = {n_show}")
    print(f"share outside the top k = {k} weights, 1 - V_k (mean over draws):")
    for name, t in topk.items():
        for m, v in t.items():
            print(f"  {name:12s} {m:5s}", np.round(v.mean(-1), 4))
    print("l1 norm of STL (first support):", np.round(stats.mean_se(l1)[0], 3), "+-",
          np.round(stats.mean_se(l1)[1], 3), f"; teacher {experiments.diagonal_networks.l1_norm(first.beta_main).mean():g}")
    print("fraction of |beta|^2 on the auxiliary support (mean, se over draws):")
    for name, fr in auxf.items():
        for m, v in fr.items():
            print(f"  {name:12s} {m:5s}", np.round(stats.mean_se(v)[0], 3), "+-", np.round(stats.mean_se(v)[1], 3))
    return topk, auxf


TOPK, AUXF = sparsity_tables(RUNS, LP, K, S_N)
fig = figures.paper003_004.diagonal_sparsity_figure(RUNS, LP, S_N)
provenance.record(fig, "p004-fig5c-f", seeds=SEED,
                  params=dict(D=D, k=K, draws=DRAWS, ns=NS, alpha=ALPHA, gamma=GAMMA, n_aux=N_AUX,
                              rel_step=REL_STEP, loss_tol=LOSS_TOL, n_fig5e=S_N),
                  caption="paper 004 Fig. 5c-f (reduced): sparsity of the learned solutions, "
                          "STL vs STL (LP), L1 norm, PT+FT and MTL, auxiliary-support fraction")

# %%
# STL (LP) is the readout-only limit: every fit interpolates its samples.
assert max(lp.residual.max() for lp in LP.values()) < 1e-10
# The claims of the text below, for the preset they are stated for: at every n and on both
# supports each trained method keeps less of its squared norm outside the top k than STL
# (LP); with overlapping supports PT+FT and MTL keep less than STL, and MTL's auxiliary
# fraction is above STL's at every n; with disjoint supports
# the auxiliary fraction of PT+FT and MTL is above STL's at the smallest n, and PT+FT's falls
# as n grows.
if PRESET == experiments.diagonal_networks.DIAGONAL["paper"]:
    for name, t in TOPK.items():
        for m in RUNS[name].methods:
            assert np.all(t[m].mean(-1) < t["lp"].mean(-1)), (name, m)
    t = TOPK["overlapping"]
    assert np.all(t["ptft"].mean(-1) < t["stl"].mean(-1)) and np.all(t["mtl"].mean(-1) < t["stl"].mean(-1))
    assert np.all(AUXF["overlapping"]["mtl"].mean(-1) > AUXF["overlapping"]["stl"].mean(-1))
    fr = {m: v.mean(-1) for m, v in AUXF["disjoint"].items()}
    assert fr["ptft"][0] > fr["stl"][0] and fr["mtl"][0] > fr["stl"][0], fr
    assert np.all(np.diff(fr["ptft"]) < 0), fr["ptft"]

# %% [markdown]
# *Fig. 5c-f (reduced).* **c**: share of $\|\hat\beta\|^2$ outside the top $k$ weights
# against $k$ for STL (markers: gradient descent; thin lines: the minimiser of Eq. 22 at the
# STL initialisation, the theory) and STL (LP) (dashed), one colour per $n$, mean over
# draws, overlapping-support run. **d**: $\|\hat\beta\|_1$ of STL against $n$ (mean and
# standard error; line: Eq. 22 minimiser; dashed: STL (LP); dotted: the teacher's).
# **e**: panel c's measure at the printed $n$ for STL, PT+FT and MTL (lines: Eq. 22
# minimisers; dashed: STL (LP)), one panel per support. **f**: fraction of $\|\hat\beta\|^2$
# on the auxiliary support against $n$. Parameters as printed at the top; the paper's
# Figs. 5c-f use 40 features per task.
#
# **Result** (the chapter's paper-scale preset: $D = 50$, $k = 5$, $n = 5, \dots, 30$,
# 8 draws, $\alpha = \gamma = 0.1$; a reduced scale; this build's numbers are printed above;
# below, "outside" is $1 - V_5$, the share outside the top $k = 5$ weights).
# *c, agreement:* STL's solutions are sparser than STL (LP)'s at every $n$: outside share
# 0.02-0.28 against 0.31-0.58 (the minimum-$\ell_2$ interpolant spreads its norm over all
# $D$ coordinates), on both supports. *d, agreement:* STL's $\ell_1$ norm rises with $n$,
# from 3.6 at $n = 5$ to 6.1 at $n = 25$, and falls to 5.9 at $n = 30$, where STL starts to
# recover the teacher (largely monotonic, as the paper says). It exceeds the teacher's
# $\ell_1$ norm (5) from $n = 15$ on, which a minimum-$\ell_1$ interpolant cannot do (the
# teacher interpolates). The Eq. 22 minimiser at the STL initialisation has the same norms
# (to 0.003): at $\alpha = 0.1$ the penalty is $\ell_1$-like with a logarithmic weight on
# the coefficients' size, not yet $\ell_1$ (as for MTL in the $\ell_{1,2}$ section).
# *e, agreement:* every method's solutions are far sparser than STL (LP)'s. With
# overlapping supports PT+FT (outside share at most 0.0033) and MTL (0.005-0.20) are sparser
# than STL (0.024-0.22) at every $n$. With disjoint supports they are about as sparse as STL
# (PT+FT 0.03-0.23, MTL 0.03-0.27, STL 0.02-0.28), except PT+FT at $n = 5$ (0.046 against
# 0.28), which concentrates on the auxiliary features (panel f).
# *f, agreement:* with disjoint supports PT+FT puts 0.93 of its squared norm on the
# auxiliary features at $n = 5$ (MTL 0.34, STL 0.12; standard errors 0.02-0.09), falling to
# 0.53, 0.35, 0.15, 0.11 and 0.01 as $n$ grows. With overlapping supports PT+FT's fraction
# is at least 0.997 at every $n$, MTL's (0.65 to 0.995) is above STL's (0.37 to 0.98).
# *Not reproduced:* the non-monotonic sparsity against $n$ that App. E.1 reads off
# Fig. 5c. Here STL's outside share falls with $n$ on both supports but for one step
# (0.213 to 0.215 from $n = 5$ to 10, overlapping supports, well within the draws'
# spread); why, not tested here: the paper's $D$, $k$ and range of $n$ are larger. The
# next section runs $D = 1000$ with the paper's 40 features, and a third overlap.

# %% [markdown]
# ## Generalisation, Fig. 5a and Figs. 5c-f at $D = 1000$
#
# The sections above run the paper's design reduced to $D = 50$, $k = 5$. This one runs
# the same experiment at the paper's size as we read it: $D = 1000$ inputs (our copy of the
# paper does not state $D$), $k = 40$ features per task,
# main and auxiliary supports that share 40, 20 or none of their 40 features, $n = 16$ to
# 512 main-task samples, 8 draws (`experiments.diagonal_networks.run_tasks_large`;
# parameters printed below, each value with its source in the API reference of
# `DIAGONAL_TASKS_LARGE`). It has the same methods (STL, PT+FT, MTL), initialisations
# ($\alpha = \gamma = 0.1$), losses, stopping rules and relative step cap as the reduced
# run, the same theory (the minimiser of Eq. 22 at the STL and PT+FT initialisations) and
# the same STL (LP). Only the trainer differs: `models.diagonal.train_diagonal_gram`, which
# works on the sample moments and takes the largest stable step under the same 1 % cap
# (see the previous section); `tests/experiments` checks that its networks lie within the
# discretisation error of the reduced run's trainer. The draws' teachers and samples are
# those of the previous section for its two draws.
#
# **Reductions**, each with its reason: $n_{\rm aux} = 2D = 2000$ instead of 1024 and
# $n \le 512$ instead of 1024 (the reasons of the previous section: at $n_{\rm aux}\approx D$
# pretraining does not converge in the budget, and at $n \ge D$ the teacher is the only
# interpolant); the one initialisation $\alpha = 0.1$ (the previous section shows how MTL
# moves as $\alpha$ shrinks). Ours: 8 draws (the paper does not state its number), and
# the 20/40 support: the paper's Figs. 5e-f show "different values of the number of
# overlapping features" without saying which.

# %%
TL = PRESET.tasks_large
print(f"D = {TL.D}, k = {TL.k}, n_aux = {TL.n_aux}, n = {list(TL.ns)}, {TL.draws} draws, "
      f"supports {dict(TL.overlaps)}, alpha = gamma = {TL.alpha}, relative step "
      f"{TL.rel_step}, loss tolerance {TL.loss_tol:g} (MTL {TL.mtl_loss_tol:g}), budget "
      f"{TL.max_steps} steps")
t0 = time.perf_counter()
RUNS_L = {name: experiments.diagonal_networks.run_tasks_large(
              TL.D, TL.k, ov, TL.ns, draws=TL.draws, n_aux=TL.n_aux, alpha=TL.alpha,
              gamma=TL.gamma, seed=TL.seed, rel_step=TL.rel_step, loss_tol=TL.loss_tol,
              mtl_loss_tol=TL.mtl_loss_tol, max_steps=TL.max_steps)
          for name, ov in TL.overlaps}
print(f"wall time {time.perf_counter() - t0:.0f} s")
DIST_L = {}
for name, r in RUNS_L.items():
    print(f"{name} ({r.overlap}/{r.k}):", {m: f"{run.converged.mean():.0%} converged, max steps "
                                             f"{run.steps.max()}" for m, run in r.methods.items()})
    for m, q in r.qmin.items():
        DIST_L[name, m] = (np.linalg.norm(r.methods[m].beta - q.beta, axis=-1)
                           / np.linalg.norm(q.beta, axis=-1))
        print(f"  {m:5s}: largest distance to the Eq. 22 minimiser {DIST_L[name, m].max():.2e}; "
              f"solver residual {q.residual.max():.1e}")
# the MTL networks of the draws this run shares with the previous section (alpha = 0.1)
both = [j for j, n in enumerate(TL.ns) if n in L12L.ns]
for name, r in RUNS_L.items():
    if name in LARGE and TL.alpha == LARGE[name].alphas[0]:
        ours = r.mtl.beta[both, :L12L.draws]
        theirs = LARGE[name].beta_mtl[0][[list(L12L.ns).index(TL.ns[j]) for j in both], :, 1]
        rel = np.max(np.linalg.norm(ours - theirs, axis=-1) / np.linalg.norm(theirs, axis=-1))
        print(f"  {name}: MTL against the previous section's at alpha = {TL.alpha}, largest "
              f"relative difference {rel:.1e}")
        assert rel < TL.rel_step, (name, rel)    # within the discretisation error

# %%
# As for the reduced run: every network converged and lies within the discretisation
# tolerance (the relative step) of the Eq. 22 minimiser at its initialisation.
for name, r in RUNS_L.items():
    assert r.pre_converged.all(), name
    for m, run in r.methods.items():
        assert run.converged.all(), (name, m)
    for m, q in r.qmin.items():
        assert DIST_L[name, m].max() < TL.rel_step, (name, m, DIST_L[name, m].max())
        assert q.residual.max() < 1e-10, (name, m)

# %%
fig = figures.paper003_004.diagonal_generalisation_figure(RUNS_L)
provenance.record(fig, "p004-generalisation-d1000", seeds=TL.seed,
                  params=dataclasses.asdict(TL),
                  caption="paper 004: diagonal networks at D = 1000, k = 40, STL vs PT+FT vs "
                          "MTL against n")
print("test error ||beta_hat - beta||^2, mean +- s.e. over draws, and the mean of the Eq. 22 minimisers:")
for name, r in RUNS_L.items():
    print(f"{name} ({r.overlap}/{r.k}), n = {r.ns.tolist()}")
    for m, run in r.methods.items():
        mean, se = stats.mean_se(run.risk)
        q = (f"  Eq. 22: {np.array2string(r.qmin[m].risk.mean(-1), precision=3)}"
             if m in r.qmin else "")
        print(f"  {m:5s}", " ".join(f"{a:7.3f}+-{b:.3f}" for a, b in zip(mean, se)) + q)

# %%
# Paired comparisons of the methods (the same samples in every method, draw by draw): t
# statistics of the difference of test errors, one Bonferroni family of every comparison
# printed (three pairs, three supports, every n) at a family-wise level of 1 %.
PAIRS = (("ptft", "mtl"), ("mtl", "stl"), ("ptft", "stl"))
T_L = {}
for name, r in RUNS_L.items():
    for a, b in PAIRS:
        mean, se = stats.mean_se(r.methods[a].risk - r.methods[b].risk)
        T_L[name, a, b] = mean / se
T_CRIT = stats.critical_value(len(T_L) * len(TL.ns), TL.draws)
print(f"t of the paired difference of test errors, per n; |t| > {T_CRIT:.2f} is significant")
for (name, a, b), t in T_L.items():
    print(f"  {name:12s} {a:>4s} - {b:<4s}", np.round(t, 1))
# The claims of the text below, for the preset they are stated for (a data check, not a
# scale switch): with shared features PT+FT beats MTL and MTL beats STL where the text says
# so; with disjoint supports both lose to STL up to n = 256 (PT+FT significantly from
# n = 32 on) and win at n = 512.
if PRESET == experiments.diagonal_networks.DIAGONAL["paper"]:
    ns_l = np.array(TL.ns)
    assert (T_L["overlapping", "ptft", "mtl"] < -T_CRIT).all()
    assert (T_L["overlapping", "mtl", "stl"][ns_l >= 32] < -T_CRIT).all()
    assert (T_L["half", "ptft", "mtl"][ns_l >= 128] < -T_CRIT).all()
    assert (T_L["half", "mtl", "stl"][ns_l >= 64] < -T_CRIT).all()
    t = T_L["disjoint", "ptft", "stl"]
    assert (t[(ns_l >= 32) & (ns_l <= 256)] > T_CRIT).all() and t[0] > 0, t
    t = T_L["disjoint", "mtl", "stl"]
    assert (t[ns_l <= 256] > T_CRIT).all(), t
    for a in ("ptft", "mtl"):
        assert (T_L["disjoint", a, "stl"][ns_l == 512] < -T_CRIT).all(), a

# %% [markdown]
# *Generalisation at $D = 1000$.* Test error $\|\hat\beta-\beta\|^2$ (mean and standard
# error over the draws; the teacher has $\|\beta\|^2 = 40$) of STL, PT+FT and MTL
# (markers) and of the minimiser of Eq. 22 at the STL and PT+FT initialisations (lines),
# one panel per support, parameters as printed.
#
# **Result** (this section's paper-scale preset; this build's numbers are printed above).
# Every network converged, in at most 4,690 accepted steps, and every STL and PT+FT network
# lies within 0.4 % of the minimiser of Eq. 22 at its initialisation: at the paper's size
# too, Eq. 22 is the theory of these networks. The MTL networks of the two draws this run
# shares with the previous section are that section's $\alpha = 0.1$ networks to $10^{-4}$
# (relative). Paired over the 8 draws, in one Bonferroni family of 54 comparisons at 1 %:
#
# - *Supports 40/40:* PT+FT needs far fewer samples than MTL, and MTL fewer than STL: at
#   $n = 128$ the test errors are 0.54, 17.8 and 32.0. PT+FT beats MTL at every $n$, MTL
#   beats STL from $n = 32$ on (at $n = 16$ the same sign, not significant).
# - *Supports 20/40:* the same order, with smaller gaps: PT+FT beats MTL from $n = 128$ on,
#   MTL beats STL from $n = 64$ on (the same sign below, not significant).
# - *Supports 0/40:* pretraining *hurts* up to $n = 256$. PT+FT's test error is above
#   STL's (significantly from $n = 32$ on; at $n = 16$ the same sign, not significant), at
#   $n = 16$ to 128 even above the teacher's own norm, 40 (50.2, 54.6, 51.1, 41.1 against
#   STL's 39.3, 38.6, 36.7, 31.3): the cheap auxiliary features of Eq. 22 carry its solutions (Fig. 5f
#   below). MTL is above STL too, by less (39.9 against 39.3 at $n = 16$, 18.2 against 16.9
#   at $n = 256$; significant at every $n \le 256$). At $n = 512$ both beat STL (0.86 and
#   1.37 against 1.48).
#
# The Eq. 22 minimisers give the same numbers (within 1 %; with disjoint supports PT+FT's
# within 0.5 %), so the harm is the theory's, not the optimiser's. The reduced run of the second section said only that with
# disjoint supports "pretraining does not help"; at the paper's size it hurts over most of
# the range of $n$. Paper 004's Fig. 1a, which these runs regenerate, is not in our copy of
# the paper, so its curves cannot be compared number by number; its App. D reports, for
# ReLU networks (Fig. 4b), that "MTL tends to outperform PT+FT", where these diagonal
# networks from $\alpha = 0.1$ show the reverse whenever the tasks share features (PT+FT
# significantly below MTL at every $n$ with supports 40/40, from $n = 128$ on with 20/40)
# and agree with it only with disjoint supports (MTL below PT+FT at $n = 32$ to 256). That is a different model, and one
# initialisation scale (the previous section shows MTL moving as $\alpha$ shrinks): not a
# disagreement with the paper.

# %%
Q_RATIO_L, L12_RATIO_L = penalty_ratios(RUNS_L["overlapping"])
fig = figures.paper003_004.diagonal_norms_figure(RUNS_L["overlapping"].ns, Q_RATIO_L, L12_RATIO_L)
provenance.record(fig, "p004-fig5a-d1000", seeds=TL.seed, params=dataclasses.asdict(TL),
                  caption="paper 004 Fig. 5a at D = 1000, k = 40: Q and l1,2 norms of learned "
                          "solutions")
for m in Q_RATIO_L:
    print(f"{m:5s} Q ratio {np.round(Q_RATIO_L[m].mean(1), 3)}   l12 ratio "
          f"{np.round(L12_RATIO_L[m].mean(1), 3)}")
assert np.all(Q_RATIO_L["ptft"] <= 1 + TL.rel_step), Q_RATIO_L["ptft"].max()
# The claim of the text below, for the preset it is stated for: at the smallest n the MTL
# solutions' l1,2 norm is below the ground truth's, beyond the Bonferroni t critical value
# (one test) times its standard error over the draws; above it at every larger n.
mean12, se12 = stats.mean_se(L12_RATIO_L["mtl"])
print(f"MTL l1,2 ratio at n = {TL.ns[0]}: {mean12[0]:.3f} +- {se12[0]:.3f}")
if PRESET == experiments.diagonal_networks.DIAGONAL["paper"]:
    assert 1 - mean12[0] > stats.critical_value(1, TL.draws) * se12[0], (mean12[0], se12[0])
    assert (mean12[1:] > 1).all(), mean12

# %% [markdown]
# *Fig. 5a at $D = 1000$.* As the reduced panel: penalties of the learned main-task
# solutions over the ground truth's, mean over draws, supports 40/40.
#
# **Result.** PT+FT's solutions have a PT+FT penalty below the ground truth's at every
# $n$, rising towards it (ratio 0.24 at $n = 16$, 0.99 at $n = 512$), as in the paper and
# in the reduced run. The MTL solutions' $\ell_{1,2}$ norm is *below* the ground truth's at
# $n = 16$ (ratio $0.932 \pm 0.010$, 6.7 standard errors below 1) and above it from
# $n = 32$ on (1.05 to 1.25). The paper's Fig. 5a shows it below at small $n$: at the
# paper's size this is reproduced at the smallest $n$, where the reduced run ($D = 50$)
# found it above at every $n$. Above that the MTL networks from $\alpha = 0.1$ exceed the
# minimum-$\ell_{1,2}$ interpolant, as the previous section measured.

# %%
LP_L = {name: experiments.diagonal_networks.stl_readout_only(
            TL.D, TL.k, ov, TL.ns, draws=TL.draws, n_aux=TL.n_aux, alpha=TL.alpha, seed=TL.seed)
        for name, ov in TL.overlaps}
TOPK_L, AUXF_L = sparsity_tables(RUNS_L, LP_L, TL.k, TL.sparsity_n)
fig = figures.paper003_004.diagonal_sparsity_figure(RUNS_L, LP_L, TL.sparsity_n, k_max=4 * TL.k)
provenance.record(fig, "p004-fig5c-f-d1000", seeds=TL.seed, params=dataclasses.asdict(TL),
                  caption="paper 004 Fig. 5c-f at D = 1000, k = 40: sparsity of the learned "
                          "solutions, STL vs STL (LP), L1 norm, PT+FT and MTL, auxiliary-support "
                          "fraction")
assert max(lp.residual.max() for lp in LP_L.values()) < 1e-10
# The claims of the text below, for the preset they are stated for: each trained method is
# sparser than STL (LP) at every n and support; with shared features PT+FT and MTL are
# sparser than STL at every n; STL's l1 norm rises up to n = 256 and exceeds the teacher's
# from n = 128 on; with disjoint supports PT+FT's auxiliary fraction falls with n from above
# 0.99, and MTL's from above STL's.
if PRESET == experiments.diagonal_networks.DIAGONAL["paper"]:
    for name, t in TOPK_L.items():
        for m in RUNS_L[name].methods:
            assert np.all(t[m].mean(-1) < t["lp"].mean(-1)), (name, m)
    for name in ("overlapping", "half"):
        t = TOPK_L[name]
        assert np.all(t["ptft"].mean(-1) < t["stl"].mean(-1)), name
        assert np.all(t["mtl"].mean(-1) < t["stl"].mean(-1)), name
    l1_stl = experiments.diagonal_networks.l1_norm(RUNS_L["overlapping"].stl.beta).mean(-1)
    ns_l = np.array(TL.ns)
    assert np.all(np.diff(l1_stl[ns_l <= 256]) > 0) and np.all(l1_stl[ns_l >= 128] > TL.k)
    fr = {m: v.mean(-1) for m, v in AUXF_L["disjoint"].items()}
    assert fr["ptft"][0] > 0.99 and np.all(np.diff(fr["ptft"]) < 0), fr["ptft"]
    assert fr["mtl"][0] > fr["stl"][0] and np.all(np.diff(fr["mtl"]) < 0), fr["mtl"]

# %% [markdown]
# *Figs. 5c-f at $D = 1000$.* The panels of the reduced figure above, for the three
# supports, panels c and e up to $k = 160$; Fig. 5e at $n = 128$. Share outside the top
# $k = 40$ weights ("outside") as above.
#
# **Result** (this section's paper-scale preset; numbers printed above). *c, agreement:*
# STL's solutions are sparser than STL (LP)'s at every $n$ (outside 0.61 to 0.02 against
# 0.77 to 0.45). *d, agreement:* STL's $\ell_1$ norm rises from 16.0 at $n = 16$ to 57.7 at
# $n = 256$ and falls to 54.2 at $n = 512$ (largely monotonic); from $n = 128$ on it
# exceeds the teacher's, 40, as in the reduced run. *e, agreement:* at $n = 128$, with
# supports 40/40 PT+FT (outside 0.001) and MTL (0.19) are sparser than STL (0.37), and so
# at every $n$ (asserted), as the paper says; with 20/40 too (0.08 and 0.31 against 0.39);
# with 0/40, MTL is as sparse as STL (0.38 and 0.38), as the paper says, and PT+FT
# sparser (0.23): its top weights sit on the auxiliary features (panel f). *f,
# agreement:* with disjoint supports PT+FT puts 0.99 of its squared norm on the auxiliary
# features at $n = 16$, falling to 0.58 at $n = 128$ and 0.002 at $n = 512$; MTL 0.56
# falling to 0.002; STL at most 0.04: the solutions are "biased to share auxiliary task
# features when few samples are available". *Not reproduced, again:* the non-monotonic
# sparsity against $n$ that App. E.1 reads off Fig. 5c. STL's outside share falls with $n$
# on every support but for one step with 20/40 (0.386 to 0.393 from $n = 64$ to 128,
# within one standard error, 0.015).

# %% [markdown]
# ### Rescaling before fine-tuning at $D = 1000$ (Fig. 5b), and the readout's re-initialisation
#
# The rescaling section above found Fig. 5b's trend but no nested-feature-selection benefit
# at $D = 50$, $k = 5$, and named three untested reasons. One was the size: with $k = 5$ the
# unrescaled fit needs only about $k$ samples. Here the same experiment runs at the paper's
# $D = 1000$ with its 40 auxiliary features, on a nested main task that uses 4 of them
# (`experiments.diagonal_networks.rescaling_experiment_large`, trained as the previous
# section's networks; parameters printed below, sources in the API reference of
# `DIAGONAL_TASKS_LARGE`). A
# second reason was the readout's re-initialisation $\gamma$, which the paper leaves open
# (paper 003, Sec. 1.1: "a small value"). It sets $c_d = \gamma^2$ for the features
# pretraining did not use, against $s^2|\beta^{\rm pre}_d| + \gamma^2$ on the auxiliary
# ones, so it decides how strongly Eq. 22 prefers the auxiliary features once $s$ is
# small. So the experiment runs at the chapter's $\gamma = 0.1$ and at $\gamma = 0.01$.

# %%
print(f"D = {TL.D}, k = {TL.k} auxiliary features, main task on k_main = {TL.rescale_k_main} "
      f"of them, n = {list(TL.rescale_ns)}, factors s = {TL.rescale_factors}, gamma = "
      f"{TL.rescale_gammas}, {TL.rescale_draws} draws, n_aux = {TL.n_aux}, alpha = {TL.alpha}")
t0 = time.perf_counter()
RESC_L = {g: experiments.diagonal_networks.rescaling_experiment_large(
              TL.D, TL.k, TL.rescale_k_main, TL.rescale_ns, scales=TL.rescale_factors,
              draws=TL.rescale_draws, n_aux=TL.n_aux, alpha=TL.alpha, gamma=g, seed=TL.seed,
              rel_step=TL.rel_step, loss_tol=TL.loss_tol, max_steps=TL.max_steps)
          for g in TL.rescale_gammas}
print(f"wall time {time.perf_counter() - t0:.0f} s")
for g, res in RESC_L.items():
    print(f"\ngamma = {g:g}")
    rescaling_table(res)
    fig = figures.paper003_004.diagonal_rescaling_figure(res)
    provenance.record(fig, f"p004-rescaling-d1000-gamma{g:g}", seeds=TL.seed,
                      params=dict(dataclasses.asdict(TL), gamma=g),
                      caption=f"paper 004: rescaling the pretrained weights before fine-tuning, "
                              f"nested main task, D = 1000, 40 auxiliary features, gamma = {g:g}")

# %%
# As above: every network converged and lies within the discretisation tolerance of the
# Eq. 22 minimiser at its initialisation.
for g, res in RESC_L.items():
    assert res.pre_converged.all() and res.converged.all(), g
    assert res.qmin_residual.max() < 1e-10, g
    assert res.distance.max() < TL.rel_step, (g, res.distance.max())
# Paired comparisons with s = 1 (same samples), one Bonferroni family of every factor,
# gamma and n at a family-wise level of 1 %.
T_R = {}
for g, res in RESC_L.items():
    ref = list(res.scales).index(1.0)
    for i, s in enumerate(res.scales):
        if i != ref:
            mean, se = stats.mean_se(res.risk[i] - res.risk[ref])
            T_R[g, s] = mean / se
T_RCRIT = stats.critical_value(len(T_R) * len(TL.rescale_ns), TL.rescale_draws)
print(f"t of the paired difference of test errors to s = 1, per n; |t| > {T_RCRIT:.2f} is "
      "significant")
for (g, s), t in T_R.items():
    print(f"  gamma = {g:<5g} s = {s:<5g}", np.round(t, 1))
# The claims of the text below, for the preset they are stated for: at gamma = 0.1 every
# factor below 1 is worse than s = 1 at every n (significantly from n = 12 on) and s = 2
# better at every n (the sign); at gamma = 0.01 the factors 0.25 and 0.5 are better than
# s = 1 at n = 16 and 24, and s = 2 is worse at n = 24 and 32.
if PRESET == experiments.diagonal_networks.DIAGONAL["paper"]:
    ns_r = np.array(TL.rescale_ns)
    for s in (0.1, 0.25, 0.5):
        assert (T_R[0.1, s] > 0).all() and (T_R[0.1, s][ns_r >= 12] > T_RCRIT).all(), s
    assert (T_R[0.1, 2.0] < 0).all(), T_R[0.1, 2.0]
    for s in (0.25, 0.5):
        assert (T_R[0.01, s][np.isin(ns_r, (16, 24))] < -T_RCRIT).all(), (s, T_R[0.01, s])
    assert (T_R[0.01, 2.0][np.isin(ns_r, (24, 32))] > T_RCRIT).all(), T_R[0.01, 2.0]

# %% [markdown]
# *Rescaling at $D = 1000$.* One figure per $\gamma$, each as the reduced one: left, the
# test error of PT+FT on the nested main task (4 of the 40 auxiliary features), one colour
# per factor $s$ (black: no rescaling); right, the fraction of $\|\hat\beta\|^2$ on the
# auxiliary support (Fig. 5b's quantity). Markers: gradient descent, mean and standard
# error over the draws; lines: the Eq. 22 minimiser at the rescaled initialisation.
#
# **Result** (this section's paper-scale preset; numbers printed above; paired tests
# against $s = 1$ on the same samples, one Bonferroni family of 56 at 1 %). Every network
# converged and lies within 0.6 % of its Eq. 22 minimiser.
#
# - *Fig. 5b's trend, at the chapter's $\gamma = 0.1$:* the fraction of the main-task
#   weight norm on the auxiliary support falls as $s$ shrinks, from 0.997 at $s = 1$ to
#   0.96-0.98 at $s = 0.5$, 0.67-0.90 at $s = 0.25$ and 0.14-0.57 at $s = 0.1$ (ranges over
#   $n$), as the paper states and as in the reduced run.
# - *No nested-selection benefit at $\gamma = 0.1$,* now with $k = 40$: every factor below
#   1 learns the nested task worse than $s = 1$ at every $n$ (significantly from $n = 12$
#   on), and $s = 2$ better (e.g. at $n = 32$: 1.93 at $s = 0.5$, 1.37 at $s = 1$, 0.99 at
#   $s = 2$; the teacher's $\|\beta\|^2$ is 4). The reduced run's size explanation is
#   therefore not the reason.
# - *With $\gamma = 0.01$ the benefit appears:* $s = 0.25$ and 0.5 learn the nested task
#   with fewer samples than $s = 1$ at $n = 16$ and 24 (at $n = 24$: 0.77 and 1.19 against
#   1.55; $t$ from $-7.5$ to $-15.1$), and $s = 2$ does worse than $s = 1$ at $n = 24$ and
#   32, so an intermediate scale is best below $n = k = 40$. At $n = 48$, beyond the 40
#   auxiliary features, $s \ge 1$ recovers the teacher (errors of 0.002 and less) and the
#   smaller factors are slightly worse (the same sign at $n = 48$, not significant).
#   Every factor keeps at least 0.93 of its norm on the auxiliary support.
#
# So paper 004's nested-feature-selection regime is reproduced in diagonal networks at the
# paper's size when the readout is re-initialised small enough that features unused in
# pretraining stay expensive ($c_d = \gamma^2 = 10^{-4}$ against $s^2 + \gamma^2$ on the
# auxiliary ones), and not at the chapter's $\gamma = 0.1$. The paper states no $\gamma$
# for diagonal networks, so neither reading contradicts it; what this shows is that its
# claim depends on that choice. Not varied: $\alpha$, the coefficient sizes and
# $k_{\rm main}$.
