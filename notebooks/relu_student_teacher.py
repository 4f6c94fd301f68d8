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
# # Linear transfer in two-layer ReLU networks
#
# This chapter regenerates Fig. 3 of *Features are Fate* {cite:p}`featuresfate`
# (Sec. 4, App. C-D): linear transfer in a mean-field two-layer ReLU network trained on a
# ReLU teacher.
#
# **Setting** (paper 000, Eqs. 16-17, 142-143). Inputs $x\sim\mathcal{N}(0, I_d)$. The
# student is $f(x) = \frac1m\sum_{i=1}^m c_i\,\sigma(w_i^\top x)$ with
# $\sigma = \mathrm{relu}$ and $w_i\in\mathbb S^{d-1}$. The target teacher has $m_*$ units
# on the sphere, $f_t^*(x) = \frac1{m_*}\sum_i c_i^*\sigma(w_i^{*\top}x)$ (we draw
# $c_i^*\sim\mathcal{N}(0,1)$; the paper does not state their law); the source teacher
# $f_s^*$ keeps all but a random fraction $\mu$ of those units, rescaled by $1/(1-\mu)$.
#
# * **pretraining**: gradient descent on the *exact* population loss
#   $E_x(f - f_s^*)^2$, a closed form in the arc-cosine kernel
#   $E_x[\sigma(w\cdot x)\sigma(v\cdot x)] = \frac{\|w\|\|v\|}{2\pi}(\sin t + (\pi - t)\cos t)$
#   {cite:p}`cho2009kernel` (paper 000, Eq. 150), from readout $c_i = 10^{-7}$;
# * **linear transfer**: the units are frozen and the readout is the minimum-norm
#   least-squares fit to $n$ noiseless target samples; its risk tends to
#   $\|P_\perp f_t^*\|^2$, the part of the target outside the span of the units (Eq. 18,
#   App. C, Eqs. 151-156);
# * **scratch**: the same network trained on the $n$ target samples from the same small
#   readout initialisation.
#
# Every risk is an exact population risk $E_x(f - f_t^*)^2$ (closed form, no test set).
# The transferability is $\mathcal{T} = \mathcal{R}_{sc} - \mathcal{R}_{lt}$, divided by the
# target variance.

# %% tags=["hide-input"]
import dataclasses
import time

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
# The paper (App. D.2; $\sigma = 0$: the caption of Fig. 3) uses $d = 100$, $m = 1000$,
# $m_* = 100$, $\sigma = 0$, readout initialisation $10^{-7}$, learning rate $0.01\,m$ for up to $10^5$ full-batch steps or a
# training loss of $10^{-6}$, and averages over 100 data draws and 10 seeds. We keep the
# architecture and the initialisation, but not the fixed step, and our horizon is twice the
# paper's. Time is counted as $t = \sum_k h_k$ for updates $c \leftarrow c - h\,m\,\partial_c\mathcal L$
# (and the same for $W$) of our losses, which are mean squared errors *without* the factor
# $\tfrac12$ of the paper's Eqs. 2-3. The paper's learning rate $0.01\,m$ on Eqs. 2-3 is
# therefore a step $h = 0.005$ here, and its $10^5$ steps reach $t = 500$; we stop at
# $t = 10^3$ (an earlier version of this page said the two were the same; the sensitivity
# of the results to the horizon is part of issue 16). We take the
# largest step that decreases the loss (Armijo backtracking, growing by 1.2 after every
# accepted step) capped at $h = 1$ (200 times the paper's; the readout's curvature bound
# is $h \approx 6$ for random units and $2$ for fully aligned ones), and stop at $t = 10^3$, at a relative loss $10^{-6}$ or at the step
# cap; a stall counts as convergence only while the step is at least the paper's 0.005
# (below it the run is *stuck*: see the sensitivity sections). (At `smoke` scale, removing
# the cap changes the numbers of panels (a)-(d) by less than 2 %.) The paper's 10 teachers
# x 100 data draws are reduced to 1 teacher, 8 target draws per $(\mu, n)$ for linear
# transfer and 4 scratch runs per $n$ (each its own data and initialisation); the standard
# errors printed and drawn come from these draws, and the loss curves at the end show where
# each run stopped. Scratch training computes its sample loss and gradient in double
# precision (`grad_dtype`, ours). In single precision (`grad_dtype="float32"`, the iterate
# still double) one gradient at $n = 6400$ takes 1.8 times less time, and the chapter's 14
# scratch cells trained in 913 s against 2,183 s at `paper` scale (both beside other jobs),
# with the same steps and stopping reasons; but printed numbers moved in their last digit
# (the fit's prefactor 5.86 to 5.85, the predicted boundary at $\mu = 0$ from 59,427 to
# 59,505), so the book keeps double precision; for a quick exploratory run it is one
# parameter. Even so the chapter is long at `paper` scale. On this project's 2-core
# machine (2026-11-27) its experiments took about 1.8 CPU-hours: Fig. 3 together with App.
# D.2's horizon and absolute tolerance, read off the same runs, 43 min (beside other jobs;
# trained one by one the three took 30, 20 and 33 min, two at a time, and gave the same
# numbers bit for bit), Fig. 9 7.5 min and its finer grid 15, the teacher of unit norm 25
# and its Fig. 9 18. The $n$ grid reaches $6400 = 6.4\,m$ because the paper's
# boundary is a large-$n$ statement (see panel (f)).
# The values are the presets `FIG3["paper"]` and `FIG3["smoke"]` of
# `transferkit.experiments.relu_student_teacher`, each with the source of its value.
#
# **The full protocol** is the preset `FIG3_FULL`: 10 teachers, 100 data realisations and
# 10 initialisation seeds, $10^5$ steps at the paper's fixed step $h = 0.005$, every step
# taken (`fixed_step`), ending at its horizon $t = 500$ or at its absolute loss $10^{-6}$ on
# Eqs. 2-3 (`abs_tol = 2e-6` here); ours are the $\mu$ and $n$ grids and the teacher
# readouts. It is for a Dask cluster
# (`TRANSFERKIT_SCHEDULER=tcp://...`; every training is in a `transferkit.sweep` cell, and a
# test runs the experiment on a local Dask cluster and gets the local numbers bit for bit),
# spread over 80 cells: pretraining one cell per teacher (10), and scratch training and
# linear transfer one cell per $(n, \text{teacher})$ (70), the largest $n$ about half of the
# work (a test checks that these cells give, bit for bit, the numbers of one batch of all
# teachers). Linear transfer is fitted a few draws at a time, so a cell needs about 2 GB
# whatever the number of draws (at once, the 100 draws at $n = 6400$ would need over 40 GB).
# It is not run here: at the rates of `benchmarks/relu_speed.py` (README speed table) its
# pretraining alone, 60 students of $10^5$ steps, takes about two CPU-days, and its
# scratch training, 100 runs of $10^5$ steps at each $n$ up to 6400, over a CPU-month.
# Fig. 9 at the same counts is `ANCHORED_FULL` on that run (100 target sets per
# $(\lambda, n)$ and teacher; anchored pretraining one cell per $\lambda$, 10 teachers each,
# and linear transfer one cell per $(n, \lambda)$, also fitted a few draws at a time; tests
# check that the cells per $\lambda$ give the numbers of one batch, also on a local Dask
# cluster).

# %%
# the preset of this scale (smoke: the same pipeline at a small size), with its grids as arrays
PRESET = experiments.relu_student_teacher.FIG3[SCALE]
P = dict(dataclasses.asdict(PRESET), mus=np.array(PRESET.mus), ns=np.array(PRESET.ns))
print(P)

# %%
# App. D.2's horizon and absolute tolerance (the sensitivity sections below) stop runs no
# later than ours: their runs are ours up to where they stop, read off the same training
EARLIER = {"t = 500 (App. D.2)": dict(max_time=500.0),       # App. D.2: 1e5 steps x 0.01 m
           "abs. tol. 2e-6 (App. D.2)": dict(abs_tol=2e-6)}  # App. D.2: loss 1e-6 on Eqs. 2-3
t0 = time.perf_counter()
res, EARLY = experiments.relu_student_teacher.fig3_earlier_stops(EARLIER, **P)
print(f"wall time {time.perf_counter() - t0:.0f} s (with the runs under App. D.2's horizon "
      "and absolute tolerance)")
