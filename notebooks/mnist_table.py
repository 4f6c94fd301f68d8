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
# * the source teacher $\theta_S$ is the linear model fitted on all training images of
#   the source task, and the target teacher $\theta_T$ likewise on the target task. The
#   paper does not say how; ours are *eigen-truncated* least-squares fits,
#   $\theta = \sum_{\lambda_i > 10^{-6}\lambda_1} v_i v_i^\top X^\top y/\lambda_i$ over the
#   eigenpairs of $X^\top X$ (`experiments.mnist_table.fit_teacher`, fit `"eig:1e-06"`).
#   This is *not* the minimum-norm fit: the cutoff at $10^{-6}$ of the largest eigenvalue
#   drops many small but non-zero directions and acts as a regulariser (for task 2 vs 3,
#   $\|\theta\| = 347$ at a cutoff of $10^{-12}$, 4.2 at $10^{-6}$). The section
#   "Table 1 against the fit of the teachers" below shows how much the table depends on it;
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
tk.models.device.use_threads()  # TRANSFERKIT_THREADS, default 1 (transferkit.config.threads)
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
# the figure's labels: the printed tables' names, the distance as mathematics
fig = figures.paper001.table1_figure(
    res, NS, dict(LABELS, dist=r"$\|\theta_T - \theta_S\|^2$"))
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
# **Comparison with the paper.** Under the chapter's default fit of the teachers
# (eigen-truncated least squares, cutoff $10^{-6}$) the ordering of the paper holds on these
# pairs: Eq. 3 predicts the error best, then the Bartlett-style bound, then the plain
# distance. The next section shows that this ordering is not robust: it depends on how the
# teachers are fitted and on which pairs are drawn. Our numbers differ in
# level and trend (the table prints the paper's values in brackets). At paper scale
# (seed 0) our $R^2$ is 0.61-0.68 for Eq. 3 (paper 0.69-0.89), 0.36-0.58 for the
# Bartlett-style bound (paper 0.67-0.75) and 0.14-0.27 for $\|\theta_T-\theta_S\|^2$
# (paper 0.62-0.69); ours *increase* with $n$ where the paper's decrease, and the gap to the
# paper is largest for the plain distance. Reasons we can name, none of which we can check
# against the authors' code:
#
# * the teachers: the paper does not say how $\theta_S$ and $\theta_T$ were trained
#   (optimiser, epochs, regularisation, centring); ours are eigen-truncated least-squares
#   fits (cutoff $10^{-6}$, not the exact minimum-norm fits; see the next section), and
#   $\|\theta_T-\theta_S\|$ is sensitive to the low-variance pixel directions, which
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
# the paper's central claim holds under the chapter's default fit of the teachers
# (eigen-truncated least squares, cutoff 1e-6): Eq. 3 beats the distance. The next
# section shows for which other fits it holds and for which it does not.
assert r2["eq3"].mean() > r2["dist"].mean()

# %% [markdown]
# ## Table 1 against the fit of the teachers
#
# The measures and the fine-tuning error both depend on the teachers $\theta_S$, $\theta_T$,
# and the paper does not say how it fitted them. The choices it leaves open:
#
# * **how the teachers are fitted**: exact least squares (minimum norm), a truncated or
#   regularised fit, or a linear model trained by (stochastic) gradient descent for some
#   number of epochs from some initialisation; on MNIST, where $X^\top X$ has eigenvalues
#   from $10^{-11}$ to 1 of the largest and exact zeros (pixels that are always 0), these
#   give very different $\theta$;
# * **what "10 calculations of $R^2$ with different initialization" redraws**: the
#   teachers' random starts (the most natural reading), the target samples, or the pairs;
# * **which 20 pairs**: not listed;
# * the constant $c$ of $g$ and $\delta$ (above: $c = 3$, $\delta = 1$, rows "c = 1").
#
# Below, the whole Table 1 protocol is repeated for each fit of the teachers
# (`experiments.mnist_table.fit_teacher`, one equation per fit in its docstring):
#
# * **min-norm**: $(X^\top X)^+X^\top y$ at numpy's machine cutoff ($d\epsilon$ of the
#   largest eigenvalue);
# * **cutoff $r$**: eigen-truncated least squares, eigenvalues below $r\lambda_1$ dropped
#   ($r = 10^{-6}$ is the chapter's default, marked by the grey line);
# * **ridge $\lambda$**: the minimiser of $\frac1N\|X\theta-y\|^2 + \lambda\|\theta\|^2$;
# * **GD $T$ ep.**: the paper's reading: $T$ epochs of full-batch gradient descent on
#   $\frac1{2N}\|X\theta-y\|^2$ with step $N/\lambda_1(X^\top X)$ from a random start
#   (uniform on $\pm1/\sqrt d$, PyTorch's default for a linear layer), a new start for each
#   of the repetitions (the budget, the step and the start are ours);
#
# each on the target samples of the Table 1 section (same seed, same draws) and, at
# `paper` scale, on a second set of random pairs (seed 1) with its own samples (`smoke`
# runs the first set only, with 10 of the 18 fits). The values, and the source
# of each, live in `experiments.mnist_table.FIT_SENSITIVITY`.

