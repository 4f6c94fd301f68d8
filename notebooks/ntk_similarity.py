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
# # Task similarity in the NTK regime
#
# This chapter checks Theorems 1 and 2 of Liu et al. {cite:p}`liu2019transferability`
# (paper 002, Sec. 6) where they live: a wide two-layer ReLU network
# $f(x) = m^{-1/2}\sum_r a_r\,\mathrm{relu}(w_r^\top x)$ in the regime of Du et al.
# {cite:p}`du2019gradient`, with the readout $a_r = \pm1$ fixed, inputs on the unit sphere,
# full-batch gradient descent on the squared loss, pretrained on a binary MNIST task $P$
# and fine-tuned on other binary tasks $Q$.
#
# **Theory** (Sec. 6.1). With the infinite-width Gram matrices
# $H^\infty_{ij} = x_i^\top x_j(\pi - \arccos x_i^\top x_j)/(2\pi)$ on $P$, on $Q$ and
# across, the pretrained network predicts the *transformed labels*
# $y_{P\to Q} = H_{PQ}^\top H_P^{-1} y_P$ on the target inputs, and
#
# * Thm 1 (Eq. 1): the squared gradient of the target loss with respect to the hidden
#   activations at $W(P)$ is $\|y_Q - y_{P\to Q}\|^2$ to leading order (for the squared loss
#   and $a_r = \pm 1$ it is exactly $\|u_Q(P) - y_Q\|^2$, the residual at the start of
#   fine-tuning);
# * Thm 2 (Eq. 2): fine-tuning travels
#   $\|W(Q) - W(P)\|_F \le \sqrt{(y_Q - y_{P\to Q})^\top H_Q^{-1}(y_Q - y_{P\to Q})}$ plus
#   terms that vanish as $\kappa \to 0$, $m \to \infty$. The proof (App. C, Eq. 45) shows
#   this leading term is the limit itself, not only a bound, so we compare it with the
#   measured distance. Training from scratch is the case $y_{P\to Q} = 0$.
#
# The tasks range from similar to unrelated: the same digits (new images), neighbouring
# digit pairs, an unrelated digit pair, Fashion-MNIST, and the same digits with swapped
# labels.

# %% tags=["hide-input"]
import time

import numpy as np
import torch
from scipy import stats

import transferkit as tk
from transferkit import data, experiments, figures, provenance, theory
from transferkit import stats as tkstats

figures.plotting.use_style()
SCALE = tk.scale()
tk.models.device.use_threads()  # TRANSFERKIT_THREADS, default 1 (transferkit.config.threads)
print(f"TRANSFERKIT_SCALE = {SCALE}")

# %% [markdown]
# ## Parameters
#
# The paper gives no numbers for this setting (its theorems hold for $m$ larger than a
# polynomial in $n, 1/\lambda, 1/\kappa$). Ours: inputs are MNIST / Fashion-MNIST images
# centred with the mean of 10,000 MNIST training images, projected on their top $d$
# principal directions and normalised to the unit sphere; $n$ images per task; width $m$;
# $\kappa = 1$ with the **symmetric initialisation** (units in pairs with opposite $a_r$,
# so $f_{W(0)} = 0$): this removes the $O(\kappa)$ initial output that the $\kappa\to0$
# assumption of the paper exists to suppress, without making the network less lazy
# (a small $\kappa$ at fixed $m$ makes activation patterns flip more, Lemma 4). Step size
# $\eta = 1/\lambda_{\max}(H^\infty)$ of the task trained on; training stops when
# $\|u - y\| \le 10^{-3}\|y\|$. Draws are independent initialisations; the data are fixed.
# The values, the tasks and the source of each live in
# `experiments.ntk_similarity.NTK_SIMILARITY` (one preset per scale). The device is not a
# parameter of the experiment (devices agree to rounding) and stays here: `smoke` runs on
# the CPU, `paper` on the default device (a GPU where there is one).

# %%
PRESET = experiments.ntk_similarity.NTK_SIMILARITY[SCALE]
D, N, M, SEEDS, MAX_STEPS = PRESET.d, PRESET.n, PRESET.m, PRESET.seeds, PRESET.max_steps
KAPPA, TOL = PRESET.kappa, PRESET.tol
DEVICE = torch.device("cpu") if SCALE == "smoke" else None   # not a protocol value
PARAMS = (f"d = {D}, n_P = n_Q = {N}, m = {M}, kappa = {KAPPA}, symmetric init, "
          f"{len(SEEDS)} initialisations, tol = {TOL}")
