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
# # LeNet transfer among digit-like data sets
#
# This chapter regenerates, at LeNet scale, Fig. 8a and Fig. 9 of Liu et al.
# {cite:p}`liu2019transferability` (paper 002, Sec. 5): both in small with the chapter's
# optimiser, then Fig. 9 and Fig. 8a with SGD at App. A's settings on the whole training sets
# (last two sections). LeNet {cite:p}`lecun1998gradient` is
# pretrained on MNIST, on upside-down MNIST and on Fashion-MNIST {cite:p}`xiao2017fashion`,
# with the same number of images, the same labels and the same number of images per class,
# so that the three pretrained networks differ only through the pixels; each is then
# fine-tuned (all layers) on 600 images of another digit data set and compared with
# training from scratch: test accuracy, and the deviation of each layer from the weights it
# started from.
#
# **Target data set.** The paper fine-tunes on 600 SVHN images. SVHN cannot be obtained
# offline; we use scikit-learn's 8x8 handwritten digits, upscaled to 28x28 by bilinear
# interpolation (`transferkit.data.load_digits_28`), another digit set whose pixels differ
# from MNIST's. 600 images (60 per class) are used for fine-tuning and the other 1,197 for
# testing.
#
# **Theory.** LeNet has no closed form. The theory of Sec. 6 (see the chapter on task
# similarity in the NTK regime) predicts the *ranking* of the sources: we compute the
# task-similarity terms of Thms 1-2 between each source and the target on the pixels
# (`transferkit.experiments.lenet_transfer.ntk_similarity`: rows normalised to the unit sphere, one-hot
# centred labels), and compare their order with the measured one.

# %% tags=["hide-input"]
import time

import numpy as np
from scipy import stats

import transferkit as tk
from transferkit import experiments, figures, models, provenance, sweep
from transferkit import stats as tkstats

figures.plotting.use_style()
SCALE = tk.scale()
tk.models.device.use_threads()  # TRANSFERKIT_THREADS, default 1 (transferkit.config.threads)
print(f"TRANSFERKIT_SCALE = {SCALE}")

# %% [markdown]
# ## Parameters
#
# Paper (App. A): learning rate 0.01, weight decay $5\times10^{-4}$, batch 64, 100 epochs
# (the optimiser is not named for LeNet). A shared CPU cannot do that for three sources and
# several seeds, so we use, and state in every caption: Adam (learning rate $10^{-3}$,
# weight decay $5\times10^{-4}$, batch 64 as in the paper), a balanced subset of the
# pretraining set, a few epochs of pretraining and a fixed number of fine-tuning epochs,
# several seeds (the seed draws the subsets, the initialisation and the batch order).
# Fig. 8a uses the networks pretrained longest (the paper trains for 100 epochs).
# The values, and the source of each, live in `experiments.lenet_transfer.LENET_TRANSFER`
# (one preset per scale).

# %%
PRESET = experiments.lenet_transfer.LENET_TRANSFER[SCALE]
N_PRE, SNAPS, E8A = PRESET.n_pretrain, PRESET.snapshots, PRESET.fig8a_epochs
FT_EPOCHS, N_TARGET, SEEDS = PRESET.ft_epochs, PRESET.n_target, PRESET.seeds
N_SIM = (PRESET.sim_source, PRESET.sim_target)
FIXED = {"n_pretrain": N_PRE, "n_target": N_TARGET, "ft_epochs": FT_EPOCHS, "batch": PRESET.batch,
         "lr": PRESET.lr}
PARAMS = (f"{N_PRE} pretraining images ({N_PRE // 10} per class), {N_TARGET} target images, "
          f"{FT_EPOCHS} fine-tuning epochs, Fig. 8a at {E8A} pretraining epochs, "
          f"{len(SEEDS)} seeds")
print(PARAMS)

# %% [markdown]
# ## Simulation
#
# One cell per (source, seed), cached by `transferkit.sweep` (keyed by the parameters and
# the package sources). The MNIST networks are pretrained for the longest epoch count and
# saved after each epoch of the Fig. 9 grid; the one saved at the Fig. 8a epoch count is
# the same network as one pretrained for exactly that long (same seed, same batches).
# **Upside-down MNIST is the mirror image of the MNIST network** (`mirrored`, fine-tuned in
# the MNIST cell): LeNet's layers commute with the vertical flip (symmetric padding, even
# pooling tiles), so pretraining on the flipped images from the mirrored initialisation
# gives, in exact arithmetic, the mirror image of the MNIST network at every step
# (`models.lenet.mirror_state`; in floating point they differ by the rounding of the
# convolutions, tested). Its initialisation is the mirror of the others' (the same law)
# and its pretraining is MNIST's, so it costs only its fine-tuning, and the difference
# between the two sources is that of the target's orientation alone: their pretraining
# noise is shared. Until 2026-11-29 it was pretrained apart, from the unmirrored
# initialisation (the numbers then are quoted below where they differ).

