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
tk.models.device.use_threads()  # TRANSFERKIT_THREADS, default 1 (transferkit.config.threads)
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
# Thm 4.2 with $c = 3$, $\delta = \log 100$. The bound is far above the risk (it is an
# upper bound with loose constants), and with $c = 3$ it does not order the two settings as
# the simulation does at large $n$: the Bottom setting's bound, $2g^3/\lambda_m^2$, stays
# above the Top setting's, $2g$, at every $n$ of the grid (printed above), because
# $g\ge 2.26 > \lambda_m = 1.5$ there; it would cross where $g < \lambda_m$, about
# $n = 2{,}200$ at $c = 3$, beyond $n = d$. The ordering the paper reads off the bound
# ("better generalization performance of Bottom Eigen Align for large n") therefore
# depends on its unstated constant $c$: with $c = 1$, $g < \lambda_m$ already at $n = 400$
# ($g = 1.16$). Parameters as printed above; the paper's constant $c$ and its $n$ grid are
# not stated.

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
print(f"Thm 4.2 bound (c = {C_G:g}) per n, Top: {', '.join(f'{v:.3g}' for v in bound1[0])}; "
      f"Bottom: {', '.join(f'{v:.3g}' for v in bound1[1])}; Bottom's bound below Top's at "
      f"n = {NS1[bound1[1] < bound1[0]].tolist()}")

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
if P1 == experiments.linear_teachers.FIG1_EIGEN_ALIGN["paper"]:   # the caption's reading
    assert np.all(bound1[1] > bound1[0]) and g1.min() > LAM[M_TOP - 1], (bound1, g1.min())

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
# comparison; the two settings nearly coincide, so the source-scaled one (open squares, thin
# lines, Thm 5.2 dashed) is drawn over the target-scaled one (filled circles, wide lines).
# The paper's $d$ and draw count are not stated; ours are printed above.
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

# %% [markdown]
# ## Fine-tuning a wide two-layer ReLU network (Sec. 6, Thm 6.1, Cor. 6.3)
#
# Sec. 6 leaves linear models for the two-layer ReLU network
# $f(x;\Theta) = m^{-1/2}\sum_{r=1}^m a_r\,\sigma(w_r^\top x)$ with the readout
# $a\in\{-1,1\}^m$ fixed, $w_r\sim\mathcal N(0,\kappa^2 I)$ before pretraining and
# $\|x\| = 1$. The network is pretrained on the source in the NTK regime and then
# fine-tuned by gradient descent on $n$ target samples with the same width; with
# $\tilde y = y - f(X,\Theta(0))$ the residual of the *pretrained* network on the target
# inputs and $H^\infty$ the infinite-width Gram matrix
# $H^\infty_{ij} = x_i^\top x_j(\pi-\arccos x_i^\top x_j)/(2\pi)$
# (`theory.ntk.gram`), Thm 6.1 bounds the population risk of any loss
# $\ell\in[0,1]$ that is 1-Lipschitz with $\ell(y,y) = 0$ (here the ramp
# $\min(|f-y|,1)$, `theory.linear_teachers.ramp_loss`), with probability $1-\delta$, by
#
# $$R(\Theta(t)) \le 2\sqrt{\tilde y^\top (H^\infty)^{-1}\tilde y/n}
#   + O\Big(\sqrt{\log\tfrac{n}{\lambda_0\delta}/n}\Big) \qquad\text{(Eq. 11)}.$$
#
# For linear teachers and perfect pretraining, $f(x,\Theta(0)) = x^\top\theta_S$
# (Assumption 3.2), Cor. 6.2 bounds the quadratic form by $3\|\theta_T-\theta_S\|$ and
# Cor. 6.3 the risk by $6\|\theta_T-\theta_S\|/\sqrt n + O(\cdot)$.
#
# Paper 001 has no experiment for Sec. 6; everything below is ours (`SEC6_NTK`): inputs
# uniform on the unit sphere of $\mathbb R^{d}$, unit teachers (so $|y|\le 1$ as Sec. 6
# assumes) at distances $\|\theta_T-\theta_S\|$ from 0 (the same task) to 2 (the opposite
# one), pretraining on $n_S$ source samples and fine-tuning on $n$ target samples, both by
# full-batch gradient descent on the squared loss (`models.relu.train_ntk`, step
# $1/\lambda_{\max}(H^\infty)$ of the inputs trained on) to
# $\|u-y\|\le 10^{-3}\|y\|$; the population risk is the mean ramp loss on fresh test inputs
# (5,000 per draw at `paper` scale). The choices the theorem leaves to us, and the readings
# shown:
#
# * **Initialisation.** Thm 6.1 takes $\kappa = O(\lambda_0\delta/n)$ (here
#   $\lambda_0$ = 0.06 to 0.11, so $\kappa\sim10^{-4}$ at $\delta = 0.1$) and
#   $m \ge \kappa^{-2}\mathrm{poly}$, far beyond a CPU. The width sweep uses $\kappa = 1$ with **paired** units (the second
#   half copies the first with opposite $a_r$, `models.relu.init_ntk(symmetric=True)`): the
#   network starts at $f = 0$, which is what a small $\kappa$ is for, without making the
#   network less lazy. The paper's **independent** $a_r$ are shown at one width with
#   $\kappa = 1$ and $\kappa = 0.1$ (panel d).
# * **Width.** Three widths; the NTK regime is checked by the distance travelled in
#   weight space, which tends to $\sqrt{\tilde y^\top(H^\infty)^{-1}\tilde y}$ as
#   $m\to\infty$ {cite:p}`arora2019finegrained` (paper 002's Thm 2, chapter
#   `ntk_similarity`), and by the fraction of ReLU activations that change sign.
# * **What can be checked.** Eq. 11 and Cor. 6.3 are upper bounds with an unspecified
#   constant in the $O(\cdot)$ term, so no measured risk can contradict them. The asserts
#   check what the section does claim without that constant: Cor. 6.2's inequality under
#   its assumption (a deterministic statement), the leading terms' and the measured risk's
#   growth with $\|\theta_T-\theta_S\|$ ("fine-tuning is improved as the distance between
#   source and target decreases"), the risk's decrease with $n$ at the largest distance,
#   and the lazy regime the proof rests on. Runs that stop at their step budget are marked and left out.