print(PARAMS)

# %%
xtr, ytr, _, _ = data.load_mnist()
fx, fy, _, _ = data.load_fashion_mnist()
to_sphere = theory.ntk.fit_sphere_map(xtr[:PRESET.sphere_fit], D)
IMAGES = {"mnist": (xtr, ytr), "fashion": (fx, fy)}


def task(source, a, b, draw):
    """n images of classes a (+1) and b (-1) of `source` (`"mnist"` or `"fashion"`), drawn
    with the key `draw`."""
    xa, t = data.binary_task(*IMAGES[source], a, b)
    idx = np.random.default_rng([draw, 2]).permutation(len(t))[:N]
    return to_sphere(xa[idx]), t[idx].astype(np.float64)


XP, yP = task(*PRESET.source_task)                    # P: MNIST 0 vs 1
# swapped labels: classes b, a at the draw of a vs b, the same images with the labels negated
TASKS = {name: task(*spec) for name, *spec in PRESET.target_tasks}

# %% [markdown]
# ## Simulation

# %%
t0 = time.perf_counter()
res = experiments.ntk_similarity.transfer_experiment(XP, yP, TASKS, m=M, kappa=KAPPA, seeds=SEEDS,
                                                     symmetric=PRESET.symmetric, tol=TOL,
                                                     max_steps=MAX_STEPS,
                                                     record_every=PRESET.record_every,
                                                     device=DEVICE)
print(f"{time.perf_counter() - t0:.0f} s; pretraining: {res.pretrain.steps} steps, "
      f"converged {res.pretrain.converged.all()}")
rows = []
for name in TASKS:
    r = res.tasks[name]
    print(f"{name:26s} lam_Q = {r.lam_Q:.3f}  steps (ft, scratch) = {r.steps}  "
          f"converged {r.converged}  flipped signs {100 * r.flips.mean():.1f} %")

# %% [markdown]
# ## Measured agreement
#
# For each task we compare the mean over initialisations with the closed form. The
# tolerance is the Bonferroni-corrected Student $t$ critical value times the Monte Carlo
# standard error of the mean (1 % family-wise over all cells of a check), plus, for the
# distances, the optimisation error certified by the stopping rule,
# $\|u - y\|/\sqrt{\lambda_{\min}(H_Q)}$ (an upper bound on the distance still to travel in
# the linearised dynamics).

# %%
names = list(TASKS)
grad2 = np.stack([res.tasks[k].grad2 for k in names])
dev = np.stack([res.tasks[k].dev for k in names])
dev_sc = np.stack([res.tasks[k].dev_scratch for k in names])
thm1 = np.array([res.tasks[k].thm1 for k in names])
thm2 = np.array([res.tasks[k].thm2 for k in names])
scr = np.array([res.tasks[k].scratch for k in names])
atol = np.array([res.tasks[k].atol for k in names])
A1 = tkstats.agreement(grad2, thm1)
A2 = tkstats.agreement(np.concatenate([dev, dev_sc]), np.r_[thm2, scr], atol=np.r_[atol, atol])
print(A1.summary("Thm 1, ||u_Q(P) - y_Q||^2 vs ||y_Q - y_P->Q||^2"))
print(A2.summary("Thm 2, ||W(Q) - W(P)||_F vs leading term (fine-tune and scratch)"))
print(f"\n{'task':26s} {'Thm 1':>8s} {'sim':>8s} | {'Thm 2':>7s} {'sim':>7s} {'rel':>6s} "
      f"| {'scratch':>7s} {'sim':>7s}")
for i, k in enumerate(names):
    print(f"{k:26s} {thm1[i]:8.2f} {grad2[i].mean():8.2f} | {thm2[i]:7.3f} "
          f"{dev[i].mean():7.3f} {dev[i].mean() / thm2[i] - 1:+6.1%} | {scr[i]:7.3f} "
          f"{dev_sc[i].mean():7.3f}")
rho1 = stats.spearmanr(thm1, grad2.mean(1))[0]
rho2 = stats.spearmanr(thm2, dev.mean(1))[0]
print(f"rank agreement across tasks (Spearman): Thm 1 {rho1:.2f}, Thm 2 {rho2:.2f}")