pre = res.pretrain
print("pretraining: relative final loss (per mu, teacher)\n", res.pretrain_rel.round(5))
print("pretraining steps:", pre.steps, "gradient-flow time:", pre.time.round(0))
for n, info, rel in zip(res.ns, res.scratch, res.scratch_loss_rel):
    print(f"scratch n = {n}: relative training loss {rel.max():.1e} "
          f"(worst), steps {info.steps.max()}, time {info.time.min():.0f}")

# %% [markdown]
# ## Fig. 3 (a, b): the pretrained kernel sparsifies onto the source teacher's units

# %%
i_mu = len(res.mus) // 2
fig = figures.paper000_relu.gram_figure(*res.grams[i_mu], res.gram_init)
provenance.record(fig, "fig3ab-gram", params=dict(P, mu=res.mus[i_mu]), seeds=P["seed"],
                  caption="paper 000 Fig. 3(a, b): Gram matrices of the pretrained student "
                  "and of the source teacher (ReLU)")
print(f"mu = {res.mus[i_mu]}: relative Frobenius distance pretrained vs source "
      f"{res.gram_distance[i_mu]:.3f} (random initial units vs source: "
      f"{res.gram_init_distance[i_mu]:.3f})")
print("all mu:", dict(zip(res.mus.round(2), res.gram_distance.round(3))))

# %% [markdown]
# *Fig. 3 (a, b).* Gram matrices of the kernel $\frac1m\sum_i\sigma(w_i\cdot x)
# \sigma(w_i\cdot x')$ of the pretrained student (a) and of the source teacher's
# $\frac1{(1-\mu)m_*}\sum_{i\notin\mathcal{A}}\sigma(w_i^*\cdot x)\sigma(w_i^*\cdot x')$
# (b), on the same Gaussian inputs, at the $\mu$ printed above; the right panel is the
# kernel of the random initial units, for scale. The number printed is
# $\|G_a - G_b\|_F / \|G_b\|_F$. Pretraining ran to the horizon ($t = 10^3$) at every $\mu$
# without reaching its tolerance (steps, time and relative source loss printed with the
# parameters; 0.0007 to 0.026 in the `paper` run behind the book): panels (a, b), (d)
# and (e) describe networks stopped at the horizon, and the sensitivity sections show how
# they move with it.

# %%
# checks: pretraining ended at a small source loss (at the horizon, not at its tolerance),
# its units span the source teacher (exact projection, App. C), and the kernel moved towards
# the source teacher's
assert np.all(res.pretrain_rel < 0.05), res.pretrain_rel
assert np.all(res.perp_source < 0.05), res.perp_source
assert np.all(res.gram_distance < res.gram_init_distance), res.gram_distance

# %% [markdown]
# ## Fig. 3 (c): scratch training follows a power law in $n$