# %%
P6 = experiments.linear_teachers.SEC6_NTK[SCALE]  # sources: NtkFinetunePreset
t0 = time.perf_counter()
sec6 = experiments.linear_teachers.ntk_finetune_sim(
    P6.d, P6.n_source, P6.ns, P6.distances, P6.widths, P6.draws, kappa=P6.kappa,
    symmetric=P6.symmetric, readings=P6.readings, reading_width=P6.reading_width,
    n_test=P6.n_test, tol=P6.tol, max_steps=P6.max_steps, seed=P6.seed)
NS6, DIST6 = np.array(P6.ns), np.array(P6.distances)
CONV6 = sec6.converged & sec6.pre_converged[:, :, None, None]
print(f"d = {P6.d}, n_S = {P6.n_source}, n = {NS6.tolist()}, distances = {DIST6.tolist()}, "
      f"{P6.draws} draws, {P6.n_test} test inputs per draw: {time.perf_counter() - t0:.1f} s")
for c, (m, kap, sym) in enumerate(sec6.configs):
    print(f"  m = {m:5d}, kappa = {kap:g}, {'paired' if sym else 'independent'} a_r: "
          f"{sec6.seconds[c]:.1f} s, runs at the step budget: {(~CONV6[c]).sum()} of "
          f"{CONV6[c].size}, pretraining steps {sec6.steps_pre[c].tolist()}, fine-tuning "
          f"steps up to {sec6.steps[c].max()}")

# %%
fig = figures.paper001.ntk_finetune_figure(sec6)
provenance.record(fig, "p001-sec6-ntk", seeds=P6.seed,
                  params=dict(d=P6.d, n_source=P6.n_source, ns=NS6, distances=DIST6,
                              configs=[list(c) for c in sec6.configs], draws=P6.draws,
                              n_test=P6.n_test, tol=P6.tol),
                  caption="paper 001 Sec. 6: a wide two-layer ReLU network fine-tuned by "
                          "gradient descent against Thm 6.1 (Eq. 11) and Cors. 6.2-6.3")