# %% [markdown]
# ## Thm 2 across task pairs

# %%
fig = figures.paper002.ntk_similarity_figure(res.tasks)
provenance.record(fig, "p002-thm12", seeds=list(SEEDS),
                  params=dict(d=D, n=N, m=M, kappa=KAPPA, tol=TOL, max_steps=MAX_STEPS),
                  caption="paper 002 Thms 1-2: NTK task similarity against measured fine-tuning")

# %% [markdown]
# *Thms 1-2.* (a) Distance travelled by gradient descent on the target task, from the
# pretrained weights (filled markers) and from the initialisation (open markers,
# $y_{P\to Q} = 0$), one marker shape per task, against Eq. 2's leading term; (b) squared
# gradient of the target loss with respect to the hidden activations at $W(P)$ against
# Eq. 1's task-similarity term. Means over the initialisations with one standard
# deviation; the closed forms use only the data. Pretraining on MNIST 0 vs 1; parameters
# as printed above (ours, the paper has no numerical experiment for Sec. 6). The
# swapped-label task, with inputs identical to the first task, travels farther than
# training from scratch: pretraining hurts when the labels disagree. Its open marker
# (scratch) lies on that of the first task, the two shapes drawn over each other in (a):
# on the same inputs, labels $-y_Q$ give the same theory value as $y_Q$ (Eq. 2 with
# $y_{P\to Q} = 0$ depends on $y_Q$ only through $y_Q^\top H_Q^{-1}y_Q$), and the
# measured distances from the initialisation nearly the same.

# %% [markdown]
# ## Fig. 2 in the NTK regime: deviation during fine-tuning
#
# Fig. 2 of the paper plots $\|W - W_0\|_F/\sqrt n$ during fine-tuning of ImageNet
# networks. In the wide network the whole trajectory has a closed form: after $k$ steps
# the weights have moved by $Z_Q\sum_{j<k}\eta(I - \eta H_Q)^j r$ (App. C, Eq. 42) with
# $r = y_Q - y_{P\to Q}$, so the deviation rises monotonically to Eq. 2's leading term
# (`ntk.deviation_path`).

# %%
fig = figures.paper002.deviation_path_figure(res.tasks)
provenance.record(fig, "p002-fig2-deviation", seeds=list(SEEDS),
                  params=dict(d=D, n=N, m=M, kappa=KAPPA, tol=TOL, max_steps=MAX_STEPS),
                  caption="paper 002 Fig. 2 analogue: weight deviation during fine-tuning")

# %% [markdown]
# *Fig. 2 analogue.* Deviation from the pretrained weights during fine-tuning, divided by
# $\sqrt{n}$ as in the paper, mean over initialisations (solid) and the infinite-width
# trajectory (dotted), same parameters as above. As in the paper's Fig. 2 the deviation
# increases monotonically and converges, to about Eq. 2's leading term over $\sqrt n$ (the
# table above gives the distances themselves), Thm 2's measure of how far the task is from
# what pretraining predicts. That order is not the order of the list above from similar to
# unrelated: in the `paper` run behind the book the new 0/1 images deviate least (a
# distance of 2.16), but the swapped-label task, the most unrelated by Thm 1, deviates less
# (7.42) than MNIST 3/8 and Fashion (9.40, 10.17).

# %% [markdown]
# ## Checks
#
# Thm 1 must agree within Monte Carlo error; the order of the tasks by measured distance
# must be the order predicted by Eq. 2 (the rank agreement the theory implies); and no
# measured distance may lie below Eq. 2's leading term by more than the tolerance.
#
# **Observation, not a disagreement.** The measured distances are not *equal* to the leading term within Monte
# Carlo error: they exceed it by a few per cent (column `rel` above), the same for every
# initialisation, so that the excess is many standard errors (the `max |z|` of the Thm 2
# summary). With few initialisations the Student critical value is so large that the
# comparison may still print "agree"; the $z$ values are the honest measure. This is the
# finite-width remainder of Eq. 2, $\mathrm{poly}(n, 1/\lambda)/m^{1/4}$: it is positive
# here, and largest (+9.1 % in the `paper` run behind the book) for the worst-conditioned
# task, Fashion, which has both the smallest $\lambda_Q$ (gradient descent moves the
# weights farthest per unit of label) and the most activation signs flipped (printed
# below). Neither orders the other tasks: the two with $\lambda_Q = 0.034$ differ most,
# +5.1 % with 0.7 % of the signs flipped (new 0/1 images) against +0.1 % with 3.9 %
# (swapped labels).
# Eq. 2 is an upper bound only up to this remainder, which the theorem lets vanish with the
# width; its leading term orders the tasks correctly. The decay with $m$ is measured, with a
# fitted rate, in the next section.

