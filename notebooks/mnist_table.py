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
# # Which measure predicts fine-tuning on MNIST?
#
# This chapter regenerates Table 1 of Shachaf, Brutzkus and Globerson
# {cite:p}`shachaf2021theoretical`: how well three measures of source-target similarity
# predict the test error of fine-tuning a linear model between binary MNIST tasks.
#
# **Protocol** (paper 001, Sec. 4.2). Each binary task "a vs b" is regression to $\pm1$
# (+1 for digit a). For each of $K$ (source "a vs b", target "c vs d") pairs with four
# distinct digits:
#
# * the source teacher $\theta_S$ is the linear model trained on all training images of
#   the source task, and the target teacher $\theta_T$ likewise on the target task (the
#   minimum-norm least-squares fit, i.e. the limit of gradient descent from zero, with
#   eigenvalues of $X^\top X$ below $10^{-6}$ of the largest treated as zero: some pixels
#   are always 0);
# * fine-tuning starts at $\theta_S$ and runs gradient descent on the square loss of $n$
#   target training images until it interpolates. By Thm 4.1 its limit is exactly
#   $\gamma = P_\perp\theta_S + X^+y$; we use this closed form (checked against gradient
#   descent below) and record the 0-1 error of $\operatorname{sign}(x^\top\gamma)$ on the
#   target task's test images, averaged over the draws of the $n$ samples;
# * the measures are $\|\theta_T-\theta_S\|^2$, the bias term of Bartlett et al.'s bound
#   {cite:p}`bartlett2020benign` with $\theta^*$ replaced by $\theta_T-\theta_S$ (the
#   paper's footnote 1; the labels are treated as noise free, so its noise term is 0):
#   $\|\theta_T-\theta_S\|^2 g(\lambda,\delta,n)$, and Eq. 3 with $m = 2$. $\lambda$ and the
#   eigenvectors are those of the target task's second-moment matrix $\mathbb E\,xx^\top$
#   (the model has no bias), $\delta = 1$, $c = 3$ (see `teachers.g_function`);
# * $R^2$ between the $K$ mean errors and each measure (squared Pearson correlation), for
#   each $n$; mean and standard deviation over repetitions, each a fresh set of draws of
#   the target samples (the pairs are fixed by the seed: the paper's "different
#   initialization" is not specified further).

# %% tags=["hide-input"]
import time

import numpy as np

import transferkit as tk
from transferkit import experiments, figures, models, provenance, theory
from transferkit.data import load_mnist
from transferkit.models.deep_linear import end_to_end
from transferkit.models.device import as_tensor

figures.plotting.use_style()
SCALE = tk.scale()
print(f"TRANSFERKIT_SCALE = {SCALE}")

# %% [markdown]
# ## Parameters
#
# At `paper` scale the paper's protocol: $K = 20$ pairs, $n \in \{10, 15, 20, 25, 30\}$,
# 25 draws per pair and $n$, 10 repetitions. `smoke` uses 8 pairs, 3 values of $n$, 5
# draws and 3 repetitions. The values, and the source of each, live in
# `experiments.mnist_table.TABLE1` (one preset per scale).

# %%
PRESET = experiments.mnist_table.TABLE1[SCALE]
K, NS, DRAWS, REPS = PRESET.pairs, list(PRESET.ns), PRESET.draws, PRESET.reps
M_EQ3, DELTA, C_G, SEED = PRESET.m, PRESET.delta, PRESET.c, PRESET.seed
x_train, y_train, x_test, y_test = load_mnist()
PAIRS = experiments.mnist_table.draw_task_pairs(K, SEED)
print(f"K = {K} pairs, n = {NS}, {DRAWS} draws, {REPS} repetitions")
print("pairs (source a vs b -> target c vs d):",
      ", ".join(f"{a}v{b}->{c}v{d}" for a, b, c, d in PAIRS))

# %%
t0 = time.perf_counter()
res = experiments.mnist_table.mnist_table_sim(x_train, y_train, x_test, y_test, PAIRS, NS, DRAWS,
                                              REPS, seed=SEED, m=M_EQ3, delta=DELTA, c=C_G,
                                              rcond=PRESET.rcond, other_c=PRESET.other_c)
print(f"{time.perf_counter() - t0:.0f} s")

# %% [markdown]
# ## The closed form is the gradient-descent limit
#
# One pair, $n = 10$, a few draws: gradient descent on the linear model from $\theta_S$
# (stopped at excess training loss $10^{-14}$) against $\gamma = P_\perp\theta_S + X^+y$.

# %%
a, b, c, d = PAIRS[0]
ts = res.thetas[0, 0]
keep = (y_train == c) | (y_train == d)
xp = np.asarray(x_train[keep], dtype=float)
tp = np.where(y_train[keep] == c, 1.0, -1.0)
idx = np.stack([np.random.default_rng([SEED, 99, j]).choice(len(xp), PRESET.gd_n, replace=False)
                for j in range(PRESET.gd_draws)])
X, Y = xp[idx], tp[idx]
W, info = models.deep_linear.gradient_descent(
    [as_tensor(np.broadcast_to(ts, (PRESET.gd_draws, ts.size))[..., None])],
    models.deep_linear.empirical_objective(as_tensor(X), as_tensor(Y)),
    method="nesterov", loss_tol=PRESET.gd_loss_tol, max_steps=PRESET.gd_max_steps)