# %%
t0 = time.perf_counter()
mn = sweep.run(experiments.lenet_transfer.transfer_cell, {"source": ["mnist"], "seed": list(SEEDS)},
               fixed={**FIXED, "snapshots": list(SNAPS), "mirrored": [E8A]},
               desc="MNIST (and its mirror image), Fig. 9 snapshots")
other = sweep.run(experiments.lenet_transfer.transfer_cell,
                  {"source": ["fashion", "scratch"], "seed": list(SEEDS)},
                  fixed={**FIXED, "snapshots": [E8A]}, desc="other sources")
print(f"{time.perf_counter() - t0:.0f} s ({mn.computed + other.computed} cells computed, "
      f"{mn.cached + other.cached} from the cache)")
j = list(SNAPS).index(E8A)
LABELS = ["MNIST", "upside-down MNIST", "Fashion-MNIST", "scratch"]
acc, acc0, dev, dev_abs = (np.stack([mn[k][0, :, j], mn["mirror_" + k][0, :, 0],
                                      *other[k][:, :, 0]])      # (source, seed[, layer])
                            for k in ("acc", "acc0", "dev", "dev_abs"))    # dev_abs: the paper's
pre_acc = np.stack([mn["pre_acc"][0, :, j], mn["mirror_pre_acc"][0, :, 0],
                    other["pre_acc"][0, :, 0]])


def print_fig8a(acc, acc0, pre_acc, deviations):
    """Print Fig. 8a's accuracies per source (mean +- std over seeds), then each
    (title, deviation array) of ``deviations`` per source and layer."""
    for k, lab in enumerate(LABELS):
        extra = f", source test accuracy {pre_acc[k].mean():.3f}" if k < 3 else ""
        print(f"{lab:18s} target accuracy {acc[k].mean():.3f} +- {acc[k].std(ddof=1):.3f} "
              f"(before fine-tuning {acc0[k].mean():.3f}){extra}")
    for title, d in deviations:
        print(title, models.lenet.LAYERS)
        for k, lab in enumerate(LABELS):
            print(f"{lab:18s}", np.round(d[k].mean(0), 3), "+-", np.round(d[k].std(0, ddof=1), 3))


print_fig8a(acc, acc0, pre_acc, [("relative deviation per layer", dev),
                                 ("absolute deviation per layer (paper 002's measure)", dev_abs)])

# %% [markdown]
# ## Theory: task similarity of each source to the target

# %%
t0 = time.perf_counter()
sim = {s: experiments.lenet_transfer.ntk_similarity(s, *N_SIM, seed=PRESET.sim_seed)
       for s in ("mnist", "mnist_upside_down", "fashion", "scratch")}
thm1 = np.array([v.thm1 for v in sim.values()])
thm2 = np.array([v.thm2 for v in sim.values()])
print(f"{time.perf_counter() - t0:.0f} s, n_P = {N_SIM[0]}, n_Q = {N_SIM[1]}")
for lab, a, b in zip(LABELS, thm1, thm2):
    print(f"{lab:18s} ||Y_Q - Y_P->Q||^2 / n_Q = {a:.4f}   Eq. 2 leading term = {b:.3f}")

# %% [markdown]
# ## Fig. 8a

# %%
fig = figures.paper002.fig8a_figure(acc, dev_abs, dev, thm1, LABELS)
provenance.record(fig, "p002-fig8a", seeds=list(SEEDS), params=dict(FIXED, pretrain_epochs=E8A),
                  caption="paper 002 Fig. 8a: LeNet transfer to 28x28 scikit-learn digits")