# %%
SENS = experiments.mnist_table.FIT_SENSITIVITY[SCALE]
FITS, SNS = SENS.fits, list(SENS.ns)
FIT_LABELS = [experiments.mnist_table.fit_label(f) for f in FITS]
t0 = time.perf_counter()
SENS_RES = [experiments.mnist_table.fit_sensitivity_sim(
    x_train, y_train, x_test, y_test, FITS, experiments.mnist_table.draw_task_pairs(SENS.pairs, ps),
    SNS, SENS.draws, SENS.reps, seed=ps, m=M_EQ3, delta=DELTA, c=C_G) for ps in SENS.pair_seeds]
print(f"{len(FITS)} fits x {len(SENS_RES)} set(s) of K = {SENS.pairs} pairs, n = {SNS}, "
      f"{SENS.draws} draws, {SENS.reps} repetitions: {time.perf_counter() - t0:.0f} s")
for sr in SENS_RES[1:]:
    print(f"pairs, seed {sr.pair_seed}:", ", ".join(f"{a}v{b}->{c}v{d}" for a, b, c, d in sr.pairs))

# %%
SHORT = {"eq3": "Eq. 3", "bartlett": "Bartlett", "dist": "distance"}
# Monte Carlo critical value for the differences of R^2 between measures: Bonferroni over
# every (pair set, fit, n, difference) cell, Student's t with reps - 1 degrees of freedom
CRIT = tk.stats.critical_value(len(SENS_RES) * len(FITS) * len(SNS) * 2, SENS.reps)
r2_ordering, r2_difference = experiments.mnist_table.r2_ordering, experiments.mnist_table.r2_difference
for sr in SENS_RES:
    print(f"pairs seed {sr.pair_seed}: R^2 (mean over {SENS.reps} repetitions) at n = {SNS}; "
          f"median ||theta_S|| over pairs; ordering Eq. 3 > Bartlett > distance at every n "
          f"({CRIT:.1f} standard errors)")
    print(f"{'fit':<14}{'||th_S||':>9}" + "".join(f"   {SHORT[k]:<{5 * len(SNS)}}"
                                                  for k in ("eq3", "bartlett", "dist")) + "  ordering")
    for f, (label, order) in enumerate(zip(FIT_LABELS, r2_ordering(sr, CRIT))):
        cols = "".join("   " + "".join(f"{v:5.2f}" for v in sr.r2[k].mean[f])
                       for k in ("eq3", "bartlett", "dist"))
        print(f"{label:<14}{np.median(sr.theta_norms[f, 0, :, 0]):>9.3g}{cols}  {order}")
if len(SENS_RES) > 1:
    for k in ("eq3", "bartlett", "dist"):
        gap = np.abs(SENS_RES[0].r2[k].mean - SENS_RES[1].r2[k].mean)
        print(f"{SHORT[k]:<9}|R^2(seed {SENS_RES[0].pair_seed}) - R^2(seed {SENS_RES[1].pair_seed})|: "
              f"median {np.median(gap):.2f}, largest {gap.max():.2f} (over fits and n)")

# %%
fig = figures.paper001.fit_sensitivity_figure(
    SENS_RES, PAPER, PAPER_NS, labels={k: SHORT[k] for k in SHORT}, fit_labels=FIT_LABELS,
    highlight=experiments.mnist_table.DEFAULT_FIT)
provenance.record(fig, "p001-table1-fit-sensitivity", seeds=list(SENS.pair_seeds),
                  params={"pairs": SENS.pairs, "ns": SNS, "draws": SENS.draws,
                          "repetitions": SENS.reps, "m": M_EQ3, "delta": DELTA, "c": C_G,
                          "fits": list(FITS)},
                  caption="paper 001 Table 1: R^2 of each measure against the fit of the teachers")