gap = np.abs(end_to_end(W).cpu().numpy() - theory.linear_teachers.finetune_predictor(X, Y, ts)).max()
print(f"max |GD - closed form| = {gap:.1e} (||theta_S|| = {np.linalg.norm(ts):.2f}), "
      f"converged: {info.all_converged}")
assert info.all_converged and gap < 1e-5

# %% [markdown]
# ## Table 1

# %%
PAPER = {"dist": ([0.69, 0.68, 0.66, 0.64, 0.62], [0.03, 0.04, 0.04, 0.03, 0.02]),
         "bartlett": ([0.73, 0.75, 0.74, 0.71, 0.67], [0.03, 0.03, 0.03, 0.02, 0.02]),
         "eq3": ([0.86, 0.89, 0.84, 0.75, 0.69], [0.02, 0.02, 0.02, 0.01, 0.02])}
PAPER_NS = [10, 15, 20, 25, 30]
LABELS = {"dist": "||theta_T - theta_S||^2", "bartlett": "Bartlett et al. bound",
          "eq3": f"Eq. 3, m = {M_EQ3}", "bartlett_c1": "Bartlett, c = 1",
          "eq3_c1": f"Eq. 3, m = {M_EQ3}, c = 1"}
print("R^2 (mean +- sd over repetitions); in brackets the paper's Table 1")
print(f"{'n':<28}" + "".join(f"{n:>22}" for n in NS))
R2_ROWS = dict({name: r for name, r in res.r2.items()},
               **{f"{name}_c{c2:g}": r for c2, rs in res.r2_other_c.items() for name, r in rs.items()})
for name, (mean, sd) in ((k, (r.mean, r.sd)) for k, r in R2_ROWS.items()):
    row = f"{LABELS[name]:<28}"
    for j, n in enumerate(NS):
        ref = ""
        if name in PAPER and n in PAPER_NS:
            pm, ps = PAPER[name][0][PAPER_NS.index(n)], PAPER[name][1][PAPER_NS.index(n)]
            ref = f" [{pm:.2f}+-{ps:.2f}]"
        row += f"{mean[j]:>9.2f}+-{sd[j]:.2f}{ref:>11}"
    print(row)
err_mean = res.errors.mean(0)
for name in ("dist", "bartlett", "eq3"):
    r = [np.corrcoef(res.measures[name][j], err_mean[j])[0, 1] for j in range(len(NS))]
    print(f"Pearson r, {LABELS[name]:<24}" + "".join(f"{v:>+8.2f}" for v in r))
print("mean 0-1 error over pairs: " + ", ".join(
    f"n = {n}: {res.errors[:, j].mean():.3f}" for j, n in enumerate(NS)))

# %%
fig = figures.paper001.table1_figure(res, NS, LABELS)
provenance.record(fig, "p001-table1-scatter", seeds=SEED,
                  params=dict(pairs=K, ns=NS, draws=DRAWS, repetitions=REPS, m=M_EQ3, delta=DELTA,
                              c=C_G),
                  caption="paper 001 Table 1: MNIST fine-tuning error against each measure, per n")

# %% [markdown]
# **Figure.** 0-1 test error of the fine-tuned model (mean over repetitions and draws)
# against each measure, one point per pair, for each $n$, with the least-squares line
# whose $R^2$ enters the table (the table's $R^2$ is the mean over repetitions; the
# panels show it too). Parameters as printed above.
#
# **Comparison with the paper.** The ordering of the paper holds: Eq. 3 predicts the error
# best, then the Bartlett-style bound, then the plain distance. Our numbers differ in
# level and trend (the table prints the paper's values in brackets). At paper scale
# (seed 0) our $R^2$ is 0.61-0.68 for Eq. 3 (paper 0.69-0.89), 0.36-0.58 for the
# Bartlett-style bound (paper 0.67-0.75) and 0.14-0.27 for $\|\theta_T-\theta_S\|^2$
# (paper 0.62-0.69); ours *increase* with $n$ where the paper's decrease, and the gap to the
# paper is largest for the plain distance. Reasons we can name, none of which we can check
# against the authors' code:
#
# * the teachers: the paper does not say how $\theta_S$ and $\theta_T$ were trained
#   (optimiser, epochs, regularisation, centring); ours are the exact least-squares fits,
#   and $\|\theta_T-\theta_S\|$ is sensitive to the low-variance pixel directions, which
#   barely affect the error but dominate the plain distance. Eq. 3 and the Bartlett-style
#   bound weight those directions down (Eq. 3 through the top-$m$ projection, the
#   Bartlett-style bound through $g$, i.e. the target spectrum);
# * the pairs: the paper's 20 pairs are not listed; ours are random with four distinct
#   digits; $R^2$ over 20 points depends strongly on which pairs are included;
# * the constant $c$ of $g$, which the paper does not state: with $m = 2$ and $c = 3$ the
#   first term of Eq. 3 ($\propto g^3$) dominates; $c = 1$ changes its $R^2$ (rows "c = 1").
#   The Bartlett-style measure is proportional to $c$, so its $R^2$ does not depend on $c$;
# * the repetitions: ours redraw the target samples with the pairs fixed, so the standard
#   deviations measure sampling noise only.
#
# $R^2$ does not show the sign of the relation; the Pearson $r$ printed under the table
# does (a negative $r$ means the measure ranks the pairs the wrong way round).

# %%
r2 = {k: v.mean for k, v in R2_ROWS.items()}
assert all(((v >= 0) & (v <= 1)).all() for v in r2.values())
# the paper's central claim, which our reproduction supports: Eq. 3 beats the distance
assert r2["eq3"].mean() > r2["dist"].mean()
