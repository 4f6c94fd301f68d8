r"""LeNet transfer among digit-like data sets (paper 002, Sec. 5, Fig. 8a and Fig. 9).

Liu et al. pretrain LeNet (LeCun et al. 1998) on MNIST, on upside-down MNIST and on
Fashion-MNIST, with the same data-set sizes, labels and images per class, then fine-tune
all layers on 600 images of SVHN, and compare with training from scratch: test accuracy
and the deviation of each layer from its pretrained weights (Fig. 8a).  Fig. 9 plots
transfer accuracy against the number of pretraining epochs.

SVHN cannot be downloaded offline; the target here is scikit-learn's 8x8 digits upscaled to
28x28 (:func:`transferkit.data.load_digits_28`), another digit set whose pixels differ
from MNIST's.  Everything is seeded: the subsets through numpy generators keyed by
``(seed, purpose)``, the initialisation and the batch order through
:func:`torch.Generator` seeds; the same seed gives the same numbers on the CPU.
"""
from __future__ import annotations

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from . import data
from ._validate import check_int, check_positive
from .models import default_device

__all__ = ["LAYERS", "SOURCES", "LeNet", "accuracy", "layer_deviation", "make_lenet",
           "ntk_similarity", "source_data", "target_data", "train", "transfer_cell"]

#: pretraining data sets of Fig. 8a ("scratch" means no pretraining)
SOURCES = ("mnist", "mnist_upside_down", "fashion")
#: the weight tensors whose deviation is reported (paper: psi_1, psi_2, W)
LAYERS = ("conv1", "conv2", "fc1", "fc2", "fc3")
_SUBSET, _TARGET, _INIT, _ORDER_PRE, _ORDER_FT = 11, 12, 13, 14, 15