# %% [markdown]
# *Fig. 8a.* LeNet pretrained on MNIST, upside-down MNIST (the same images flipped
# vertically) and Fashion-MNIST, then fine-tuned on scikit-learn's digits (standing in for
# SVHN, see above), against training from scratch. (a) Test accuracy on the target (bars:
# mean and standard deviation over seeds; dots: seeds). (b) Deviation
# $\|W_l - W_l^{\rm start}\|_F$ of each layer's weights from where fine-tuning started (the
# pretrained weights, or the initialisation for scratch): **the paper's measure**. Sec. 5.1
# computes "the deviation from pretrained weight of each layer" and Fig. 8a plots it for the
# two convolution kernels $\psi_1, \psi_2$ and the fully connected layer; Sec. 3 defines the
# deviation as the Frobenius norm $\|W - W_0\|_F$ between the fine-tuned and the pretrained
# weights, divided there by $\sqrt n$ ($n$ target examples), a factor common to all sources
# here that we leave out. (c) The same divided by $\|W_l^{\rm start}\|_F$: the relative
# deviation, **ours, not the paper's**. (d) The task-dissimilarity term of
# Thm 1 computed on the pixels (smaller: more similar); for scratch, $Y_{P\to Q} = 0$.
# Parameters as printed above; differences from the paper: target data set, optimiser,
# subset sizes and epochs (see Parameters). At `paper` scale (8 seeds) the accuracies were
# MNIST 0.967 ± 0.006, upside-down MNIST 0.961 ± 0.005 (pretrained on its own until
# 2026-11-29: 0.961 ± 0.004), Fashion-MNIST 0.944 ± 0.010,
# scratch 0.938 ± 0.006: the paper's order, and, among the three pretrained sources, the
# order of the theory's task similarity in (d) (scratch, whose term has $Y_{P\to Q} = 0$,
# has the smallest term of all four and the lowest accuracy: (d) ranks sources, not
# pretraining against none). Unlike the paper, Fashion-MNIST pretraining leaves every layer much closer to its
# starting point than training from scratch does, in relative terms (c) (relative
# deviations 0.11-0.68 against 0.67-1.11) and in the paper's absolute measure (b)
# ($\psi_1$, $\psi_2$, fc1, fc2, fc3: 0.20, 0.92, 5.42, 2.36, 0.77 against 0.96, 2.55, 6.59,
# 4.05, 1.22; the gap is smallest for fc1, 18 % below scratch), where the paper reports no
# improvement over scratch; it moves the fully connected layers more than MNIST pretraining
# (relative 0.68 against 0.46 for fc1; absolute 5.42, 2.36, 0.77 against 3.63, 1.49, 0.49
# for fc1, fc2, fc3). With 4 instead of 8 pretraining epochs the gain of MNIST pretraining
# over scratch is +0.020 ± 0.003 (it was below the critical value of the checks below with
# the 5 seeds this chapter had until 2026-11-28, hence the 8 epochs). These numbers come
# from one machine: on another CPU the pretrained sources' numbers differ in the second or
# third digit (the rounding of the convolutions, amplified by training; e.g. Fashion-MNIST's
# fc1 deviation over the first 5 seeds was 5.40 on one machine and 5.48 on another).
# With 5 seeds one of the eight deviation claims checked below (Fashion-MNIST below scratch
# in fc1) fell just short of its critical value on one of them ($t = -8.0$ against 8.1);
# with 8 seeds each claimed difference is about twice its critical value or more.

# %% [markdown]
# ## Fig. 9 in small: transfer against pretraining epochs

# %%
ep = np.r_[0, mn["epochs"][0, 0]]
ft = np.column_stack([other["acc"][1, :, 0], mn["acc"][0]])          # (seed, epochs)
pa = mn["pre_acc"][0]
for e, a, p in zip(ep, ft.T, np.r_[np.nan, pa.mean(0)]):
    print(f"{e} pretraining epochs: source accuracy {p:.3f}, target accuracy "
          f"{a.mean():.3f} +- {a.std(ddof=1):.3f}")
fig = figures.paper002.fig9_figure(ep, pa, ft)
provenance.record(fig, "p002-fig9", seeds=list(SEEDS), params=dict(FIXED, snapshots=SNAPS),
                  caption="paper 002 Fig. 9 in small: transfer accuracy against pretraining epochs")

# %% [markdown]
# *Fig. 9 in small.* (a) Accuracy of LeNet on the MNIST test images after each number of
# pretraining epochs; (b) accuracy on the digits target after fine-tuning from each of those
# networks (0: from scratch). Mean and standard deviation over seeds. The paper's Fig. 9 is
# Food-101 to CUB-200 with ResNet-50; here MNIST to scikit-learn's digits with LeNet, with the
# pretraining subset, optimiser and epochs of Fig. 8a. **Not reproduced** (not a finding: the
# paper trains LeNet for 100 epochs at learning rate 0.01, weight decay 5e-4, batch 64,
# App. A; these runs use a subset of MNIST and Adam). Within the 8 epochs a
# shared CPU allows, transfer accuracy only rises with pretraining (at `paper` scale, 8
# seeds: 0.938 from scratch, then 0.945, 0.951, 0.957, 0.967 after 1, 2, 4, 8 epochs); the
# decline the paper reports sets in after the pretraining accuracy has saturated, which
# these short runs (MNIST test accuracy 0.96 after 8 epochs) do not reach. The last section
# runs Fig. 9 with SGD at App. A's settings on the whole MNIST training set (after the checks).

# %% [markdown]
# ## Checks
#
# Differences between sources are tested per seed pair (the seed draws the target split, so
# paired differences remove its variance) with the Bonferroni critical value of Student's
# $t$ times the standard error (1 % family-wise over the two comparisons). At every scale the
# simulation must not contradict the paper (no difference significantly of the wrong sign);
# at `paper` scale the paper's claims must be established (a difference significantly of the
# right sign): MNIST pretraining beats scratch and beats Fashion-MNIST pretraining. With the
# two seeds of `smoke` scale no difference can be established. The theory's ranking of the
# three sources is compared with the measured ranking by accuracy. The deviations stated
# under Fig. 8a in the paper's absolute measure are checked the same way, per layer (a
# family of eight comparisons, 1 % family-wise): Fashion-MNIST pretraining leaves each of
# the five layers closer to its start than training from scratch, and MNIST pretraining
# moves each fully connected layer less than Fashion-MNIST pretraining; at every scale none
# of these differences may be significantly of the other sign, at `paper` scale each must
# be significant.

