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
# # Fine-tuning with linear teachers
#
# This chapter regenerates Figs. 1-3 of Shachaf, Brutzkus and Globerson
# {cite:p}`shachaf2021theoretical`: fine-tuning a model pretrained on a source teacher
# $\theta_S$ on $n < d$ noise-free samples $y = X\theta_T$ of a target teacher.
#
# * **Linear model** (Thm 4.1). Gradient descent from $\theta_S$ converges to
#   $\gamma = P_\perp\theta_S + P_\parallel\theta_T$ (Eq. 1), where $P_\parallel$ projects
#   on the row space of $X$, with population risk
#   $R(\gamma) = \|\Sigma^{1/2}P_\perp(\theta_T-\theta_S)\|^2$ (Eq. 2). Thm 4.2 bounds it,
#   with probability $1-e^{-\delta}$, by
#   $2g^3\|P_{\le m}(\theta_T-\theta_S)\|^2/\lambda_m^2 + 2g\|P_{>m}(\theta_T-\theta_S)\|^2$
#   (Eq. 3), $g = c\lambda_1\max\{\sqrt{r_0/n}, r_0/n, \sqrt{\delta/n}, \delta/n\}$,
#   $r_0 = \sum_i\lambda_i/\lambda_1$.
# * **Deep linear network** (Thm 5.2). From 0-balanced pretrained weights, gradient flow
#   converges to $\beta = (\|\beta\|/\|\theta_S\|)^{(L-1)/L}P_\perp\theta_S + X^+y$ (Eq. 5):
#   the null-space component of $\theta_S$ is rescaled self-consistently; as
#   $L\to\infty$ the factor is $\|P_\parallel\theta_T\|/\|P_\parallel\theta_S\|$ (Eq. 6).
# * **Frozen first layer** (Thm 5.5). The fine-tuned model is $c\,\theta_S$: it stays at the
#   source task.
#
# Every simulated mean is compared with theory within its Monte Carlo error (Student $t$,
# Bonferroni-corrected at 1 % family-wise, `transferkit.stats.agreement`) plus the
# optimisation error certified by the stopping rule where one is available; the notebook
# fails if they disagree.

# %% tags=["hide-input"]
import time

import numpy as np

import transferkit as tk
from transferkit import experiments, figures, provenance, stats, theory

figures.plotting.use_style()
SCALE = tk.scale()
print(f"TRANSFERKIT_SCALE = {SCALE}")

# %% [markdown]
# ## Top vs bottom eigen-align (Fig. 1)
#
# $x\sim\mathcal N(0,\Sigma)$ with $m$ eigenvalues $1.5$ and the rest $0.3$. "Top Eigen
# Align": $P_{\le m}(\theta_T-\theta_S) = 0$; "Bottom Eigen Align":
# $P_{>m}(\theta_T-\theta_S) = 0$; $\|\theta_T-\theta_S\| = 1$ in both, the difference
# uniform on the unit sphere of its subspace, and both settings share the designs $X$. At
# `paper` scale $d = 1000$, $m = 50$ as in the paper; `smoke` uses $d = 200$, $m = 10$.
# The simulation is gradient descent from $\theta_S$ (Nesterov with restarts: every step is a
# gradient, so the limit is the same closest interpolant), stopped at an excess training
# loss of $10^{-12}$; its population risk is computed exactly from the trained weights. The
# bound uses $c = 3$ (the smallest constant with
# $3\max(\sqrt x, x)\ge 2\sqrt x + x$, the leading term of $\|\tilde\Sigma-\Sigma\|$ for
# Gaussian data, see `teachers.g_function`) and $\delta = \log 100$ (probability 99 %).

