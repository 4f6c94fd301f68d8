r"""LeNet transfer among digit-like data sets (paper 002, Sec. 5, Figs. 8a, 9; App. A)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import data, theory
from .._validate import check_choice, check_int
from ..models.device import default_device
from ..models.lenet import (
    FINETUNE_ORDER_STREAM,
    SUBSET_STREAM,
    TARGET_STREAM,
    accuracy,
    layer_deviation,
    make_lenet,
    mirror_state,
    state_copy,
    train_lenet,
)

__all__ = ["LENET_FIG9", "LENET_FIG9_FULL", "LENET_TRANSFER", "LenetFig9Preset",
           "LenetTransferPreset", "SOURCES", "PixelSimilarity", "ntk_similarity",
           "source_data", "target_data", "transfer_cell"]


#: pretraining data sets of Fig. 8a ("scratch" means no pretraining)
SOURCES = ("mnist", "mnist_upside_down", "fashion")


@dataclass(frozen=True)
class LenetTransferPreset:
    r"""Parameters of the LeNet transfer chapter (paper 002, Sec. 5.1, Fig. 8a, and Fig. 9 in
    small) at one scale.

    The presets are :data:`LENET_TRANSFER` (``LENET_TRANSFER["paper"]``,
    ``LENET_TRANSFER["smoke"]``); the chapter notebook ``notebooks/lenet_transfer.py`` reads
    them from there and passes them to :func:`transfer_cell` (through
    :func:`transferkit.sweep.run`) and to :func:`ntk_similarity`.

    Attributes
    ----------
    n_pretrain : int
        Pretraining images per source, the same count per class (ours; paper 002, Sec. 5.1
        states only that the three sources have the same size, labels and images per class).
    snapshots : tuple of int
        Pretraining epochs after which the MNIST network is fine-tuned (Fig. 9 in small;
        ours, the paper's Fig. 9 is Food-101 to CUB-200 with ResNet-50).
    fig8a_epochs : int
        Pretraining epochs of the networks of Fig. 8a, one of ``snapshots`` (ours; App. A:
        100 epochs).
    ft_epochs : int
        Fine-tuning epochs (ours; App. A: 100 epochs).
    n_target : int
        Fine-tuning images of the target, the same count per class (Sec. 5.1: 600 SVHN
        images, "randomly sample[d]"; ours: scikit-learn's digits, and the equal count per
        class).
    seeds : tuple of int
        Seeds, each drawing the subsets, the initialisation and the batch order (ours; the
        paper does not state its repetitions for Fig. 8a).
    sim_source, sim_target : int
        Source and target images of the pixel task similarity (:func:`ntk_similarity`;
        ours, Sec. 6 has no numbers).
    sim_seed : int
        Seed of those subsets (ours).
    establish_claims : bool
        Whether the chapter requires the differences it asserts for Fig. 8a (the paper's
        accuracy differences, and the differences of absolute layer deviation the chapter
        states) to be significant of the stated sign (ours: only with enough seeds; at
        every scale none may be significant of the other sign).
    batch : int
        Minibatch size of pretraining and fine-tuning (App. A: 64).
    lr : float
        Adam learning rate (ours; App. A: learning rate 0.01).
    """

    n_pretrain: int             # ours (paper: not stated, Sec. 5.1)
    snapshots: tuple            # ours
    fig8a_epochs: int           # ours (paper: 100 epochs, App. A)
    ft_epochs: int              # ours (paper: 100 epochs, App. A)
    n_target: int               # paper 002, Sec. 5.1 (paper scale)
    seeds: tuple                # ours
    sim_source: int             # ours
    sim_target: int             # ours
    establish_claims: bool      # ours
    sim_seed: int = 0           # ours
    batch: int = 64             # paper 002, App. A
    lr: float = 1e-3            # ours (paper: 0.01, App. A; Adam here)


#: The LeNet transfer chapter's parameters at each ``TRANSFERKIT_SCALE``.
#:
#: The paper (002, App. A) trains LeNet for digit recognition at learning rate 0.01 ("also",
#: as its ResNet-50 fine-tuning with momentum 0.9; it names no optimiser for LeNet), weight
#: decay 5e-4, batch 64, for 100 epochs; Sec. 5.1 fine-tunes on 600 randomly sampled SVHN
#: images and gives the three sources the same size, labels and images per class, without
#: stating the size.  Taken from the paper: the batch of 64, the weight decay 5e-4 (the
#: default of :func:`transferkit.models.lenet.train_lenet` and of :func:`transfer_cell`)
#: and, at ``paper`` scale, the count of 600 target images (ours: 60 per class, where the
#: paper samples at random, and scikit-learn's digits, since SVHN cannot be obtained
#: offline).  Ours, because a shared CPU
#: cannot train LeNet for 100 epochs on the full sets for three sources and several seeds:
#: Adam at learning rate 1e-3 instead of the paper's 0.01, a balanced subset of each
#: pretraining set, a few pretraining epochs (Fig. 8a uses the networks pretrained longest)
#: and a fixed number of fine-tuning epochs, several seeds; the subset sizes of the pixel
#: task similarity of Sec. 6 (the paper has no numbers for it), seed 0.
#: ``paper``: 5000 pretraining images (500 per class), Fig. 9 snapshots after 1, 2, 4, 8
#: epochs, Fig. 8a at 8, 20 fine-tuning epochs, 8 seeds, similarity on 500 source and 300
#: target images; with 8 seeds the paper's Fig. 8a claims must be established.  (With 5
#: seeds, the number until 2026-11-28, one of the eight deviation claims, Fashion-MNIST
#: below scratch in fc1, fell just short of its critical value on one machine, t = -8.0
#: against 8.1, having passed on another: the pretrained sources' numbers differ between
#: machines in the second or third digit, rounding of the convolutions amplified by
#: training.  With 8 seeds each claimed difference is about twice its critical value or more
#: there: 1.98 times for the smallest, MNIST against Fashion-MNIST in accuracy.)
#: ``smoke``:
#: 1500 pretraining images, snapshots after 1 and 3 epochs, Fig. 8a at 3, 4 fine-tuning
#: epochs on 300 target images, 2 seeds (too few to establish a difference), similarity on
#: 200 and 100 images.
LENET_TRANSFER = {
    "paper": LenetTransferPreset(n_pretrain=5000, snapshots=(1, 2, 4, 8), fig8a_epochs=8,
                                 ft_epochs=20, n_target=600, seeds=tuple(range(8)),
                                 sim_source=500, sim_target=300, establish_claims=True),
    "smoke": LenetTransferPreset(n_pretrain=1500, snapshots=(1, 3), fig8a_epochs=3,
                                 ft_epochs=4, n_target=300, seeds=(0, 1),
                                 sim_source=200, sim_target=100, establish_claims=False),
}


@dataclass(frozen=True)
class LenetFig9Preset:
    r"""Parameters of Fig. 9 with SGD at App. A's settings (paper 002, Sec. 5.2 and App. A): LeNet
    pretrained on the whole MNIST training set with SGD, snapshots after several epochs,
    each fine-tuned on the chapter's target with the same optimiser.

    The presets are :data:`LENET_FIG9` (``"paper"``, ``"smoke"``) and
    :data:`LENET_FIG9_FULL` (the full protocol, for a cluster); the chapter passes them to
    :func:`transfer_cell` through :func:`transferkit.sweep.run`, one cell per seed.

    Attributes
    ----------
    n_pretrain : int
        Pretraining images; 0 is the whole MNIST training set, 60,000 images (paper 002,
        Sec. 5.1 pretrains on MNIST and states no subset).
    snapshots : tuple of int
        Pretraining epochs after which the network is fine-tuned; 0 is fine-tuning from the
        initialisation (scratch).  The paper trains for 100 epochs (App. A) and plots
        transferability against pretraining epochs (Fig. 9, Food-101 to CUB-200 with
        ResNet-50; the epochs of its grid are ours).
    ft_epochs : int
        Fine-tuning epochs (App. A: 100).
    n_target : int
        Fine-tuning images of the target, the same count per class (Sec. 5.1: 600 SVHN
        images; here scikit-learn's digits, as in the chapter).
    seeds : tuple of int
        Seeds, each drawing the target split, the initialisation and the batch orders (ours;
        the paper does not state its repetitions).
    optimizer : str
        ``"sgd"`` (App. A: SGD with momentum is the fine-tuning protocol, stated for
        ResNet-50, whose learning rate 0.01 LeNet "also" uses; the paper names no optimiser
        for LeNet).
    lr : float
        Learning rate of pretraining and fine-tuning (App. A: 0.01).
    momentum : float
        SGD momentum (App. A: 0.9, stated for ResNet-50 fine-tuning; used here for LeNet's
        pretraining and fine-tuning).
    weight_decay : float
        L2 weight decay (App. A: 5e-4).
    batch : int
        Minibatch size (App. A: 64).
    fig8a_epochs : int
        Pretraining epochs of the networks of Fig. 8a at this protocol (App. A: 100), one
        of ``snapshots``: the MNIST network and scratch (snapshot 0) are those of Fig. 9,
        upside-down MNIST and Fashion-MNIST are pretrained for as many epochs on their whole
        training sets, with the same optimiser.
    establish_claims : bool
        Whether the chapter requires what it states of this run (ours): the MNIST test
        accuracy rises at every snapshot, and the target accuracy at the last snapshot is
        not significantly below the best earlier snapshot (paired over seeds, Student's t,
        1 % two-sided), i.e. the decline of Fig. 9 does not appear within these epochs; and
        the differences between sources that the chapter states for Fig. 8a at this
        protocol are significant of the stated sign.
    """

    n_pretrain: int             # paper 002, Sec. 5.1 (MNIST, no subset stated)
    snapshots: tuple            # ours (paper: 100 epochs, App. A; grid of Fig. 9 ours)
    ft_epochs: int              # ours (paper: 100 epochs, App. A)
    n_target: int               # paper 002, Sec. 5.1 (600 target images)
    seeds: tuple                # ours
    optimizer: str = "sgd"      # ours (App. A: SGD with momentum for ResNet-50; none named for LeNet)
    lr: float = 0.01            # paper 002, App. A
    momentum: float = 0.9       # ours (App. A: 0.9 for ResNet-50 fine-tuning; none for LeNet)
    weight_decay: float = 5e-4  # paper 002, App. A
    batch: int = 64             # paper 002, App. A
    fig8a_epochs: int = 100     # paper 002, App. A (100 epochs)
    establish_claims: bool = False  # ours


#: Fig. 9 on the whole MNIST training set, at each ``TRANSFERKIT_SCALE``, with App. A's
#: LeNet settings (paper 002: learning rate 0.01, weight decay 5e-4, batch 64, 100 epochs)
#: and SGD with momentum 0.9, which App. A states for ResNet-50 fine-tuning and names for
#: no LeNet training (ours for LeNet; App. A's ResNet protocol also decays the learning
#: rate, which we do not).
#:
#: Measured on this project's CPU (one thread, ``benchmarks/lenet_speed.py``): 10,651
#: images per second for the forward and backward pass and the SGD step at batch 64 (CPU
#: time; about 5 s of wall time per epoch of the 60,000 MNIST images on an idle core, 8.3 s
#: on the shared machine), so the full schedule (:data:`LENET_FIG9_FULL`) is estimated at 30
#: minutes of CPU for Fig. 9 alone and 87 minutes with Fig. 8a's two other sources
#: pretrained for 100 epochs (59 since 2026-11-29: upside-down MNIST is the mirror image of
#: the MNIST network, :func:`transfer_cell`, so only Fashion-MNIST is pretrained), beyond
#: the chapter's budget of 20 minutes.  ``paper`` is
#: therefore a **reduction**: snapshots after 1, 2, 5, 10 and 20 epochs (and 0, scratch),
#: Fig. 8a at 10 of the 100 pretraining epochs (Fashion-MNIST pretrained for 10 epochs;
#: MNIST and scratch are Fig. 9's snapshots 10 and 0, upside-down MNIST the mirror image of
#: snapshot 10), 5 seeds
#: (3 until 2026-11-28: with Student's t at 2 degrees of freedom the claims checked under
#: ``establish_claims`` passed on one machine and failed on another, MNIST's gain over
#: scratch at t = 14.9 and 12.3 against a critical 14.1; paper 002 runs its Tables 1 and 2
#: three times and states no number for Figs. 8a and 9),
#: 20 fine-tuning epochs (the chapter's, App. A: 100) on 600 target images; estimated 19.5
#: minutes of CPU (11.7 with 3 seeds, of which Fig. 9 measured 322-337 s on an idle
#: machine); measured 16.5 minutes on 2026-11-29 with upside-down MNIST as the mirror image
#: (Fig. 9's cells 645 s with the mirror images' fine-tuning, Fashion-MNIST's 342 s); the
#: learning rate, weight decay and batch are the paper's (App. A), the optimiser and
#: momentum ours (above); the pretraining sets are the paper's data sets, each
#: whole, so their images per class differ (MNIST 5,421 to 6,742, Fashion-MNIST 6,000),
#: where Sec. 5.1 keeps "the number of images per class ... exactly the same".
#: ``smoke``: 300 pretraining images, snapshots after 0, 1, 2 epochs, Fig. 8a at 2, 2
#: fine-tuning epochs on 100 target images, 2 seeds (nothing is learnt in so few steps:
#: ``establish_claims`` is off).  The full protocol is :data:`LENET_FIG9_FULL`.
LENET_FIG9 = {
    "paper": LenetFig9Preset(n_pretrain=0, snapshots=(0, 1, 2, 5, 10, 20), ft_epochs=20,
                             n_target=600, seeds=(0, 1, 2, 3, 4), fig8a_epochs=10,
                             establish_claims=True),
    "smoke": LenetFig9Preset(n_pretrain=300, snapshots=(0, 1, 2), ft_epochs=2,
                             n_target=100, seeds=(0, 1), fig8a_epochs=2),
}

#: The full Fig. 9 protocol for a cluster (through :func:`transferkit.sweep.run` with
#: ``TRANSFERKIT_SCHEDULER``): the whole MNIST training set, snapshots after 1, 2, 5, 10, 20,
#: 50 and 100 epochs (App. A: 100 epochs) and 0 (scratch), 100 fine-tuning epochs (App. A)
#: on 600 target images (Sec. 5.1), 3 seeds (ours; App. A: Tables 1 and 2 are run three
#: times), App. A's learning rate, weight decay and batch with our SGD with momentum 0.9,
#: and Fig. 8a's upside-down MNIST and Fashion-MNIST pretrained for 100 epochs
#: (``fig8a_epochs``, App. A) on their whole training sets (not equal per class as in
#: Sec. 5.1: the same difference as ``LENET_FIG9["paper"]``; upside-down MNIST is the mirror
#: image of the MNIST network, :func:`transfer_cell`).
#: About 30 minutes for Fig. 9 and 59 with Fig. 8a on one CPU thread
#: (``benchmarks/lenet_speed.py``; 87 with upside-down MNIST pretrained on its own).
#: ``establish_claims`` is off: the chapter states nothing yet about this run.
LENET_FIG9_FULL = LenetFig9Preset(n_pretrain=0, snapshots=(0, 1, 2, 5, 10, 20, 50, 100),
                                  ft_epochs=100, n_target=600, seeds=(0, 1, 2))


def _balanced(y, per_class: int, rng) -> np.ndarray:
    idx = []
    for c in range(10):
        pool = np.flatnonzero(y == c)
        if len(pool) < per_class:
            raise ValueError(f"per_class must be at most {len(pool)} for class {c} "
                             f"(got {per_class})")
        idx.append(rng.choice(pool, per_class, replace=False))
    return rng.permutation(np.concatenate(idx))


def source_data(source: str, n: int, seed: int):
    """``n`` training images (``n/10`` per class) of a pretraining set, and 2,000 test images.

    ``"mnist"``, ``"mnist_upside_down"`` (the same images flipped vertically: same size,
    labels and class counts, Fig. 8a) or ``"fashion"`` (Fashion-MNIST, same counts).
    ``n = 0`` takes the whole training set (60,000 images for each source, with the class
    counts of the data set), in its stored order (the trainer draws the batch order).
    Returns ``(x, y, x_test, y_test)``.
    """
    check_choice("source", source, SOURCES)
    n = check_int("n", n, 0)
    if n % 10 or 0 < n < 10:
        raise ValueError(f"n must be 0 (the whole training set) or a positive multiple of 10 "
                         f"(got {n}): the same count per class")
    xtr, ytr, xte, yte = data.load_fashion_mnist() if source == "fashion" else data.load_mnist()
    rng = np.random.default_rng([check_int("seed", seed, 0), SUBSET_STREAM])
    i = np.arange(len(ytr)) if n == 0 else _balanced(ytr, n // 10, rng)
    j = _balanced(yte, 200, rng)
    x, xt = np.array(xtr[i]), np.array(xte[j])
    if source == "mnist_upside_down":
        x, xt = _flipped(x), _flipped(xt)
    return x, np.array(ytr[i]), xt, np.array(yte[j])


def _flipped(x) -> np.ndarray:
    """Images ``(n, 784)`` flipped vertically (upside down)."""
    return np.asarray(x).reshape(-1, 28, 28)[:, ::-1].reshape(-1, 784).copy()


def target_data(n: int, seed: int):
    """The target task: ``n`` (``n/10`` per class) of scikit-learn's digits upscaled to 28x28
    for fine-tuning, the remaining images for testing.  Returns ``(x, y, x_test, y_test)``."""
    n = check_int("n", n, 10)
    if n % 10:
        raise ValueError(f"n must be a multiple of 10 (got {n})")
    x, y = data.load_digits_28()
    rng = np.random.default_rng([check_int("seed", seed, 0), TARGET_STREAM])
    i = _balanced(y, n // 10, rng)
    rest = np.setdiff1d(np.arange(len(y)), i)
    return np.array(x[i]), np.array(y[i]), np.array(x[rest]), np.array(y[rest])


def transfer_cell(source: str, seed: int, n_pretrain: int = 10_000, snapshots=(5,),
                  n_target: int = 600, ft_epochs: int = 50, batch: int = 128,
                  lr: float = 1e-3, optimizer: str = "adam", momentum: float = 0.0,
                  weight_decay: float = 5e-4, mirrored=()) -> dict:
    r"""One (source, seed) cell of Figs. 8a and 9: pretrain, snapshot, fine-tune each snapshot.

    ``source`` is one of :data:`SOURCES` or ``"scratch"`` (fine-tuning from the random
    initialisation; the snapshots are then ignored).  Pretraining runs ``max(snapshots)``
    epochs on ``n_pretrain`` images; the network saved after each epoch in ``snapshots``
    is fine-tuned for ``ft_epochs`` epochs on ``n_target`` digits images (all layers, the
    same 10 labels).  A cell function for :func:`transferkit.sweep.run`, whose cache stores
    what it returns: a flat dict of arrays over the snapshots, ``epochs``, ``pre_acc`` (test
    accuracy on the source), ``acc`` (test accuracy on the target after fine-tuning),
    ``acc0`` (target accuracy before fine-tuning), ``dev_abs`` ``(S, len(LAYERS))``, the
    deviation :math:`\|W_{(l)} - W_{0(l)}\|_F` of each layer's weights from where
    fine-tuning started (paper 002's deviation of each layer, Sec. 5.1 and Fig. 8a, defined
    in Sec. 3 with a factor :math:`1/\sqrt n` common to all sources here, which is left
    out), and ``dev`` ``(S, len(LAYERS))``, the same divided by
    :math:`\|W_{0(l)}\|_F` (the relative deviation; ours), both from
    :func:`transferkit.models.lenet.layer_deviation`.

    Pretraining and fine-tuning both use :func:`transferkit.models.lenet.train_lenet` with
    ``optimizer``, ``lr``, ``momentum``, ``weight_decay`` and ``batch`` (paper 002, App. A:
    SGD, momentum 0.9, learning rate 0.01, weight decay 5e-4, batch 64; the defaults are the
    chapter's Adam).  ``n_pretrain = 0`` pretrains on the whole training set of the source
    (:func:`source_data`).  A snapshot at epoch 0 is the initialisation, i.e. fine-tuning
    from scratch with the same initialisation and target split as the other snapshots.

    ``"mnist_upside_down"`` is computed as the mirror image of the MNIST network
    (:func:`transferkit.models.lenet.mirror_state`): LeNet commutes with the vertical flip,
    so the network pretrained on the flipped images from the mirrored initialisation is, in
    exact arithmetic, the mirror image of the network pretrained on MNIST from this seed's
    initialisation, with the same batches (in floating point they differ by the rounding of
    the convolutions; tested).  Its initialisation is thus the mirror of the other sources'
    (the same law), and its pretraining shares MNIST's, step for step.  ``mirrored``, for
    ``source="mnist"`` only: epochs of ``snapshots`` whose mirror images are fine-tuned as
    well, in the same call, returned under ``mirror_<key>`` for the keys above; the
    numbers are those of ``transfer_cell("mnist_upside_down", snapshots=mirrored)`` with
    the same other arguments, bit for bit (the same pretraining, mirrored), so a chapter
    that needs both sources pretrains once.
    """
    seed = check_int("seed", seed, 0)
    snaps = sorted(set(check_int("snapshots", e, 0) for e in np.atleast_1d(snapshots).tolist()))
    if not snaps:
        raise ValueError("snapshots must hold at least one epoch count")
    # the sizes under this function's names (source_data / target_data / train_lenet check
    # them too, but as n and epochs, and only once the data are being loaded)
    n_pretrain = check_int("n_pretrain", n_pretrain, 0)
    n_target = check_int("n_target", n_target, 10)
    ft_epochs = check_int("ft_epochs", ft_epochs, 0)
    batch = check_int("batch", batch, 1)
    check_choice("source", source, SOURCES + ("scratch",))
    mirrored = sorted(set(check_int("mirrored", e, 0) for e in np.atleast_1d(mirrored).tolist()))
    if mirrored and source != "mnist":
        raise ValueError(f"mirrored needs source='mnist' (got source={source!r})")
    if not set(mirrored) <= set(snaps):
        raise ValueError(f"mirrored must be epochs of snapshots {snaps} (got {mirrored})")
    opt = {"optimizer": optimizer, "momentum": momentum, "weight_decay": weight_decay}
    dev = default_device()
    xq, yq, xq_test, yq_test = target_data(n_target, seed)
    model = make_lenet(seed, dev)
    if source == "scratch":
        states, test = [(0, state_copy(model))], None
    else:
        # the upside-down source is the mirror image of the MNIST network (docstring)
        x, y, xt, yt = source_data("mnist" if source == "mnist_upside_down" else source,
                                   n_pretrain, seed)
        states = train_lenet(model, x, y, epochs=max(snaps), seed=seed, lr=lr, batch=batch,
                             snapshots=snaps, **opt)
        test = (xt, yt)
    flip = snaps if source == "mnist_upside_down" else mirrored
    mirrors = [(e, mirror_state(st)) for e, st in states if e in flip]
    flipped = (_flipped(test[0]), test[1]) if mirrors else None   # the flipped test images

    def finetuned(states, test):
        out = {k: [] for k in ("pre_acc", "acc", "acc0", "dev", "dev_abs")}
        for _, st in states:
            model.load_state_dict(st)
            out["pre_acc"].append(np.nan if test is None else accuracy(model, *test))
            out["acc0"].append(accuracy(model, xq_test, yq_test))
            train_lenet(model, xq, yq, epochs=ft_epochs, seed=seed, lr=lr, batch=batch,
                        purpose=FINETUNE_ORDER_STREAM, **opt)
            out["acc"].append(accuracy(model, xq_test, yq_test))
            out["dev"].append(layer_deviation(model, st))
            out["dev_abs"].append(layer_deviation(model, st, relative=False))
        return {"epochs": np.array([e for e, _ in states]),
                **{k: np.array(v) for k, v in out.items()}}

    if source == "mnist_upside_down":
        return finetuned(mirrors, flipped)
    res = finetuned(states, test)
    if mirrors:
        res.update({f"mirror_{k}": v for k, v in finetuned(mirrors, flipped).items()})
    return res


@dataclass(frozen=True)
class PixelSimilarity:
    r"""The result of :func:`ntk_similarity`: paper 002's task-similarity terms (Sec. 6,
    Thms 1-2) from one source to the digits target, on the pixels (Fig. 8a, panel (d) of the
    chapter).  Smaller means more similar.

    Attributes
    ----------
    thm1 : float
        :math:`\|Y_Q - Y_{P\to Q}\|^2 / n_Q`, Thm 1's task-dissimilarity term (Eq. 1) per
        target image; :math:`\|Y_Q\|^2 / n_Q` for ``"scratch"`` (:math:`Y_{P\to Q} = 0`).
    thm2 : float
        The leading term of Thm 2 (Eq. 2), :math:`\sqrt{(Y_Q - Y_{P\to Q})^\top
        H_Q^{\infty\,-1} (Y_Q - Y_{P\to Q})}`, summed over the label columns.
    """

    thm1: float
    thm2: float


def ntk_similarity(source: str, n_source: int = 500, n_target: int = 300,
                   seed: int = 0) -> PixelSimilarity:
    r"""Paper 002's task-similarity quantities (Sec. 6, Thms 1-2) from a source set to the
    digits target, computed on the pixels: :func:`transferkit.theory.ntk.similarity` with the rows
    normalised to the unit sphere and the labels one-hot, centred (:math:`e_y - \frac1{10}`).

    ``source`` is one of :data:`SOURCES` or ``"scratch"`` (:math:`y_{P\to Q} = 0`).  Returns
    a :class:`PixelSimilarity`: ``thm1`` :math:`= \|Y_Q - Y_{P\to Q}\|^2 / n_Q` (Eq. 1) and
    ``thm2``, the leading term of Eq. 2; smaller means more similar.  The wide two-layer
    network of the theory is not LeNet: this is the theory's prediction of the *ranking* of
    the sources, not of LeNet's numbers.
    """

    def prep(x, y):
        x = np.asarray(x, dtype=np.float64)
        return x / np.linalg.norm(x, axis=1, keepdims=True), np.eye(10)[y] - 0.1

    xq, yq, _, _ = target_data(n_target, seed)
    XQ, YQ = prep(xq, yq)
    if source == "scratch":
        return PixelSimilarity(thm1=float(np.sum(YQ ** 2)) / len(YQ),
                               thm2=theory.ntk.deviation_bound(XQ, YQ))
    x, y, _, _ = source_data(source, n_source, seed)
    XP, YP = prep(x, y)
    YPQ = theory.ntk.transformed_labels(XP, YP, XQ)
    return PixelSimilarity(thm1=theory.ntk.label_discrepancy(YQ, YPQ) / len(YQ),
                           thm2=theory.ntk.deviation_bound(XQ, YQ, YPQ))