# %%
def paired(a, b):
    d = a - b
    return d.mean(), d.std(ddof=1) / np.sqrt(len(d))


crit = tkstats.critical_value(2, len(SEEDS))
gain, se_gain = paired(acc[0], acc[3])          # MNIST pretraining vs scratch
print(f"MNIST - scratch accuracy: {gain:+.3f} +- {se_gain:.3f} (critical {crit:.1f} se)")
fash, se_fash = paired(acc[0], acc[2])          # MNIST vs Fashion-MNIST pretraining
print(f"MNIST - Fashion accuracy: {fash:+.3f} +- {se_fash:.3f}")
rho = stats.spearmanr(thm1[:3], -acc[:3].mean(1))[0]
print(f"ranking of the sources, Thm 1 term vs accuracy (Spearman): {rho:.2f}")
print(f"theory's order of similarity: {[LABELS[k] for k in np.argsort(thm1[:3])]}")
print(f"measured order by accuracy:   {[LABELS[k] for k in np.argsort(-acc[:3].mean(1))]}")
# absolute deviation (the paper's measure): Fashion vs scratch, every layer; MNIST vs
# Fashion, the fully connected layers; differences that Fig. 8a's prose states to be < 0
FC = [models.lenet.LAYERS.index(n) for n in ("fc1", "fc2", "fc3")]
dev_pairs = [paired(dev_abs[2, :, l], dev_abs[3, :, l]) for l in range(dev_abs.shape[-1])]
dev_pairs += [paired(dev_abs[0, :, l], dev_abs[2, :, l]) for l in FC]
crit_dev = tkstats.critical_value(len(dev_pairs), len(SEEDS))
print(f"absolute deviation, Fashion - scratch per layer (t): "
      f"{np.round([d_ / se_ for d_, se_ in dev_pairs[:-3]], 1)}; MNIST - Fashion, fc1-fc3 "
      f"(t): {np.round([d_ / se_ for d_, se_ in dev_pairs[-3:]], 1)} (critical {crit_dev:.1f})")

# %%
assert np.all(np.isfinite(acc)) and np.all(np.isfinite(dev)) and np.all(np.isfinite(dev_abs))
assert np.all(pre_acc > 0.5), pre_acc             # the sources were learnt
assert thm1[0] < thm1[1] < thm1[2], thm1          # theory: MNIST closest, Fashion farthest
for d_, se_ in ((gain, se_gain), (fash, se_fash)):
    assert d_ > -crit * se_, (d_, se_)            # no contradiction of Fig. 8a
    if PRESET.establish_claims:                   # Fig. 8a: MNIST pretraining helps, and
        assert d_ > crit * se_, (d_, se_)         # more than Fashion-MNIST pretraining
for d_, se_ in dev_pairs:                          # absolute deviations, as stated under
    assert d_ < crit_dev * se_, (d_, se_)         # Fig. 8a: Fashion below scratch in every
    if PRESET.establish_claims:                   # layer, MNIST below Fashion in fc1-fc3
        assert d_ < -crit_dev * se_, (d_, se_)


# %% [markdown]
# ## Fig. 9 with SGD at App. A's settings, on the whole MNIST training set
#
# **The paper's claim** (Sec. 5.2, Fig. 9): transferability rises over the first epochs of
# pretraining and then falls as pretraining goes on, while the accuracy on the pretraining
# task keeps rising ("the model starts to fit the specific knowledge of the pretrained
# dataset"). **What is run here**: LeNet pretrained on all 60,000 MNIST training
# images with App. A's learning rate 0.01, weight decay $5\times10^{-4}$ and batch 64, and
# SGD with momentum 0.9 (App. A states these for ResNet-50 fine-tuning and names no
# optimiser for LeNet: ours); the network is saved after each snapshot epoch and each
# saved network (and the initialisation, epoch 0: scratch) is fine-tuned, all layers, on
# the chapter's target with the same optimiser (SGD with momentum 0.9, App. A's fine-tuning
# protocol for ResNet-50, without its learning-rate decay; at the chapter's number of
# fine-tuning epochs and target images, see Parameters). One `transferkit.sweep` cell per seed (`transfer_cell`, the cell of Fig. 8a).
# The values and their sources are in `experiments.lenet_transfer.LENET_FIG9` (one preset per
# scale). **Reduction**: `benchmarks/lenet_speed.py` measures 11,748 images per second for
# LeNet's forward and backward pass and SGD step at batch 64 on one thread (5.1 s per epoch
# of the 60,000 images; README speed table, 2026-11-25), so the
# full schedule (App. A's 100 epochs; ours: 3 seeds and snapshots at 1, 2, 5, 10, 20, 50,
# 100, each fine-tuned for 100 epochs) is estimated at 28 minutes for this figure alone, and 79 minutes
# with the two other sources of Fig. 8a (next section) pretrained for 100 epochs: **beyond
# the chapter's 20-minute budget**. The `paper` preset stops at 20 epochs and fine-tunes for
# 20 epochs instead of 100 (about 11 minutes with Fig. 8a at 10 epochs, estimated). The full
# protocol is `experiments.lenet_transfer.LENET_FIG9_FULL`, for a Dask cluster
# (`TRANSFERKIT_SCHEDULER`).