# %%
P1 = experiments.linear_teachers.FIG1_EIGEN_ALIGN[SCALE]  # sources: EigenAlignPreset
D, M_TOP, DRAWS1 = P1.d, P1.m, P1.draws
NS1 = np.array(P1.ns)
C_G, DELTA = P1.c, P1.delta
LAM = experiments.linear_teachers.spiked_spectrum(D, M_TOP, P1.top, P1.bottom)
t0 = time.perf_counter()
fig1 = experiments.linear_teachers.eigen_align_sim(LAM, M_TOP, NS1, DRAWS1, seed=P1.seed,
                                                   norm=P1.norm)
print(f"d = {D}, m = {M_TOP}, {DRAWS1} draws per n, n = {NS1.tolist()}: "
      f"{time.perf_counter() - t0:.1f} s")

# %%
g1 = theory.linear_teachers.g_function(LAM, DELTA, NS1, c=C_G)
# the bound at ||Delta|| = 1: the top setting has all of Delta in the bottom span and vice versa
bound1 = np.stack([2 * g1, 2 * g1 ** 3 / LAM[M_TOP - 1] ** 2])
fig = figures.paper001.eigen_align_figure(fig1, NS1, bound1, M_TOP, D)
provenance.record(fig, "p001-fig1", seeds=P1.seed,
                  params=dict(d=D, m=M_TOP, draws=DRAWS1, ns=NS1, c=C_G, delta=DELTA),
                  caption="paper 001 Fig. 1: top vs bottom eigen-align, GD vs Thm 4.1 and the Thm 4.2 bound")

# %% [markdown]
# **Figure 1.** Population risk of fine-tuning against the number of target samples for
# the two alignments of $\theta_T-\theta_S$ (equal norm 1), mean over the draws with
# standard errors; lines: Thm 4.1 evaluated on the same designs; dashed: the bound of
# Thm 4.2 with $c = 3$, $\delta = \log 100$. The bound is far above the risk for small $n$
# (it is an upper bound with loose constants) but it orders the two settings the same way
# as the simulation for large $n$. Parameters as printed above; the paper's constant $c$
# and its $n$ grid are not stated.

# %%
ok_opt = np.abs(fig1.risk_gd - fig1.risk_thm41) <= fig1.opt_err + 1e-12
A1 = stats.agreement(fig1.risk_gd, fig1.risk_thm41.mean(-1),
                        atol=fig1.opt_err.max(-1))
print(A1.summary("Fig. 1, gradient descent vs Thm 4.1"))
print(f"per draw |GD - Eq. 2| within the certified optimisation error: {ok_opt.mean():.0%}")
dev = fig1.cov_dev[0]
print(f"||Sigma~ - Sigma|| <= g (c = {C_G:g}) in {np.mean(dev <= g1[:, None]):.0%} of draws; "
      f"with c = 1 in {np.mean(dev <= g1[:, None] / C_G):.0%}")
holds = fig1.risk_gd <= bound1[..., None]
print(f"Eq. 3 holds in {holds.mean():.0%} of the draws")
top, bot = fig1.risk_gd.mean(-1)
cross = NS1[np.argmax(bot < top)]
print(f"Bottom Eigen Align becomes better than Top at n = {cross} (n/d = {cross / D:.2f})")

# %%
# checks asserted here: GD reaches Thm 4.1 in every draw; Eq. 3 and its premise hold
assert fig1.converged.all() and ok_opt.all() and A1.ok
assert holds.all()
assert np.mean(dev <= g1[:, None]) >= 1 - np.exp(-DELTA)
# the paper's qualitative claim: Top is better for very few samples, Bottom for many
se1 = fig1.risk_gd.std(-1, ddof=1) / np.sqrt(DRAWS1)
diff_first = top[0] - bot[0]
diff_last = bot[-1] - top[-1]
assert diff_first < -3 * np.hypot(se1[0, 0], se1[1, 0])
assert diff_last < -3 * np.hypot(se1[0, -1], se1[1, -1])