# %% [markdown]
# **Figure 4.** (a) Population ramp loss of the fine-tuned network against
# $\|\theta_T-\theta_S\|$ at the largest width (mean and standard error over the draws),
# with Eq. 11's leading term computed from the pretrained network's actual outputs (lines)
# and Cor. 6.3's $6\|\theta_T-\theta_S\|/\sqrt n$ (dashed). (b) Cor. 6.2: the quadratic form
# with the pretrained outputs (filled) and under Assumption 3.2 (open), against
# $3\|\theta_T-\theta_S\|$ and the sharper $2\|\theta_T-\theta_S\|$ that holds because
# $H^\infty\succeq XX^\top/4$ (`theory.linear_teachers.cor62_term`). (c) The lazy regime
# against the width: relative excess of the distance travelled by fine-tuning over
# $\sqrt{\tilde y^\top(H^\infty)^{-1}\tilde y}$, and the fraction of activations that flip.
# (d) The paper's independent readout against the paired one at one width, largest $n$
# (dotted: the pretrained network before fine-tuning). Parameters as printed above.

# %%
top6 = max(range(len(P6.widths)), key=lambda i: sec6.configs[i][0])
ok6 = CONV6[top6]
risk6, se6 = sec6.risk[top6], sec6.risk_se[top6]           # (draws, n, distance)
lead6 = sec6.lead[top6]
print(f"m = {sec6.configs[top6][0]}: population ramp loss (mean over draws, Monte Carlo SE of "
      f"one draw up to {se6.max():.1e}) | Eq. 11 leading term | Cor. 6.3 term")
for j, n in enumerate(NS6):
    print(f"  n = {n:3d}: " + "  ".join(
        f"{dd:g}: {risk6[:, j, k].mean():.4f} | {lead6[:, j, k].mean():.3f} | {sec6.cor63[j, k]:.3f}"
        for k, dd in enumerate(DIST6)))
pos6 = DIST6 > 0
ratio6 = lead6[..., pos6] / risk6[..., pos6]
print(f"Eq. 11's leading term / measured risk (distance > 0): {ratio6.min():.1f} to {ratio6.max():.1f}")
rem6 = theory.linear_teachers.thm61_remainder(NS6, sec6.lam0.min(0), 0.05)
print(f"remainder of Eq. 11 with constant 1 and delta = 0.05: {np.round(rem6, 3).tolist()} "
      f"(lambda_0 = {np.round(sec6.lam0.mean(0), 3).tolist()})")
sig6 = 1 / np.sqrt(P6.d)   # RMS of x^T theta for unit theta
print(f"pretraining (Assumption 3.2): RMS of f(x, Theta(0)) - x^T theta_S on test inputs "
      f"{sec6.pre_err_pop[top6].mean():.4f} (signal RMS {sig6:.3f}); on the target inputs the "
      f"error adds sqrt(e^T H^-1 e) = {np.round(sec6.pre_term[top6].mean(0), 3).tolist()}; "
      f"risk before fine-tuning {np.round(sec6.risk_pre[top6].mean(0), 3).tolist()}")
print(f"Cor. 6.2 under Assumption 3.2: largest sqrt(y~^T H^-1 y~) / ||theta_T - theta_S|| = "
      f"{(sec6.cor62_linear[..., pos6] / DIST6[pos6]).max():.3f} (Cor. 6.2: 3)")
for c, (m, kap, sym) in enumerate(sec6.configs):
    viol6 = sec6.cor62[c] > 3 * DIST6
    print(f"  with the pretrained outputs, m = {m}, kappa = {kap:g}, "
          f"{'paired' if sym else 'independent'}: pretraining error RMS "
          f"{sec6.pre_err_pop[c].mean():.4f}, Cor. 6.2 fails in {viol6.mean():.0%} of the "
          f"cells, at distances {sorted(set(DIST6[np.nonzero(viol6)[2]].tolist()))}")
fit6 = stats.fit_power_law(NS6.astype(float), risk6[:, :, -1].mean(0),
                           risk6[:, :, -1].std(0, ddof=1) / np.sqrt(P6.draws))
print(f"risk at distance {DIST6[-1]:g} ~ n^-{fit6[1]:.2f} (SE {fit6[3]:.2f}); the bounds "
      f"decay as n^-1/2")