# %%
P9 = experiments.lenet_transfer.LENET_FIG9[SCALE]
FIXED9 = {"n_pretrain": P9.n_pretrain, "n_target": P9.n_target, "ft_epochs": P9.ft_epochs,
          "batch": P9.batch, "lr": P9.lr, "optimizer": P9.optimizer, "momentum": P9.momentum,
          "weight_decay": P9.weight_decay, "snapshots": list(P9.snapshots)}
print(f"{P9.n_pretrain or 60000} MNIST pretraining images, {P9.optimizer.upper()} lr {P9.lr}, "
      f"momentum {P9.momentum}, weight decay {P9.weight_decay}, batch {P9.batch}; snapshots "
      f"{list(P9.snapshots)} epochs, {P9.ft_epochs} fine-tuning epochs on {P9.n_target} "
      f"target images, {len(P9.seeds)} seeds")
t0 = time.perf_counter()
sgd = sweep.run(experiments.lenet_transfer.transfer_cell, {"source": ["mnist"], "seed": list(P9.seeds)},
                fixed={**FIXED9, "mirrored": [P9.fig8a_epochs]},
                desc="Fig. 9, SGD (and the mirror image at Fig. 8a's epoch)")
print(f"{time.perf_counter() - t0:.0f} s ({sgd.computed} cells computed, {sgd.cached} from the cache)")
ep9, acc9, pa9 = sgd["epochs"][0, 0], sgd["acc"][0], sgd["pre_acc"][0]      # (seed, epoch)
dev9, dev9_abs = sgd["dev"][0], sgd["dev_abs"][0]                          # (seed, epoch, layer)
for k, e in enumerate(ep9):
    src = "scratch" if e == 0 else f"source accuracy {pa9[:, k].mean():.3f}"
    print(f"{e:3d} epochs ({src}): target accuracy {acc9[:, k].mean():.3f} "
          f"+- {acc9[:, k].std(ddof=1):.3f} (before fine-tuning {sgd['acc0'][0][:, k].mean():.3f})")
print("absolute deviation per layer (paper 002's measure)", models.lenet.LAYERS)
for k, e in enumerate(ep9):
    print(f"{e:3d} epochs", np.round(dev9_abs[:, k].mean(0), 3), "+-",
          np.round(dev9_abs[:, k].std(0, ddof=1), 3))
print("relative deviation per layer (ours)", models.lenet.LAYERS)
for k, e in enumerate(ep9):
    print(f"{e:3d} epochs", np.round(dev9[:, k].mean(0), 3), "+-",
          np.round(dev9[:, k].std(0, ddof=1), 3))
fig = figures.paper002.fig9_figure(ep9, pa9[:, 1:], acc9, xscale="symlog")
provenance.record(fig, "p002-fig9-sgd", seeds=list(P9.seeds), params=FIXED9,
                  caption="paper 002 Fig. 9 with SGD (App. A's learning rate, weight decay and "
                          "batch; momentum 0.9, ours for LeNet) on the whole MNIST training set")