# %%
sr = experiments.relu_student_teacher.scratch_curve(res)
Rsc_mean = sr.mean
law = experiments.relu_student_teacher.scratch_law(res)
law_conv = experiments.relu_student_teacher.scratch_law(res, converged_only=True)
A, nu, se_nu = law.A, law.nu, law.se_nu
print(f"fit: R_sc / Var f_t = {A:.3g} n^(-{nu:.3f} +- {se_nu:.3f})  (paper: nu = 1.18)")
print(f"fit on {law}; on {law_conv}")
BIG_N = sr.ns >= sr.ns[len(sr.ns) // 2]  # the local slope on the upper half of the n grid
_, NU_BIG, _, SE_BIG = stats.fit_power_law(sr.ns[BIG_N], sr.mean[BIG_N], sr.se[BIG_N])
print(f"fit over n >= {sr.ns[BIG_N][0]} alone: nu = {NU_BIG:.3f} +- {SE_BIG:.3f} (n at which "
      f"every run converged: {sr.ns[BIG_N & sr.converged].tolist()})")
# how the runs differ from App. D.2 and the caption of Fig. 3 (for the figure captions)
REDUCED = (f"{P['teachers']} teacher(s), {P['scratch_seeds']} scratch runs and {P['draws']} "
           f"linear-transfer draws per n (paper: 10 teachers, 10 seeds, 100 realisations), "
           f"relative tolerance {P['tol']:g}, step cap h = {P['max_step']:g} (paper: fixed 0.005)")
fig = figures.paper000_relu.scratch_power_law_figure(sr.ns, sr.mean, sr.se, A, nu, se_nu,
                                                     converged=sr.converged, converged_fit=law_conv)
provenance.record(fig, "fig3c-scratch-power-law", params=P, seeds=P["seed"],
                  caption="paper 000 Fig. 3(c): scratch risk of the ReLU network against n, "
                  f"with power-law fits on all n and on the n whose runs converged; t = "
                  f"{P['max_time']:g} (paper: 500); {REDUCED}")

# %% [markdown]
# *Fig. 3 (c).* Exact population risk of the scratch-trained network (mean over teachers
# and seeds, error bars one standard error) against $n$, with the weighted least-squares
# power law $A n^{-\nu}$ and the standard error of $\nu$ (paper: $\nu = 1.18$; there is no
# theory for this curve, the fit is empirical as in the paper).
#
# **Not reproduced** (not a finding: this run does not follow the paper's stated protocol,
# App. D.2 -- it uses 1 teacher instead of 10 and 8 linear-transfer draws / 4 scratch runs
# instead of 100 realisations, a relative rather than absolute loss tolerance and twice the
# paper's horizon, its runs with $n\ge 1600$ stop at the horizon and weigh most in the fit,
# and the paper leaves the teacher readouts open; the sections *Sensitivity* below run the
# paper's horizon, its absolute tolerance and a teacher of unit norm). Our exponent is not
# the paper's. In the run behind the published book
# (`paper` scale, $n$ from 100 to 6400) we measure $\nu = 0.47\pm0.02$ on all runs and
# $\nu = 0.40\pm0.03$ on the four $n$ (100 to 800) whose runs all converged (the runs at
# $n\ge 1600$ stop at the horizon: hollow markers), and the local
# slope does not steepen towards 1.18 over the grid (the fit over $n\ge 800$ alone, printed,
# gives $\nu \approx 0.5$, but only $n = 800$ of its four $n$ converged); at `smoke` scale ($d = 10$, $m = 100$) it is about 1.4 on all runs
# (too few converged $n$ for the second fit). The teacher
# has $m_* d = 10^4$ parameters, so at $n\le 6400$ the scratch network is in the
# under-sampled regime where a slow decay is expected; the paper does not state its $n$
# range, its teacher readouts or its averaging over $n$, and we could not find settings
# of ours that give 1.18. The boundary of panel (e) uses *our* fitted law, so it remains a
# test of the paper's argument.

# %%
assert np.all(np.diff(Rsc_mean) < 0), Rsc_mean   # more data, lower scratch risk
assert nu > 0
if PRESET == experiments.relu_student_teacher.FIG3["paper"]:   # what the prose above claims
    assert list(law_conv.ns) == [100, 200, 400, 800], law_conv
    for fit in (law, law_conv):                    # far from the paper's 1.18 either way
        assert fit.nu + 3 * fit.se_nu < 1.18, fit

# %% [markdown]
# ## Fig. 3 (d): the target's component outside the pretrained span

# %%
ps, pt = res.perp_sim, res.perp_theory
fig = figures.paper000_relu.out_of_span_figure(res.mus, ps, pt, res.perp_init)
provenance.record(fig, "fig3d-out-of-span", params=P, seeds=P["seed"],
                  caption="paper 000 Fig. 3(d): target norm outside the span of the "
                  "pretrained ReLU units")
print("perp (pretrained):", ps.mean(1).round(4))
print("perp (source units):", pt.mean(1).round(4))
print("perp (random initial units):", res.perp_init.mean(1).round(4))

# %% [markdown]
# *Fig. 3 (d).* $\|P_\perp f_t^*\|^2/\|f_t^*\|^2$ (Eqs. 155-156, pseudo-inverse cutoff
# $10^{-10}$ of the largest eigenvalue) for the units of the pretrained student (markers)
# and for the kept units of the source teacher (line), i.e. the value if the pretrained
# kernel had sparsified exactly onto the source's features; the dashed line is the value
# for the random initial units.
#
# **What this shows.** The pretrained span holds much *more* of the target than the
# source teacher's units do (markers far below the line at large $\mu$). The kernel of
# Sec. 4, $\frac1m\sum_i\sigma(w_i\cdot x)\sigma(w_i\cdot x')$, weighs every unit
# equally, whatever its readout $c_i$; units that never acquired a large readout stay
# close to their random initial directions and keep spanning the constant and linear
# parts of every ReLU feature (of a unit's squared $L_2$ norm $\frac12$, the constant
# part is $\frac1{2\pi}$, the linear part $\frac14$ and only
# $\frac14 - \frac1{2\pi}\approx 0.09$ is of higher order), including those of the
# ablated target units. The Gram-matrix distance of
# panels (a, b) tells the same story: pretraining moves the kernel towards the source
# teacher's, but neither at our horizon nor at the paper's (the sensitivity sections) is it
# "nearly indistinguishable" from it.

# %%
# checks: zero at mu = 0 for the source units; both grow with mu (paper 000, Fig. 3d;
# for the pretrained units between mu values at least 0.2 apart)
assert np.all(pt[0] < 1e-8)
assert np.all(np.diff(pt.mean(1)) > 0)
assert np.all(np.diff(ps.mean(1))[np.diff(res.mus) >= 0.2 - 1e-9] > 0), ps.mean(1)

# %% [markdown]
# ## Fig. 3 (e): transferability over $(\mu, n)$ and the predicted boundary

# %%
tm = experiments.relu_student_teacher.transfer_map(res, law)
Tmap, perp_var, n_star = tm.T, tm.perp_var, tm.n_star
fig = figures.paper000_relu.transfer_map_figure(res.ns, res.mus, Tmap, n_star)
provenance.record(fig, "fig3e-transfer-map", params=P, seeds=P["seed"],
                  caption="paper 000 Fig. 3(e): ReLU transferability over (mu, n) "
                  "with the predicted boundary")
print("predicted boundary n*(mu):", dict(zip(res.mus.round(2), np.round(n_star, 0))))
if law_conv.nu is not None:         # the boundary under the fit on converged runs only
    print("predicted boundary with the fit on converged n only:", dict(zip(
        res.mus.round(2),
        np.round(experiments.relu_student_teacher.transfer_map(res, law_conv).n_star, 0))))
J_M = int(np.argmin(np.abs(np.log(res.ns / res.m))))   # the n nearest m: the interpolation peak
print(f"transferability at n = {res.ns[J_M]} (nearest m = {res.m}):",
      ", ".join(f"mu = {mu:g}: {t:+.3f}" for mu, t in zip(res.mus, Tmap[:, J_M])))

# %% [markdown]
# *Fig. 3 (e).* Transferability $(\mathcal{R}_{sc} - \mathcal{R}_{lt})/\mathrm{Var}f_t^*$
# (blue: pretraining helps; red: it hurts; clipped to $[-1, 1]$ for display), with the predicted boundary (grey circles,
# where $\|P_\perp f_t^*\|^2 = A n^{-\nu}$ with the fit of panel (c); a circle is missing
# where the predicted $n^*$ is outside the grid). Linear-transfer risks are averaged over
# the target draws and teachers printed above. The columns whose scratch runs stopped at
# the horizon ($n\ge 1600$ in the `paper` run behind the book; hollow markers of panel
# (c)) compare linear transfer with scratch networks that had not reached their
# tolerance, and depend on the horizon (the section on $t = 500$); the boundary is
# printed under both fits of panel (c), on all runs (drawn) and on converged runs only
# (in the `paper` run behind the book the second moves it to larger $n$ at $\mu\le0.5$,
# hardly at $\mu = 0.7$ and 0.9, and predicts the same signs at the largest $n$).
#
# Near $n = m$ the linear-transfer risk has the interpolation peak of minimum-norm
# regression on $m$ fixed features (the number of features is $m$, printed with the
# parameters): there the $n$-dependent term $C(n)$ of Eq. 18 is large, and the paper's
# boundary, which neglects $C(n)$, cannot see it. In the run behind the published book
# (`paper` scale; the column at $n = 800$ is printed above) transfer there is negative from
# $\mu = 0.3$ on and most negative at $\mu = 0.9$, where the peak is highest; at
# $\mu\le 0.1$, where the pretrained span holds nearly all of the target, it stays slightly
# positive. The boundary is a large-$n$ statement, as the paper notes.

# %% [markdown]
# ### Fig. 3 (e), interactive
#
# The same transferability map (colours clipped to $[-1, 1]$ as above); hovering shows
# $n$, $\mu$ and the unclipped value $(\mathcal{R}_{sc} - \mathcal{R}_{lt})/\mathrm{Var} f_t^*$
# of each cell.

# %%
fig = figures.paper000_relu.transfer_map_interactive(res.ns, res.mus, Tmap)
provenance.record(
    fig, "fig3e-interactive", params=P, seeds=P["seed"],
    caption="paper 000 Fig. 3(e) as an interactive heat map (ReLU transferability)")

# %%
# checks: Eq. 18 lower bound (exact: no function in the span beats the projection) and
# the sign predicted by the boundary at the largest n
perp_abs = res.perp_sim * res.teacher_norm[None, :]
assert np.all(res.R_lt >= perp_abs[:, None, :, None] * (1 - 1e-8))
pred_neg = perp_var > A * res.ns[-1] ** -nu
print("largest n: observed negative transfer", (Tmap[:, -1] < 0).astype(int),
      "predicted", pred_neg.astype(int), *([] if law_conv.nu is None else [
          f"(with the fit on converged n: "
          f"{(perp_var > law_conv.A * res.ns[-1] ** -law_conv.nu).astype(int)})"]))
assert np.mean((Tmap[:, -1] < 0) == pred_neg) >= 0.75, (Tmap[:, -1], pred_neg)
if PRESET == experiments.relu_student_teacher.FIG3["paper"]:   # the prose on n near m
    col = Tmap[:, J_M]
    assert np.all(col[:2] > 0) and np.all(col[2:] < 0) and np.argmin(col) == len(col) - 1, col

# %% [markdown]
# ## Fig. 3 (f), not in the paper: the term $C(n)$ the boundary neglects
#
# The paper predicts the linear-transfer risk by $\|P_\perp f_t^*\|^2$ alone and says the
# $n$-dependent rest vanishes at large $n$. For $n > m$ the readout is fitted by least
# squares on $m$ features, and the part of the target outside their span acts as noise
# uncorrelated with them; for *Gaussian* features the mean risk is then exactly
# $\|P_\perp f_t^*\|^2 (n-1)/(n-m-1)$ (`relu.least_squares_factor`). ReLU features are
# not Gaussian, so this is an approximation; we measure how good it is. Below $n = m$ the
# readout interpolates and the ratio has the interpolation peak at $n \approx m$.

# %%
ratio = res.R_lt / perp_abs[:, None, :, None]                 # (mu, n, teachers, draws)
ratio = ratio.transpose(1, 0, 2, 3).reshape(len(res.ns), len(res.mus), -1)  # (n, mu, draws)
factor = theory.relu.least_squares_factor(res.ns, res.m)
fig = figures.paper000_relu.least_squares_factor_figure(res.ns, res.mus, ratio, res.m)
provenance.record(fig, "fig3f-least-squares-factor", params=P, seeds=P["seed"],
                  caption="not in paper 000: linear-transfer risk over the out-of-span norm "
                  "against n, with the Gaussian least-squares factor (n-1)/(n-m-1)")
big = res.ns >= 2 * res.m
if big.any():
    CHECK_F = stats.agreement(ratio[big], np.broadcast_to(factor[big, None], ratio[big].shape[:-1]))
    print(CHECK_F.summary("R_lt / ||P_perp f||^2 against (n-1)/(n-m-1), n >= 2m"))
print("mean ratio per n:", dict(zip(res.ns, ratio.mean(axis=(1, 2)).round(3))))
print("(n-1)/(n-m-1):   ", dict(zip(res.ns, np.round(factor, 3))))

# %% [markdown]
# *Fig. 3 (f).* Linear-transfer risk divided by $\|P_\perp f_t^*\|^2$ for every $\mu$
# (markers, mean and standard error over the target draws; slightly offset in $n$ for
# legibility) and the Gaussian least-squares factor (line); dotted: $n = m$. Where
# $n\ge 2m$ the printed agreement check compares them at the Bonferroni-corrected 1 %
# level. At the largest $n$ the factor is still about $1 + m/(n - m)$ (1.19 at $n = 6400$,
# printed): the paper's boundary
# (which sets it to 1) is only reached for $n\gg m$, which is why its predicted signs
# match the observed ones at the largest $n$ of the grid and miss at $n$ near $m$.

# %%
# check: where n >= 2m the ReLU features behave like Gaussian ones for least squares
if big.any():
    assert CHECK_F.ok, CHECK_F.summary("least-squares factor")

# %% [markdown]
# ## Fig. 9 of the paper (App. E): pretraining held near its random start
#
# The paper's own protocol for "between lazy and rich": at the largest ablation $\mu$ (the
# caption of Fig. 9: $\mu = 0.9$) pretrain with the penalty $\lambda\sum_i\|w_i - w_i^{(0)}\|^2$ added to the source loss,
# which keeps the units near their random initial directions (lazy as
# $\lambda\to\infty$), for $\lambda\in\{0, 10^{-4}, 10^{-3}, 10^{-2}, 10^{-1}\}$; then
# linear transfer of each pretrained model, and "the model with the best generalization
# error". We choose $\lambda$ per $n$ on half of the target draws and report the
# transferability of that choice on the other half, so that the selection is not scored on
# the data that made it (`relu.anchored_experiment`; scratch risks as in panel (c), which
# do not depend on $\lambda$). The chapter *Between lazy and rich* sweeps the
# initialisation scale instead, a protocol of ours.
#
# **Units of $\lambda$.** The paper adds the penalty to its Eq. 2, which carries a factor
# $\frac12$ that our loss does not (as for the learning rate and the tolerance above), so
# the sections below take $\lambda$ in the paper's units and train with
# $2\lambda\sum_i\|w_i-w_i^{(0)}\|^2$ added to our loss (`anchored_experiment`): the
# paper's grid at the paper's strength. Until 2026-11-28 the chapter ran the same values
# at half that strength; the held-out transferabilities of the paper's grid were then
# $+0.018$, $-0.041$, $-0.165$, $-0.955$, $-0.390$, $-0.184$ and $-0.175$ from $n = 100$
# to 6400, within 0.01 of those printed below.

# %%
AP = experiments.relu_student_teacher.ANCHORED[SCALE]    # the paper's lambdas (App. E, its units), ours
LAMBDAS, FINE = np.array(AP.lambdas), np.array(AP.fine_lambdas)
MU_9 = float(res.mus[-1])


def anchored_run(base=res):
    """Fig. 9 on the finer grid on the Fig. 3 run ``base``: anchored pretraining and linear
    transfer (the paper's grid is read off it)."""
    t0 = time.perf_counter()
    an = experiments.relu_student_teacher.anchored_experiment(base, FINE, MU_9, draws=AP.draws,
                                                              seed=AP.seed)
    print(f"mu = {MU_9}, wall time {time.perf_counter() - t0:.0f} s ({len(FINE)} lambdas)")
    return an


def anchored_section(an, base=res):
    """Print Fig. 9's numbers of ``an`` and the held-out choice of lambda among its values."""
    lambdas = an.lambdas
    print("sum_i ||w_i - w_i(0)||^2 / m per lambda:", an.anchor_dist.mean(1).round(4))
    print("||P_perp f_t||^2 / ||f_t||^2 per lambda:", an.perp.mean(1).round(4),
          f"(random units: {base.perp_init[-1].mean():.4f})")
    print("pretraining source risk / ||f_s||^2 per lambda:", an.source_rel.mean(1).round(4))
    reasons = an.info.stop_reasons().reshape(len(lambdas), -1)
    print("pretraining stopped by, per lambda:",
          {f"{lam:g}": "/".join(sorted(set(r))) for lam, r in zip(lambdas, reasons)},
          f"(t = {an.info.time.min():.0f} to {an.info.time.max():.0f})")
    sel = experiments.relu_student_teacher.select_lambda(base, an)
    for j, n in enumerate(base.ns):
        print(f"n = {n:5d}: best lambda {lambdas[sel.best[j]]:g}: T = {sel.T_best[j]:+.3f} +- "
              f"{sel.T_best_se[j]:.3f}; rich (lambda = 0): {sel.T_first[j]:+.3f} +- "
              f"{sel.T_first_se[j]:.3f}")
    return sel


an_f = anchored_run()                      # the finer grid, of which the paper's is a part
an = an_f.restrict(LAMBDAS)
sel = anchored_section(an)
fig = figures.paper000_relu.anchored_figure(res.ns, LAMBDAS, sel.T, sel.T_best, sel.T_best_se)
provenance.record(fig, "fig9-anchored-pretraining", params=dict(P, lambdas=LAMBDAS, mu=MU_9,
                                                                fine_lambdas=FINE),
                  seeds=[P["seed"], AP.seed],
                  caption="paper 000 Fig. 9 (App. E): transferability after pretraining with "
                  "the penalty lambda sum ||w_i - w_i(0)||^2, per lambda and for the best lambda "
                  "on held-out draws; the paper's lambdas read off the finer grid's run; "
                  f"{AP.draws} target sets per (lambda, n), horizon t = {P['max_time']:g} (paper: 500); "
                  f"{REDUCED}")

# %% [markdown]
# *Fig. 9 (paper 000, App. E).* Transferability of linear transfer after pretraining with
# the penalty $\lambda\sum_i\|w_i-w_i^{(0)}\|^2$ at the $\mu$ printed above (thin lines:
# each $\lambda$, mean over all draws, dark for the rich $\lambda = 0$ to light for the
# largest; thick: the $\lambda$ chosen per $n$ on half of the draws, mean and standard
# error on the other half), against the scratch risks of panel (c). The axis stops at
# $-1.5$: near $n = m$ the rich model lies far below (the values are printed above); the
# same holds for the two Fig. 9 figures below. Same network, teachers, training settings and $n$ grid as above; the paper does not
# state its $n$ grid or how it chose $\lambda$. The runs are those of the finer grid of the
# next section (`ANCHORED[...].fine_lambdas`, which holds the paper's values), read at the
# paper's values (`AnchoredResult.restrict`): one run for both grids, compared on the same
# initial units and target draws. Until 2026-11-29 the paper's grid had a run of its own
# (other initial units and draws, about 3 minutes more); its held-out transferabilities
# were then $+0.017$, $-0.046$, $-0.171$, $-0.955$, $-0.398$, $-0.188$ and $-0.178$ from
# $n = 100$ to 6400: within the two runs' combined standard error of those printed above
# at every $n$ but 200, where that run's held-in draws chose $10^{-4}$ and this run's
# choose $10^{-3}$ ($-0.046\pm0.010$ against $-0.083\pm0.005$).
#
# **Not reproduced** (numbers from the `paper` scale run behind the published book,
# $\mu = 0.9$; not a finding, for the same reasons as Fig. 3 (c) above: reduced counts,
# runs that did not reach their tolerance (the anchored pretraining stopped at the horizon
# for $\lambda\le10^{-4}$ and at the step cap for $\lambda\ge10^{-3}$, printed above), a
# $\lambda$ grid whose strength depends on the teacher scale the paper leaves open).
# The penalty does what the paper says to the features: already at $\lambda = 10^{-4}$ the
# units stay within $\sum_i\|w_i-w_i^{(0)}\|^2/m \approx 3\cdot10^{-3}$ of their start and
# $\|P_\perp f_t\|^2/\|f_t\|^2$ is that of random units (0.14-0.15 against 0.17 for
# $\lambda = 0$). It removes most of the negative transfer of the rich model (at $n = 400$,
# $-0.18$ against $-0.49$ in units of the target variance; at $n = 6400$, $-0.18$ against
# $-0.22$), but it does not *avoid* negative transfer: with the held-out choice of
# $\lambda$ the transferability is consistent with zero only at $n = 100$ and significantly
# negative at every larger $n$ of our grid. In our runs scratch training of the same
# network beats linear transfer on nearly-random features once $n\ge 200$. The paper's
# grid has nothing between $\lambda = 0$ (rich) and $10^{-4}$ (already nearly lazy), where
# an intermediate regime would lie; the init-scale sweep of the chapter *Between lazy and
# rich* samples that axis continuously.

# %%
# checks: a larger penalty keeps the units closer to their start (the penalty term of a
# penalised minimiser does not increase with lambda), and the exact Eq. 18 lower bound
perp_an = an.perp * res.teacher_norm[None, :]
assert np.all(an.R_lt >= perp_an[:, None, :, None] * (1 - 1e-8))
assert np.all(np.diff(an.anchor_dist.mean(1)) < 0), an.anchor_dist
if PRESET == experiments.relu_student_teacher.FIG3["paper"]:   # what the prose above claims
    assert abs(sel.T_best[0]) < 2 * sel.T_best_se[0], (sel.T_best, sel.T_best_se)
    assert np.all(sel.T_best[1:] + 3 * sel.T_best_se[1:] < 0), (sel.T_best, sel.T_best_se)
    assert np.all(sel.T_best > sel.T_first), (sel.T_best, sel.T_first)

# %% [markdown]
# ### Between rich and lazy: the penalty below $\lambda = 10^{-4}$ (a choice the paper leaves open)
#
# The strength of the penalty is relative to the source loss, whose scale the teacher's
# readouts set, and the paper states neither; at the chapter's teacher the paper's grid
# jumps from rich ($\lambda = 0$) to nearly lazy ($10^{-4}$). This section repeats Fig. 9
# with half decades from $10^{-7}$ to $10^{-4}$ added to the paper's values
# (`ANCHORED[...].fine_lambdas`, ours), the run of the section above (whose numbers are
# this run's at the paper's values), and chooses $\lambda$ per $n$ on held-in draws twice:
# among the paper's values only (the section above), and among all. Same teacher, network, training settings, $\mu$ and $n$ grid
# as above.

# %%
def choice_table(sel_paper, sel_all):
    """The lambda chosen per n among the paper's values and among all, with its held-out T."""
    print("\n    n   paper's grid: lambda, T (held out)      finer grid: lambda, T (held out)")
    for j, n in enumerate(res.ns):
        print(f"{n:5d}   {FINE[sel_paper.best[j]]:7.0e}  {sel_paper.T_best[j]:+.3f} +- "
              f"{sel_paper.T_best_se[j]:.3f}          {FINE[sel_all.best[j]]:7.0e}  "
              f"{sel_all.T_best[j]:+.3f} +- {sel_all.T_best_se[j]:.3f}")


sel_f = anchored_section(an_f)
sel_fp = experiments.relu_student_teacher.select_lambda(res, an_f, among=LAMBDAS)
assert np.array_equal(FINE[sel_fp.best], LAMBDAS[sel.best])       # the section above
assert np.array_equal(sel_fp.T_best, sel.T_best)
choice_table(sel_fp, sel_f)
fig = figures.paper000_relu.anchored_figure(res.ns, FINE, sel_f.T, sel_f.T_best, sel_f.T_best_se)
provenance.record(fig, "fig9-anchored-fine", params=dict(P, lambdas=FINE, mu=MU_9),
                  seeds=[P["seed"], AP.seed],
                  caption="paper 000 Fig. 9 with half decades of lambda below 1e-4 (ours): "
                  "transferability per lambda and for the best lambda on held-out draws; "
                  f"{AP.draws} target sets per (lambda, n), horizon t = {P['max_time']:g} (paper: 500); "
                  f"{REDUCED}")

# %% [markdown]
# *Fig. 9 on a finer grid (ours).* As Fig. 9 above, with the half decades of $\lambda$ from
# $10^{-7}$ to $3\cdot10^{-5}$ added (thin lines), on the same runs as Fig. 9 above; the thick line is the $\lambda$ chosen per $n$ among all values on half of the
# draws, scored on the other half; the table above also gives the choice among the paper's
# values only, on the same draws.
#
# **Not reproduced; not a finding.** The same reduced protocol as above: 1 teacher, 8 draws
# per $(\lambda, n)$ (4 choose, 4 score), and the readout scale the paper leaves open.
# None of the 11 anchored pretraining runs reached the loss tolerance: those with
# $\lambda\le 10^{-4}$ stopped at the horizon $t = 10^3$, and the three largest at the step
# cap of 1,200 steps, before the horizon ($t$ = 6 to 425: the backtracking accepted
# steps well below the cap of h = 1). The numbers below come from the `paper`-scale run behind the
# book ($\mu = 0.9$). The run's wall time is printed with Fig. 9 above.
#
# - The half decades do sample the regime between rich and lazy that the paper's grid
#   skips. From $\lambda = 10^{-7}$ to $3\cdot10^{-5}$:
#   - the units' distance from their start, $\sum_i\|w_i-w_i^{(0)}\|^2/m$, falls from 0.59
#     to 0.018 (0.74 at $\lambda = 0$, 0.003 at $10^{-4}$);
#   - the pretraining source risk rises from 0.09 % to 6.1 % of $\|f_s\|^2$;
#   - $\|P_\perp f_t\|^2/\|f_t\|^2$ goes from 0.159 to 0.144, not monotonically (its
#     least, 0.141, from $10^{-6}$ to $10^{-5}$; 0.169 for the rich model, 0.148 for random
#     units).
# - The held-in draws choose an intermediate value at four of the seven $n$:
#   $3\cdot10^{-6}$ at $n = 100$ and 6400, $10^{-6}$ at 200 and 3200. At 400, 800 and 1600
#   they choose a value of the paper's grid ($10^{-4}$, $10^{-2}$, $10^{-2}$), the same as
#   among the paper's values alone.
# - The intermediate choices barely move the held-out transferability (the table above):
#   by $+0.004$ and $+0.005$ at $n = 3200$ and 6400 and by $-0.001$ at 200. At $n = 100$
#   they lower it from $-0.016\pm0.021$ (the choice among the paper's values) to
#   $-0.048\pm0.024$: a choice made on four draws that the other four do not confirm.
# - With the finer choice, the held-out transferability is consistent with zero at
#   $n = 100$ only just (within two standard errors), and significantly negative at every
#   larger $n$: $-0.084\pm0.017$ at $n = 200$, $-0.175\pm0.005$ at 400 and
#   $-0.172\pm0.001$ at 6400.
#
# At this teacher, a finer $\lambda$ grid does not let the penalty avoid negative transfer.
# Fig. 9 keeps open the paper's counts (10 teachers, 100 data realisations) and
# pretraining run to its tolerance; the teacher's readout scale ($\|f_t\| = 1$, as in the
# chapter *Between lazy and rich*) is the section *Fig. 9 with $\|f_t\| = 1$* below.
#
# The dip at $n = 800$ appears for every $\lambda$ (about $-1$ for the chosen one, $-11$ for
# the rich model). It lies at $n = 0.8\,m$, close to where the least-squares readout on
# $m = 1000$ features interpolates, and its variance is likely the cause.

# %%
# checks, as for the paper's grid: Eq. 18 holds, and the distance to the start falls with
# lambda over the paper's values (a decade or more apart). Every lambda starts from its own
# random units, so neighbours half a decade apart may cross by that noise (the ordering of
# penalised minimisers holds for one starting point).
perp_f = an_f.perp * res.teacher_norm[None, :]
assert np.all(an_f.R_lt >= perp_f[:, None, :, None] * (1 - 1e-8))
on_paper = np.isin(FINE, LAMBDAS)
assert np.all(np.diff(an_f.anchor_dist.mean(1)[on_paper]) < 0), an_f.anchor_dist
if PRESET == experiments.relu_student_teacher.FIG3["paper"]:   # what the prose above claims
    between = ~np.isin(FINE[sel_f.best], LAMBDAS)        # chosen values off the paper's grid
    assert between.tolist() == [True, True, False, False, False, True, True], FINE[sel_f.best]
    assert np.array_equal(sel_f.best[~between], sel_fp.best[~between])
    moved = sel_f.T_best - sel_fp.T_best
    assert np.all(np.abs(moved[1:]) < 0.01) and moved[0] < 0, moved
    assert abs(sel_f.T_best[0]) < 2 * sel_f.T_best_se[0]
    assert np.all(sel_f.T_best[1:] + 3 * sel_f.T_best_se[1:] < 0), sel_f.T_best

# %% [markdown]
# ## Sensitivity: the horizon of App. D.2
#
# App. D.2 trains for $10^5$ steps at learning rate $0.01\,m$, which in our units (a loss
# without the factor 1/2 of Eqs. 2-3) ends at $t = 500$; the presets above run to
# $t = 10^3$ (ours), so that more runs reach the tolerance. Here the same experiment (same
# teachers, data and initial units) stops at the paper's horizon, and the fit of panel (c)
# and the sign map of panel (e) are shown again. It trains nothing of its own: a run's
# iterates do not depend on where it will stop, so each run to $t = 500$ is the run above up
# to $t = 500$, read off it (`fig3_earlier_stops`, the same numbers bit for bit as a
# separate run, tested); only linear transfer is fitted anew to the units pretrained to
# $t = 500$. The absolute tolerance of the next section is read off the same way.

# %%
P500 = dict(P, **EARLIER["t = 500 (App. D.2)"])  # App. D.2: 1e5 steps x 0.01 m end at t = 500
res500 = EARLY["t = 500 (App. D.2)"]   # the runs above, stopped at t = 500
sr500 = experiments.relu_student_teacher.scratch_curve(res500)
law500 = experiments.relu_student_teacher.scratch_law(res500)
law500_conv = experiments.relu_student_teacher.scratch_law(res500, converged_only=True)
for name, fit, fit_conv in (("t = 1000 (ours)", law, law_conv),
                            ("t = 500 (App. D.2)", law500, law500_conv)):
    print(f"{name}: fit on {fit}; on {fit_conv}")
tm500 = experiments.relu_student_teacher.transfer_map(res500, law500)
Tmap500 = tm500.T
flips = np.argwhere(np.sign(Tmap500) != np.sign(Tmap))
print(f"Fig. 3 (e): {len(flips)} of {Tmap.size} cells change sign at t = 500:",
      [(float(res.mus[i]), int(res.ns[j])) for i, j in flips])
fig = figures.paper000_relu.scratch_power_law_figure(
    sr500.ns, sr500.mean, sr500.se, law500.A, law500.nu, law500.se_nu,
    converged=sr500.converged, converged_fit=law500_conv)
provenance.record(fig, "fig3c-horizon-500", params=P500, seeds=P["seed"],
                  caption=f"paper 000 Fig. 3(c) at the horizon of App. D.2 (t = 500); {REDUCED}")
fig = figures.paper000_relu.transfer_map_figure(res500.ns, res500.mus, Tmap500, tm500.n_star)
provenance.record(fig, "fig3e-horizon-500", params=P500, seeds=P["seed"],
                  caption=f"paper 000 Fig. 3(e) at the horizon of App. D.2 (t = 500); {REDUCED}")

# %% [markdown]
# *Fig. 3 (c) and (e) at $t = 500$.* In the run behind the published book (`paper` scale) only
# the scratch runs at $n = 100$ and 200 converge before $t = 500$ (no fit on converged runs
# alone), and the exponent over all $n$ is smaller still: $\nu = 0.33\pm0.01$ against
# $0.47\pm0.02$ at $t = 10^3$; the scratch risks at $n\le 800$ hardly change, those at
# $n\ge 1600$ are higher, which flattens the curve. Pretraining ends further from its source
# (relative loss 0.06 at $\mu = 0$ against 0.025). The sign map keeps its shape; two cells
# turn from positive to negative, $\mu = 0$ and $0.1$ at $n = 800$, the column where the
# linear-transfer risk is largest on our grid. The paper's horizon therefore does not
# bring $\nu$ nearer 1.18; a longer horizon steepens the curve only as far as the runs at
# large $n$ get nearer interpolation, and the fit on the converged $n\le 800$ at $t = 10^3$
# ($\nu = 0.40\pm0.03$) shows no steepening within that range. The other open readings (the
# teacher readouts, an absolute tolerance) follow.

# %%
assert law500.nu > 0
if PRESET == experiments.relu_student_teacher.FIG3["paper"]:   # what the prose above claims
    assert law500.nu + 3 * law500.se_nu < law.nu - 3 * law.se_nu < 1.18, (law500, law)
    assert list(law500_conv.ns) == [100, 200] and law500_conv.nu is None, law500_conv
    assert [(float(res.mus[i]), int(res.ns[j])) for i, j in flips] == [(0.0, 800), (0.1, 800)]

# %% [markdown]
# ## Sensitivity: the teacher's readouts and the loss tolerance
#
# Two more choices that App. D.2 leaves open, each changed alone; the teachers' units, the
# data and the initial units are those above, and the horizon is $t = 10^3$.
#
# * **The teacher's readouts.** The paper does not state the law of $c_i^*$. Ours,
#   $c_i^*\sim\mathcal N(0, 1)$ with $a_i^* = c_i^*/m_*$, gives $\|f_t\|^2$ of about
#   0.003-0.014 at the paper's sizes; the chapter *Between lazy and rich* normalises
#   $\|f_t\| = 1$. Here the same draws are rescaled to $\|f_t\| = 1$ (`target_norm=1`).
#   In the mean-field scaling a unit moves at a rate proportional to its readout and to the
#   residual, so at a fixed horizon a larger teacher makes the network learn more.
# * **The loss tolerance.** App. D.2 trains "until the loss reaches $10^{-6}$": an absolute
#   level on Eqs. 2-3, whose factor $\tfrac12$ makes it $2\cdot10^{-6}$ in our units
#   (`abs_tol=2e-6`). Ours is relative, $10^{-6}$ of the initial loss. At our teacher the
#   absolute level is a relative one of about $10^{-4}$ to $10^{-3}$, so runs stop sooner. At
#   $\|f_t\| = 1$ the two rules nearly coincide ($2\cdot10^{-6}$ against $10^{-6}$).
#
# For each reading, and for the two horizons above: $\nu$ fitted on all $n$ and on the
# converged $n$ only, the sign map of panel (e), and the Gram-matrix distance of panels
# (a, b), which the paper calls "nearly indistinguishable".

# %%
READINGS = {"ours (t = 1000)": (P, res), "t = 500 (App. D.2)": (P500, res500)}
t0 = time.perf_counter()
READINGS["||f_t|| = 1"] = (dict(P, target_norm=1.0),
                           experiments.relu_student_teacher.fig3_experiment(**dict(P, target_norm=1.0)))
print(f"||f_t|| = 1: wall time {time.perf_counter() - t0:.0f} s")
ABS = "abs. tol. 2e-6 (App. D.2)"           # the runs of the first section, read off at 2e-6
READINGS[ABS] = (dict(P, **EARLIER[ABS]), EARLY[ABS])
CURVES, LAWS, LAWS_CONV, MAPS, FLIPS = {}, {}, {}, {}, {}
print(f"\n{'reading':27s} {'nu (all n)':>15s} {'nu (converged n)':>17s}  converged n"
      f"{'pretraining loss':>18s} {'Gram distance':>14s}  sign changes")
STOPS = {}                             # per reading: why its pretraining and scratch runs stopped
for name, (Pv, r) in READINGS.items():
    CURVES[name] = experiments.relu_student_teacher.scratch_curve(r)
    LAWS[name] = experiments.relu_student_teacher.scratch_law(r)
    LAWS_CONV[name] = experiments.relu_student_teacher.scratch_law(r, converged_only=True)
    MAPS[name] = experiments.relu_student_teacher.transfer_map(r, LAWS[name])
    FLIPS[name] = [(float(r.mus[i]), int(r.ns[j]))
                   for i, j in np.argwhere(np.sign(MAPS[name].T) != np.sign(Tmap))]
    lc = LAWS_CONV[name]
    conv = f"{lc.nu:.3f} +- {lc.se_nu:.3f}" if lc.nu is not None else "no fit"
    print(f"{name:27s} {LAWS[name].nu:7.3f} +- {LAWS[name].se_nu:.3f} {conv:>17s}  "
          f"{','.join(str(int(v)) for v in CURVES[name].ns[CURVES[name].converged]) or '-':11s}"
          f"{r.pretrain_rel[0].mean():18.4f} {r.gram_distance[i_mu]:14.3f}  {FLIPS[name]}")
print("Gram distance per mu:", {name: r.gram_distance.round(3).tolist()
                                for name, (_, r) in READINGS.items()})
print("\nwhy the runs stopped (converged / horizon / stuck / step cap), and the time reached:")
for name, (Pv, r) in READINGS.items():
    STOPS[name] = {part: [int(np.sum(np.concatenate([i.stop_reasons() for i in infos]) == w))
                          for w in ("converged", "horizon", "stuck", "step cap")]
                   for part, infos in (("pretraining", [r.pretrain]), ("scratch", r.scratch))}
    t_pre = r.pretrain.time
    print(f"{name:27s} pretraining {STOPS[name]['pretraining']} (t = {t_pre.min():.0f} to "
          f"{t_pre.max():.0f}), scratch {STOPS[name]['scratch']}")
# a network that has fitted only the constant and linear parts of its source leaves this
# fraction of ||f_s||^2 (the same under every reading: it does not depend on the scale)
BEYOND = (theory.relu.beyond_linear_norm(res.source.W, res.source.a)
          / res.pretrain.teacher_norm).reshape(res.pretrain_rel.shape).mean(1)
print("\npart of ||f_s||^2 beyond its constant and linear parts, per mu:", BEYOND.round(3))
for name, (Pv, r) in READINGS.items():
    print(f"{name:27s} pretraining loss / ||f_s||^2 per mu: {r.pretrain_rel.mean(1).round(3)}")
fig = figures.paper000_relu.readings_figure(list(READINGS), list(CURVES.values()),
                                            list(LAWS.values()), list(LAWS_CONV.values()))
provenance.record(fig, "fig3c-readings", params=dict(P, readings=list(READINGS)), seeds=P["seed"],
                  caption="paper 000 Fig. 3(c) under four readings of App. D.2: scratch risk "
                  "and fitted exponents against the paper's 1.18; horizon t = 1000 (paper: 500) "
                  f"but in the t = 500 reading; {REDUCED}")
for name, tag, what in (
        ("||f_t|| = 1", "unit-teacher",
         "the target readouts rescaled to ||f_t|| = 1 (the paper does not state them)"),
        ("abs. tol. 2e-6 (App. D.2)", "absolute-tolerance",
         "App. D.2's absolute loss tolerance (2e-6 in our units) beside the relative one")):
    r = READINGS[name][1]
    fig = figures.paper000_relu.transfer_map_figure(r.ns, r.mus, MAPS[name].T, MAPS[name].n_star)
    provenance.record(fig, "fig3e-" + tag, params=READINGS[name][0], seeds=P["seed"],
                      caption=f"paper 000 Fig. 3(e) with {what}; horizon t = 1000 (paper: 500); "
                      f"{REDUCED}")

# %% [markdown]
# *Fig. 3 (c) under four readings* and *Fig. 3 (e)* with $\|f_t\| = 1$ and with the
# absolute tolerance (the two maps after it). (a) The scratch risk of each reading (its
# own colour, marker and line style; hollow: $n$ at which some run did not reach its tolerance: stopped at the horizon or the
# step cap, or stuck, as most runs of $\|f_t\| = 1$) with its fit on all $n$ (ours and the
# absolute tolerance's nearly coincide: their exponents differ by 0.001); (b) $\nu$ with two standard errors, on all $n$ (filled) and on the converged $n$
# (hollow, where at least three $n$ converged); dashed: the paper's 1.18. The table gives
# the numbers, the pretraining loss at $\mu = 0$ over $\|f_s\|^2$, the Gram distance of
# panels (a, b) at the $\mu$ of those panels, and the cells of panel (e) whose sign differs
# from ours.
#
# **What the readings show** (numbers from the `paper`-scale run behind the published book,
# printed above; not findings: the counts are reduced as stated above).
#
# - **The absolute tolerance** of App. D.2 is, at our teacher, a relative one of about
#   $4\cdot10^{-4}$, so the scratch runs stop sooner: those at $n$ = 100 to 1600 end at
#   it, those at 3200 and 6400 still at the horizon. The exponents hardly move:
#   $\nu = 0.470\pm0.024$ on all $n$ and $0.376\pm0.022$ on the converged $n\le1600$
#   (ours: $0.469\pm0.023$ and $0.398\pm0.028$ on $n\le800$). Pretraining never reaches
#   it (relative loss 0.025 at $\mu = 0$ at $t = 10^3$), so panels (a, b, d) are ours,
#   and the sign map of panel (e) is ours cell by cell.
# - **A teacher of unit norm.** Within the same budget (1,200 iterations, $t\le10^3$) the
#   networks do not leave the plateau on which a two-layer network represents only the
#   constant and linear parts of its target. Pretraining ends at a relative loss of 0.17
#   to 0.19 at $\mu\le0.3$, about the part of the source's squared norm beyond its constant
#   and linear parts (0.16 to 0.19, printed; `theory.relu.beyond_linear_norm`); as the readouts grow the
#   backtracking step falls to 0.08-0.9, so five of the six pretraining runs stop at the
#   step cap at $t$ = 99 to 208 and only $\mu = 0$ reaches the horizon, still on the
#   plateau. 26 of the 28 scratch runs are *stuck*: their step collapses to $10^{-10}$ to
#   $10^{-6}$ on the kinks of the empirical ReLU loss (at $n = 800$ about 3 % of the
#   unit-sample pre-activations lie within $10^{-9}$ of zero, and the computed gradient is
#   no descent direction for steps above about $10^{-8}$) at training losses of 7-16 % of
#   $E y^2$; the other two stop at the step cap. With no converged $n$ there is no fit on
#   converged runs, and the fit over all $n$, $\nu = 0.10\pm0.01$, describes that plateau,
#   not a learning curve. Its sign map is negative in every cell but $(\mu, n) = (0.1, 6400)$
#   (18 cells of ours turn negative), against that stuck baseline. Following this reading needs the paper's fixed step, which
#   takes every step through the kinks, for its $10^5$ steps (`fixed_step=True`, as in
#   `FIG3_FULL`, with `target_norm=1.0`): at the rates of
#   `benchmarks/relu_speed.py` about 5.6 CPU-hours for one scratch run at $n = 6400$, 1.3
#   for one pretraining run, and about 50 for this reading at our reduced counts: beyond
#   this machine.
# - **The horizon** (the section before): $\nu = 0.33\pm0.01$ at $t = 500$.
#
# **The Gram matrices of panels (a, b).** Under no reading is the pretrained kernel "nearly
# indistinguishable" from the source teacher's. The relative Frobenius distance
# $\|G_a - G_b\|_F/\|G_b\|_F$ is 0.27 to 0.45 over $\mu$ in ours and under the absolute
# tolerance (the same pretraining: it never reaches that tolerance), 0.28 to 0.50 at
# $t = 500$ and 0.38 to 0.84 at $\|f_t\| = 1$, against 0.29 to 0.66 for the random initial
# units. At $\mu\le0.3$ pretraining brings the kernel hardly nearer the source's than random
# units are, and at $\|f_t\| = 1$ it moves it further away at every $\mu$.
#
# **Is $\nu = 1.18$ reachable?** Not under any reading we could run to its end: on all $n$
# the exponent is 0.33 to 0.47, on the converged $n$ 0.38 to 0.40, every interval far below
# 1.18. The reading that changes the dynamics qualitatively, a teacher of unit norm, leaves
# the networks on their linear plateau within our budget and so neither supports nor
# excludes 1.18; it is the reading that stays open, and it needs the paper's fixed-step
# protocol for $10^5$ steps. The disagreement with 1.18 therefore stays *not reproduced*,
# not a finding.

# %%
# checks of what the text above claims (paper scale; at smoke scale the exponents differ)
if PRESET == experiments.relu_student_teacher.FIG3["paper"]:
    for name in READINGS:                          # every exponent far below the paper's
        for fit in (LAWS[name], LAWS_CONV[name]):
            assert fit.nu is None or fit.nu + 3 * fit.se_nu < 1.18, (name, fit)
    AB, UN = "abs. tol. 2e-6 (App. D.2)", "||f_t|| = 1"
    assert list(LAWS_CONV[AB].ns) == [100, 200, 400, 800, 1600], LAWS_CONV[AB]
    assert abs(LAWS[AB].nu - law.nu) < LAWS[AB].se_nu, (LAWS[AB], law)
    assert FLIPS[AB] == [] and len(FLIPS[UN]) == 18, (FLIPS[AB], FLIPS[UN])
    assert np.argwhere(MAPS[UN].T > 0).tolist() == [[1, len(res.ns) - 1]], MAPS[UN].T
    assert STOPS[UN] == {"pretraining": [0, 1, 0, 5], "scratch": [0, 0, 26, 2]}, STOPS[UN]
    assert LAWS_CONV[UN].nu is None, LAWS_CONV[UN]
    # pretraining at ||f_t|| = 1 ends on the linear plateau at mu <= 0.3
    assert np.all(np.abs(READINGS[UN][1].pretrain_rel.mean(1)[:3] - BEYOND[:3]) < 0.02)
    assert min(r.gram_distance.min() for _, r in READINGS.values()) > 0.25
    assert np.all(READINGS[UN][1].gram_distance > READINGS[UN][1].gram_init_distance)

# %% [markdown]
# ### Fig. 9 with $\|f_t\| = 1$
#
# The strength of the penalty $\lambda\sum_i\|w_i - w_i^{(0)}\|^2$ is relative to the source
# loss, which the teacher's scale sets: at $\|f_t\| = 1$ the source loss is about 100 times
# that of our teacher, so a given $\lambda$ holds the units about 100 times more loosely.
# Fig. 9 again on the $\|f_t\| = 1$ run above, with the finer grid and the held-out choice of
# the section before (its seed, so the same initial units and target draws, rescaled).

# %%
RES_UNIT = READINGS["||f_t|| = 1"][1]
an_u = anchored_run(base=RES_UNIT)
sel_u = anchored_section(an_u, base=RES_UNIT)
sel_up = experiments.relu_student_teacher.select_lambda(RES_UNIT, an_u, among=LAMBDAS)
choice_table(sel_up, sel_u)
fig = figures.paper000_relu.anchored_figure(RES_UNIT.ns, FINE, sel_u.T, sel_u.T_best, sel_u.T_best_se)
provenance.record(fig, "fig9-anchored-unit-teacher",
                  params=dict(READINGS["||f_t|| = 1"][0], lambdas=FINE, mu=MU_9),
                  seeds=[P["seed"], AP.seed],
                  caption="paper 000 Fig. 9 with ||f_t|| = 1 and half decades of lambda below "
                  "1e-4 (ours): transferability per lambda and for the best lambda; "
                  f"{np.sum(an_u.info.stop_reasons() == 'step cap')} of {an_u.info.steps.size} pretraining "
                  f"runs stopped at the step cap, horizon t = 1000 (paper: 500); {REDUCED}")

# %% [markdown]
# *Fig. 9 with $\|f_t\| = 1$.* As the finer Fig. 9 above, on the Fig. 3 run with the
# teacher's readouts rescaled to $\|f_t\| = 1$.
#
# **Not reproduced; not a finding** (numbers from the `paper`-scale run behind the published
# book, printed above; $\mu = 0.9$). Neither side of this comparison ran to its end: all 11 anchored
# pretraining runs stopped at the step cap, at $t$ = 6 (the largest $\lambda$) to 157, and
# the scratch baseline is the one of the $\|f_t\| = 1$ reading above, whose runs are stuck
# on their linear plateau (scratch risk 0.30 to 0.67 of the target variance).
#
# - The penalty acts on the features as at our teacher, only shifted by the larger loss:
#   the distance from the start, $\sum_i\|w_i-w_i^{(0)}\|^2/m$, is 1.83 at $\lambda = 0$,
#   still 0.98 at $10^{-4}$ and falls to 0.15, 0.02 and 0.0002 at $10^{-3}$, $10^{-2}$ and
#   $10^{-1}$; $\|P_\perp f_t\|^2/\|f_t\|^2$ falls from 0.64 (rich) to that of random units
#   (0.15) at $\lambda\ge10^{-3}$, while the source risk goes from 6 % (its least, 2.8 %, at
#   $10^{-4}$) to 56 % of $\|f_s\|^2$.
# - The rich model transfers very badly here ($\mathcal T = -1.00\pm0.04$ at $n = 6400$,
#   far below $-1$ at small $n$, where the least-squares readout on its condensed units is
#   ill-conditioned).
# - The held-in draws choose $\lambda = 10^{-2}$ at every $n$ but 200 ($10^{-1}$), the same
#   with or without the half decades. Held out, its transferability is positive at
#   $n = 100$ ($+0.069\pm0.023$) and $n = 6400$ ($+0.034\pm0.001$), consistent with zero at
#   200, and negative from 400 to 3200 ($-0.85\pm0.09$ at $n = 800$, the interpolation peak
#   near $n = m$; $-0.015\pm0.003$ at 3200).
#
# The positive values are measured against a scratch baseline that has not left its
# plateau; a converged scratch run would lower them. Whether the penalty avoids negative
# transfer at a teacher of unit norm is therefore open, for the same reason as the exponent:
# the runs need the paper's fixed step for its $10^5$ steps.

# %%
# checks, as above: Eq. 18 holds, and the distance to the start falls with lambda over the
# paper's values. Eq. 18 compares two pseudo-inverses: ||P_perp f_t||^2 drops the kernel's
# eigenvalues below 1e-10 of the largest, the least-squares readout far fewer. Where nearly
# rich pretraining at ||f_t|| = 1 condenses the units, the first cutoff drops part of the
# target from the span and the check no longer tests Eq. 18: at `smoke` scale (m = 100) at
# lambda = 1e-7, where R_lt falls 1.4 % below the computed ||P_perp f_t||^2. It is checked
# on the paper's lambdas at every scale and on all at `paper` scale (m = 1000), where it holds.
perp_u = an_u.perp * RES_UNIT.teacher_norm[None, :]
eq18 = an_u.R_lt >= perp_u[:, None, :, None] * (1 - 1e-8)
assert np.all(eq18[on_paper]), np.argwhere(~eq18)
assert np.all(np.diff(an_u.anchor_dist.mean(1)[on_paper]) < 0), an_u.anchor_dist
if PRESET == experiments.relu_student_teacher.FIG3["paper"]:   # what the prose above claims
    assert np.all(eq18), np.argwhere(~eq18)
    assert np.all(an_u.info.stop_reasons() == "step cap"), an_u.info.stop_reasons()
    assert np.array_equal(sel_u.best, sel_up.best), (sel_u.best, sel_up.best)
    assert [float(FINE[b]) for b in sel_u.best] == [1e-2, 1e-1, 1e-2, 1e-2, 1e-2, 1e-2, 1e-2]
    Tb, Tse = sel_u.T_best, sel_u.T_best_se
    assert Tb[0] > 2 * Tse[0] and Tb[-1] > 3 * Tse[-1], (Tb, Tse)   # n = 100 and 6400
    assert abs(Tb[1]) < 2 * Tse[1] and np.all(Tb[2:6] + 2 * Tse[2:6] < 0), (Tb, Tse)

# %% [markdown]
# ## Convergence of the reduced runs

# %%
fig = figures.paper000_relu.convergence_figure(pre, res.ns, res.scratch, mus=res.mus)
provenance.record(fig, "fig3-convergence", params=P, seeds=P["seed"],
                  caption="paper 000 Fig. 3: loss curves of the ReLU pretraining and "
                  "scratch runs")
for name, info in [("pretraining", pre)] + [(f"scratch n = {n}", i)
                                             for n, i in zip(res.ns, res.scratch)]:
    why = info.stop_reasons()
    print(f"{name}: stopped by tolerance {np.sum(why == 'converged')}, at the time horizon "
          f"{np.sum(why == 'horizon')}, stuck {np.sum(why == 'stuck')}, by the step cap "
          f"{np.sum(why == 'step cap')} of {why.size}")

# %% [markdown]
# *Loss curves* against gradient-flow time $t = \sum_k h_k$ (the sum of the accepted step
# sizes, in units where the paper's learning rate $0.01\,m$ on its Eqs. 2-3 is $h = 0.005$,
# so its $10^5$ steps end at $t = 500$). Runs stop at the tolerance, at $t = 10^3$ or at the step cap,
# whichever comes first; the counts are printed above.