# %%
assert A1.ok, A1.summary("Thm 1")
assert rho1 > 1 - 1e-9 and rho2 > 1 - 1e-9, (rho1, rho2)
assert res.pretrain.converged.all()
below = (dev.mean(1) - thm2) < -(A2.critical * A2.se[:len(names)] + atol)
assert not below.any(), "a measured distance lies below Eq. 2's leading term"
for i, k in enumerate(names):
    ok = not (A2.disagree[i] or A2.disagree[len(names) + i])
    print(f"{k:26s} Thm 2 {'agrees' if ok else 'DISAGREES'} "
          f"(fine-tune excess {A2.excess[i]:.2f}, scratch {A2.excess[len(names) + i]:.2f}, "
          f"lam_Q = {res.tasks[k].lam_Q:.3f}, flipped {100 * res.tasks[k].flips.mean():.1f} %)"
          + ("" if res.tasks[k].converged else " [stopped at the step budget: no claim]"))

# %% [markdown]
# ## Thm 2 against width
#
# Eq. 2 is the leading term plus $O(\kappa^{1/2})$ plus a finite-width remainder
# $\mathrm{poly}(n_P, n_Q, \delta^{-1}, \lambda_P^{-1}, \lambda_Q^{-1}, \kappa^{-1})/m^{1/4}$.
# We rerun the pretraining and fine-tuning above on the same tasks at several widths $m$,
# with a tighter stopping rule $\|u - y\| \le 10^{-5}\|y\|$ (so that the distance still to
# travel at the stop, printed as `atol`, is small beside the excess), and fit the mean
# relative excess $\bar e(m) = \|W(Q) - W(P)\|_F/\text{leading term} - 1$ (mean over the
# initialisations) with $A\,m^{-\nu}$ on a log-log scale (weighted by the standard errors
# of the means; widths where a run did not converge are left out). The theorem's rate is
# $\nu = 1/4$; as the remainder is an upper bound, a faster decay agrees with it, and only
# an excess that does not decay would not. The widths, the seeds and the stopping rule are
# in `experiments.ntk_similarity.NTK_SIMILARITY_WIDTH` (ours; the paper states no width).

# %%
WPRESET = experiments.ntk_similarity.NTK_SIMILARITY_WIDTH[SCALE]
t0 = time.perf_counter()
wres = experiments.ntk_similarity.width_sweep(XP, yP, TASKS, widths=WPRESET.widths,
                                              seeds=WPRESET.seeds, kappa=KAPPA,
                                              symmetric=PRESET.symmetric, tol=WPRESET.tol,
                                              max_steps=WPRESET.max_steps,
                                              record_every=WPRESET.record_every)
decay = experiments.ntk_similarity.fit_excess_decay(wres)
WPARAMS = (f"d = {D}, n = {N}, m = {', '.join(map(str, WPRESET.widths))}, kappa = {KAPPA}, "
           f"symmetric init, {len(WPRESET.seeds)} initialisations, tol = {WPRESET.tol:g}")
print(WPARAMS)
print(f"{time.perf_counter() - t0:.0f} s here (seconds per width when computed: "
      f"{', '.join(f'{s:.0f}' for s in wres.seconds)}); pretraining converged "
      f"{wres.pre_converged.all()}")
print("\nmean relative excess over Eq. 2's leading term, % (standard error) "
      "[* a run did not converge]")
print(f"{'task':26s}" + "".join(f"{'m = ' + str(m):>17s}" for m in wres.widths))
for i, k in enumerate(wres.names):
    mean = 100 * wres.excess[:, i].mean(-1)
    se = 100 * wres.excess[:, i].std(-1, ddof=1) / np.sqrt(len(wres.seeds))
    print(f"{k:26s}" + "".join(
        f"{f'{mu:+.2f} ({s:.2f})' + ('*' if not c else ' '):>17s}"
        for mu, s, c in zip(mean, se, wres.converged[:, i])))