widths6 = np.array([sec6.configs[i][0] for i in range(len(P6.widths))])
exc6 = np.abs(sec6.move[: len(widths6)][..., pos6] / sec6.cor62[: len(widths6)][..., pos6] - 1)
print(f"widths {widths6.tolist()}: mean |move / sqrt(y~ H^-1 y~) - 1| = "
      f"{np.round(exc6.mean(axis=(1, 2, 3)), 4).tolist()}, mean fraction of flipped "
      f"activations {np.round(sec6.flips[: len(widths6)].mean(axis=(1, 2, 3)), 4).tolist()}")
for c in range(len(P6.widths), len(sec6.configs)):
    m, kap, sym = sec6.configs[c]
    print(f"independent a_r, m = {m}, kappa = {kap:g}: pretraining error RMS "
          f"{sec6.pre_err_pop[c].mean():.4f}, risk at n = {NS6[-1]}: "
          f"{np.round(sec6.risk[c, :, -1].mean(0), 4).tolist()}, flips up to "
          f"{sec6.flips[c].max():.3f}")

# %%
# checks asserted here (converged runs only; the main width converged throughout)
assert ok6.all() and sec6.pre_converged[: len(P6.widths)].all()
# Cor. 6.2 under Assumption 3.2: sqrt(y~^T H^-1 y~) <= 2 ||theta_T - theta_S|| <= 3 ||.|| (rounding)
assert np.all(sec6.cor62_linear <= 2 * DIST6 * (1 + 1e-9) + 1e-12)
# the risk grows with the distance in every draw and n: never down beyond its Monte Carlo
# error, and up beyond it at every step but the first (there the risk sits at the floor left
# by the pretraining error); paired errors (the same test inputs), Bonferroni over all below
z6 = stats.critical_value(risk6[..., 1:].size + risk6[:, 1:, -1].size, None)
step6 = np.diff(risk6, axis=-1) / sec6.risk_dse_distance[top6]
assert np.all(step6 > -z6) and np.all(step6[..., 1:] > z6)
assert np.all(np.diff(lead6, axis=-1) > 0)                 # and so does Eq. 11's leading term
# more target samples help at the largest distance (nested target sets, the same test inputs)
assert np.all(-np.diff(risk6[..., -1], axis=-1) > z6 * sec6.risk_dse_n[top6][..., -1])
# the lazy regime: wider networks travel closer to sqrt(y~^T H^-1 y~) and flip fewer activations
assert exc6[-1].mean() < exc6[0].mean()
assert sec6.flips[len(widths6) - 1].mean() < sec6.flips[0].mean()
# the paper's independent readout at kappa = 1 starts from an O(1) random function that
# pretraining does not remove: Assumption 3.2 fails far more than with the paired units
ind6 = [c for c in range(len(P6.widths), len(sec6.configs))
        if not sec6.configs[c][2] and sec6.configs[c][1] == 1.0]
assert all(sec6.pre_err_pop[c].min() > 2 * sec6.pre_err_pop[: len(P6.widths)].max() for c in ind6)