# %% [markdown]
# ## Depth (Fig. 2)
#
# Deep linear networks of width $d$ hold **exactly 0-balanced** pretrained weights with
# end-to-end vector $\theta_S$ (`teachers.balanced_weights`: the point that gradient flow
# from a vanishing 0-balanced initialisation reaches, the assumption of Thm 5.2;
# gradient-descent pretraining from scale $10^{-5}$ needs a number of steps growing like
# $\alpha^{-(L-2)}$ and does not finish at depth 7, so it is used only for depth 2-3 in
# `tests/test_teachers.py`). They are fine-tuned on $n = d/10$ isotropic Gaussian samples by
# plain gradient descent (the path matters) at half the curvature-bound step, stopped at an
# excess training loss of $10^{-12}$. Risks are $\|\beta-\theta_T\|^2$ ($\Sigma = I$).
#
# (a) $\theta_T = \alpha\theta_S + \epsilon$, $\|\theta_S\| = 1$,
# $\|\epsilon\| = 0.5$ (the paper's "$\approx 0.5\|\theta_S\|$"), several depths.
# (b) depth 7, $\|\hat\theta_T-\hat\theta_S\| = 0.1$; either $\theta_T = a\hat\theta_T$
# (target scaled) or $\theta_S = a\hat\theta_S$ (source scaled), the other of norm 1.

# %%
P2 = experiments.linear_teachers.FIG2_DEPTH[SCALE]  # sources: DepthPreset
D2, DRAWS2 = P2.d, P2.draws
DEPTHS = list(P2.depths)
ALPHAS = np.array(P2.alphas)
SCALES = np.array(P2.scales)
N2, DEPTH_B = P2.n, P2.depth_b
t0 = time.perf_counter()
fig2a = experiments.linear_teachers.depth_alpha_sim(D2, N2, DEPTHS, ALPHAS, DRAWS2, seed=P2.seed_a,
                                                    noise_norm=P2.noise_norm)
fig2b = experiments.linear_teachers.scaling_sim(D2, N2, DEPTH_B, SCALES, DRAWS2, seed=P2.seed_b,
                                                angle_dist=P2.angle_dist)
print(f"d = {D2}, n = {N2}, {DRAWS2} draws, depths {DEPTHS}: {time.perf_counter() - t0:.1f} s")

# %%
fig = figures.paper001.depth_figure(fig2a, fig2b, DEPTHS, ALPHAS, SCALES, D2, N2, DEPTH_B)
provenance.record(fig, "p001-fig2", seeds=[P2.seed_a, P2.seed_b],
                  params=dict(d=D2, n=N2, draws=DRAWS2, depths=DEPTHS, alphas=ALPHAS, scales=SCALES),
                  caption="paper 001 Fig. 2: fine-tuning risk against alpha by depth; depth 7 with scaled norms")

# %% [markdown]
# **Figure 2.** (a) Risk of fine-tuning against the scale $\alpha$ of the target for several
# depths; points: gradient descent (mean and standard error over the draws), lines: Thm 5.2
# on the same designs, dotted: its $L\to\infty$ limit Eq. 6. (b) A 7-layer network with the
# target or the source scaled by $a$; dotted: the depth-1 prediction of Thm 4.1 for
# comparison. The paper's $d$ and draw count are not stated; ours are printed above.
#
# **What we measure.** Thm 5.2 matches gradient descent at every depth (check below), but the
# approach to the $L\to\infty$ limit is slow: the self-consistency makes the rescaling
# factor depend on $\|P_\perp\theta_S\|^{L}/\|\theta_S\|^L \approx (1-n/d)^{L/2}$, which is
# $0.69$ at $L = 7$, $n/d = 0.1$. A 7-layer network is therefore far from the
# infinite-depth behaviour of Thms 5.3-5.4: in (b) scaling the *source* up hurts about as much
# as scaling the target (paper scale, $a = 8$: risk 22.0 with the source scaled, 20.8 with the
# target scaled; Eq. 6 gives 0.01 and 0.65), whereas the paper's Fig. 2b reports that the
# source scale matters much less than the target scale. **Not reproduced** (not a finding):
# Thm 5.2 itself matches gradient descent, so the difference must come from the paper's
# experimental setting, and the paper states neither its $n/d$ nor the initialisation or
# balancedness; this chapter shows Fig. 2b at one reading of them, not under all. Depth does help as $\alpha$ grows in (a),
# as in the paper.

