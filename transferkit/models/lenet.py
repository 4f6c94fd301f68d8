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

from .._validate import check_bool, check_int, check_positive
from .device import default_device

__all__ = ["LAYERS", "LeNet", "accuracy", "layer_deviation", "make_lenet", "mirror_state",
           "train_lenet"]


#: The weight tensors whose deviation is reported (the paper's psi_1, psi_2, W).
LAYERS = ("conv1", "conv2", "fc1", "fc2", "fc3")


SUBSET_STREAM, TARGET_STREAM, INIT_STREAM, PRETRAIN_ORDER_STREAM, FINETUNE_ORDER_STREAM = 11, 12, 13, 14, 15


class LeNet(nn.Module):
    """LeNet-5 for 28x28 grey images: conv(6, 5x5, pad 2) - pool - conv(16, 5x5) - pool -
    fc 400-120-84-10, ReLU activations, max pooling.

    The forward pass pools before the ReLU of each convolution: ``relu(max_pool(z))``
    equals ``max_pool(relu(z))`` (both are monotone), with the same gradient placed at the
    same entries (where the window's maximum is not positive both give zero), so the
    numbers are bit for bit those of the textbook order, while the ReLU and its backward
    pass run on a quarter of the entries (about 3 % faster at batch 64 on one CPU thread;
    ``benchmarks/lenet_speed.py``)."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5, padding=2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(400, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = x.reshape(-1, 1, 28, 28)
        x = F.relu(F.max_pool2d(self.conv1(x), 2))
        x = F.relu(F.max_pool2d(self.conv2(x), 2))
        x = x.flatten(1)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(x)


def make_lenet(seed: int, device=None) -> LeNet:
    """A LeNet with PyTorch's default initialisation drawn from ``seed`` (reproducible;
    the global random state is left untouched)."""
    seed = check_int("seed", seed, 0)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1_000_003 * seed + INIT_STREAM)
        model = LeNet()
    return model.to(device or default_device())


def _tensors(x, y, model):
    """Images in the dtype of ``model``'s weights (float32 for :func:`make_lenet`'s) and
    labels, on its device."""
    p = next(model.parameters())
    return (torch.as_tensor(np.asarray(x), dtype=p.dtype, device=p.device),
            torch.as_tensor(np.asarray(y, dtype=np.int64), device=p.device))


def accuracy(model: nn.Module, x, y, batch: int = 2048) -> float:
    """Fraction of ``x`` (``(n, 784)``) classified as ``y``."""
    X, Y = _tensors(x, y, model)
    model.eval()
    with torch.no_grad():
        hits = sum(int((model(X[i:i + batch]).argmax(1) == Y[i:i + batch]).sum())
                   for i in range(0, len(Y), batch))
    return hits / len(Y)


def train_lenet(model: nn.Module, x, y, *, epochs: int, seed: int, lr: float = 1e-3,
          weight_decay: float = 5e-4, batch: int = 128, snapshots=(),
          purpose: int = PRETRAIN_ORDER_STREAM, optimizer: str = "adam",
          momentum: float = 0.0):
    """Minibatch training on the cross-entropy, in place, for a fixed number of epochs.

    Paper 002 (App. A, "digit recognition") states learning rate 0.01, weight decay 5e-4,
    batch 64 and 100 epochs but no optimiser for LeNet; its fine-tuning protocol (App. A,
    ResNet-50) is SGD with momentum 0.9 at learning rate 0.01 ("also" for LeNet).
    ``optimizer="sgd"`` with ``momentum=0.9``, ``lr=0.01``, ``weight_decay=5e-4`` and
    ``batch=64`` is that protocol; the default, Adam, reaches a trained LeNet in the few
    epochs a shared CPU allows (ours).

    Parameters
    ----------
    model : torch.nn.Module
        The network, trained in place.
    x, y : array_like
        Images ``(n, 784)`` and labels ``(n,)``.
    epochs : int
        Passes over the data (App. A: 100).
    seed : int
        Seed of the batch order (a :class:`torch.Generator` keyed by ``seed`` and
        ``purpose``).
    lr : float
        Learning rate (App. A: 0.01).
    weight_decay : float
        L2 weight decay, ``>= 0`` (App. A: 5e-4), added to the gradient by ``torch.optim``.
    batch : int
        Minibatch size (App. A: 64).
    snapshots : iterable of int
        Epochs after which a copy of the state dict is kept (0: before training).
    purpose : int
        Stream of the batch order (pretraining or fine-tuning).
    optimizer : {"adam", "sgd"}
        :class:`torch.optim.Adam` (ours) or :class:`torch.optim.SGD` (App. A).
    momentum : float
        Momentum of SGD in ``[0, 1)`` (App. A: 0.9); must be 0 with Adam.

    Returns
    -------
    list of (int, dict)
        ``(epoch, state_dict)`` for each epoch of ``snapshots`` (copies on the CPU).
    """
    epochs = check_int("epochs", epochs, 0)
    batch = check_int("batch", batch, 1)
    check_positive("lr", lr)
    check_positive("weight_decay", weight_decay, allow_zero=True)
    if optimizer not in ("adam", "sgd"):
        raise ValueError(f"optimizer must be 'adam' or 'sgd' (got {optimizer!r})")
    momentum = check_positive("momentum", momentum, allow_zero=True)
    if momentum >= 1:
        raise ValueError(f"momentum must be in [0, 1) (got {momentum})")
    if optimizer == "adam" and momentum != 0:
        raise ValueError(f"momentum must be 0 with optimizer='adam' (got {momentum})")
    dev = next(model.parameters()).device
    X, Y = _tensors(x, y, model)
    if optimizer == "adam":
        opt = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=weight_decay)
    else:
        opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=momentum,
                              weight_decay=weight_decay)
    gen = torch.Generator().manual_seed(1_000_003 * check_int("seed", seed, 0) + purpose)
    keep = sorted(set(int(e) for e in snapshots))
    out = [(0, state_copy(model))] if 0 in keep else []
    for epoch in range(1, epochs + 1):
        model.train()
        order = torch.randperm(len(Y), generator=gen).to(dev)
        for i in range(0, len(Y), batch):
            idx = order[i:i + batch]
            opt.zero_grad(set_to_none=True)
            F.cross_entropy(model(X[idx]), Y[idx]).backward()
            opt.step()
        if epoch in keep:
            out.append((epoch, state_copy(model)))
    return out


def state_copy(model):
    return {k: v.detach().cpu().clone() for k, v in model.state_dict().items()}


def mirror_state(state: dict) -> dict:
    r"""The state of the mirror-image LeNet: the network :math:`f_{P\theta}` with
    :math:`f_{P\theta}(Jx) = f_\theta(x)` for every image :math:`x`, where :math:`J` flips
    an image vertically (upside down, as the upside-down MNIST of paper 002, Sec. 5.1).

    Each convolution kernel is flipped along its rows and the input of ``fc1`` (the
    :math:`16\times5\times5` feature maps, flattened) is permuted by the same flip of the
    map's rows; biases and the other layers are unchanged.  This is exact because every layer
    of :class:`LeNet` commutes with the flip: the first convolution pads symmetrically (2
    rows each side), the second has none, and both poolings tile an even number of rows (28
    and 10), so a flipped input with flipped kernels gives the flipped feature maps.

    :math:`P` is a permutation of the weights and the loss satisfies
    :math:`\ell(P\theta; Jx, y) = \ell(\theta; x, y)`, so
    :math:`\nabla\ell(P\theta; Jx, y) = P\nabla\ell(\theta; x, y)`, and SGD (with
    momentum and weight decay, or Adam, whose element-wise updates commute with a
    permutation) on the flipped images started from :math:`P\theta_0` visits
    :math:`P\theta_t` at every step, with the same batches.  The mirror image of a network
    trained on MNIST is therefore, in exact arithmetic, the network trained on upside-down
    MNIST from the mirrored initialisation; in floating point the two differ by the
    rounding of the convolution sums, taken in another order (tested).

    Parameters
    ----------
    state : dict
        A :class:`LeNet` state dict (e.g. from ``state_copy``).

    Returns
    -------
    dict
        A new state dict of the same shapes and dtypes.
    """
    if not isinstance(state, dict):
        raise TypeError(f"state must be a LeNet state dict (got {type(state).__name__})")
    with torch.device("meta"):          # shapes only: no initialisation, no global RNG draw
        shapes = {k: tuple(v.shape) for k, v in LeNet().state_dict().items()}
    got = {k: tuple(v.shape) for k, v in state.items() if isinstance(v, torch.Tensor)}
    if got != shapes:
        raise ValueError(f"state must be a LeNet state dict with the shapes {shapes} "
                         f"(got {got})")
    out = {k: v.clone() for k, v in state.items()}
    for name in ("conv1", "conv2"):
        out[f"{name}.weight"] = state[f"{name}.weight"].flip(2)       # (out, in, rows, cols)
    w = state["fc1.weight"]
    out["fc1.weight"] = w.reshape(w.shape[0], 16, 5, 5).flip(2).reshape(w.shape).clone()
    return out


def layer_deviation(model: nn.Module, ref: dict, relative: bool = True) -> np.ndarray:
    r"""Deviation of each weight tensor in :data:`LAYERS` from a reference state.

    With ``relative=False`` this is paper 002's deviation of each layer,
    :math:`\|W_{(l)} - W_{0(l)}\|_F` (Sec. 5.1 and Fig. 8a, "the deviation from pretrained
    weight of each layer"; defined in Sec. 3 as the Frobenius norm of the deviation between
    the fine-tuned and the pretrained weight, there divided by :math:`\sqrt n`, with
    :math:`n` the number of target examples, which this function does not do).  With
    ``relative=True`` (the default; ours) it is divided by the norm of the reference,
    :math:`\|W_l - W_l^{\rm ref}\|_F / \|W_l^{\rm ref}\|_F`.  Biases are not included.

    Parameters
    ----------
    model : torch.nn.Module
        A :class:`LeNet` (its current weights are :math:`W_l`).
    ref : dict
        A state dict of the same architecture (:math:`W_l^{\rm ref} = W_{0(l)}`, e.g. the
        weights fine-tuning started from).
    relative : bool
        Whether to divide by :math:`\|W_l^{\rm ref}\|_F`.

    Returns
    -------
    numpy.ndarray
        ``(len(LAYERS),)``, one deviation per layer.
    """
    relative = check_bool("relative", relative)
    state = model.state_dict()
    out = []
    for name in LAYERS:
        w, r = state[f"{name}.weight"].detach().cpu().double(), ref[f"{name}.weight"].double()
        d = torch.linalg.vector_norm(w - r)
        out.append(float(d / torch.linalg.vector_norm(r)) if relative else float(d))
    return np.array(out)
