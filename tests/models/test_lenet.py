"""Tests for :mod:`transferkit.models.lenet`: shapes, seeded determinism, the data splits of Fig. 8a
and the per-layer deviation (fast: no full training)."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from _helpers import needs_data

from transferkit import data, experiments, models


def test_forward_shape(one_thread):
    model = models.lenet.make_lenet(0, "cpu")
    out = model(torch.zeros(5, 784))
    assert out.shape == (5, 10)
    n = sum(p.numel() for p in model.parameters())
    assert n == 61_706                       # LeNet-5 with padding 2 on 28x28 inputs


def _textbook_forward(model, x):
    """LeNet's forward pass in the textbook order, ReLU before each max pooling."""
    F = torch.nn.functional
    x = x.reshape(-1, 1, 28, 28)
    x = F.max_pool2d(F.relu(model.conv1(x)), 2)
    x = F.max_pool2d(F.relu(model.conv2(x)), 2)
    x = x.flatten(1)
    return model.fc3(F.relu(model.fc2(F.relu(model.fc1(x)))))


def test_pooling_before_relu_is_bitwise_the_textbook_order(one_thread):
    """LeNet.forward pools before the ReLU (faster); the outputs and every gradient are those
    of relu-then-pool bit for bit, also with ties and all-negative pooling windows."""
    rng = np.random.default_rng(0)
    x = rng.random((32, 784)).astype(np.float32)
    x[:8] = 0.0                                          # constant images: ties everywhere
    x[8:16] = np.round(x[8:16])                          # binary images: many ties
    y = torch.as_tensor(rng.integers(0, 10, 32))
    model = models.lenet.make_lenet(2, "cpu")
    grads = []
    for fwd in (model.forward, lambda v: _textbook_forward(model, v)):
        model.zero_grad(set_to_none=True)
        out = fwd(torch.as_tensor(x))
        torch.nn.functional.cross_entropy(out, y).backward()
        grads.append((out.detach(), [p.grad.clone() for p in model.parameters()]))
    (o1, g1), (o2, g2) = grads
    assert torch.equal(o1, o2)
    assert all(torch.equal(a, b) for a, b in zip(g1, g2))


def test_init_is_seeded_and_leaves_global_rng(one_thread):
    state = torch.random.get_rng_state()
    a, b, c = models.lenet.make_lenet(3, "cpu"), models.lenet.make_lenet(3, "cpu"), models.lenet.make_lenet(4, "cpu")
    assert torch.equal(torch.random.get_rng_state(), state)
    for (k, v), w, u in zip(a.state_dict().items(), b.state_dict().values(),
                            c.state_dict().values()):
        assert torch.equal(v, w), k
        assert not torch.equal(v, u), k
    with pytest.raises(ValueError, match="seed"):
        models.lenet.make_lenet(-1)


def test_training_is_deterministic_and_deviation(one_thread):
    rng = np.random.default_rng(0)
    x, y = rng.random((40, 784)).astype(np.float32), rng.integers(0, 10, 40)
    runs = []
    for _ in range(2):
        model = models.lenet.make_lenet(1, "cpu")
        start = {k: v.clone() for k, v in model.state_dict().items()}
        snaps = models.lenet.train_lenet(model, x, y, epochs=2, seed=5, batch=16, snapshots=(0, 1, 2))
        runs.append((model, start, snaps))
    (m1, s1, snaps1), (m2, _, _) = runs
    for v, w in zip(m1.state_dict().values(), m2.state_dict().values()):
        assert torch.equal(v, w)
    assert [e for e, _ in snaps1] == [0, 1, 2]
    assert np.all(models.lenet.layer_deviation(m1, snaps1[-1][1]) == 0)
    dev = models.lenet.layer_deviation(m1, s1)
    assert dev.shape == (len(models.lenet.LAYERS),) and np.all(dev > 0)
    acc = models.lenet.accuracy(m1, x, y)
    assert 0 <= acc <= 1


def test_absolute_deviation_is_the_frobenius_norm(one_thread):
    """relative=False gives paper 002's ||W_(l) - W_0(l)||_F (Sec. 5.1, Fig. 8a; Sec. 3),
    relative=True the same divided by ||W_0(l)||_F; biases are left out."""
    model, ref = models.lenet.make_lenet(1, "cpu"), models.lenet.make_lenet(2, "cpu").state_dict()
    absolute = models.lenet.layer_deviation(model, ref, relative=False)
    relative = models.lenet.layer_deviation(model, ref)
    state = model.state_dict()
    for k, name in enumerate(models.lenet.LAYERS):
        w, r = state[f"{name}.weight"].double().numpy(), ref[f"{name}.weight"].double().numpy()
        assert absolute[k] == pytest.approx(np.sqrt(np.sum((w - r) ** 2)), rel=1e-12)
        assert relative[k] == pytest.approx(absolute[k] / np.sqrt(np.sum(r ** 2)), rel=1e-12)
    assert not np.allclose(absolute, relative)
    with pytest.raises(ValueError, match="relative"):
        models.lenet.layer_deviation(model, ref, relative="yes")