# %% [markdown]
# **What we measure** (`paper` scale: $d = 10$, $n_S = 200$, $n = 25, 50, 100$, three draws,
# 5,000 test inputs per draw; about 70 CPU-seconds, 2.7 minutes of wall time on two cores
# shared with other jobs). At $m = 4096$ the fine-tuned network's ramp loss grows with
# $\|\theta_T-\theta_S\|$ from a floor of 0.004-0.005 at distance 0 (the pretraining
# error) to 0.229, 0.102 and 0.041 at distance 2 for $n = 25, 50, 100$; Eq. 11's leading
# term, computed with the pretrained network's actual outputs, goes from 0.02 to 1.22,
# 1.02 and 0.76, and Cor. 6.3's $6\|\theta_T-\theta_S\|/\sqrt n$ to 2.4, 1.7 and 1.2.
#
# * **The bounds hold, loosely.** The leading term alone is 4.9 to 30 times the measured
#   risk wherever the distance is positive, so the measurements are consistent with Eq. 11
#   and Cor. 6.3 whatever the constant of their $O(\cdot)$ term; that term with constant 1
#   and $\delta = 0.05$ is 0.58, 0.44 and 0.32, larger than every measured risk. This is not
#   a check of the remainder, which the paper does not quantify. The risk at distance 2
#   falls like $n^{-1.21\pm0.08}$, faster than the $n^{-1/2}$ of both bounds.
# * **What the section claims holds.** Fine-tuning is better the closer the tasks: the
#   risk grows with the distance in every draw and every $n$ (by 31 to 82 paired standard
#   errors per step, except between distances 0 and 0.1, where it sits near the
#   pretraining floor: 1.8 to 52 standard errors), and so does Eq. 11's leading term. More
#   target samples lower the risk at every positive distance (by at least 7.6 paired
#   standard errors per step) but not at distance 0, where all there is to learn is the
#   pretraining error (one draw gets worse from $n = 25$ to 50).
# * **Cor. 6.2 has room.** Under Assumption 3.2 the largest
#   $\sqrt{\tilde y^\top(H^\infty)^{-1}\tilde y}/\|\theta_T-\theta_S\|$ is 1.965: the
#   constant is 2, not 3, because $H^\infty \succeq XX^\top/4$, and it is nearly attained
#   at $n = 10d$ (the kernel norm of a linear function is exactly $2\|\theta_T-\theta_S\|$,
#   `theory.linear_teachers.cor62_term`). Cor. 6.3 therefore holds with 4 in place of 6.
# * **Assumption 3.2 holds only approximately, and Cor. 6.2 with the actual outputs fails
#   where that matters.** The pretrained network differs from $x^\top\theta_S$ by an RMS
#   of 0.019, 0.011 and 0.0082 at $m = 256, 1024, 4096$ (the signal's RMS is 0.32). On the
#   target inputs this error alone contributes $\sqrt{e^\top(H^\infty)^{-1}e} = 0.05$ to
#   0.12 at $m = 4096$ (0.13 to 0.39 at $m = 256$), growing with $n$ because
#   $(H^\infty)^{-1}$ weighs the rough part of $e$ heavily. So Cor. 6.2's inequality fails
#   at distance 0 for every width (its right side is 0) and at distance 0.1 for
#   $m \le 1024$ (17 % of the cells at $m = 4096$, 20-24 % at the smaller widths). Eq. 11
#   itself does not need the assumption: with the actual outputs its leading term stays
#   above the measured risk there too (3.6 times it at distance 0).
# * **The NTK regime.** The distance travelled by fine-tuning is
#   $\sqrt{\tilde y^\top(H^\infty)^{-1}\tilde y}$ to within 2.1 %, 0.6 % and 0.3 % (mean
#   relative difference at $m = 256, 1024, 4096$), and the
#   fraction of activations that change sign falls like $m^{-1/2}$ (0.83 %, 0.39 %,
#   0.18 %): the runs are in the lazy regime the proof uses.
# * **The initialisation matters more than the width.** With the paper's independent
#   readout and $\kappa = 1$ the network starts from a random function of RMS
#   $\approx\kappa/\sqrt 2$; pretraining on $n_S$ points removes it only there, leaving an
#   error of RMS 0.117 (a third of the signal). The fine-tuned risk is then 0.089 to 0.091
#   for every distance up to 1 at $n = 100$, and Eq. 11's leading term (0.49 at distance 0) is set by
#   the pretraining error, not by the tasks: this is what Thm 6.1's small $\kappa$ prevents.
#   With $\kappa = 0.1$ the leftover shrinks (pretraining error 0.013; risks 0.009 to
#   0.032 at $n = 100$, against 0.007 to 0.041 with paired units), but the network is less
#   lazy: up to 12 % of the activations flip, against 1.5 % with $\kappa = 1$ at the same
#   width, since the same movement in weight space is large beside weights of size
#   $\kappa\sqrt d$. The
#   paired initialisation gets the small initial function of a small $\kappa$ at
#   $\kappa = 1$.
#
# **Not reproduced, and why.** Paper 001 reports no experiment for Sec. 6, so there is no
# figure to compare with; the theorem's own regime, $\kappa = O(\lambda_0\delta/n)$ (here
# $\sim10^{-4}$) with $m \ge \kappa^{-2}\mathrm{poly}(n, n_S, \lambda_0^{-1},
# \delta^{-1})$, is out of reach, and the $O(\cdot)$ term has no constant, so the bound
# cannot be tested as a number: we check its leading terms, its assumptions and its
# qualitative claim.