# %% [markdown]
# *Fig. 9 with SGD at App. A's settings.* (a) MNIST test accuracy after each number of
# pretraining epochs; (b) accuracy on the digits target after fine-tuning from each of
# those networks (0: from scratch). Mean and standard deviation over seeds; symmetric-log
# epoch axis. Parameters as printed above (learning rate 0.01, weight decay
# $5\times10^{-4}$, batch 64: App. A; SGD with momentum 0.9: ours for LeNet; the whole
# MNIST training set: Sec. 5.1);
# differences from the paper: the target (scikit-learn's digits for SVHN), LeNet for
# ResNet-50 and MNIST for Food-101 (the paper's Fig. 9 is Food-101 to CUB-200), and, at
# `paper` scale, snapshots up to 20 of the 100 epochs and 20 instead of 100 fine-tuning
# epochs (the full schedule, estimated at 28 minutes from the benchmark's 11,748 images per
# second, exceeds the 20-minute budget; `LENET_FIG9_FULL` runs it on a cluster; see above).
# **Not reproduced** at this horizon (not a finding, and no disagreement with the paper): at
# `paper` scale (5 seeds; the five cells took 1,123 s in the run quoted here, with the other
# core busy; 645 s on 2026-11-29 with the upside-down networks' fine-tuning of the next
# section in them) the target accuracy after fine-tuning was 0.819 ± 0.032 from scratch, then
# 0.968, 0.971, 0.975, 0.975, 0.977 (± 0.001-0.007) after 1, 2, 5, 10, 20 epochs of
# pretraining, while the MNIST test accuracy rose from 0.972 to 0.991. Transfer rises or
# stays level; no decline after the early epochs appears within 20 epochs (last snapshot
# minus the best earlier one: +0.001 ± 0.002, check below). Why it may be so: the
# runs stop at 20 of the paper's 100 epochs, and the decline the paper describes comes with
# fitting what is specific to the pretraining set, while the MNIST test accuracy is still
# rising at 20 epochs; MNIST and scikit-learn's digits are two digit sets, much closer to
# each other than Food-101 to CUB-200, with LeNet instead of ResNet-50; fine-tuning runs 20
# instead of 100 epochs. `LENET_FIG9_FULL` runs the paper's horizon. Deviations (printed
# above): in the paper's absolute measure every layer moves less during fine-tuning from a
# pretrained network than from scratch (from scratch 1.42, 1.41, 2.14, 1.33, 1.39 for
# $\psi_1$, $\psi_2$, fc1, fc2, fc3; after 1 epoch of pretraining 0.32, 0.84, 1.80, 0.84,
# 0.62; after 20 epochs 0.22, 0.79, 1.49, 0.64, 0.35), and the relative deviation (ours)
# falls likewise (first layer: 1.00 from scratch, 0.11 after 1 epoch, 0.06 after 20).

# %% [markdown]
# *Check.* Finite results at every scale. At `paper` scale (`LENET_FIG9[...].establish_claims`)
# the two statements above are required: the mean MNIST test accuracy rises at every
# snapshot, and the target accuracy at the last snapshot is not significantly below the best
# earlier pretrained snapshot (paired over seeds, Student's $t$, 1 % two-sided; the best
# snapshot is chosen after the fact, which only makes a decline easier to detect).

# %%
best = 1 + int(np.argmax(acc9[:, 1:-1].mean(0)))           # best earlier pretrained snapshot
drop, se_drop = paired(acc9[:, -1], acc9[:, best])
crit9 = tkstats.critical_value(1, len(P9.seeds))
print(f"target accuracy, {ep9[-1]} epochs - {ep9[best]} epochs: {drop:+.4f} +- {se_drop:.4f} "
      f"(critical {crit9:.1f} se)")
assert np.all(np.isfinite(acc9)) and np.all(np.isfinite(dev9)) and np.all(np.isfinite(dev9_abs))
if P9.establish_claims:                                    # stated above for this run
    assert np.all(np.diff(pa9[:, 1:].mean(0)) > 0), pa9    # source accuracy keeps rising
    assert drop > -crit9 * se_drop, (drop, se_drop)        # no significant decline


# %% [markdown]
# ## Fig. 8a with SGD at App. A's settings, on the whole training sets
#
# **The paper's claims** (Sec. 5.1, Fig. 8a): compared with training from scratch, MNIST
# pretraining "improve[s] generalization significantly"; upside-down MNIST "shows slightly
# worse generalization performance" than MNIST; Fashion-MNIST "barely improves
# generalization", and its layer deviations "show no improvement over training from
# scratch". **What is run here**: the protocol of the previous section for every source
# (App. A: learning rate 0.01, weight decay $5\times10^{-4}$, batch 64; SGD with momentum
# 0.9, ours for LeNet),
# each source pretrained on its whole training set (60,000 images, the same size and labels
# for the three) for `fig8a_epochs` epochs (10 at `paper` scale, App. A: 100; see the
# caption), then fine-tuned, all layers, on the chapter's 600 target images, 5 seeds at
# `paper` scale.
# The MNIST network and scratch are those of Fig. 9 above (the snapshot at the Fig. 8a epoch
# count, and snapshot 0), and upside-down MNIST is the mirror image of that MNIST snapshot
# (fine-tuned in the Fig. 9 cells, `mirrored`; see Simulation above), so only Fashion-MNIST
# has new cells, one `transferkit.sweep` cell per seed. The task similarity (d) is the pixel
# similarity of the theory section. The values and sources are in
# `experiments.lenet_transfer.LENET_FIG9` (`fig8a_epochs`).

# %%
E8 = P9.fig8a_epochs
k8 = list(ep9).index(E8)                                  # the Fig. 9 snapshot of Fig. 8a
t0 = time.perf_counter()
sgd8 = sweep.run(experiments.lenet_transfer.transfer_cell,
                 {"source": ["fashion"], "seed": list(P9.seeds)},
                 fixed={**FIXED9, "snapshots": [E8]}, desc="Fig. 8a, SGD")