print(f"largest certified optimisation error relative to the leading term: "
      f"{100 * wres.atol.max():.3f} %")
print(f"\nfit A m^-nu of the mean excess (theorem's rate nu = {decay.rate}):")
for k, f in decay.fits.items():
    print(f"{k:26s} nu = {f.exponent:.2f} +- {f.se_exponent:.2f}  "
          f"(nu - 1/4 = {(f.exponent - decay.rate) / f.se_exponent:+.1f} standard errors)")
for k, why in decay.skipped.items():
    print(f"{k:26s} not fitted: {why}")

# %%
fig = figures.paper002.thm2_width_figure(wres, decay)
provenance.record(fig, "p002-thm2-width", seeds=list(WPRESET.seeds),
                  params=dict(d=D, n=N, widths=list(WPRESET.widths), kappa=KAPPA,
                              tol=WPRESET.tol, max_steps=WPRESET.max_steps),
                  caption="paper 002 Thm 2: excess of the fine-tuning distance over Eq. 2's "
                  "leading term against the width, with a fitted decay and the m^-1/4 rate")

# %% [markdown]
# *Thm 2 against width.* Relative excess of the measured $\|W(Q) - W(P)\|_F$ over Eq. 2's
# leading term against the width (log-log; mean over the initialisations, one standard
# error; open dots: a run did not converge; a mean $\le 0$ cannot be drawn), with the
# fitted $A\,m^{-\nu}$ per task (solid, $\nu \pm$ its standard error in the legend) and
# the slope $m^{-1/4}$ of Eq. 2's remainder (dashed). Parameters as printed above (ours;
# the paper has no numerical experiment for Sec. 6).

# %%
# Checks of what the text below states, at any scale: pretraining converged; the distance
# still to travel at the stop is below 0.1 % of the leading term; at least three tasks
# have a fitted decay; no fitted exponent lies below the theorem's 1/4 beyond Monte Carlo
# error (one-sided, 1 % family-wise over the fitted tasks), i.e. no excess decays more
# slowly than the theorem's remainder may.
assert wres.pre_converged.all()
assert len(decay.fits) >= 3, decay.skipped
assert wres.atol.max() < 1e-3, wres.atol.max()
z_crit = stats.norm.ppf(1 - 0.01 / len(decay.fits))
for k, f in decay.fits.items():
    assert f.exponent > decay.rate - z_crit * f.se_exponent, (k, f.exponent, f.se_exponent)

# %% [markdown]
# **Result** (paper preset: $d = 64$, $n = 80$, $m = 512, \dots, 4096$, 3 initialisations,
# tolerance $10^{-5}$; this build's numbers are printed above). The excess decays with the
# width on every task. At $m = 512$ the mean excess is 1.0-16 %; the 16 % is Fashion-MNIST, and
# one of its runs there stopped at the step budget, so that width is left out of its fit. At
# $m = 4096$ it is 0.03-5.2 %. Three initialisations make single widths noisy: MNIST 6/7
# rises from 1.0 % to 2.1 % between $m = 512$ and 1024. The fitted exponents run from
# $\nu = 0.40 \pm 0.11$ (Fashion-MNIST) to $0.90 \pm 0.88$ (MNIST 6/7, barely
# determined), every one above the theorem's $1/4$, by 0.7 to 4.1 standard errors. The
# excess is largest on the worst-conditioned task (Fashion-MNIST, $\lambda_Q = 0.016$), as
# the remainder's $\mathrm{poly}(\lambda_Q^{-1})$ suggests. The certified optimisation error
# is at most 0.024 % of the leading term.
#
# So the few per cent by which the distance exceeds Eq. 2's leading term at $m = 1024$ (the
# `DISAGREES` of the equality test above) is a finite-width remainder. It decays at least
# as fast as the theorem allows (the theorem bounds the remainder, so a faster decay agrees
# with it), and this is no disagreement with Thm 2. Not run: $m = 8192$ and $16384$, which
# are in `NTK_SIMILARITY_WIDTH_FULL` for a cluster. This section takes about 4-6 min on two
# cores, the widest width most of it.