def _reference_loop(model, x, y, opt, epochs, seed, batch):
    """The training loop of train_lenet written out by hand, with a given torch optimiser."""
    X, Y = torch.as_tensor(x), torch.as_tensor(y)
    gen = torch.Generator().manual_seed(1_000_003 * seed + models.lenet.PRETRAIN_ORDER_STREAM)
    for _ in range(epochs):
        model.train()
        order = torch.randperm(len(Y), generator=gen)
        for i in range(0, len(Y), batch):
            idx = order[i:i + batch]
            opt.zero_grad(set_to_none=True)
            torch.nn.functional.cross_entropy(model(X[idx]), Y[idx]).backward()
            opt.step()


@pytest.mark.parametrize("optimizer", ["adam", "sgd"])
def test_optimizer_option_is_the_torch_optimiser(one_thread, optimizer):
    """train_lenet's default is Adam (the chapter's numbers are unchanged, bit for bit);
    optimizer="sgd" is torch's SGD with momentum and weight decay (paper 002, App. A: SGD,
    momentum 0.9, learning rate 0.01, weight decay 5e-4, batch 64)."""
    rng = np.random.default_rng(0)
    x, y = rng.random((40, 784)).astype(np.float32), rng.integers(0, 10, 40)
    kw = {} if optimizer == "adam" else dict(optimizer="sgd", momentum=0.9, lr=0.01)
    model = models.lenet.make_lenet(1, "cpu")
    models.lenet.train_lenet(model, x, y, epochs=2, seed=5, batch=16, **kw)
    ref = models.lenet.make_lenet(1, "cpu")
    opt = (torch.optim.Adam(ref.parameters(), lr=1e-3, weight_decay=5e-4) if optimizer == "adam"
           else torch.optim.SGD(ref.parameters(), lr=0.01, momentum=0.9, weight_decay=5e-4))
    _reference_loop(ref, x, y, opt, epochs=2, seed=5, batch=16)
    for k, v in model.state_dict().items():
        assert torch.equal(v, ref.state_dict()[k]), k


def test_optimizer_options_are_checked():
    model = models.lenet.make_lenet(0, "cpu")
    x, y = np.zeros((4, 784), np.float32), np.zeros(4, int)
    train = models.lenet.train_lenet
    with pytest.raises(ValueError, match="optimizer"):
        train(model, x, y, epochs=1, seed=0, optimizer="rmsprop")
    for bad in (-0.1, 1.0):
        with pytest.raises(ValueError, match="momentum"):
            train(model, x, y, epochs=1, seed=0, optimizer="sgd", momentum=bad)
    with pytest.raises(ValueError, match="momentum"):
        train(model, x, y, epochs=1, seed=0, momentum=0.9)          # Adam has no momentum
    with pytest.raises(ValueError, match="weight_decay"):
        train(model, x, y, epochs=1, seed=0, weight_decay=-1e-4)


def _flip(x):
    return x.reshape(-1, 28, 28).flip(1).reshape(-1, 784)


def test_mirror_state_is_the_flipped_network(one_thread):
    """The mirror image computes on flipped images what the network computes on the
    originals (LeNet commutes with the vertical flip); in float64 the two differ only by the
    order of the convolution sums. Mirroring twice gives the state back, bit for bit; an
    unflipped fc1 or kernel would give differences of order one."""
    rng = np.random.default_rng(1)
    x = torch.as_tensor(rng.random((16, 784)))
    model = models.lenet.make_lenet(5, "cpu").double()
    state = models.lenet.state_copy(model)
    mirror = models.lenet.make_lenet(0, "cpu").double()
    mirror.load_state_dict(models.lenet.mirror_state(state))
    with torch.no_grad():
        a, b = model(x), mirror(_flip(x))
    assert torch.allclose(a, b, rtol=0, atol=1e-12 * float(a.abs().max()))
    assert not torch.allclose(a, mirror(x).detach(), rtol=0, atol=1e-3 * float(a.abs().max()))
    rng_state = torch.random.get_rng_state()
    twice = models.lenet.mirror_state(models.lenet.mirror_state(state))
    assert torch.equal(torch.random.get_rng_state(), rng_state)      # no global RNG draw
    assert all(torch.equal(twice[k], v) for k, v in state.items())
    with pytest.raises(TypeError, match="state"):
        models.lenet.mirror_state([1, 2])
    bad = dict(state, **{"fc1.weight": state["fc1.weight"][:, :300]})
    with pytest.raises(ValueError, match="state"):
        models.lenet.mirror_state(bad)