# %% [markdown]
# **Figure.** $R^2$ of each measure (mean and, for the first set of pairs, one standard
# deviation over the repetitions) for each fit of the teachers, one panel per $n$; filled
# markers: the pairs of the Table 1 section (seed 0), open markers (`paper` scale): a
# second set of random pairs (seed 1); dotted lines and bands: the paper's Table 1 (mean $\pm$ sd); grey line:
# the chapter's default fit. Parameters as printed above.
#
# **In which readings the paper's levels and ordering hold.** The numbers below were
# measured once at paper scale ($K = 20$ pairs, $n = 10 \dots 30$, 25 draws, 10
# repetitions, all 18 fits, both sets of pairs: 2.2 minutes on one CPU core beside another
# paper-scale chapter, the 18 fits of a pair sharing their target samples);
# "beyond the Monte Carlo error" means by more than 7.8 standard errors over the
# repetitions (Bonferroni over the comparisons claimed). Those standard errors contain
# the redraws of the target samples (and of the GD starts), not the choice of pairs.
#
# * **Exact minimum-norm teachers** (median $\|\theta_S\| \approx 155$) and cutoffs up to
#   $10^{-9}$: every measure has $R^2 \le 0.35$ on the first set of pairs and $\le 0.42$ on
#   the second (minimum norm: 0.25-0.35 and 0.03-0.05). Eq. 3 and the Bartlett-style bound
#   have the same $R^2$ (the huge $\|\theta_T-\theta_S\|^2$ dominates both). The paper's
#   levels fail for every measure and its ordering is not there.
# * **The chapter's default, cutoff $10^{-6}$** ($\|\theta_S\| \approx 3.9$): Eq. 3
#   0.61-0.68 / 0.49-0.58, Bartlett-style 0.36-0.58 / 0.40-0.56, distance 0.14-0.27 /
#   0.09-0.15 (first / second set). Eq. 3 beats the distance beyond the Monte Carlo error
#   on both sets; it is ahead of the Bartlett-style bound on both, but not beyond that error
#   at every $n$.
# * **First set of pairs, moderate regularisation**: with cutoff $10^{-5}$ (Eq. 3 0.66-0.70,
#   Bartlett-style 0.44-0.53, distance 0.26-0.29) and ridge $10^{-4}$ the ordering
#   Eq. 3 > Bartlett-style > distance holds at every $n$ beyond the Monte Carlo error. On
#   this set no fit reverses it beyond that error; the largest reversal, the
#   Bartlett-style bound ahead of Eq. 3 at $n = 10$ under ridge 0.1 and GD for 100 epochs,
#   is about 4 standard errors.
# * **Second set of pairs**: under cutoffs $\ge 10^{-5}$, ridge $\lambda \ge 10^{-3}$ and the
#   GD teachers at both budgets, the Bartlett-style bound beats Eq. 3 at every $n$ beyond
#   the Monte Carlo error (e.g. ridge $10^{-3}$: Bartlett-style 0.64-0.80, Eq. 3 0.29-0.39):
#   the paper's ordering fails.
# * **The paper's reading, teachers trained by gradient descent from random starts**: on
#   the first set, after $10^4$ epochs, Eq. 3 0.55-0.60 > Bartlett-style 0.42-0.48 >
#   distance 0.20-0.26; after 100 epochs the Bartlett-style bound is ahead at $n \le 15$
#   and Eq. 3 at $n = 30$. On the second set the Bartlett-style bound is ahead at both
#   budgets (0.59-0.68 against Eq. 3's 0.22-0.26 after $10^4$ epochs).
# * **Levels**: under no fit, on neither set, does the distance reach the paper's level
#   (ours at most 0.43, the paper's 0.62-0.69), nor Eq. 3 at $n \le 20$ (ours at most
#   0.66-0.70, the paper's 0.84-0.89). Eq. 3 comes within the Monte Carlo error of the
#   paper's 0.75 and 0.69 only at $n = 25, 30$. The Bartlett-style bound reaches the
#   paper's 0.67-0.75 only on the second set, in the readings where Eq. 3 falls behind it.
# * **The choice of pairs** moves $R^2$ as much as the fit does: between the two sets, at
#   the same fit and $n$, the $R^2$ differ by 0.29 (Eq. 3), 0.14 (Bartlett-style) and 0.05
#   (distance) in the median, by up to 0.41.
#
# So none of the readings we tried gives the paper's table, levels and ordering together.
# The ordering is reproduced with moderately truncated or lightly regularised teachers on
# one set of random pairs and reversed with ridge or gradient-descent teachers on another.
# This is not a finding against the paper: its pairs, its fit of the teachers and its
# constant $c$ are unknown, and the spread between two sets of 20 random pairs is as large
# as the effect. What the table supports is weaker than the paper's claim: on MNIST the
# ranking of the three measures depends on choices the paper does not report.
# %%
# every scale: R^2 in [0, 1], and the default fit on the first set of pairs is the
# Table 1 section above (same pairs, target samples and teachers), bit for bit
assert all(((sr.r2[k].mean >= 0) & (sr.r2[k].mean <= 1)).all() for sr in SENS_RES for k in sr.r2)
I_DEF = FITS.index(experiments.mnist_table.DEFAULT_FIT)
if (SENS.pairs, SNS, SENS.draws, SENS.reps, SENS.pair_seeds[0]) == (K, NS, DRAWS, REPS, SEED):
    for name in ("dist", "bartlett", "eq3"):
        assert np.array_equal(SENS_RES[0].r2[name].mean[I_DEF], res.r2[name].mean)