print(f"{time.perf_counter() - t0:.0f} s ({sgd8.computed} cells computed, {sgd8.cached} from "
      f"the cache); MNIST, its mirror image (upside-down MNIST) and scratch: the Fig. 9 cells "
      f"above, snapshots {E8} (mirrored) and 0")
# (source, seed[, layer]): MNIST, its mirror image (upside-down MNIST), Fashion-MNIST, scratch
acc8, acc08, dev8, dev8_abs = (np.stack([sgd[k][0][:, k8], sgd["mirror_" + k][0][:, 0],
                                         sgd8[k][0, :, 0], sgd[k][0][:, 0]])
                               for k in ("acc", "acc0", "dev", "dev_abs"))
pre8 = np.stack([pa9[:, k8], sgd["mirror_pre_acc"][0][:, 0], sgd8["pre_acc"][0, :, 0]])
print(f"{E8} pretraining epochs, {P9.ft_epochs} fine-tuning epochs, {len(P9.seeds)} seeds")
print_fig8a(acc8, acc08, pre8, [("absolute deviation per layer (paper 002's measure)", dev8_abs),
                                ("relative deviation per layer (ours)", dev8)])
PARAMS8 = {**{k: v for k, v in FIXED9.items() if k != "snapshots"}, "pretrain_epochs": E8}
fig = figures.paper002.fig8a_figure(acc8, dev8_abs, dev8, thm1, LABELS)
provenance.record(fig, "p002-fig8a-sgd", seeds=list(P9.seeds), params=PARAMS8,
                  caption="paper 002 Fig. 8a with SGD (App. A's learning rate, weight decay "
                          "and batch; momentum 0.9, ours for LeNet) on the whole training sets")

# %% [markdown]
# *Fig. 8a with SGD at App. A's settings.* Panels as in Fig. 8a above: (a) target accuracy after
# fine-tuning (bars: mean and standard deviation over the seeds; dots: seeds); (b) the paper's
# deviation $\|W_l - W_l^{\rm start}\|_F$ of each layer from where fine-tuning started; (c)
# the same divided by $\|W_l^{\rm start}\|_F$ (ours); (d) Thm 1's task dissimilarity on the
# pixels (the theory section). Parameters as printed above: the learning rate, weight
# decay and batch are App. A's, the data sets Sec. 5.1's (each whole), the optimiser and
# momentum ours (App. A names none for LeNet). Differences from the paper: the target (scikit-learn's digits for SVHN); the
# images per class (the whole sets: MNIST and its flipped copy have 5,421 to 6,742 images
# per class, Fashion-MNIST 6,000 each, where the paper keeps the counts the same; a balanced
# subset would not share the Fig. 9 cells); and, at `paper` scale, **10 of the paper's 100
# pretraining epochs and 20 of its 100 fine-tuning epochs**: App. A's schedule for both
# figures is estimated at 79 minutes on one thread (`benchmarks/lenet_speed.py`; the two
# sources of this section at 100 epochs alone 52 minutes of CPU, half of it since
# upside-down MNIST is the mirror image of the MNIST network), beyond the chapter's
# 20-minute budget; `LENET_FIG9_FULL` runs it, with `fig8a_epochs` = 100, on a cluster.
#
# At `paper` scale (5 seeds; the ten new cells took 718 s in the run quoted here, Fig. 9's
# five cells 1,123 s, with the other core busy; on 2026-11-29, with upside-down MNIST the
# mirror image of the MNIST networks, the five Fashion-MNIST cells took 342 s) the target
# accuracies were MNIST 0.975 ± 0.005, upside-down MNIST 0.964 ± 0.004 (pretrained on its
# own until 2026-11-29: 0.968 ± 0.005), Fashion-MNIST 0.959 ± 0.003, scratch
# 0.819 ± 0.032 (source test accuracy after 10 epochs: MNIST 0.990, upside-down 0.990 (the
# mirror image classifies the flipped test images as the MNIST network the originals),
# Fashion-MNIST 0.895). **Reproduced**: MNIST pretraining improves on scratch, +0.157 ±
# 0.013 (paired over seeds; $t = 12.1$ against the critical 5.6 of the check below; with the
# 3 seeds this section had until 2026-11-28, Student's $t$ at 2 degrees of freedom gave
# $t = 14.9$ on one machine and 12.3 on another against a critical 14.1); the order MNIST,
# upside-down MNIST, Fashion-MNIST of the paper and of the theory's task similarity (d).
# MNIST minus Fashion-MNIST, +0.016 ± 0.002, was significant in this run ($t = 8.0$, not
# asserted); MNIST minus upside-down, +0.011 ± 0.003 (+0.007 ± 0.003 when upside-down
# MNIST was pretrained on its own), was not. **Not reproduced** (not a
# finding: the protocol is reduced and the target is not SVHN): Fashion-MNIST pretraining
# does not "barely" improve, it gains +0.140 ± 0.014 over scratch, nine tenths of MNIST's
# gain. Deviations (b): Fashion-MNIST pretraining moves the fully connected layers as much
# as scratch or more (fc1, fc2: 2.81, 1.36 against 2.14, 1.33; fc1 $t = 7.7$, above the
# critical 7.2 in this run, not asserted), in the direction of the paper's "no improvement
# over training from scratch" for $W$, but it leaves the first kernel $\psi_1$ much closer
# to its start than scratch does (0.71 against 1.42, $t = -14.9$, significant, asserted),
# unlike the paper, and fc3 closer (0.64 against 1.39, $t = -10.7$, significant in this
# run) and $\psi_2$ (1.24 against 1.41, not significant). MNIST pretraining moves every
# layer least (0.27, 0.80, 1.50, 0.70, 0.40 for $\psi_1$, $\psi_2$, fc1, fc2, fc3); in
# relative terms (c) scratch moves $\psi_1$ by 1.00 of its norm, the pretrained networks by
# 0.08 (MNIST) to 0.16 (Fashion-MNIST). Why it may be so: 10 of 100
# epochs of pretraining; scikit-learn's digits in place of SVHN, whose colour photographs of
# house numbers are farther from MNIST, so that here any stroke detector learnt on 28x28
# grey images helps; the first-layer kernels learnt on Fashion-MNIST may already be generic
# edge filters that fine-tuning keeps, while the fully connected layers must be relearnt.
#
# *Checks.* Paired over seeds, Bonferroni-corrected Student's $t$ (1 % family-wise) as in
# the Checks section. Accuracy, the paper's two claims (MNIST beats scratch, MNIST beats
# Fashion-MNIST): at every scale neither difference may be significantly of the other sign;
# where the preset states this run (`LENET_FIG9[...].establish_claims`) the gain over scratch
# must be significant (MNIST minus Fashion-MNIST was significant too in the run quoted above,
# with less margin; not asserted). Absolute deviation, Fashion-MNIST
# minus scratch per layer (the paper's claim, a family of five): at every scale fc1 and fc2
# may not be significantly below scratch (the paper's direction, which the chapter reports)
# and $\psi_1$ may not be significantly above; where the preset states this run, $\psi_1$ must
# be significantly below scratch.