@needs_data
@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_training_commutes_with_the_mirror(one_thread, optimizer):
    """Training on the flipped images from the mirrored initialisation stays the mirror image
    of training on the originals, with the same batches (paper 002's upside-down MNIST is
    computed this way). In float64 (the trainer feeds the images in the weights' dtype) the
    two differ by rounding only: about 1e-13 of each tensor's largest entry after 32 steps
    with momentum or Adam and weight decay (in float32 about 1e-4: training amplifies the
    rounding of the convolution sums about a thousandfold over these steps)."""
    x, y, _, _ = experiments.lenet_transfer.source_data("mnist", 1000, 0)
    kw = dict(epochs=2, seed=4, lr=0.01, batch=64, optimizer=optimizer,
              momentum=0.9 if optimizer == "sgd" else 0.0)
    a = models.lenet.make_lenet(6, "cpu").double()
    b = models.lenet.make_lenet(6, "cpu").double()
    start = models.lenet.state_copy(a)
    b.load_state_dict(models.lenet.mirror_state(start))
    models.lenet.train_lenet(a, x, y, **kw)
    models.lenet.train_lenet(b, _flip(torch.as_tensor(x)).numpy(), y, **kw)
    want, got = models.lenet.mirror_state(models.lenet.state_copy(a)), models.lenet.state_copy(b)
    for k in want:
        scale = float(want[k].abs().max())
        assert float((want[k] - got[k]).abs().max()) < 1e-9 * scale, k
        assert float((models.lenet.state_copy(a)[k] - start[k]).abs().max()) > 1e-6 * scale, k


@needs_data
def test_whole_training_set():
    """n = 0 is the whole training set (paper 002, Sec. 5.1: MNIST, no subset stated)."""
    x, y, xt, _ = experiments.lenet_transfer.source_data("mnist", 0, 0)
    full, labels, _, _ = data.load_mnist()
    assert x.shape == (60_000, 784) and np.array_equal(x, full) and np.array_equal(y, labels)
    assert xt.shape == (2000, 784)
    with pytest.raises(ValueError, match="n must be 0"):
        experiments.lenet_transfer.source_data("mnist", 5, 0)


@needs_data
def test_sources_are_balanced_and_flipped():
    x, y, xt, yt = experiments.lenet_transfer.source_data("mnist", 100, 0)
    xu, yu, xtu, ytu = experiments.lenet_transfer.source_data("mnist_upside_down", 100, 0)
    xf, yf, _, _ = experiments.lenet_transfer.source_data("fashion", 100, 0)
    for labels in (y, yu, yf):
        assert np.array_equal(np.bincount(labels, minlength=10), np.full(10, 10))
    assert np.array_equal(y, yu) and np.array_equal(yt, ytu)
    assert np.array_equal(xu.reshape(-1, 28, 28), x.reshape(-1, 28, 28)[:, ::-1])
    assert xt.shape == (2000, 784)
    with pytest.raises(ValueError, match="source"):
        experiments.lenet_transfer.source_data("svhn", 100, 0)
    with pytest.raises(ValueError, match="multiple of 10"):
        experiments.lenet_transfer.source_data("mnist", 105, 0)


@needs_data
def test_target_split_is_disjoint():
    x, y, xt, yt = experiments.lenet_transfer.target_data(600, 0)
    assert x.shape == (600, 784) and len(xt) == 1797 - 600
    assert np.array_equal(np.bincount(y, minlength=10), np.full(10, 60))
    full, _ = data.load_digits_28()
    both = np.r_[x, xt]                                   # a partition of the data set
    assert np.array_equal(both[np.lexsort(both.T)], full[np.lexsort(full.T)])
    a = experiments.lenet_transfer.target_data(600, 0)
    assert all(np.array_equal(u, v) for u, v in zip(a, (x, y, xt, yt)))


@needs_data
def test_ntk_similarity_is_a_pixel_similarity():
    """experiments.lenet_transfer.ntk_similarity returns a frozen PixelSimilarity: Thm 1's term
    per target image (paper 002, Eq. 1) and Eq. 2's leading term, both >= 0; for "scratch"
    Thm 1's term is ||Y_Q||^2 / n_Q = 0.9 (one-hot labels centred by 1/10)."""
    import dataclasses

    sim = experiments.lenet_transfer.ntk_similarity("mnist", 50, 30, seed=0)
    assert isinstance(sim, experiments.lenet_transfer.PixelSimilarity)
    assert [f.name for f in dataclasses.fields(sim)] == ["thm1", "thm2"]
    assert sim.thm1 >= 0 and sim.thm2 >= 0
    with pytest.raises(dataclasses.FrozenInstanceError):
        sim.thm1 = 0.0
    scratch = experiments.lenet_transfer.ntk_similarity("scratch", 50, 30, seed=0)
    assert np.isclose(scratch.thm1, 0.9)
    assert scratch.thm2 > 0