if SENS == experiments.mnist_table.FIT_SENSITIVITY["paper"]:
    # the claims of the text above rest on the paper preset's numbers (its fits and pair
    # sets); under another preset they are not claimed, so not checked. Tolerances: CRIT_CLAIMS
    # Monte Carlo standard errors over the repetitions (Bonferroni over the 383 comparisons)
    CRIT_CLAIMS = tk.stats.critical_value(383, SENS.reps)
    FIT_I = {f: i for i, f in enumerate(FITS)}
    SET0, SET1 = SENS_RES

    def below_paper(sr, name, fits, ns):
        """R^2 of measure `name` below the paper's at every fit and n given, beyond the MC error."""
        i, j = [FIT_I[f] for f in fits], [SNS.index(n) for n in ns]
        paper = np.array([PAPER[name][0][PAPER_NS.index(n)] for n in ns])
        r = sr.r2[name]
        return bool((r.mean[np.ix_(i, j)] + CRIT_CLAIMS * r.sd[np.ix_(i, j)] / np.sqrt(SENS.reps)
                     < paper).all())

    def ahead(sr, hi, lo, fits):
        """R^2 of `hi` above that of `lo` at every n for each fit, beyond the MC error."""
        d, se = r2_difference(sr, hi, lo)
        return bool((d[[FIT_I[f] for f in fits]] > CRIT_CLAIMS * se[[FIT_I[f] for f in fits]]).all())

    # levels: the distance never reaches the paper's (180 comparisons); Eq. 3 stays below it
    # at n <= 20 (108); minimum-norm teachers: Eq. 3 and Bartlett below it at every n (20)
    assert all(below_paper(sr, "dist", FITS, SNS) for sr in SENS_RES)
    assert all(below_paper(sr, "eq3", FITS, [10, 15, 20]) for sr in SENS_RES)
    assert all(below_paper(sr, k, ["pinv"], SNS) for sr in SENS_RES for k in ("eq3", "bartlett"))
    # ordering: holds at every n on the first set for cutoff 1e-5 and ridge 1e-4 (20);
    # Eq. 3 beats the distance under the default fit on both sets (10); on the second set the
    # Bartlett-style bound beats Eq. 3 under cutoffs >= 1e-5, ridge >= 1e-3 and both GD
    # budgets (45)
    assert ahead(SET0, "eq3", "bartlett", ["eig:1e-05", "ridge:0.0001"])
    assert ahead(SET0, "bartlett", "dist", ["eig:1e-05", "ridge:0.0001"])
    assert all(ahead(sr, "eq3", "dist", [experiments.mnist_table.DEFAULT_FIT]) for sr in SENS_RES)
    assert ahead(SET1, "bartlett", "eq3", ["eig:1e-05", "eig:1e-04", "eig:1e-03", "ridge:0.001",
                                           "ridge:0.01", "ridge:0.1", "ridge:1", "gd:100",
                                           "gd:10000"])
    print(f"paper-scale claims checked at {CRIT_CLAIMS:.1f} standard errors")