# %%
crit8 = tkstats.critical_value(2, len(P9.seeds))
gain8, se_gain8 = paired(acc8[0], acc8[3])        # MNIST pretraining vs scratch
fash8, se_fash8 = paired(acc8[0], acc8[2])        # MNIST vs Fashion-MNIST pretraining
ud8, se_ud8 = paired(acc8[0], acc8[1])            # MNIST vs upside-down MNIST (printed only)
fs8, se_fs8 = paired(acc8[2], acc8[3])            # Fashion-MNIST vs scratch (printed only)
print(f"MNIST - scratch accuracy: {gain8:+.3f} +- {se_gain8:.3f} (critical {crit8:.1f} se)")
print(f"MNIST - Fashion accuracy: {fash8:+.3f} +- {se_fash8:.3f}; MNIST - upside-down "
      f"{ud8:+.3f} +- {se_ud8:.3f}; Fashion - scratch {fs8:+.3f} +- {se_fs8:.3f}")
print(f"measured order by accuracy: {[LABELS[k] for k in np.argsort(-acc8[:3].mean(1))]}; "
      f"theory's: {[LABELS[k] for k in np.argsort(thm1[:3])]}")
fs_dev = [paired(dev8_abs[2, :, l], dev8_abs[3, :, l]) for l in range(dev8_abs.shape[-1])]
crit8_dev = tkstats.critical_value(len(fs_dev), len(P9.seeds))
print(f"absolute deviation, Fashion - scratch per layer: "
      f"{np.round([d_ for d_, _ in fs_dev], 3)}, t "
      f"{np.round([d_ / se_ if se_ else 0.0 for d_, se_ in fs_dev], 1)} "
      f"(critical {crit8_dev:.1f})")

# %%
assert np.all(np.isfinite(acc8)) and np.all(np.isfinite(dev8)) and np.all(np.isfinite(dev8_abs))
for d_, se_ in ((gain8, se_gain8), (fash8, se_fash8)):
    assert d_ >= -crit8 * se_, (d_, se_)          # no contradiction of Fig. 8a's accuracies
(psi1, se_psi1), fc = fs_dev[0], [fs_dev[models.lenet.LAYERS.index(n)] for n in ("fc1", "fc2")]
for d_, se_ in fc:                                 # fc1, fc2: Fashion not below scratch,
    assert d_ >= -crit8_dev * se_, (d_, se_)      # the paper's direction
assert psi1 <= crit8_dev * se_psi1, (psi1, se_psi1)   # psi_1: Fashion not above scratch
if P9.establish_claims:                            # stated above for this run
    assert gain8 > crit8 * se_gain8, (gain8, se_gain8)          # MNIST beats scratch
    assert psi1 < -crit8_dev * se_psi1, (psi1, se_psi1)        # psi_1 below scratch