# %%
A2a = stats.agreement(fig2a.risk_gd, fig2a.risk_thm52.mean(-1))
A2b = stats.agreement(fig2b.risk_gd, fig2b.risk_thm52.mean(-1))
print(A2a.summary("Fig. 2a, gradient descent vs Thm 5.2"))
print(A2b.summary("Fig. 2b, gradient descent vs Thm 5.2"))
rel = np.abs(fig2a.risk_gd - fig2a.risk_thm52) / fig2a.risk_thm52
print(f"largest per-draw relative gap GD vs Thm 5.2: {rel.max():.2%} "
      "(discretisation of gradient flow; first order in the step, tests/test_teachers.py)")
# Thm 4.1 ignores depth: at the deepest depth and largest alpha it is off by many standard errors
deep = fig2a.risk_gd[-1, -1]
paired = deep - fig2a.risk_thm41[-1]
z41 = paired.mean() / (paired.std(ddof=1) / np.sqrt(DRAWS2))
print(f"L = {DEPTHS[-1]}, alpha = {ALPHAS[-1]}: GD - Thm 4.1 = {paired.mean():.3f} (z = {z41:.1f})")
src, tgt = fig2b.risk_gd[1, -1].mean(), fig2b.risk_gd[0, -1].mean()
e6 = fig2b.risk_eq6[:, -1].mean(-1)
print(f"depth 7, a = {SCALES[-1]}: risk with source scaled {src:.3f}, target scaled {tgt:.3f}; "
      f"L -> infinity (Eq. 6): source scaled {e6[1]:.3f}, target scaled {e6[0]:.3f}")

# %%
assert fig2a.converged.all() and fig2b.converged.all()
assert A2a.ok and A2b.ok
assert z41 < -3      # depth lowers the risk below the L = 1 prediction
# what the text claims: at depth 7 and n = d/10, scaling the source is far from the harmless L -> inf
# limit (Eq. 6), by more than an order of magnitude
assert fig2b.risk_gd[1, -1].mean() > 10 * fig2b.risk_eq6[1, -1].mean()

# %% [markdown]
# ## Frozen first layer (Fig. 3)
#
# Two-layer linear networks of width $d$, unit teachers with $\cos\angle(\theta_S,\theta_T)
# = 0.7$, $\Sigma = I$, no noise. The network is pretrained by gradient descent from
# scale $10^{-5}$ on the population source loss (approximately 0-balanced), then:
#
# * **Frozen**: first layer frozen, last layer trained by gradient descent
#   (`teachers.frozen_first_layer_gd`) for as many steps as the Finetune model needed on
#   the same data. The pretrained features have effective rank one (one singular value
#   $\approx 1$, the others $O(10^{-5})$); we also show the least-squares fit on that rank-one
#   feature space (`trainers.feature_subspace` with relative cut $10^{-3}$,
#   `trainers.linear_transfer`), the point gradient descent reaches along the directions it
#   can use;
# * **Vanilla**: the same network trained from scratch from scale $10^{-5}$ (limit $X^+y$,
#   expected risk $(1-n/d)\|\theta_T\|^2$);
# * **Finetune**: all layers trained from the pretrained weights (Thm 5.2 with $L = 2$).
#
# The largest $n$ is $0.7d$: plain gradient descent (needed for fine-tuning, whose path
# matters) slows down like the condition number of $XX^\top$, which diverges as $n\to d$.
# The frozen model follows Thm 5.5 up to the $O(10^{-5})$ imbalance of the pretrained weights.

