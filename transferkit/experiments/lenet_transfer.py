r"""LeNet transfer among digit-like data sets (paper 002, Sec. 5, Figs. 8a, 9)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import data, theory
from .._validate import check_int
from ..models.device import default_device
from ..models.lenet import (
    FINETUNE_ORDER_STREAM,
    SUBSET_STREAM,
    TARGET_STREAM,
    accuracy,
    layer_deviation,
    make_lenet,
    state_copy,
    train_lenet,
)

__all__ = ["SOURCES", "PixelSimilarity", "ntk_similarity", "source_data", "target_data", "transfer_cell"]


#: pretraining data sets of Fig. 8a ("scratch" means no pretraining)
SOURCES = ("mnist", "mnist_upside_down", "fashion")


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
    Returns ``(x, y, x_test, y_test)``.
    """
    if source not in SOURCES:
        raise ValueError(f"source must be one of {SOURCES} (got {source!r})")
    n = check_int("n", n, 10)
    if n % 10:
        raise ValueError(f"n must be a multiple of 10 (got {n}): the same count per class")
    xtr, ytr, xte, yte = data.load_fashion_mnist() if source == "fashion" else data.load_mnist()
    rng = np.random.default_rng([check_int("seed", seed, 0), SUBSET_STREAM])
    i, j = _balanced(ytr, n // 10, rng), _balanced(yte, 200, rng)
    x, xt = np.array(xtr[i]), np.array(xte[j])
    if source == "mnist_upside_down":
        x = x.reshape(-1, 28, 28)[:, ::-1].reshape(-1, 784).copy()
        xt = xt.reshape(-1, 28, 28)[:, ::-1].reshape(-1, 784).copy()
    return x, np.array(ytr[i]), xt, np.array(yte[j])


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
                  lr: float = 1e-3) -> dict:
    """One (source, seed) cell of Figs. 8a and 9: pretrain, snapshot, fine-tune each snapshot.

    ``source`` is one of :data:`SOURCES` or ``"scratch"`` (fine-tuning from the random
    initialisation; the snapshots are then ignored).  Pretraining runs ``max(snapshots)``
    epochs on ``n_pretrain`` images; the network saved after each epoch in ``snapshots``
    is fine-tuned for ``ft_epochs`` epochs on ``n_target`` digits images (all layers, the
    same 10 labels).  A cell function for :func:`transferkit.sweep.run`, whose cache stores
    what it returns: a flat dict of arrays over the snapshots, ``epochs``, ``pre_acc`` (test
    accuracy on the source), ``acc`` (test accuracy on the target after fine-tuning),
    ``acc0`` (target accuracy before fine-tuning) and ``dev`` ``(S, len(LAYERS))``, the
    relative deviation of each layer from its starting weights.
    """
    seed = check_int("seed", seed, 0)
    snaps = sorted(set(check_int("snapshots", e, 0) for e in np.atleast_1d(snapshots).tolist()))
    if not snaps:
        raise ValueError("snapshots must hold at least one epoch count")
    dev = default_device()
    xq, yq, xq_test, yq_test = target_data(n_target, seed)
    model = make_lenet(seed, dev)
    if source == "scratch":
        states, pre_acc = [(0, state_copy(model))], [np.nan]
    else:
        x, y, xt, yt = source_data(source, n_pretrain, seed)
        states = train_lenet(model, x, y, epochs=max(snaps), seed=seed, lr=lr, batch=batch,
                       snapshots=snaps)
        pre_acc = []
        for _, st in states:
            model.load_state_dict(st)
            pre_acc.append(accuracy(model, xt, yt))
    acc, acc0, devs = [], [], []
    for _, st in states:
        model.load_state_dict(st)
        acc0.append(accuracy(model, xq_test, yq_test))
        train_lenet(model, xq, yq, epochs=ft_epochs, seed=seed, lr=lr, batch=batch,
              purpose=FINETUNE_ORDER_STREAM)
        acc.append(accuracy(model, xq_test, yq_test))
        devs.append(layer_deviation(model, st))
    return {"epochs": np.array([e for e, _ in states]), "pre_acc": np.array(pre_acc),
            "acc": np.array(acc), "acc0": np.array(acc0), "dev": np.array(devs)}


@dataclass(frozen=True)
class PixelSimilarity:
    r"""The result of :func:`ntk_similarity`: paper 002's task-similarity terms (Sec. 6,
    Thms 1-2) from one source to the digits target, on the pixels (Fig. 8a, panel (c) of the
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