class LeNet(nn.Module):
    """LeNet-5 for 28x28 grey images: conv(6, 5x5, pad 2) - pool - conv(16, 5x5) - pool -
    fc 400-120-84-10, ReLU activations, max pooling."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5, padding=2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(400, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = x.reshape(-1, 1, 28, 28)
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = x.flatten(1)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(x)


def make_lenet(seed: int, device=None) -> LeNet:
    """A LeNet with PyTorch's default initialisation drawn from ``seed`` (reproducible;
    the global random state is left untouched)."""
    seed = check_int("seed", seed, 0)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1_000_003 * seed + _INIT)
        model = LeNet()
    return model.to(device or default_device())


def _tensors(x, y, device):
    return (torch.as_tensor(np.asarray(x, dtype=np.float32), device=device),
            torch.as_tensor(np.asarray(y, dtype=np.int64), device=device))


def accuracy(model: nn.Module, x, y, batch: int = 2048) -> float:
    """Fraction of ``x`` (``(n, 784)``) classified as ``y``."""
    dev = next(model.parameters()).device
    X, Y = _tensors(x, y, dev)
    model.eval()
    with torch.no_grad():
        hits = sum(int((model(X[i:i + batch]).argmax(1) == Y[i:i + batch]).sum())
                   for i in range(0, len(Y), batch))
    return hits / len(Y)


def train(model: nn.Module, x, y, *, epochs: int, seed: int, lr: float = 1e-3,
          weight_decay: float = 5e-4, batch: int = 128, snapshots=(),
          purpose: int = _ORDER_PRE):
    """Adam on the cross-entropy, in place, with L2 weight decay ``weight_decay``.  Paper
    002 (App. B) uses SGD at learning rate 0.01, weight decay 5e-4, batch 64, 100 epochs;
    Adam reaches a trained LeNet in the few epochs a shared CPU allows.

    ``snapshots``: epochs after which a copy of the state dict is kept.  Returns the list
    of ``(epoch, state_dict)`` (copies on the CPU)."""
    epochs = check_int("epochs", epochs, 0)
    batch = check_int("batch", batch, 1)
    check_positive("lr", lr)
    dev = next(model.parameters()).device
    X, Y = _tensors(x, y, dev)
    opt = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=weight_decay)
    gen = torch.Generator().manual_seed(1_000_003 * check_int("seed", seed, 0) + purpose)
    keep = sorted(set(int(e) for e in snapshots))
    out = [(0, _copy(model))] if 0 in keep else []
    for epoch in range(1, epochs + 1):
        model.train()
        order = torch.randperm(len(Y), generator=gen).to(dev)
        for i in range(0, len(Y), batch):
            idx = order[i:i + batch]
            opt.zero_grad(set_to_none=True)
            F.cross_entropy(model(X[idx]), Y[idx]).backward()
            opt.step()
        if epoch in keep:
            out.append((epoch, _copy(model)))
    return out


def _copy(model):
    return {k: v.detach().cpu().clone() for k, v in model.state_dict().items()}


def layer_deviation(model: nn.Module, ref: dict) -> np.ndarray:
    r"""Relative deviation $\|W_l - W_l^{\rm ref}\|_F / \|W_l^{\rm ref}\|_F$ of each weight
    tensor in :data:`LAYERS` (paper 002, Fig. 8a, there $\|W - W_0\|_F$)."""
    state = model.state_dict()
    out = []
    for name in LAYERS:
        w, r = state[f"{name}.weight"].detach().cpu().double(), ref[f"{name}.weight"].double()
        out.append(float(torch.linalg.vector_norm(w - r) / torch.linalg.vector_norm(r)))
    return np.array(out)


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
    rng = np.random.default_rng([check_int("seed", seed, 0), _SUBSET])
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
    rng = np.random.default_rng([check_int("seed", seed, 0), _TARGET])
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
    same 10 labels).  Returns arrays over the snapshots: ``epochs``, ``pre_acc`` (test
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
        states, pre_acc = [(0, _copy(model))], [np.nan]
    else:
        x, y, xt, yt = source_data(source, n_pretrain, seed)
        states = train(model, x, y, epochs=max(snaps), seed=seed, lr=lr, batch=batch,
                       snapshots=snaps)
        pre_acc = []
        for _, st in states:
            model.load_state_dict(st)
            pre_acc.append(accuracy(model, xt, yt))
    acc, acc0, devs = [], [], []
    for _, st in states:
        model.load_state_dict(st)
        acc0.append(accuracy(model, xq_test, yq_test))
        train(model, xq, yq, epochs=ft_epochs, seed=seed, lr=lr, batch=batch,
              purpose=_ORDER_FT)
        acc.append(accuracy(model, xq_test, yq_test))
        devs.append(layer_deviation(model, st))
    return {"epochs": np.array([e for e, _ in states]), "pre_acc": np.array(pre_acc),
            "acc": np.array(acc), "acc0": np.array(acc0), "dev": np.array(devs)}


def ntk_similarity(source: str, n_source: int = 500, n_target: int = 300, seed: int = 0) -> dict:
    r"""Paper 002's task-similarity quantities (Sec. 6, Thms 1-2) from a source set to the
    digits target, computed on the pixels: :func:`transferkit.ntk.similarity` with the rows
    normalised to the unit sphere and the labels one-hot, centred ($e_y - \frac1{10}$).

    ``source`` is one of :data:`SOURCES` or ``"scratch"`` ($y_{P\to Q} = 0$).  Returns
    ``{"thm1": ||Y_Q - Y_{P->Q}||^2 / n_target, "thm2": leading term of Eq. 2}``; smaller
    means more similar.  The wide two-layer network of the theory is not LeNet: this is the
    theory's prediction of the *ranking* of the sources, not of LeNet's numbers.
    """
    from . import ntk

    def prep(x, y):
        x = np.asarray(x, dtype=np.float64)
        return x / np.linalg.norm(x, axis=1, keepdims=True), np.eye(10)[y] - 0.1

    xq, yq, _, _ = target_data(n_target, seed)
    XQ, YQ = prep(xq, yq)
    if source == "scratch":
        return {"thm1": float(np.sum(YQ ** 2)) / len(YQ), "thm2": ntk.deviation_bound(XQ, YQ)}
    x, y, _, _ = source_data(source, n_source, seed)
    XP, YP = prep(x, y)
    YPQ = ntk.transformed_labels(XP, YP, XQ)
    return {"thm1": ntk.label_discrepancy(YQ, YPQ) / len(YQ),
            "thm2": ntk.deviation_bound(XQ, YQ, YPQ)}