# %%
P3 = experiments.linear_teachers.FIG3_FROZEN[SCALE]  # sources: FrozenPreset
D3, DRAWS3 = P3.d, P3.draws
NS3 = np.array(P3.ns)
COS3 = P3.cos_angle
t0 = time.perf_counter()
fig3 = experiments.linear_teachers.frozen_sim(D3, NS3, COS3, DRAWS3, seed=P3.seed)
print(f"d = {D3}, {DRAWS3} draws, n = {NS3.tolist()}: {time.perf_counter() - t0:.1f} s; "
      f"rank of the frozen features: {sorted(set(fig3.rank.tolist()))}")

# %%
fig = figures.paper001.frozen_figure(fig3, NS3, COS3, D3)
provenance.record(fig, "p001-fig3", seeds=P3.seed,
                  params=dict(d=D3, ns=NS3, draws=DRAWS3, cos=COS3),
                  caption="paper 001 Fig. 3: frozen, vanilla and fine-tuned two-layer linear networks")

# %% [markdown]
# **Figure 3.** Frozen, Vanilla and Finetune two-layer models against $n$ (mean and
# standard error over the draws; crosses: the frozen model's rank-one least-squares limit;
# lines: Thm 5.5 on the same designs, the scratch
# expectation $(1-n/d)$, Thm 5.2 with $L = 2$). The frozen model stays a multiple of
# $\theta_S$ and its risk levels off at $\sin^2\angle(\theta_S,\theta_T) = 0.51$ however
# many samples it sees (Thm 5.5); fine-tuning all layers has the best sample complexity.
# The paper's $d$ and angle are not stated; ours are printed above. With unlimited steps
# gradient descent on the frozen model would creep along the $O(10^{-5})$ feature
# directions (curvature $O(10^{-10})$): in one draw at $d = 30$, $n = 3$ its distance to
# $c\,\theta_S$ grows from $6\cdot10^{-4}$ after $10^3$ steps to $6\cdot10^{-2}$ after
# $10^5$, the slow convergence the paper describes for approximately balanced weights.

# %%
A3 = {k: stats.agreement(risk, th)
      for k, risk, th in (("frozen", fig3.risk_frozen, fig3.risk_thm55.mean(-1)),
                          ("vanilla", fig3.risk_vanilla, fig3.risk_scratch_theory),
                          ("finetune", fig3.risk_finetune, fig3.risk_thm52.mean(-1)))}
A3["frozen_gd"] = stats.agreement(fig3.risk_frozen_gd, fig3.risk_thm55.mean(-1))
for k, a in A3.items():
    print(a.summary(f"Fig. 3, {k}"))
gap55 = np.abs(fig3.risk_frozen - fig3.risk_thm55).max()
gap_gd = np.abs(fig3.risk_frozen_gd - fig3.risk_thm55).max(-1)
print(f"frozen (rank-one least squares) vs Thm 5.5 per draw: max |difference| = {gap55:.1e}")
print(f"frozen (gradient descent, {fig3.frozen_gd_steps.tolist()} steps) vs Thm 5.5: "
      f"max |difference| per n = {np.array2string(gap_gd, precision=1)}")

# %%
assert fig3.converged.all() and (fig3.rank == 1).all()
assert all(a.ok for a in A3.values()) and gap55 < 1e-4  # O(alpha) imbalance, alpha = 1e-5
assert gap_gd.max() < 1e-3   # within the fine-tuning budget GD stays at c theta_S (Thm 5.5)
# the frozen model does not learn the target: at the largest n it is still near sin^2
fr = fig3.risk_frozen_gd[-1]
assert abs(fr.mean() - (1 - COS3 ** 2)) < 0.1 + 3 * fr.std(ddof=1) / np.sqrt(DRAWS3)
assert fig3.risk_finetune[-1].mean() < fr.mean()
